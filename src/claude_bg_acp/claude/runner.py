"""Runs one session's Claude Code through the SDK: connect, one reader, commands.

It knows nothing of ACP. Every message goes to ``on_message`` in arrival order; ``read``
returns when the stream ends (the CLI exited or crashed), with the reason. Commands (``query``,
``interrupt``, ``stop_task``, the model and effort switches, reading the settings) are awaited
in the order they are given. A frame Claude Code marks as a replay (``isReplay``: the echo of a
model switch, a compaction's) repeats what the conversation has, and is not delivered. ``stop``
ends the CLI in bounded time: its input closes (it exits by itself once nothing runs), then
SIGTERM, then SIGKILL. The CLI and everything it starts carry the runner's ``owner`` token in
their environment, which tells its orphans apart (``orphans``, on Linux); its process is handed
to the ``lifeline`` while it runs, which stops it (and on Linux whatever carries the agent's
part of the token) should the agent die.

Claude Code may be started before the session that will own the runner exists (its start is
most of a first session's wait, and its resume most of a stored one's): ``start`` begins
``connect`` in a task of its own, whoever calls ``connect`` then waits for that same start.
Where Claude Code's messages (``on_message``) and permission questions (``can_use_tool``) go is
the owner's to set, before it reads. ``spawned`` is set as soon as the CLI runs as a process
(``launched`` returns then, or once its start failed); a start that fails before (the system
refuses the process: its command line too long, no file descriptors left) fails within
milliseconds, and ``start_failure`` says why in terms a user can act on.

The reader parses frames itself instead of using ``ClaudeSDKClient.receive_messages``: the SDK's
parser raises on a frame that lacks a key it indexes, and that would end the SDK's own loop and
with it the session. Here such a frame is logged and skipped.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any

import anyio
from anyio.abc import Process
from claude_agent_sdk.client import ClaudeSDKClient
from claude_agent_sdk.types import (
    CanUseTool,
    ClaudeAgentOptions,
    Message,
    PermissionResult,
    ToolPermissionContext,
)

from claude_bg_acp.acp.schema import McpServer
from claude_bg_acp.claude import lifeline, orphans
from claude_bg_acp.claude.created import Choices
from claude_bg_acp.claude.options import build_transport, session_options
from claude_bg_acp.claude.sdk_private import MessageParseError, control_request, parse_message, raw_frames
from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

DISCONNECT_BOUND = 15.0


class ClaudeRunner:
    def __init__(self, options: ClaudeAgentOptions, attest_trust: bool = False) -> None:
        """``attest_trust``: the user trusted the folder, which Claude Code is to record."""
        self.owner = lifeline.owner()
        self.on_message: Callable[[Message], None] = _unread
        self.can_use_tool: CanUseTool = _unowned
        options = replace(
            options, env={**options.env, orphans.OWNER_ENV: self.owner}, can_use_tool=self._asked
        )
        self._transport = build_transport(options, attest_trust=attest_trust)
        self._client = ClaudeSDKClient(options=options, transport=self._transport)
        self._started: anyio.Event | None = None
        self._start_over = anyio.Event()
        self._start_error: Exception | None = None
        self._tied: Process | None = None
        self.cli_session_id: str | None = None
        self.delivered = False
        self.resumes = options.resume is not None
        """Claude Code goes on with a stored conversation (else it starts a new one)."""
        self.project_settings = "project" in (options.setting_sources or [])
        """Claude Code reads the folder's own settings (``claude.trust``)."""

    async def connect(self) -> None:
        """Start Claude Code, or wait for the start under way; raises what stopped it."""
        if self._started is not None:
            await self._started.wait()
        else:
            self._started = anyio.Event()
            try:
                await self._client.connect()
                self._tie()
            except BaseException as exc:
                self._start_error = exc if isinstance(exc, Exception) else RuntimeError("start cancelled")
                raise
            finally:
                self._started.set()
                self._start_over.set()
        if self._start_error is not None:
            raise self._start_error

    async def start(self) -> None:
        """``connect`` for a task of its own: what stops it is for the next ``connect`` to raise."""
        with contextlib.suppress(Exception):
            await self.connect()

    @property
    def spawned(self) -> anyio.Event:
        """Set once the CLI runs as a process (``connect`` returns once it has initialized too)."""
        return self._transport.spawned

    async def launched(self) -> None:
        """Wait until the CLI runs as a process, or its start is over (``connect`` raises why)."""
        async with anyio.create_task_group() as tg:
            for event in (self.spawned, self._start_over):
                tg.start_soon(_first_set, event, tg.cancel_scope)

    async def _asked(
        self, tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        return await self.can_use_tool(tool, tool_input, context)

    async def read(self) -> str:
        """Deliver messages until the CLI's stream ends; return why it ended."""
        try:
            async for frame in self._frames():
                self._deliver(frame)
        except Exception as exc:
            log.debug("Claude Code stream failed", exc_info=True)
            return f"Claude Code failed: {exc}"
        return "Claude Code exited"

    def _frames(self) -> AsyncIterator[dict[str, Any]]:
        return raw_frames(self._client)  # see the module docstring

    def _deliver(self, frame: dict[str, Any]) -> None:
        if frame.get("isReplay") is True:
            log.debug("skipped a replayed frame: %.300r", frame)
            return
        try:
            message = parse_message(frame)
        except MessageParseError as exc:
            log.warning("skipped a frame the SDK cannot parse (%s): %.500r", exc, frame)
            return
        if message is not None:
            self.delivered = True
            self.cli_session_id = self.cli_session_id or frame.get("session_id")
            self.on_message(message)

    async def query(self, content: list[dict[str, Any]], uuid: str | None = None) -> None:
        message: dict[str, Any] = {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
        }
        if uuid is not None:
            message["uuid"] = uuid

        async def one_message() -> AsyncIterator[dict[str, Any]]:
            yield message

        await self._client.query(one_message())

    async def set_mode(self, mode: str) -> None:
        await self._client.set_permission_mode(mode)  # type: ignore[arg-type]

    async def server_info(self) -> dict[str, Any]:
        """Claude Code's answer to the SDK's ``initialize`` (what it offers)."""
        return dict(await self._client.get_server_info() or {})

    async def settings(self) -> dict[str, Any]:
        """What Claude Code has in effect (``get_settings``; the SDK does not wrap it)."""
        return await self._control({"subtype": "get_settings"})

    async def set_model(self, model: str) -> None:
        await self._client.set_model(model)

    async def set_effort(self, level: str) -> None:
        # No control request sets the effort alone; the flag settings layer takes it.
        await self._control({"subtype": "apply_flag_settings", "settings": {"effortLevel": level}})

    async def set_fast(self, on: bool) -> None:
        # As the effort: Claude Code takes fast mode from an SDK host only from the flag settings.
        await self._control({"subtype": "apply_flag_settings", "settings": {"fastMode": on}})

    async def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        return await control_request(self._client, request)

    async def mcp_status(self) -> dict[str, Any]:
        return dict(await self._client.get_mcp_status())

    async def reconnect_mcp(self, server: str) -> None:
        await self._client.reconnect_mcp_server(server)

    async def toggle_mcp(self, server: str, enabled: bool) -> None:
        await self._client.toggle_mcp_server(server, enabled)

    async def interrupt(self) -> None:
        await self._client.interrupt()

    async def stop_task(self, task_id: str) -> None:
        await self._client.stop_task(task_id)

    async def stop(self, grace: float, idle: bool) -> None:
        """End the CLI within about ``grace`` seconds per step, then disconnect.

        Its input closes first; when it is ``idle`` (nothing of it runs any more) it exits by
        itself, else it would wait for its tasks, and SIGTERM follows at once. SIGKILL comes
        last (``terminate`` and ``kill``: TerminateProcess, on Windows). What it leaves running is
        the business of ``leftovers``.
        """
        await self.end(grace, idle)
        await self.disconnect()

    async def end(self, grace: float, idle: bool) -> None:
        """``stop`` but for the disconnect: the reader sees the stream end, and whoever serves
        Claude Code disconnects it."""
        process = self._transport.process
        if process is not None and process.returncode is None:
            with anyio.move_on_after(grace):
                await self._transport.end_input()
            steps = [None, *_ending(process)] if idle else _ending(process)
            for step in steps:
                if step is not None:
                    with contextlib.suppress(ProcessLookupError):
                        step()
                with anyio.move_on_after(grace):
                    await process.wait()
                if process.returncode is not None:
                    break

    async def disconnect(self) -> None:
        """Stop the CLI and everything it runs; bounded, and safe to call more than once."""
        with anyio.move_on_after(DISCONNECT_BOUND, shield=True):
            await self._client.disconnect()
        if self._tied is not None and self._tied.returncode is not None:
            lifeline.untie(self._tied.pid)
            self._tied = None

    def _tie(self) -> None:
        """Claude Code is to stop if the agent dies (``lifeline``)."""
        self._tied = self._transport.process
        if self._tied is not None:
            lifeline.tie(self._tied.pid)


def starting(
    cwd: str,
    cli_path: str | None,
    session_id: str,
    mcp_servers: Sequence[McpServer],
    add_dirs: list[str] | None,
    resume: bool = False,
    project_settings: bool = True,
    choices: Choices | None = None,
) -> ClaudeRunner:
    """A session's runner, to start before the session that will own it exists: with the
    options a session first starts with (mode ``default``, Claude Code's own model, effort and
    fast mode, unless ``choices`` (a session created earlier, never prompted) say otherwise), on the
    stored conversation of that id if it ``resume``s, else on a new one by that id; with the
    folder's own settings unless the folder is yet to be trusted (``claude.trust``)."""
    options = session_options(
        cwd,
        None,
        cli_path,
        resume=session_id if resume else None,
        mcp_servers=mcp_servers,
        add_dirs=add_dirs,
        session_id=None if resume else session_id,
        project_settings=project_settings,
        fast=None if choices is None else choices.fast,
    )
    if choices is not None:
        options.permission_mode = choices.mode  # type: ignore[assignment]
        options.model, options.effort = choices.model, choices.effort  # type: ignore[assignment]
    return ClaudeRunner(options)


def _ending(process: Process) -> list[Callable[[], None] | None]:
    """SIGTERM, then SIGKILL, sent so that Claude Code's exit status stays asyncio's
    (``orphans.send_signal``: ``Popen.send_signal`` polls first, and may take it); on Windows
    ``terminate`` and ``kill`` (TerminateProcess, which polls nothing)."""
    if not host().posix:
        return [process.terminate, process.kill]
    return [
        functools.partial(orphans.send_signal, process.pid, sig) for sig in (signal.SIGTERM, signal.SIGKILL)
    ]


def start_failure(exc: BaseException) -> str:
    """Why Claude Code did not start (``connect`` raised ``exc``), for the user to act on."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__  # the SDK wraps what the system said
    if isinstance(cause, OSError) and cause.errno == errno.E2BIG:
        return (
            "Claude Code could not start: its command line (which carries the session's MCP server"
            " settings) or its environment is larger than the system allows (E2BIG)"
        )
    if isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE):
        name = errno.errorcode[cause.errno]
        return f"Claude Code could not start: too many open files ({name}): raise the limit with ulimit -n"
    return f"Claude Code could not start: {exc}"


async def _first_set(event: anyio.Event, others: anyio.CancelScope) -> None:
    await event.wait()
    others.cancel()


async def _unowned(tool: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
    raise RuntimeError("Claude Code asked a question before the runner had an owner")


def _unread(message: Message) -> None:
    raise RuntimeError("Claude Code's messages are read before the runner has an owner")
