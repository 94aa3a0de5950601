"""Performs a session's effects in the order the core produced them: its one outbox.

How it works. ``put`` queues effects (and ``written`` a barrier) without waiting; one task
(``run``) performs them. Updates (``Notify``) are encoded into a buffer, and every update that
is ready together goes out in one write: the buffer is flushed when the outbox runs dry and
before any other effect is handed on, so that a prompt's answer, say, is released only after
every update before it was written. A barrier is an ``anyio.Event`` in the queue, set once
everything before it was performed. An effect that cannot be performed (an update no encoder
takes) is logged and costs that effect only.

Background output has a fast path (``relay``): when the outbox holds nothing, its updates are
written at once, with one task switch fewer per batch than through the queue, and their order
kept; otherwise they go through the queue and ``relay`` waits until they are written (the
tailer reads no further meanwhile: a slow client holds the tailer back instead of filling
memory).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import anyio

from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.acp.updates import session_update_line
from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    ClaudeCommand,
    Decide,
    Effect,
    Fail,
    FindPrompt,
    FinishTail,
    Log,
    Notify,
    ReadTitle,
    Reply,
    Tail,
    WithdrawPermission,
)

log = logging.getLogger(__name__)

Handed = (
    Reply
    | Fail
    | AskPermission
    | AskQuestions
    | WithdrawPermission
    | ClaudeCommand
    | Decide
    | Tail
    | FinishTail
    | ReadTitle
    | FindPrompt
    | Log
)
"""Every effect but an update: the session performs it (``hand_on``), once what came before is
written."""
Queued = Effect | anyio.Event


class Outbox:
    def __init__(
        self, session_id: str, endpoint: Endpoint, hand_on: Callable[[Handed], Awaitable[None]]
    ) -> None:
        self._session_id = session_id
        self._endpoint = endpoint
        self._hand_on = hand_on
        self._in, self._out = anyio.create_memory_object_stream[Queued](math.inf)
        self._lines: list[bytes] = []
        self._held = 0
        """Effects and barriers put and not yet performed: while there are any, output waits
        its turn in the queue."""

    def put(self, effects: list[Effect]) -> None:
        try:
            for effect in effects:
                self._in.send_nowait(effect)
                self._held += 1
        except anyio.ClosedResourceError:
            log.debug("session %s is closed; dropped %d effects", self._session_id, len(effects))

    async def written(self) -> None:
        """Wait until everything put so far has been performed (at once, if the outbox is closed)."""
        barrier = anyio.Event()
        try:
            self._in.send_nowait(barrier)
        except anyio.ClosedResourceError:
            return
        self._held += 1
        await barrier.wait()

    async def relay(self, effects: list[Effect]) -> None:
        """Perform the effects of background output, and return once they are written."""
        if self._held == 0 and (lines := _update_lines(effects)) is not None:
            if lines:
                await self._endpoint.send_line(b"".join(lines))
        else:
            self.put(effects)
            await self.written()

    def close(self) -> None:
        """Nothing more is put; ``run`` returns once what was put is performed."""
        self._in.close()

    async def run(self) -> None:
        async for first in self._out:
            effect: Queued | None = first
            performed = 0
            while effect is not None:
                await self.perform(effect)
                performed += 1
                effect = self._next()
            await self.flush()
            self._held -= performed

    def left(self) -> list[Queued]:
        """Take what was put and not performed (the session failed: ``run`` is over)."""
        return list(iter(self._next, None))

    async def perform(self, effect: Queued) -> None:
        try:
            if isinstance(effect, Notify):
                self._lines.append(session_update_line(effect.session_id, effect.update))
                return
            await self.flush()  # what comes before it must be written first
            if isinstance(effect, anyio.Event):
                effect.set()
            else:
                await self._hand_on(effect)
        except Exception:
            # One effect that cannot be performed (an update no encoder takes, say) must not
            # end this session, nor the agent and its other sessions with it.
            log.exception("session %s: could not perform %s", self._session_id, type(effect).__name__)

    async def flush(self) -> None:
        """Write the updates collected so far, in one write."""
        if self._lines:
            data = b"".join(self._lines)
            self._lines.clear()
            await self._endpoint.send_line(data)

    def _next(self) -> Queued | None:
        try:
            return self._out.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return None


def _update_lines(effects: list[Effect]) -> list[bytes] | None:
    """The encoded updates, if that is all the effects are."""
    lines: list[bytes] = []
    for effect in effects:
        if not isinstance(effect, Notify):
            return None
        lines.append(session_update_line(effect.session_id, effect.update))
    return lines
