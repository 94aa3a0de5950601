"""Hosts one live ACP session: the sans-IO core, and the parts that do its I/O.

Every input (a client request, an SDK message, a permission answer, tailed output, a tick)
becomes one of the core's events and is handled on the event loop, one at a time (``handle``);
the effects it returns are performed in order by the session's outbox (``session.outbox``),
which writes the updates and releases a request's answer (``Reply``, ``Fail``) only after every
update before it was written, and hands the other effects back here: commands to the Claude
Code supervisor (``session.supervisor``: start, serve, restart, stop), permission questions and
decisions to the permission bridge (``session.permissions``), output files to the tailer, looks
at the stored conversation (its title, a prompt sent before) to ``claude.store``. Where
the session is with its Claude Code is one phase, held to the table in ``session.lifecycle``
(``STARTING``, ``SERVING``, ``DOWN``, ``GONE``, ``STOPPING``, ``CLOSING``, ``FAILED``,
``ENDED``).

Background output comes from one ``OutputTailer`` per session. Its consumer feeds each batch of
events to the core and then waits until the resulting updates are written (``Outbox.relay``):
the tailer only reads more when the client's pipe has taken what came before, so a slow client
makes the tailer fall behind in the file (and send a snapshot) instead of filling memory. A
terminal whose task ended has the rest of its file relayed (``FinishTail``) before its exit is
told. A ticker calls the core's ``tick`` at its next deadline (orphaned tasks, stop
confirmations, follow-ups).

A session fails alone. An exception in any of its tasks ends it, and only it: Claude Code and
what it left running are stopped, the client's open permission requests are withdrawn, the
updates left to write are written with what the failure ended (told as the death of a Claude
Code that is not replaced), every request waiting on the session fails with the reason
(``failure``), and the exception goes to the agent, which forgets the session and gives the
reason to the next request that names it. So does a first start of Claude Code that fails before
the client was told of the session (``open``), or that cannot resume the stored conversation:
the request that opens the session gets why (``started``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from itertools import count
from typing import Any, assert_never

import anyio
from anyio.abc import TaskGroup

from claude_bg_acp.acp import errors
from claude_bg_acp.acp.answers import SessionFields, TicketAnswer
from claude_bg_acp.acp.jsonrpc import RequestId, RpcError
from claude_bg_acp.acp.schema import ContentBlock, McpServer
from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.claude import store
from claude_bg_acp.claude.conventions import ExitInfo, ShellEnd, tasks_base, tasks_root
from claude_bg_acp.claude.options import may_bypass_permissions
from claude_bg_acp.claude.runner import ClaudeRunner
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    ControlMcp,
    Decide,
    Effect,
    Fail,
    FindPrompt,
    FinishTail,
    Interrupt,
    Log,
    Notify,
    Query,
    ReadSettings,
    ReadTitle,
    Reply,
    SetEffort,
    SetFast,
    SetModel,
    SetPermissionMode,
    StopTask,
    Tail,
    Ticket,
    WithdrawPermission,
)
from claude_bg_acp.core.errors import Failing, Failure, Refused
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.core.session import SessionCore
from claude_bg_acp.output.tail import (
    Chunk,
    Final,
    Grid,
    OutputTailer,
    Reset,
    Snapshot,
    TailerOptions,
    TailEvent,
)
from claude_bg_acp.session.lifecycle import ENDED, ENDING, HostLifecycle, HostPhase, HostTrigger
from claude_bg_acp.session.outbox import Handed, Outbox
from claude_bg_acp.session.permissions import PermissionBridge
from claude_bg_acp.session.supervisor import ClaudeSupervisor, Launch
from claude_bg_acp.session.trust import FolderTrust
from claude_bg_acp.session.waiter import Waiter

log = logging.getLogger(__name__)

FLUSH_BOUND = 5.0
"""Seconds a closed session's last updates may take to be written before it stops anyway."""
TRAILER_WAIT = 0.3
"""Seconds a finished shell's file may take to receive Claude Code's closing line."""


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
        self.session_id = session_id
        self.cwd = cwd
        root = tasks_root(cwd)
        self.core = SessionCore(
            session_id,
            presenter,
            presenter.policy,
            cwd,
            root,
            allow_bypass=may_bypass_permissions(),
            instance=uuid.uuid4().hex,
        )
        self._clock = clock
        self._tickets = count(1)
        self._waiters: dict[Ticket, Waiter] = {}
        """Every client request the core answers through a ticket (prompts, config choices, stops
        by task id), waiting for its answer."""
        self._prompt_requests: dict[RequestId, Ticket] = {}
        self._settling: dict[RequestId, bool] = {}
        """Prompt requests waiting for the folder's trust, not yet the core's: whether the client
        withdrew one meanwhile (its ``$/cancel_request`` must not slip between the two)."""
        self._lifecycle = HostLifecycle(session_id)
        self._outbox = Outbox(session_id, endpoint, self._perform)
        self._bridge = PermissionBridge(endpoint, self.handle, self._tickets, [cwd, *(add_dirs or [])])
        launch = Launch(cli_path, mcp_servers, add_dirs or [], root)
        self._supervisor = ClaudeSupervisor(self, self._lifecycle, launch, self._bridge.asked, starting)
        asks = not self._supervisor.project_settings
        trust = self._supervisor.trust_folder
        self._trust = FolderTrust(
            session_id, cwd, presenter, endpoint, self._tell, trust, asks, self._lifecycle
        )
        self._tailer = OutputTailer(tailer_options, root=tasks_base(), grid=grid)
        self._tailer_options = tailer_options or TailerOptions()
        """A replay reads an output file as the tailer does (``_recall_outputs``)."""
        self._draining: set[str] = set()
        """Tasks whose output file is being read to its end."""
        self._settled_latches: list[anyio.Event] = []
        self._deadline_moved = anyio.Event()
        """The ticker's own wake-up: an input may have moved the core's next deadline."""
        self.open = False
        """The client has been told of the session: a failed start is retried from then on."""
        self.failure: RpcError | None = None
        """Why the session ended without being closed (its Claude Code could not start, or one
        of its tasks raised): the error a request naming it gets."""
        if known is not None:
            self.handle(known)
        self._tg: TaskGroup | None = None

    @property
    def phase(self) -> HostPhase:
        return self._lifecycle.phase

    # --- life cycle -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the session until ``close`` (or until it failed: ``failure``); Claude Code is
        stopped before this returns. An exception in a task of the session is raised once what
        the session started is stopped (see the module docstring)."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._outbox.run)
                await tg.start(self._tailer.run)
                tg.start_soon(self._relay_output)
                ticker = anyio.CancelScope()
                tg.start_soon(self._tick, ticker)
                failure = await self._supervisor.supervise(tg)
                if failure is not None:
                    self.failure = failure
                    self._lifecycle.move(HostTrigger.FIRST_START_FAILED)
                # Let the final updates (and answers) of the close go out before stopping.
                ticker.cancel()
                self._tailer.close()
                self._outbox.close()
                tg.cancel_scope.deadline = anyio.current_time() + FLUSH_BOUND
        except Exception as exc:
            why = f"an internal error ended it ({_innermost(exc)!r}); the agent's log has the details"
            message = f"Session {self.session_id} failed: {why}"
            self.failure = errors.session_failed(self.session_id, message)
            self._lifecycle.move(HostTrigger.TASK_RAISED)
            with anyio.CancelScope(shield=True):
                await self._abandon(message)
            raise
        finally:
            if self.failure is not None:
                self._fail_waiting(self.failure)
            closed = Failure(Failing.ERROR, "The session was closed before Claude Code started")
            self._supervisor.first.failed(self.failure or errors.rpc_error(closed))
            self._lifecycle.move(HostTrigger.RUN_RETURNED)

    async def _abandon(self, reason: str) -> None:
        """After a failure, which no task of the session outlived: withdraw the client's
        permission requests, stop Claude Code and what it left running, and tell the end."""
        await self._bridge.withdraw_all()
        await self._tell_the_end(reason, await self._supervisor.abandon())

    async def _tell_the_end(self, reason: str, stopped: dict[str, ExitInfo]) -> None:
        """Write the updates left to write, then what the failure ended, told as the death of a
        Claude Code that is not replaced (the turn ends with an error, and its tool calls and
        background work with it), as far as the core can still tell it. No file is read any
        more: a terminal whose end was being read ends with what was read of it."""
        unread = set(self._draining)
        effects: list[Effect | anyio.Event] = self._outbox.left()
        event: ev.Event | None = ev.ClaudeDied(reason, True, stopped)
        while True:
            for effect in effects:
                if isinstance(effect, Notify | Reply | Fail):
                    await self._outbox.perform(effect)
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
        await self._outbox.flush()

    def _fail_waiting(self, error: RpcError) -> None:
        for waiter in self._waiters.values():
            if not waiter.done.is_set():
                waiter.settle(error=error)

    async def ready(self) -> None:
        """Wait until Claude Code said what it offers (or could not start)."""
        await self._supervisor.first.ready.wait()

    async def spawned(self) -> None:
        """Wait until this session's Claude Code runs as a process (or could not start)."""
        await self._supervisor.first.spawned.wait()

    @property
    def start_error(self) -> RpcError | None:
        """Why Claude Code could not start, once that is known (the session is over then)."""
        return self._supervisor.first.outcome.error

    @property
    def started_with(self) -> ev.ClaudeStarted | None:
        """What this session's Claude Code said when it first started."""
        return self._supervisor.started_with

    async def started(self) -> None:
        """Wait until Claude Code has the conversation; raises ``RpcError`` when it could not
        resume the stored one (the session is over then)."""
        await self._supervisor.first.outcome.wait()

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
        has the conversation, its title and the current state; return once all of it is
        written (before the client's request is answered). Raises ``RpcError`` like
        ``started`` (the replay stops there, its end not marked)."""
        if history is not None:
            self.hold()
            complete = False
            async with aclosing(history):
                try:
                    async for part in history:
                        if self.start_error is not None:
                            break
                        self.handle(ev.Recall(part))
                        await self.written()  # no more of it in memory than a part
                        await self._recall_outputs()
                    else:
                        complete = self.start_error is None
                finally:
                    self.handle(ev.Recalled(complete))
        await self.started()
        await self._read_title()  # told before the answer, as the rest of the session's state
        self.handle(ev.Resync())
        await self.written()

    async def _recall_outputs(self) -> None:
        """The output files the replay waits at, each sent piece by piece, as it is read."""
        from claude_bg_acp.session import replay

        while (stored := self.core.awaited_output) is not None:
            async with aclosing(replay.output(stored, self._tailer_options)) as pieces:
                async for piece in pieces:
                    if self.start_error is not None:
                        return
                    self.handle(ev.Recall(piece))
                    await self.written()

    async def close(self) -> None:
        """Cancel what is pending, stop Claude Code, and return once it is gone."""
        if self.phase not in ENDING:
            self._supervisor.close()
            self.handle(ev.Close())
        await self._lifecycle.until(ENDED)

    # --- inputs -------------------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> None:
        """Feed one event to the core; raises ``RpcError`` for a client request it refuses."""
        try:
            effects = self.core.handle(event, self._clock())
        except Refused as refusal:
            raise errors.rpc_error(refusal) from None
        self._feed(effects)

    def _feed(self, effects: list[Effect]) -> None:
        self._outbox.put(effects)
        self._deadline_moved.set()
        if self._settled_latches and self.core.settled:
            for latch in self._settled_latches:
                latch.set()
            self._settled_latches.clear()

    def settled_from_now(self) -> anyio.Event:
        """Set at the first input from now on after which every background item is final
        (what a close waits for)."""
        latch = anyio.Event()
        self._settled_latches.append(latch)
        return latch

    async def _tell(self, effects: list[Notify]) -> None:
        """Write updates of the host's own, in order with the core's."""
        self._feed(list(effects))
        await self.written()

    async def written(self) -> None:
        """Wait until everything fed so far has been performed."""
        if self.failure is not None:
            return  # the session failed: nothing more is performed
        await self._outbox.written()

    async def prompt(
        self, content: list[ContentBlock], key: str | None, request_id: RequestId
    ) -> TicketAnswer:
        """``session/prompt``; ``key``: its v2 ``idempotencyKey``, if any (the core inserts a
        key's prompt once and answers every attempt with it)."""
        self._refuse_if_ending()
        self._settling[request_id] = False
        try:
            answered = await self._trust.settle()  # the folder's trust first (``session.trust``)
        finally:
            withdrawn = self._settling.pop(request_id)
        if withdrawn:
            raise errors.Rejected(errors.Rejection.WITHDRAWN, "Prompt withdrawn before insertion")
        self._refuse_if_ending()
        ticket = next(self._tickets)
        waiter = self._waiters[ticket] = Waiter()
        self._prompt_requests[request_id] = ticket
        self.handle(ev.Prompt(ticket, content, key))
        if not answered:
            self.handle(ev.CancelTurn())
        try:
            result: TicketAnswer = await waiter.wait()  # a ``Reply``'s
        finally:
            self._waiters.pop(ticket, None)
            self._prompt_requests.pop(request_id, None)
        return result

    async def answer(self, request: Callable[[Ticket], ev.Event]) -> TicketAnswer:
        """A client request the core answers through a ticket (``Reply`` or ``Fail``)."""
        self._refuse_if_ending()
        ticket = next(self._tickets)
        waiter = self._waiters[ticket] = Waiter()
        try:
            self.handle(request(ticket))
            result: TicketAnswer = await waiter.wait()
        finally:
            self._waiters.pop(ticket, None)
        return result

    def _refuse_if_ending(self) -> None:
        if self.phase in ENDING:
            raise self.failure or errors.rpc_error(Failure(Failing.ERROR, "The session is closed"))

    def withdraw(self, request_id: RequestId) -> bool:
        """The client withdrew a prompt request (``$/cancel_request``); False if not ours."""
        if request_id in self._settling:
            self._settling[request_id] = True
            return True
        ticket = self._prompt_requests.get(request_id)
        if ticket is None:
            return False
        self.handle(ev.WithdrawPrompt(ticket))
        return True

    def has_child(self, session_id: str) -> bool:
        return self.core.has_child(session_id)

    def answer_fields(self) -> SessionFields:
        """The config options (and v1's modes) for an answer that tells the client of the
        session; ``AnswerWritten`` must follow once that answer is written."""
        return self.core.presenter.answer_fields(self.core.answer())

    # --- effects ------------------------------------------------------------------------------------

    async def _perform(self, effect: Handed) -> None:
        """An effect the outbox hands on, once everything before it is written."""
        match effect:
            case Reply(ticket, result):
                self._settle(ticket, value=result)
            case Fail(ticket, failure):
                self._settle(ticket, error=errors.rpc_error(failure))
            case AskPermission():
                self._task_group.start_soon(self._bridge.ask, effect)
            case AskQuestions():
                self._task_group.start_soon(self._bridge.ask_questions, effect)
            case WithdrawPermission(ticket):
                await self._bridge.withdraw(ticket)
            case Decide():
                self._bridge.decide(effect)
            case Tail(task_id, path):
                self._tailer.follow(task_id, path)
            case FinishTail(task_id, end):
                self._draining.add(task_id)
                self._task_group.start_soon(self._finish_tail, task_id, end, effect.closing_line)
            case ReadTitle():
                self._task_group.start_soon(self._read_title)
            case FindPrompt(key, message_id):
                self._task_group.start_soon(self._find_prompt, key, message_id)
            case Log(message):
                log.warning("session %s: %s", self.session_id, message)
            case (
                Query()
                | Interrupt()
                | StopTask()
                | SetPermissionMode()
                | SetModel()
                | SetEffort()
                | SetFast()
                | ReadSettings()
                | ControlMcp()
            ):
                self._supervisor.command(effect)
            case _:
                assert_never(effect)

    @property
    def _task_group(self) -> TaskGroup:
        assert self._tg is not None, "effects are performed while the session runs"
        return self._tg

    def _settle(self, ticket: Ticket, value: Any = None, error: RpcError | None = None) -> None:
        waiter = self._waiters.get(ticket)
        if waiter is not None:
            waiter.settle(value, error)

    async def _read_title(self) -> None:
        try:
            title, own, updated_at = await store.title(self.session_id, self.cwd)
        except Exception:
            log.warning("session %s: could not read its title", self.session_id, exc_info=True)
            return
        self.handle(ev.TitleRead(title, own, updated_at))

    async def _find_prompt(self, key: str, message_id: str) -> None:
        stored: bool | None
        try:
            stored = await store.holds_prompt(self.session_id, self.cwd, message_id)
        except OSError:
            log.warning("session %s: could not read its stored conversation", self.session_id, exc_info=True)
            stored = None
        self.handle(ev.PromptLookedUp(key, stored))

    # --- background output ----------------------------------------------------------------------------

    async def _relay_output(self) -> None:
        async for batch in self._tailer:
            now = self._clock()
            effects = [effect for event in batch for effect in self.core.handle(_output_event(event), now)]
            # Output only becomes terminal output: it moves no deadline and settles nothing, so
            # neither the ticker nor a close is told (that would cost more than relaying it).
            await self._outbox.relay(effects)

    async def _finish_tail(self, task_id: str, end: ShellEnd, closing_line: bool) -> None:
        """Relay the rest of a finished task's file (with backpressure), then how it exited."""
        ended = ev.OutputEnded(task_id, b"", None)
        trailer_wait = TRAILER_WAIT if closing_line and self._supervisor.claude_running else 0.0
        try:
            async for event in self._tailer.drain(
                task_id, trailer_timeout=trailer_wait, confirms=end.confirms
            ):
                if isinstance(event, Final):
                    ended = ev.OutputEnded(task_id, event.remaining, event.exit)
                    break
                self.handle(_output_event(event))
                await self.written()
        except (KeyError, OSError) as exc:
            log.warning("session %s: could not read the end of %s: %s", self.session_id, task_id, exc)
        self._draining.discard(task_id)
        self.handle(ended)

    async def _tick(self, scope: anyio.CancelScope) -> None:
        with scope:
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
