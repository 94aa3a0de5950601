"""A transport around the SDK's subprocess transport.

It does three things the SDK has no option for:

- it adds ``"perTaskStopAffordance": true`` to the SDK's ``initialize`` control request, so
  that ``interrupt()`` ends the foreground turn without killing background subagents (only
  ``stop_task`` stops one task);
- once the user trusted the session's folder, it adds ``"workspaceTrust": {"accepted": true,
  "directory": ...}`` to that request too: Claude Code then records the folder as trusted in
  its own config, as its terminal trust dialog does (``claude.trust``);
- it lets an observer see every frame in both directions (the recorder writes them down);
- it gives the runner the CLI's process, to stop it on its own terms (``process``), tells when
  that process exists (``spawned``: Claude Code then still has to initialize), and names it to
  ``orphans`` as a child whose exit status is asyncio's to collect.

Everything else is delegated unchanged. Importing this module imports the SDK, so the agent
imports it lazily, when the first session starts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import anyio
from anyio.abc import Process

from claude_bg_acp.claude import orphans
from claude_bg_acp.claude.sdk_private import Transport, process_of

Direction = Literal["out", "in"]
FrameObserver = Callable[[Direction, dict[str, Any]], None]


def add_stop_affordance(frame: dict[str, Any], trusted: str | None = None) -> dict[str, Any]:
    """Return the frame with the affordance flag if it is the SDK's initialize request (and the
    attestation that the user trusted the folder ``trusted``)."""
    request = frame.get("request")
    if (
        frame.get("type") == "control_request"
        and isinstance(request, dict)
        and request.get("subtype") == "initialize"
    ):
        added: dict[str, Any] = {"perTaskStopAffordance": True}
        if trusted is not None:
            added["workspaceTrust"] = {"accepted": True, "directory": trusted}
        return {**frame, "request": {**request, **added}}
    return frame


class AffordanceTransport(Transport):
    """Delegates to ``inner``; see the module docstring for what it adds."""

    def __init__(
        self, inner: Transport, observer: FrameObserver | None = None, trusted: str | None = None
    ) -> None:
        self._inner = inner
        self._observer = observer
        self._trusted = trusted
        self.spawned = anyio.Event()

    async def connect(self) -> None:
        await self._inner.connect()
        if self.process is not None:
            orphans.spawned(self.process.pid)
        self.spawned.set()

    async def write(self, data: str) -> None:
        # The SDK writes exactly one newline-terminated JSON frame per call.
        frame = add_stop_affordance(json.loads(data), self._trusted)
        if self._observer is not None:
            self._observer("out", frame)
        await self._inner.write(json.dumps(frame) + "\n")

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        async for frame in self._inner.read_messages():
            if self._observer is not None:
                self._observer("in", frame)
            yield frame

    async def close(self) -> None:
        process = self.process
        await self._inner.close()
        if process is not None and process.returncode is not None:
            orphans.collected(process.pid)

    @property
    def process(self) -> Process | None:
        """The CLI's process while it is connected (the SDK's subprocess transport keeps it)."""
        return process_of(self._inner)

    def is_ready(self) -> bool:
        return self._inner.is_ready()

    async def end_input(self) -> None:
        await self._inner.end_input()
