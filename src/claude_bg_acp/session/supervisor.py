"""Supervises a session's Claude Code: starts it, serves it, starts it again when it goes down,
and stops it.

How it works. ``supervise`` runs in the session's task group until the session closes or fails,
and moves the session's phase as Claude Code goes (``session.lifecycle`` draws the table). Each
start resumes the stored conversation of the session's id, or names a new one with it while
nothing is stored yet; a new session's first start may have begun before the session existed
(``starting``); a later start takes the mode, model, effort and fast mode the client chose
(``Config``), so that a Claude Code started again runs as the one before it did. The SDK needs
its client to live in one task: the runner is connected, read and disconnected inside the
session's own task group. Once Claude Code is connected, its messages go to the core from a
reader task of their own (``runner.read``), which moves the phase to ``DOWN`` when the stream
ends; one task (``_perform_commands``) gives it the core's commands in order while it takes them
(``SERVING``, ``STOPPING``): a Claude Code that goes down never answers the command in flight,
and the commands that come meanwhile wait for the next one (a prompt that arrives while Claude
Code starts simply waits).

The first start is what the requests that open a session wait for (``first``, its table in
``session.startup``): its process exists (``spawned``), it said what it offers (``ready``:
models, commands, and the settings in effect, so that an answer can carry real options), it has
the conversation (``outcome``). It fails the session when it fails before the client was told
of the session, or when Claude Code cannot resume a stored conversation: ``supervise`` returns
the error then, in terms a user can act on (``start_failure``), instead of starting over. Later
failures start Claude Code again, after ``RESTART_DELAY`` times the failures in a row, until
``MAX_RESTARTS`` in a row without a message in between: then it is gone for good. The settings
are read again whenever the core asks (``ReadSettings``).

A folder not trusted yet starts Claude Code with the user's settings alone (``claude.trust``);
once the user trusts it (``trust_folder``), Claude Code is stopped and started again at once,
with the folder's settings, on the same conversation, told to record the trust: a restart of
ours, which the core never hears of as a death.

When Claude Code goes down, or is stopped at a close, what it left running (a background shell
lives in a process group of its own) is stopped too (``leftovers``), and the core learns how each
terminal's process ended. A close takes well under a second: the tasks it stops get ``STOP_WAIT``
to confirm their stop through Claude Code, Claude Code ``EXIT_GRACE`` per step to exit, and
whatever stayed silent is finalized from what the agent knows (``CloseTimedOut``); the files of
the stopped terminals then get ``DRAIN_BOUND`` to be read to their end. A session that failed
stops its Claude Code with ``abandon``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, assert_never

import anyio
from anyio.abc import TaskGroup
from claude_agent_sdk.types import CanUseTool

from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.jsonrpc import RpcError
from claude_bg_acp.acp.schema import McpServer
from claude_bg_acp.claude import leftovers, store
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.claude.options import session_options
from claude_bg_acp.claude.runner import ClaudeRunner, start_failure
from claude_bg_acp.claude.server_info import (
    Applied,
    McpServerState,
    read_applied,
    read_mcp_status,
    read_server_info,
)
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import (
    ClaudeCommand,
    ControlMcp,
    Interrupt,
    Query,
    ReadSettings,
    SetEffort,
    SetFast,
    SetModel,
    SetPermissionMode,
    StopTask,
)
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.permission_modes import DEFAULT_MODE
from claude_bg_acp.core.session import SessionCore
from claude_bg_acp.session.lifecycle import (
    DOWN,
    ENDING,
    GONE,
    SERVING,
    STARTING,
    WITH_CLAUDE,
    HostLifecycle,
    HostTrigger,
)
from claude_bg_acp.session.startup import FirstStart, Stream, StreamTrigger

log = logging.getLogger(__name__)

MAX_RESTARTS = 3
"""Claude Code failures in a row (without a single message in between) before giving up."""
RESTART_DELAY = 0.5
STOP_WAIT = 0.2
"""Seconds a close waits for the tasks it stops to confirm their end through Claude Code."""
EXIT_GRACE = 0.15
"""Seconds a closing Claude Code gets at each step: input closed, then SIGTERM, then SIGKILL."""
DRAIN_BOUND = 1.0
"""Seconds a close waits at most for the files of stopped terminals to be read to their end."""


class Supervised(Protocol):
    """What the supervisor needs of its session."""

    session_id: str
    cwd: str
    core: SessionCore
    open: bool
    """The client has been told of the session: a failed start is retried from then on."""

    def handle(self, event: ev.Event) -> None: ...

    def settled_from_now(self) -> anyio.Event:
        """Set at the first input from now on after which every background item is final."""
        ...


@dataclass(frozen=True)
class Launch:
    """What the session's Claude Code is started with, each time, besides its directory."""

    cli_path: str | None
    mcp_servers: Sequence[McpServer]
    add_dirs: list[str]
    tasks_root: str
    """Where its task output files are (what it leaves running is found by them)."""
    project_settings: bool = True
    """It reads the folder's own settings (else the user's alone, until the user trusts it)."""


