"""Hosts one live ACP session: the sans-IO core, its Claude Code runner, its output tailer, and
the effects between them.

Every input (a client request, an SDK message, a permission answer, tailed output, a tick)
becomes one of the core's events and is handled on the event loop, one at a time; the effects
it returns go into one ordered outbox. A single task
performs them: updates are written in the order the core produced them (those that are ready
together in one write), and a prompt's answer is released only after every update before it
was written. SDK commands go to a second queue
with its own task, so a slow ``interrupt`` never holds back output.

The runner is connected, read and disconnected inside this session's own task (the SDK needs
its client to live in one task); a prompt that arrives while Claude Code starts simply waits in
the command queue. The session id is Claude Code's: each start resumes the stored conversation
of that id, or names a new one with it while nothing is stored yet. A stored conversation
Claude Code cannot resume fails the session at its first start (``started`` says why), instead
of starting over; so does a first start that fails before the client was told of the session
(``open``): the answer then says why, in terms a user can act on (``start_failure``). Once
connected, Claude Code says what it offers (models, commands) and what it has in effect
(``ready`` and ``started`` wait for that, so that an answer can carry real options; ``spawned``
only for its process to exist); the settings are read again whenever the core asks.

A session fails alone. An exception in any of its tasks ends it, and only it: Claude Code and
what it left running are stopped, the client's open permission requests are withdrawn, every
request waiting on the session fails with the reason (``failure``), and the exception goes to
the agent, which forgets the session and gives the reason to the next request that names it.

When Claude Code dies, or the session closes and it is stopped, what it left running (a
background shell lives in a process group of its own) is stopped too (``leftovers``), and the
core learns how each terminal's process ended. A close takes well under a second: the tasks get
``STOP_WAIT`` to confirm their stop through Claude Code, Claude Code ``EXIT_GRACE`` per step to
exit, and whatever stayed silent is finalized from what the agent knows.

Background output comes from one ``OutputTailer`` per session. Its consumer feeds each batch of
events to the core and then waits at a barrier until the resulting updates are written: the tailer only
reads more when the client's pipe has taken what came before, so a slow client makes the
tailer fall behind in the file (and send a snapshot) instead of filling memory. A ticker calls
the core's ``tick`` at its next deadline (orphaned tasks, stop confirmations, follow-ups).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from itertools import count
from typing import Any, assert_never

import anyio
from anyio.abc import TaskGroup
from claude_agent_sdk.types import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)

from claude_bg_acp.acp import errors
from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, RequestId, RpcError
from claude_bg_acp.acp.schema import McpServer, PermissionResponse, PromptParams
from claude_bg_acp.acp.updates import session_update_line
from claude_bg_acp.claude import leftovers, store
from claude_bg_acp.claude.conventions import tasks_base, tasks_root
from claude_bg_acp.claude.options import may_bypass_permissions, session_options
from claude_bg_acp.claude.runner import ClaudeRunner, start_failure
from claude_bg_acp.claude.server_info import Applied, read_applied, read_server_info
from claude_bg_acp.closing_line import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import (
    AskPermission,
    ClaudeCommand,
    Decide,
    Effect,
    Fail,
    FinishTail,
    Interrupt,
    Log,
    Notify,
    Query,
    ReadSettings,
    ReadTitle,
    Reply,
    SetEffort,
    SetModel,
    SetPermissionMode,
    StopTask,
    Tail,
    Ticket,
    WithdrawPermission,
)
from claude_bg_acp.core.errors import Refused
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.core.session import SessionCore
from claude_bg_acp.stdio import Endpoint
from claude_bg_acp.tail import Chunk, Final, Grid, OutputTailer, Reset, Snapshot, TailerOptions, TailEvent

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
FLUSH_BOUND = 5.0
"""Seconds a closed session's last updates may take to be written before it stops anyway."""
TRAILER_WAIT = 0.3
"""Seconds a finished shell's file may take to receive Claude Code's closing line."""


@dataclass
class Waiter:
    """One answer that some task is waiting for."""

    done: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None
    error: RpcError | None = None

    def settle(self, value: Any = None, error: RpcError | None = None) -> None:
        self.value, self.error = value, error
        self.done.set()

    async def wait(self) -> Any:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


@dataclass
class ClaudeQuestion:
    """A permission question of Claude Code's, waiting for the core's decision."""

    waiter: Waiter
    suggestions: list[PermissionUpdate]


@dataclass
class Ask:
    """The client request that puts a question to the user; it may outlive the question."""

    request_id: int
    scope: anyio.CancelScope


class SessionHost:
    def __init__(
        self,
        session_id: str,
        cwd: str,
        presenter: Presenter,
        endpoint: Endpoint,
        cli_path: str | None = None,
        tailer_options: TailerOptions | None = None,
        grid: Grid | None = None,
        mcp_servers: Sequence[McpServer] = (),
        add_dirs: list[str] | None = None,
        clock: Callable[[], float] = anyio.current_time,
        known: ev.ClaudeStarted | None = None,
        starting: ClaudeRunner | None = None,
    ) -> None:
        """``known``: what another session's Claude Code said at its start, to go by until this
        one's says otherwise; ``starting``: this session's Claude Code, already starting on a new
        conversation or on the stored one (``runner.starting``)."""
        self._mcp_servers = mcp_servers
        self._add_dirs = add_dirs or []
        self.session_id = session_id
        self.cwd = cwd
        self._tasks_root = tasks_root(cwd)
        self.core = SessionCore(
            session_id,
            presenter,
            presenter.policy,
            cwd,
            self._tasks_root,
            allow_bypass=may_bypass_permissions(),
            instance=uuid.uuid4().hex,
        )
        self._endpoint = endpoint
        self._cli_path = cli_path
        self._clock = clock
        self._tickets = count(1)
        self._waiters: dict[Ticket, Waiter] = {}
        """Every client request the core answers through a ticket (prompts, config choices, stops
        by task id), waiting for its answer."""
        self._prompt_requests: dict[RequestId, Ticket] = {}
        self._questions: dict[Ticket, ClaudeQuestion] = {}
        self._asks: dict[Ticket, Ask] = {}
        self._outbox_in, self._outbox = anyio.create_memory_object_stream[Effect | anyio.Event](math.inf)
        self._lines: list[bytes] = []
        self._unperformed = 0  # effects (and barriers) sent to the outbox, not yet performed
        self._commands_in, self._commands = anyio.create_memory_object_stream[ClaudeCommand](math.inf)
        self._closing = anyio.Event()
        self._finished = anyio.Event()
        self._deadline_moved = anyio.Event()
        self._settled = anyio.Event()
        self._tailer = OutputTailer(tailer_options, root=tasks_base(), grid=grid)
        self._runner: ClaudeRunner | None = None
        self._starting = starting
        self._runner_ready = anyio.Event()
        self._start = Waiter()
        self._command_scope = anyio.CancelScope()
        """The command in flight: a Claude Code that is gone never answers it."""
        self._claude_running = False
        """Claude Code runs, and so may still append a closing line to a shell's output file."""
        self._ready = anyio.Event()
        self._spawned = anyio.Event()
        self._draining: set[str] = set()
        """Tasks whose output file is being read to its end."""
        self.open = False
        """The client has been told of the session: a failed start is retried from then on."""
        self.failure: RpcError | None = None
        """Why the session ended without being closed (its Claude Code could not start, or one
        of its tasks raised): the error a request naming it gets."""
        self.started_with: ev.ClaudeStarted | None = None
        """What this session's Claude Code said when it first started."""
        if known is not None:
            self.handle(known)
        self._tg: TaskGroup | None = None

    # --- life cycle -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the session until ``close`` (or until it failed: ``failure``); Claude Code is
        stopped before this returns. An exception in a task of the session is raised once what
        the session started is stopped (see the module docstring)."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._perform_effects)
                await tg.start(self._tailer.run)
                tg.start_soon(self._relay_output)
                ticker = anyio.CancelScope()
                tg.start_soon(self._tick, ticker)
                tg.start_soon(self._perform_commands)
                await self._run_claude(tg)
                # Let the final updates (and answers) of the close go out before stopping.
                ticker.cancel()
                self._tailer.close()
                self._outbox_in.close()
                self._commands_in.close()
                tg.cancel_scope.deadline = anyio.current_time() + FLUSH_BOUND
        except Exception as exc:
            why = f"an internal error ended it ({_innermost(exc)!r}); the agent's log has the details"
            message = f"Session {self.session_id} failed: {why}"
            self.failure = RpcError(INTERNAL_ERROR, message, {"sessionId": self.session_id})
            with anyio.CancelScope(shield=True):
                await self._abandon(message)
            raise
        finally:
            if self.failure is not None:
                self._fail_waiting(self.failure)
            self._failed_start(
                self.failure or RpcError(INTERNAL_ERROR, "The session was closed before Claude Code started")
            )
            self._finished.set()

    async def _abandon(self, reason: str) -> None:
        """After a failure, which no task of the session outlived: withdraw the client's
        permission requests, stop Claude Code and what it left running, and tell the end."""
        for ticket in list(self._asks):
            await self._withdraw(ticket)
        runner = self._runner or self._starting
        stopped: dict[str, ExitInfo] = {}
        if runner is not None:
            try:
                await runner.stop(EXIT_GRACE, idle=False)
            finally:
                stopped = await self._stop_left_by(runner)
        await self._tell_the_end(reason, stopped)

    async def _tell_the_end(self, reason: str, stopped: dict[str, ExitInfo]) -> None:
        """Write the updates left to write, then what the failure ended, told as the death of a
        Claude Code that is not replaced (the turn ends with an error, and its tool calls and
        background work with it), as far as the core can still tell it. No file is read any
        more: a terminal whose end was being read ends with what was read of it."""
        unread = set(self._draining)
        effects: list[Effect | anyio.Event] = list(iter(self._next_effect, None))
        event: ev.Event | None = ev.ClaudeDied(reason, True, stopped)
        while True:
            for effect in effects:
                if isinstance(effect, Notify | Reply | Fail):
                    await self._perform_safely(effect)
                elif isinstance(effect, FinishTail):
                    unread.add(effect.task_id)
                elif isinstance(effect, anyio.Event):
                    effect.set()  # nothing more will be written: whoever waits for it goes on
            if event is None and unread:
                event = ev.OutputEnded(unread.pop(), b"", None)
            if event is None:
                break
            try:
                effects = [*self.core.handle(event, self._clock())]
            except Exception:
                log.exception("session %s: could not tell how it ended", self.session_id)
                break
            event = None
        await self._flush()

    def _fail_waiting(self, error: RpcError) -> None:
        for waiter in self._waiters.values():
            if not waiter.done.is_set():
                waiter.settle(error=error)

    async def ready(self) -> None:
        """Wait until Claude Code said what it offers (or could not start)."""
        await self._ready.wait()

    async def spawned(self) -> None:
        """Wait until this session's Claude Code runs as a process (or could not start)."""
        await self._spawned.wait()

    @property
    def start_error(self) -> RpcError | None:
        """Why Claude Code could not start, once that is known (the session is over then)."""
        return self._start.error

    async def _run_claude(self, tg: TaskGroup) -> None:
        """Run Claude Code until the session closes, starting it again if it dies.

        A restart resumes the same Claude Code conversation, so a crash costs the turn that was
        running (it ends with an error) but not the session. After ``MAX_RESTARTS`` failures in
        a row the session gives up and refuses further prompts with the reason.
        """
        failures = 0
        while not self._closing.is_set():
            runner, self._starting = self._starting, None
            if runner is None:
                # Nothing is stored before the first prompt: until then the id names a new one.
                stored = await store.exists(self.session_id, self.cwd)
                options = session_options(
                    self.cwd,
                    None,  # the runner's own, bound below
                    self._cli_path,
                    resume=self.session_id if stored else None,
                    mcp_servers=self._mcp_servers,
                    add_dirs=self._add_dirs,
                    session_id=None if stored else self.session_id,
                )
                options.permission_mode = self.core.modes.current  # type: ignore[assignment]
                options.model = self.core.config.chosen_model
                options.effort = self.core.config.chosen_effort  # type: ignore[assignment]
                runner = ClaudeRunner(options)
            self._runner = runner
            if runner.resumes:
                self.handle(ev.ClaudeResuming())
            runner.on_message = lambda message: self.handle(ev.ClaudeMessage(message))
            runner.can_use_tool = self._can_use_tool
            reason = await self._serve_runner(tg, runner)
            if reason is None:
                return
            stopped = await self._stop_left_by(runner)
            if not self._start.done.is_set() and (runner.resumes or not self.open):
                resumed = f"Claude Code cannot resume session {self.session_id}: {reason}"
                self.failure = RpcError(INTERNAL_ERROR, resumed if runner.resumes else reason)
                self._failed_start(self.failure)
                return
            self._ready.set()
            failures = 0 if runner.delivered else failures + 1
            fatal = failures >= MAX_RESTARTS
            log.warning("session %s: %s%s", self.session_id, reason, "" if fatal else "; restarting")
            self.handle(ev.ClaudeDied(reason, fatal, stopped))
            if fatal:
                self._failed_start(RpcError(INTERNAL_ERROR, reason))
                await self._closing.wait()
                return
            with anyio.move_on_after(RESTART_DELAY * failures):
                await self._closing.wait()

    async def _serve_runner(self, tg: TaskGroup, runner: ClaudeRunner) -> str | None:
        """Serve one Claude Code process; the reason it died, or None once the session closed."""
        try:
            await self._connect(tg, runner)
        except Exception as exc:
            log.debug("Claude Code did not start", exc_info=True)
            await runner.disconnect()
            return start_failure(exc)
        exited = anyio.Event()
        reason = "Claude Code exited"

        async def read() -> None:
            nonlocal reason
            reason = await runner.read()
            self._claude_running = False
            exited.set()

        self._claude_running = True
        tg.start_soon(read)
        self._runner_ready.set()
        await self._started(runner)
        if not self._start.done.is_set():
            self._start.settle()
        async with anyio.create_task_group() as race:
            race.start_soon(_set_on, self._closing, exited)
            await exited.wait()
            race.cancel_scope.cancel()
        if self._closing.is_set():
            # The runner stays ready: the close's stop_task commands still go through it.
            await self._stop_runner(runner)
            return None
        self._runner_ready = anyio.Event()
        self._command_scope.cancel()
        await runner.disconnect()
        return reason

    async def _connect(self, tg: TaskGroup, runner: ClaudeRunner) -> None:
        """``runner.connect``, telling ``spawned`` as soon as the process exists."""
        watch = anyio.CancelScope()

        async def tell() -> None:
            with watch:
                await _set_on(runner.spawned, self._spawned)

        tg.start_soon(tell)
        try:
            await runner.connect()
        finally:
            watch.cancel()

    async def _started(self, runner: ClaudeRunner) -> None:
        started = ev.ClaudeStarted(read_server_info(await runner.server_info()), await _applied(runner))
        self.started_with = self.started_with or started
        self.handle(started)
        self._ready.set()

    async def _stop_runner(self, runner: ClaudeRunner) -> None:
        # Stopped tasks confirm their end through Claude Code's own events, which tell how they
        # ended: a short wait for them, then Claude Code goes, and so does what it left running.
        with anyio.move_on_after(STOP_WAIT):
            await self._settled.wait()
        await runner.stop(EXIT_GRACE, idle=self.core.settled)
        self._command_scope.cancel()
        self._claude_running = False
        stopped = await self._stop_left_by(runner)
        self._settled = anyio.Event()
        self.handle(ev.CloseTimedOut(stopped))
        with anyio.move_on_after(DRAIN_BOUND):
            await self._settled.wait()

    async def _stop_left_by(self, runner: ClaudeRunner) -> dict[str, ExitInfo]:
        """Stop what ``runner``'s Claude Code left running; how each task's process ended."""
        session_id = runner.cli_session_id or self.session_id
        return await leftovers.stop_left_by(runner.owner, self._tasks_root, session_id)

    def _failed_start(self, error: RpcError) -> None:
        if not self._start.done.is_set():
            self._start.settle(error=error)
        self._spawned.set()
        self._ready.set()

    async def started(self) -> None:
        """Wait until Claude Code has the conversation; raises ``RpcError`` when it could not
        resume the stored one (the session is over then)."""
        await self._start.wait()

    def hold(self) -> None:
        """A client asked to re-attach with a replay: what the session says live waits for the
        replay's end (``attach``; ``release`` should the request fail before it)."""
        self.handle(ev.Attaching())

    def release(self) -> None:
        """The request that asked for a replay is over: what was held goes out, if the
        replay's end did not send it already."""
        self.handle(ev.Recalled(complete=False))

    async def attach(self, history: AsyncGenerator[ev.StoredConversation, None] | None) -> None:
        """A client (re)attaches: replay ``history`` if given, each part written as soon as it
        is read (while Claude Code starts), live updates held meanwhile, then, once Claude Code
        has the conversation, the current state; return once all of it is written (before the
        client's request is answered). Raises ``RpcError`` like ``started`` (the replay stops
        there, its end not marked)."""
        if history is not None:
            self.hold()
            complete = False
            async with aclosing(history):
                try:
                    async for part in history:
                        if self._start.error is not None:
                            break
                        self.handle(ev.Recall(part))
                        await self.written()  # no more of it in memory than a part
                    else:
                        complete = True
                finally:
                    self.handle(ev.Recalled(complete))
        await self.started()
        self.handle(ev.Resync())
        await self.written()

    async def close(self) -> None:
        """Cancel what is pending, stop Claude Code, and return once it is gone."""
        self._settled = anyio.Event()
        self.handle(ev.Close())
        self._closing.set()
        await self._finished.wait()

    # --- inputs -------------------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> None:
        """Feed one event to the core; raises ``RpcError`` for a client request it refuses."""
        try:
            effects = self.core.handle(event, self._clock())
        except Refused as refusal:
            raise errors.refused(refusal) from None
        self._feed(effects)

    def _feed(self, effects: list[Effect]) -> None:
        self._send(effects)
        self._deadline_moved.set()
        if self.core.settled:
            self._settled.set()

    def _send(self, effects: list[Effect]) -> None:
        try:
            for effect in effects:
                self._outbox_in.send_nowait(effect)
                self._unperformed += 1
        except anyio.ClosedResourceError:
            log.debug("session %s is closed; dropped %d effects", self.session_id, len(effects))

    async def written(self) -> None:
        """Wait until everything fed so far has been performed."""
        if self.failure is not None:
            return  # the session failed: nothing more is performed
        barrier = anyio.Event()
        try:
            self._outbox_in.send_nowait(barrier)
        except anyio.ClosedResourceError:
            return
        self._unperformed += 1
        await barrier.wait()

    async def prompt(self, params: PromptParams, request_id: RequestId) -> Any:
        if self._closing.is_set():
            raise RpcError(INTERNAL_ERROR, "The session is closed")
        ticket = next(self._tickets)
        waiter = self._waiters[ticket] = Waiter()
        self._prompt_requests[request_id] = ticket
        self.handle(ev.Prompt(ticket, params.prompt))
        try:
            return await waiter.wait()
        finally:
            self._waiters.pop(ticket, None)
            self._prompt_requests.pop(request_id, None)

    async def answer(self, request: Callable[[Ticket], ev.Event]) -> Any:
        """A client request the core answers through a ticket (``Reply`` or ``Fail``)."""
        if self._closing.is_set():
            raise RpcError(INTERNAL_ERROR, "The session is closed")
        ticket = next(self._tickets)
        waiter = self._waiters[ticket] = Waiter()
        try:
            self.handle(request(ticket))
            return await waiter.wait()
        finally:
            self._waiters.pop(ticket, None)

    def withdraw(self, request_id: RequestId) -> bool:
        """The client withdrew a prompt request (``$/cancel_request``); False if not ours."""
        ticket = self._prompt_requests.get(request_id)
        if ticket is None:
            return False
        self.handle(ev.WithdrawPrompt(ticket))
        return True

    def has_child(self, session_id: str) -> bool:
        return self.core.has_child(session_id)

    def answer_fields(self) -> dict[str, Any]:
        """The config options (and v1's modes) for an answer that tells the client of the
        session; ``AnswerWritten`` must follow once that answer is written."""
        return self.core.presenter.answer_fields(self.core.answer())

    async def _can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        ticket = next(self._tickets)
        question = self._questions[ticket] = ClaudeQuestion(Waiter(), list(context.suggestions))
        self.handle(ev.PermissionAsked(ticket, tool_name, tool_input, context.tool_use_id, context.agent_id))
        try:
            result: PermissionResult = await question.waiter.wait()
            return result
        except anyio.get_cancelled_exc_class():
            # Claude Code withdrew the question (or went away): so does the client's prompt.
            self.handle(ev.PermissionAbandoned(ticket))
            raise
        finally:
            self._questions.pop(ticket, None)

    # --- effects ------------------------------------------------------------------------------------

    async def _perform_effects(self) -> None:
        async for first in self._outbox:
            effect: Effect | anyio.Event | None = first
            performed = 0
            while effect is not None:
                await self._perform_safely(effect)
                performed += 1
                effect = self._next_effect()
            await self._flush()
            self._unperformed -= performed

    async def _perform_safely(self, effect: Effect | anyio.Event) -> None:
        try:
            await self._perform(effect)
        except Exception:
            # One effect that cannot be performed (an update no encoder takes, say) must not
            # end this session, nor the agent and its other sessions with it.
            log.exception("session %s: could not perform %s", self.session_id, type(effect).__name__)

    def _next_effect(self) -> Effect | anyio.Event | None:
        try:
            return self._outbox.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return None

    async def _flush(self) -> None:
        """Write the updates collected so far, in one write."""
        if self._lines:
            data = b"".join(self._lines)
            self._lines.clear()
            await self._endpoint.send_line(data)

    async def _perform(self, effect: Effect | anyio.Event) -> None:
        if not isinstance(effect, Notify):
            await self._flush()  # what comes before it must be written first
        match effect:
            case Notify(session_id, update):
                self._lines.append(session_update_line(session_id, update))
            case anyio.Event():
                effect.set()
            case Reply(ticket, result):
                self._settle_prompt(ticket, value=result)
            case Fail(ticket, failure):
                self._settle_prompt(ticket, error=errors.failed(failure))
            case AskPermission():
                assert self._tg is not None
                self._tg.start_soon(self._ask, effect)
            case WithdrawPermission(ticket):
                await self._withdraw(ticket)
            case Decide():
                self._decide(effect)
            case Tail(task_id, path):
                self._tailer.follow(task_id, path)
            case FinishTail(task_id):
                assert self._tg is not None
                self._draining.add(task_id)
                self._tg.start_soon(self._finish_tail, task_id)
            case ReadTitle():
                assert self._tg is not None
                self._tg.start_soon(self._read_title)
            case Log(message):
                log.warning("session %s: %s", self.session_id, message)
            case (
                Query()
                | Interrupt()
                | StopTask()
                | SetPermissionMode()
                | SetModel()
                | SetEffort()
                | ReadSettings()
            ):
                self._commands_in.send_nowait(effect)
            case _:
                assert_never(effect)

    async def _read_title(self) -> None:
        try:
            title, updated_at = await store.title(self.session_id, self.cwd)
        except Exception:
            log.warning("session %s: could not read its title", self.session_id, exc_info=True)
            return
        self.handle(ev.TitleRead(title, updated_at))

    # --- background output ----------------------------------------------------------------------------

    async def _relay_output(self) -> None:
        async for batch in self._tailer:
            now = self._clock()
            effects = [effect for event in batch for effect in self.core.handle(_output_event(event), now)]
            # Output only becomes terminal output: it moves no deadline and settles nothing, so
            # neither the ticker nor a close is told (that would cost more than relaying it).
            if self._unperformed == 0 and (lines := _update_lines(effects)) is not None:
                # Everything before it is written: write it now rather than through the outbox
                # (its order kept, with one task switch fewer per batch).
                if lines:
                    await self._endpoint.send_line(b"".join(lines))
            else:
                self._send(effects)
                await self.written()

    async def _finish_tail(self, task_id: str) -> None:
        """Relay the rest of a finished task's file (with backpressure), then how it exited."""
        ended = ev.OutputEnded(task_id, b"", None)
        try:
            async for event in self._tailer.drain(task_id, trailer_timeout=self._trailer_wait):
                if isinstance(event, Final):
                    ended = ev.OutputEnded(task_id, event.remaining, event.exit)
                    break
                self.handle(_output_event(event))
                await self.written()
        except (KeyError, OSError) as exc:
            log.warning("session %s: could not read the end of %s: %s", self.session_id, task_id, exc)
        self._draining.discard(task_id)
        self.handle(ended)

    @property
    def _trailer_wait(self) -> float:
        return TRAILER_WAIT if self._claude_running else 0.0

    async def _tick(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._tick_forever()

    async def _tick_forever(self) -> None:
        while True:
            self._deadline_moved = anyio.Event()
            deadline = self.core.next_deadline()
            if deadline is None:
                await self._deadline_moved.wait()
                continue
            with anyio.move_on_after(max(0.0, deadline - self._clock())):
                await self._deadline_moved.wait()
            if self._clock() >= deadline:
                self.handle(ev.Tick())

    def _settle_prompt(self, ticket: Ticket, value: Any = None, error: RpcError | None = None) -> None:
        waiter = self._waiters.get(ticket)
        if waiter is not None:
            waiter.settle(value, error)

    async def _perform_commands(self) -> None:
        async for command in self._commands:
            await self._runner_ready.wait()
            runner = self._runner
            assert runner is not None
            with anyio.CancelScope() as self._command_scope:
                try:
                    await self._command(runner, command)
                except Exception:
                    # The stream's end reports a dead CLI; one failed command must not stop the rest.
                    log.exception("session %s: %s failed", self.session_id, type(command).__name__)

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
                    log.warning("session %s: Claude Code refused mode %s: %s", self.session_id, mode, exc)
                    self.handle(ev.ModeRefused(mode))
            case StopTask(task_id):
                await runner.stop_task(task_id)
            case SetModel(model):
                await runner.set_model(model)
            case SetEffort(level):
                await runner.set_effort(level)
            case ReadSettings():
                # Answered whatever happens, a Claude Code gone meanwhile included: the core
                # holds Claude Code's reports until then. A closing one's input is closed.
                applied = None
                try:
                    if not self._closing.is_set():
                        applied = await _applied(runner)
                finally:
                    self.handle(ev.SettingsRead(applied))
            case _:
                assert_never(command)

    async def _ask(self, effect: AskPermission) -> None:
        ask = self._asks[effect.ticket] = Ask(self._endpoint.new_request_id(), anyio.CancelScope())
        option_id: str | None = None
        with ask.scope:
            try:
                result = await self._endpoint.request(
                    "session/request_permission", effect.params, ask.request_id
                )
                outcome = PermissionResponse.model_validate(result).outcome
                option_id = outcome.option_id if outcome.outcome == "selected" else None
            except Exception as exc:
                log.warning("permission request failed, treated as rejected: %s", exc)
        self._asks.pop(effect.ticket, None)
        if not ask.scope.cancelled_caught:
            self.handle(ev.PermissionAnswered(effect.ticket, option_id))

    async def _withdraw(self, ticket: Ticket) -> None:
        ask = self._asks.pop(ticket, None)
        if ask is None:
            return
        ask.scope.cancel()
        await self._endpoint.notify("$/cancel_request", {"requestId": ask.request_id})

    def _decide(self, effect: Decide) -> None:
        question = self._questions.get(effect.ticket)
        if question is None:
            return
        result: PermissionResult
        if effect.allow:
            result = PermissionResultAllow(
                updated_permissions=question.suggestions if effect.always else None
            )
        else:
            result = PermissionResultDeny(message=effect.message, interrupt=effect.interrupt)
        question.waiter.settle(result)


async def _applied(runner: ClaudeRunner) -> Applied | None:
    """What Claude Code has in effect, or None when it cannot say."""
    try:
        return read_applied(await runner.settings())
    except Exception as exc:
        log.warning("could not read Claude Code's settings: %s", exc)
        return None


def _update_lines(effects: list[Effect]) -> list[bytes] | None:
    """The encoded updates, if that is all the effects are."""
    lines: list[bytes] = []
    for effect in effects:
        if not isinstance(effect, Notify):
            return None
        lines.append(session_update_line(effect.session_id, effect.update))
    return lines


def _output_event(event: TailEvent) -> ev.Event:
    match event:
        case Chunk(key, data):
            return ev.OutputRead(key, data)
        case Snapshot(key, data):
            return ev.OutputReplaced(key, data)
        case Reset(key):
            return ev.OutputReplaced(key, b"")
        case _:
            assert_never(event)


def _innermost(exc: BaseException) -> BaseException:
    """The first exception a task group's group of them holds (or ``exc`` itself)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _set_on(source: anyio.Event, target: anyio.Event) -> None:
    await source.wait()
    target.set()