class ClaudeSupervisor:
    def __init__(
        self,
        session: Supervised,
        lifecycle: HostLifecycle,
        launch: Launch,
        asked: CanUseTool,
        starting: ClaudeRunner | None = None,
    ) -> None:
        """``asked``: where Claude Code's permission questions go; ``starting``: the session's
        Claude Code, already starting (``runner.starting``)."""
        self._session = session
        self._lifecycle = lifecycle
        self._launch = launch
        self._asked = asked
        self._starting = starting
        self._runner: ClaudeRunner | None = None
        """The latest Claude Code: the one being started, served or stopped."""
        self._commands_in, self._commands = anyio.create_memory_object_stream[ClaudeCommand](math.inf)
        self._in_flight = anyio.CancelScope()
        """The command being performed: a Claude Code that goes down never answers it."""
        self._settled_at_close: anyio.Event | None = None
        self._stream = Stream()
        self.first = FirstStart()
        self.started_with: ev.ClaudeStarted | None = None
        """What this session's Claude Code said when it first started."""
        self.project_settings = starting.project_settings if starting is not None else launch.project_settings
        """Claude Code reads the folder's own settings (``trust_folder``)."""
        self._trusted: anyio.Event | None = None
        """Set once Claude Code runs with the settings of the folder the user trusted."""
        self._restarting = False
        """Claude Code is being stopped to start again with the folder's settings."""

    @property
    def claude_running(self) -> bool:
        """Claude Code's stream is open: it may still append a closing line to a shell's output file."""
        return self._stream.open

    def command(self, command: ClaudeCommand) -> None:
        """Give Claude Code a command of the core's, once it takes commands."""
        self._commands_in.send_nowait(command)

    def close(self) -> None:
        """The session closes (the core is told next): Claude Code is stopped."""
        self._settled_at_close = self._session.settled_from_now()
        self._lifecycle.move(HostTrigger.CLOSE)

    async def trust_folder(self) -> None:
        """The user trusted the folder: start Claude Code again with its settings; return once
        it runs with them (or the session ended, or Claude Code is gone)."""
        self.project_settings = True
        trusted = self._trusted = anyio.Event()
        await self._lifecycle.until(SERVING, DOWN, GONE, *ENDING)
        if self._lifecycle.phase is SERVING and self._runner is not None:
            self._restarting = True
            await self._runner.end(EXIT_GRACE, idle=True)
        elif self._lifecycle.phase is not DOWN:
            trusted.set()
        await trusted.wait()

    def _attesting(self) -> bool:
        """The next start is the first with the settings of the folder the user trusted."""
        return self._trusted is not None and not self._trusted.is_set()

    async def supervise(self, tg: TaskGroup) -> RpcError | None:
        """Run Claude Code until the session closes, starting it again when it goes down; the
        error that fails the session if its start does (see the module docstring). Commands
        that no Claude Code took by then are dropped."""
        commands = anyio.CancelScope()
        tg.start_soon(self._perform_commands, commands)
        try:
            return await self._supervise(tg)
        finally:
            commands.cancel()
            if self._trusted is not None:
                self._trusted.set()

    async def _supervise(self, tg: TaskGroup) -> RpcError | None:
        failures = 0
        while self._lifecycle.phase not in ENDING:
            runner = await self._next_runner()
            reason = await self._serve(tg, runner)
            if reason is None:
                return None
            stopped = await self._stop_left_by(runner)
            if self._restarting:
                self._restarting = False
                self._lifecycle.move(HostTrigger.TRUSTED)
                continue
            if not self.first.settled and (runner.resumes or not self._session.open):
                resumed = f"Claude Code cannot resume session {self._session.session_id}: {reason}"
                error = rpc_error(Failure(Failing.ERROR, resumed if runner.resumes else reason))
                self.first.failed(error)
                return error
            self.first.went_down()
            failures = 0 if runner.delivered else failures + 1
            fatal = failures >= MAX_RESTARTS
            log.warning("session %s: %s%s", self._session.session_id, reason, "" if fatal else "; restarting")
            self._session.handle(ev.ClaudeDied(reason, fatal, stopped))
            if fatal:
                self.first.failed(rpc_error(Failure(Failing.ERROR, reason)))
                if self._trusted is not None:
                    self._trusted.set()
                if self._lifecycle.phase is DOWN:
                    self._lifecycle.move(HostTrigger.FATAL)
                await self._lifecycle.until(*ENDING)
                return None
            with anyio.move_on_after(RESTART_DELAY * failures):
                await self._lifecycle.until(*ENDING)
            if self._lifecycle.phase is DOWN:
                self._lifecycle.move(HostTrigger.RESTART)
        return None

    async def _next_runner(self) -> ClaudeRunner:
        """The Claude Code to start (the one started ahead, the first time); ``resumes`` says
        whether it resumes a stored conversation."""
        runner, self._starting = self._starting, None
        session, launch = self._session, self._launch
        if runner is None:
            # Nothing is stored before the first prompt: until then the id names a new one.
            stored = await store.exists(session.session_id, session.cwd)
            options = session_options(
                session.cwd,
                None,  # the runner's own, bound below
                launch.cli_path,
                resume=session.session_id if stored else None,
                mcp_servers=launch.mcp_servers,
                add_dirs=launch.add_dirs,
                session_id=None if stored else session.session_id,
                project_settings=self.project_settings,
                fast=session.core.config.chosen_fast,
            )
            mode = session.core.modes.current
            # The folder's settings, trusted just now, choose the mode unless the user did.
            attest = self._attesting()
            options.permission_mode = None if attest and mode == DEFAULT_MODE else mode  # type: ignore[assignment]
            options.model = session.core.config.chosen_model
            options.effort = session.core.config.chosen_effort  # type: ignore[assignment]
            runner = ClaudeRunner(options, attest_trust=attest)
        self._runner = runner
        if runner.resumes:
            session.handle(ev.ClaudeResuming())
        runner.on_message = lambda message: session.handle(ev.ClaudeMessage(message))
        runner.can_use_tool = self._asked
        return runner

    async def _serve(self, tg: TaskGroup, runner: ClaudeRunner) -> str | None:
        """Serve one Claude Code process; the reason it went down, or None once it was stopped
        for the close."""
        try:
            await self._connect(tg, runner)
        except Exception as exc:
            log.debug("Claude Code did not start", exc_info=True)
            if self._lifecycle.phase is STARTING:
                self._lifecycle.move(HostTrigger.START_FAILED)
            await runner.disconnect()
            return start_failure(exc)
        reason = "Claude Code exited"

        async def read() -> None:
            nonlocal reason
            reason = await runner.read()
            self._stream.move(StreamTrigger.ENDED)
            if self._lifecycle.phase is SERVING:
                self._lifecycle.move(HostTrigger.STREAM_ENDED)

        # A close during the start leaves it to connect; it is stopped then.
        self._lifecycle.move(HostTrigger.CONNECTED)
        self._stream.move(StreamTrigger.CONNECTED)
        tg.start_soon(read)
        await self._started(runner)
        self.first.serve()
        await self._lifecycle.until(DOWN, *ENDING)
        if self._lifecycle.phase in ENDING:
            # The close's commands (stopping its tasks) went through it until then.
            await self._stop(runner)
            return None
        self._in_flight.cancel()
        await runner.disconnect()
        return reason

    async def _connect(self, tg: TaskGroup, runner: ClaudeRunner) -> None:
        """``runner.connect``, telling ``spawned`` as soon as the process exists."""
        watch = anyio.CancelScope()

        async def tell() -> None:
            with watch:
                await runner.spawned.wait()
                self.first.spawn()

        tg.start_soon(tell)
        try:
            await runner.connect()
        finally:
            watch.cancel()

    async def _started(self, runner: ClaudeRunner) -> None:
        started = ev.ClaudeStarted(read_server_info(await runner.server_info()), await _applied(runner))
        self.started_with = self.started_with or started
        self._session.handle(started)
        self.first.announce()
        if self._attesting() and runner.project_settings:
            assert self._trusted is not None
            self._trusted.set()

    async def _stop(self, runner: ClaudeRunner) -> None:
        """Stop Claude Code for the close (see the module docstring)."""
        # Stopped tasks confirm their end through Claude Code's own events, which tell how they
        # ended: a short wait for them, then Claude Code goes, and so does what it left running.
        assert self._settled_at_close is not None
        with anyio.move_on_after(STOP_WAIT):
            await self._settled_at_close.wait()
        await runner.stop(EXIT_GRACE, idle=self._session.core.settled)
        self._in_flight.cancel()
        self._stream.move(StreamTrigger.ENDED)
        stopped = await self._stop_left_by(runner)
        settled = self._session.settled_from_now()
        self._session.handle(ev.CloseTimedOut(stopped))
        with anyio.move_on_after(DRAIN_BOUND):
            await settled.wait()

    async def abandon(self) -> dict[str, ExitInfo]:
        """The session failed: stop its Claude Code (the one starting, if none was served yet)
        and what it left running; how each task's process ended."""
        runner = self._runner or self._starting
        if runner is None:
            return {}
        try:
            await runner.stop(EXIT_GRACE, idle=False)
        finally:
            stopped = await self._stop_left_by(runner)
        return stopped

    async def _stop_left_by(self, runner: ClaudeRunner) -> dict[str, ExitInfo]:
        """Stop what ``runner``'s Claude Code left running; how each task's process ended."""
        session_id = runner.cli_session_id or self._session.session_id
        return await leftovers.stop_left_by(runner.owner, self._launch.tasks_root, session_id)

    # --- commands -----------------------------------------------------------------------------------

    async def _perform_commands(self, scope: anyio.CancelScope) -> None:
        with scope:
            async for command in self._commands:
                await self._lifecycle.until(*WITH_CLAUDE)
                runner = self._runner
                assert runner is not None
                with anyio.CancelScope() as self._in_flight:
                    try:
                        await self._command(runner, command)
                    except Exception:
                        # The stream's end reports a dead CLI; one failed command must not stop the rest.
                        log.exception(
                            "session %s: %s failed", self._session.session_id, type(command).__name__
                        )

    async def _command(self, runner: ClaudeRunner, command: ClaudeCommand) -> None:
        match command:
            case Query(content, uuid):
                await runner.query(content, uuid)
            case Interrupt():
                await runner.interrupt()
            case SetPermissionMode(mode):
                try:
                    await runner.set_mode(mode)
                except Exception as exc:
                    log.warning(
                        "session %s: Claude Code refused mode %s: %s", self._session.session_id, mode, exc
                    )
                    self._session.handle(ev.ModeRefused(mode))
            case StopTask(task_id):
                await runner.stop_task(task_id)
            case SetModel(model):
                await runner.set_model(model)
            case SetEffort(level):
                await runner.set_effort(level)
            case ControlMcp():
                self._session.handle(await _mcp(runner, command))
            case SetFast(on):
                await runner.set_fast(on)
            case ReadSettings():
                # Answered whatever happens, a Claude Code gone meanwhile included: the core
                # holds Claude Code's reports until then. A closing one's input is closed.
                applied = None
                try:
                    if self._lifecycle.phase is SERVING:
                        applied = await _applied(runner)
                finally:
                    self._session.handle(ev.SettingsRead(applied))
            case _:
                assert_never(command)


async def _applied(runner: ClaudeRunner) -> Applied | None:
    """What Claude Code has in effect, or None when it cannot say."""
    try:
        return read_applied(await runner.settings())
    except Exception as exc:
        log.warning("could not read Claude Code's settings: %s", exc)
        return None


async def _mcp(runner: ClaudeRunner, command: ControlMcp) -> ev.McpAnswered:
    """Do the ``/mcp`` command, then read every server's state; Claude Code's refusals are the
    answer's (an unknown server, one it cannot reconnect)."""
    failure: str | None = None
    try:
        if command.server is not None and command.action == "reconnect":
            await runner.reconnect_mcp(command.server)
        elif command.server is not None and command.action in ("enable", "disable"):
            await runner.toggle_mcp(command.server, command.action == "enable")
    except Exception as exc:
        failure = str(exc) or type(exc).__name__
    servers: tuple[McpServerState, ...] | None = None
    try:
        servers = read_mcp_status(await runner.mcp_status())
    except Exception:
        log.warning("MCP status not read", exc_info=True)
    return ev.McpAnswered(command, servers, failure)
