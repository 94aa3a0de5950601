"""The ACP agent: method handlers for one client connection.

It negotiates the protocol version at ``initialize`` (the highest we speak at or below the
client's: 1 or 2), reads once what the client declared (``acp.capabilities``) and answers in its
version's form (``initialized``); it creates and finds sessions and hands each request to its
session. Its methods are one table, ``METHODS`` (as pygls registers features): each names its
params model, its handler, whether it is a request or a notification, the versions it exists in
and, for an extension, what the client must have declared. Dispatch reads it, and so does the
refusal of a method that does not exist for the client (-32601); params are validated into the
method's model (-32602 naming the field) before its handler runs. Framing is the endpoint's
business; translation is the core's. Importing the Claude side is deferred to the first session
request (and started in the background right after ``initialize``, out of a listing's way:
``prewarm``) so that ``initialize`` answers fast.

A session's id is Claude Code's session id, so every conversation Claude Code stored is a
session a client can list, load, resume, fork or delete (``claude.store``), whichever program
started it. A session that is open in this process is never given a second Claude Code: a
client loading or resuming it re-attaches to the one it has.

A session's answer carries its config options, which only Claude Code can tell (its models and
their effort levels): ``session/new`` waits for its Claude Code to start (at most
``READY_BOUND``), unless a session of this process in the same directory already started one,
whose answer it goes by (the session corrects it with ``config_option_update`` if its own
Claude Code says otherwise) once its own Claude Code runs as a process (a few milliseconds);
load, resume and fork wait for Claude Code anyway, which starts as soon as the stored
conversation is found (a replay is read and sent meanwhile). Its
commands follow the answer. A Claude Code that cannot start before the answer (the system
refuses its process, or it exits at once) fails the request, with why, and the session is gone;
after the answer a failed start is retried (``session.host``).

Every session runs in a task of its own, which keeps whatever the session raises from the
agent's other sessions: a session that failed is forgotten (its host stopped what it started),
and the next request that names it is told why (-32603), until it is closed or deleted.

Claude Code logs itself in. A client that can run terminal auth methods is offered one: it
runs this agent's command with ``login``, which runs Claude Code's own login. A v1 client that
declares only the earlier form of that capability (``_meta["terminal-auth"]``, as the ACP
Registry's admission check does) is offered it too, with the command in that form.

A later ``initialize`` negotiates again: the sessions created after it take the new version and
capabilities, while those that exist keep the ones they were created with (their presenter is
chosen at ``session/new``), so nothing that runs is lost.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
from anyio.abc import TaskGroup

from claude_bg_acp import __version__
from claude_bg_acp.acp import errors, jsonrpc, session_list
from claude_bg_acp.acp.answers import (
    Answer,
    AuthMethod,
    Empty,
    Implementation,
    InitializeResponse,
    InitializeResponseV1,
    ListSessionsResponse,
    MethodId,
    NewSessionResponse,
    SessionFields,
    TicketAnswer,
)
from claude_bg_acp.acp.capabilities import ASYNC_TASKS, NATIVE_SUBAGENTS, ClientCapabilities
from claude_bg_acp.acp.errors import Rejected, Rejection, failed_fork, unknown_session
from claude_bg_acp.acp.jsonrpc import RpcError
from claude_bg_acp.acp.schema import (
    AuthMethodParams,
    CancelRequestParams,
    CancelTerminalParams,
    CancelToolCallParams,
    InitializeParams,
    KeyedPromptParams,
    ListSessionsParams,
    LoadSessionParams,
    LogoutParams,
    NewSessionParams,
    PromptParams,
    ResumeSessionParams,
    SessionParams,
    SetConfigOptionParams,
    SetModeParams,
    StopAsyncTaskParams,
    WireModel,
    parse_params,
    versioned,
)
from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.claude import created
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.errors import Refusal, Refused
from claude_bg_acp.prewarm import Prewarm

if TYPE_CHECKING:
    from claude_bg_acp.claude.listing import StoredSession
    from claude_bg_acp.claude.runner import ClaudeRunner
    from claude_bg_acp.output.tail import Grid
    from claude_bg_acp.session.host import SessionHost

log = logging.getLogger(__name__)

LATEST_VERSION = 2
AGENT_INFO: Implementation = {
    "name": "claude-bg-acp",
    "title": "Claude (background work)",
    "version": __version__,
}
CHUNK_SIZE = 256 * 1024
"""Bytes per terminal_output_chunk at most: big enough that per-message costs stay small."""
V1_PROMPT_CAPABILITIES = {"image": True, "audio": False, "embeddedContext": True}
V2_PROMPT_CAPABILITIES: dict[str, dict[str, object]] = {"image": {}, "embeddedContext": {}}
AIR_EXTENSIONS = {"version": 1, "capabilities": [ASYNC_TASKS, NATIVE_SUBAGENTS]}
"""What we implement of JetBrains AIR's extensions, told to AIR clients (see ``presenters.air``)."""
READY_BOUND = 10.0
"""Seconds ``session/new`` waits for Claude Code to say what it offers before answering
without (the options follow in ``config_option_update``)."""
LOGINS: dict[str, tuple[str, str, list[str]]] = {
    "claude-login": (
        "Log in with your Claude subscription",
        "Runs Claude Code's login (`claude auth login`, as `/login` in Claude Code) in a terminal",
        [],
    ),
    "console-login": (
        "Log in with an Anthropic Console account",
        "Runs Claude Code's login for API usage billing (`claude auth login --console`) in a terminal",
        ["--console"],
    ),
}
"""Claude Code's two ways to log in, by method id: its name, what it does, the login's options."""


Params = TypeVar("Params", bound=WireModel)
EVERY_VERSION = frozenset({1, LATEST_VERSION})
V1 = frozenset({1})


@dataclass(frozen=True)
class Method(Generic[Params]):
    """An ACP method this agent takes (``METHODS``): its name, its params' model, the protocol
    versions it exists in and, for some, what the client must have declared to have it. A
    method that does not exist for the client is "Method not found" (-32601), as a name that no
    version has."""

    name: str
    params: type[Params]
    _: KW_ONLY
    versions: frozenset[int] = EVERY_VERSION
    requires: Callable[[ClientCapabilities], bool] | None = None
    """What the client must have declared to have it (an extension's methods)."""

    def offered_to(self, client: ClientCapabilities | None) -> bool:
        """Whether ``client`` has it; before ``initialize`` (None), whatever its version (a
        request other than ``initialize`` is refused then, for that reason)."""
        if client is None:
            return True
        return client.version in self.versions and (self.requires is None or self.requires(client))

    def model(self, client: ClientCapabilities | None) -> type[Params]:
        return self.params if client is None else versioned(self.params, client.version)


@dataclass(frozen=True)
class RequestMethod(Method[Params]):
    handler: Callable[[Agent, Params, jsonrpc.RequestId], Awaitable[Answer]]


@dataclass(frozen=True)
class NotificationMethod(Method[Params]):
    handler: Callable[[Agent, Params], Awaitable[None]]


class Agent:
    def __init__(
        self, endpoint: Endpoint, tg: TaskGroup, cli_path: str | None = None, output_backlog: int = 32 << 20
    ) -> None:
        self._endpoint = endpoint
        self._tg = tg
        self._cli_path = cli_path
        self._output_backlog = output_backlog
        self._client: ClientCapabilities | None = None
        """What the client declared at the latest ``initialize`` (its version among it)."""
        self._early_cancels: deque[jsonrpc.RequestId] = deque(maxlen=64)
        self._sessions: dict[str, SessionHost] = {}
        self._failures: dict[str, RpcError] = {}
        """By session id: why a session the client had ended without being closed."""
        self._started: dict[str, ev.ClaudeStarted] = {}
        """By directory: what the first Claude Code started there said."""
        self._grid: Grid | None = None
        """When every session's output files are looked at (made with the first session)."""
        self._prewarm = Prewarm()
        self._opens: dict[str, anyio.Lock] = {}
        """By session id: held while a request finds or starts that session."""
        self._unprompted: set[str] = set()
        """Sessions open here that Claude Code has not stored yet: their record (``created``)
        follows the options chosen, until their first prompt."""

    async def on_request(self, method: str, params: object, request_id: jsonrpc.RequestId) -> Answer:
        with _in_rpc_terms():
            return await self._request(method, params, request_id)

    async def _request(self, method: str, params: object, request_id: jsonrpc.RequestId) -> Answer:
        if self._client is None and method != "initialize":
            raise Rejected(Rejection.NOT_INITIALIZED, f"Invalid Request: call initialize before {method}")
        found = REQUESTS.get(method)
        if found is None or not found.offered_to(self._client):
            raise Rejected(Rejection.NO_METHOD, f"Method not found: {method}")
        return await found.handler(self, parse_params(found.model(self._client), params), request_id)

    async def on_notification(self, method: str, params: object) -> None:
        found = NOTIFICATIONS.get(method)
        if found is None or not found.offered_to(self._client):
            if not method.startswith(("_", "$/")):
                log.warning("ignored unknown notification %s", method)
            return
        with _in_rpc_terms():
            await found.handler(self, parse_params(found.model(self._client), params))

    async def close_all(self) -> None:
        """Close every session (stopping its Claude Code) concurrently."""
        async with anyio.create_task_group() as tg:
            for session_id in list(self._sessions):
                tg.start_soon(self._close_session, session_id)

    @property
    def _negotiated(self) -> ClientCapabilities:
        assert self._client is not None, "only methods after initialize ask"
        return self._client

    # --- methods (in the table ``METHODS`` at the end) --------------------------------------------

    async def _initialize(
        self, params: InitializeParams, request_id: jsonrpc.RequestId
    ) -> InitializeResponse:
        version = min(params.protocol_version, LATEST_VERSION)
        if version < 1:
            raise Rejected(
                Rejection.UNSUPPORTED_VERSION,
                f"Unsupported protocol version {params.protocol_version}",
                {"supported": [1, LATEST_VERSION]},
            )
        if version >= 2 and params.info is None:
            raise Refused(Refusal.INVALID, "Field required for version 2", "info")
        client = self._client = params.declared(version)
        # Once answered: importing in a thread would hold the interpreter lock meanwhile.
        self._endpoint.after_reply(request_id, lambda: self._prewarm.start(lambda: _opening_models(client)))
        return initialized(client, login_methods(client, self._cli_path))

    async def _authenticate(self, params: AuthMethodParams, request_id: jsonrpc.RequestId) -> Empty:
        """The login runs in the client's terminal; the agent has nothing to do for it."""
        client = self._negotiated
        if params.method_id not in LOGINS or not client.terminal_auth:
            raise Refused(Refusal.UNKNOWN, f"unknown auth method {params.method_id}", "methodId")
        if client.version != 1:
            raise Refused(
                Refusal.INVALID, f"{params.method_id} is a terminal method: the client runs it", "methodId"
            )
        return {}

    async def _logout(self, params: LogoutParams, request_id: jsonrpc.RequestId) -> Empty:
        from claude_bg_acp.claude.login import logout

        if not await logout(self._cli_path):
            raise Rejected(Rejection.BROKEN, "Claude Code could not log out")
        return {}

    async def _prompt(self, params: PromptParams, request_id: jsonrpc.RequestId) -> TicketAnswer:
        if request_id in self._early_cancels:
            self._early_cancels.remove(request_id)
            raise Rejected(Rejection.WITHDRAWN, "Prompt withdrawn before insertion")
        if self._parent_of(params.session_id) is not None:
            raise Rejected(Rejection.NOT_HERE, "A subagent session cannot be prompted")
        key = params.idempotency_key if isinstance(params, KeyedPromptParams) else None
        answer = await self._session(params.session_id).prompt(params.prompt, key, request_id)
        if params.session_id in self._unprompted:  # Claude Code stores it from now on
            self._unprompted.discard(params.session_id)
            # Beside the answer, not before it: a retry of the prompt (v2) is answered at once,
            # and would otherwise overtake the original's answer.
            self._tg.start_soon(anyio.to_thread.run_sync, created.forget, params.session_id)
        return answer

    async def _set_mode(self, params: SetModeParams, request_id: jsonrpc.RequestId) -> Empty:
        self._session(params.session_id).handle(ev.ChooseMode(params.mode_id))
        await self._record(params.session_id)
        return {}

    async def _set_config_option(
        self, params: SetConfigOptionParams, request_id: jsonrpc.RequestId
    ) -> TicketAnswer:
        answer = await self._session(params.session_id).answer(
            lambda ticket: ev.ChooseOption(ticket, params.config_id, params.value)
        )
        await self._record(params.session_id)
        return answer

    async def _record(self, session_id: str) -> None:
        """Record a session Claude Code does not store yet as it is now (``created``)."""
        session = self._sessions.get(session_id)
        if session_id not in self._unprompted or session is None:
            return
        config = session.core.config
        choices = created.Choices(
            session.core.modes.current, config.chosen_model, config.chosen_effort, config.chosen_fast
        )
        await anyio.to_thread.run_sync(created.record, session_id, session.cwd, choices)

    async def _cancel_terminal(self, params: CancelTerminalParams, request_id: jsonrpc.RequestId) -> Empty:
        self._owner(params.session_id).handle(ev.CancelTerminal(params.session_id, params.terminal_id))
        return {}

    async def _cancel_tool_call(self, params: CancelToolCallParams, request_id: jsonrpc.RequestId) -> Empty:
        self._owner(params.session_id).handle(ev.CancelToolCall(params.session_id, params.tool_call_id))
        return {}

    async def _stop_async_task(
        self, params: StopAsyncTaskParams, request_id: jsonrpc.RequestId
    ) -> TicketAnswer:
        return await self._session(params.session_id).answer(
            lambda ticket: ev.CancelTask(ticket, params.async_task_id)
        )

    async def _close(self, params: SessionParams, request_id: jsonrpc.RequestId) -> Empty:
        return await self._close_session(params.session_id)

    async def _load(self, params: LoadSessionParams[Any], request_id: jsonrpc.RequestId) -> SessionFields:
        return await self._open(params, True, request_id)

    async def _resume(self, params: ResumeSessionParams[Any], request_id: jsonrpc.RequestId) -> SessionFields:
        return await self._open(params, self._replays(params), request_id)

    async def _cancel(self, params: SessionParams) -> None:
        parent = self._parent_of(params.session_id)
        if parent is not None:
            parent.handle(ev.CancelChild(params.session_id))
        else:
            self._session(params.session_id).handle(ev.CancelTurn())

    async def _cancel_request(self, params: CancelRequestParams) -> None:
        """Only a prompt that is still waiting for insertion can be withdrawn (-32800)."""
        if not any(session.withdraw(params.request_id) for session in self._sessions.values()):
            # Requests run in their own tasks: the cancel may overtake the prompt it names.
            self._early_cancels.append(params.request_id)

    async def _new_session(
        self, params: NewSessionParams[Any], request_id: jsonrpc.RequestId
    ) -> NewSessionResponse:
        _check_directories(params)
        session_id = str(uuid.uuid4())
        # Claude Code starts before the rest of the session is loaded (worker threads keep the
        # loop serving meanwhile). The first session in a directory waits for it to say what it
        # offers; a later one only for its process, so that a start the system refuses (too
        # long a command line, no file descriptors left), which fails at once, fails the request.
        first = params.cwd not in self._started
        starting = await self._start_claude(session_id, params)
        try:
            await _imported("claude_bg_acp.session.host")
            session = self._start_session(session_id, params, starting)
        except BaseException:
            self._tg.start_soon(starting.disconnect)
            raise
        with anyio.move_on_after(READY_BOUND):
            await (session.ready() if first else session.spawned())
        if session.start_error is not None:
            self._sessions.pop(session_id, None)
            raise session.start_error
        if first:
            self._remember(session)
        self._unprompted.add(session_id)
        await self._record(session_id)
        return {"sessionId": session.session_id, **self._opened(session, request_id)}

    async def _open(
        self, params: LoadSessionParams[Any], replay: bool, request_id: jsonrpc.RequestId
    ) -> SessionFields:
        """``session/load`` and ``session/resume``: re-attach to the session if it is open here,
        else have Claude Code resume the stored one; replay it if asked, then the current state.
        An open session's live updates wait from here on until the replay's end (RFD)."""
        _check_directories(params)
        held = self._sessions.get(params.session_id) if replay else None
        if held is not None:
            held.hold()
        try:
            return await self._reattach(params, replay, request_id)
        finally:
            if held is not None:
                held.release()  # unless the replay's end did already

    async def _reattach(
        self, params: LoadSessionParams[Any], replay: bool, request_id: jsonrpc.RequestId
    ) -> SessionFields:
        """Claude Code's resume is most of the wait: it starts first, before the rest of the
        session is loaded (``_resuming``): at once when the conversation is where Claude Code
        keeps those of the folder the client names (``_resumed_at_once``), else as soon as the
        stored conversation is found."""
        session_id = params.session_id
        if self._parent_of(session_id) is not None:
            raise Rejected(Rejection.NOT_HERE, "A subagent session cannot be loaded or resumed")
        async with self._opening(session_id):
            session = self._sessions.get(session_id)
            resumed = session is None
            if session is None:
                early = await self._resumed_at_once(session_id, params)
                try:
                    stored = await self._stored(session_id)
                    _same_directory(session_id, stored.cwd, params.cwd)
                except BaseException:
                    if early is not None:
                        self._tg.start_soon(early.disconnect)
                    raise
                choices = stored.choices if isinstance(stored, created.Created) else None
                starting = early or await self._resuming(session_id, params, choices)
                session = self._start_session(session_id, params, starting)
                if choices is not None:
                    self._unprompted.add(session_id)
                    session.core.config.carry(choices.model, choices.effort, choices.fast)
            else:
                session = self._session(session_id)  # unless it failed
                _same_directory(session_id, session.cwd, params.cwd)
        from claude_bg_acp.session.replay import conversation

        history = None
        if replay:
            stored_yet = session_id not in self._unprompted
            history = conversation(session_id, session.cwd) if stored_yet else _nothing()
        await (self._attached(session, history) if resumed else session.attach(history))
        return self._opened(session, request_id)

    async def _fork(
        self, params: LoadSessionParams[Any], request_id: jsonrpc.RequestId
    ) -> NewSessionResponse:
        """A new session with a copy of the conversation (and none of its background work)."""
        _check_directories(params)
        await _imported("claude_bg_acp.claude.store")
        from claude_bg_acp.claude import store

        source = self._sessions.get(params.session_id)
        cwd = source.cwd if source is not None else (await self._stored(params.session_id)).cwd
        _same_directory(params.session_id, cwd, params.cwd)
        try:
            fork_id = await store.fork(params.session_id, cwd)
        except store.NotStored:
            message = f"Session {params.session_id} has no stored conversation to fork yet"
            raise unknown_session(params.session_id, message) from None
        try:
            session = self._start_session(fork_id, params, await self._resuming(fork_id, params))
            await self._attached(session)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await store.delete(fork_id)  # a fork that failed leaves no copy behind
            if isinstance(exc, RpcError):
                raise failed_fork(exc, params.session_id, fork_id) from None
            raise
        return {"sessionId": fork_id, **self._opened(session, request_id)}

    async def _delete(self, params: SessionParams, request_id: jsonrpc.RequestId) -> Empty:
        await _imported("claude_bg_acp.session.host")
        from claude_bg_acp.claude import store

        session_id = params.session_id
        if self._parent_of(session_id) is not None:
            raise Rejected(Rejection.NOT_HERE, "A subagent session cannot be deleted")
        open_here = session_id in self._sessions or session_id in self._failures
        if open_here:
            await self._close_session(session_id)
        recorded = await anyio.to_thread.run_sync(created.forget, session_id)
        self._unprompted.discard(session_id)
        if not await store.delete(session_id) and not open_here and not recorded:
            raise unknown_session(session_id)
        return {}

    async def _list_sessions(
        self, params: ListSessionsParams, request_id: jsonrpc.RequestId
    ) -> ListSessionsResponse:
        """Only the page's transcripts are read, and the listing alone is imported for it."""
        if params.cwd is not None and not os.path.isabs(params.cwd):
            raise Refused(Refusal.INVALID, "must be an absolute path", "cwd")
        after = session_list.start(params.cursor)
        with self._prewarm.held():  # it would share the interpreter with the listing
            await _imported("claude_bg_acp.claude.listing")
            from claude_bg_acp.claude import listing

            found = await listing.listed(params.cwd, after, session_list.PAGE_SIZE + 1)
        return session_list.page([session_list.info(stored) for stored in found])

    def _replays(self, params: ResumeSessionParams[Any]) -> bool:
        """v2 ``replayFrom``: only ``{"type": "start"}`` is a cursor this agent can replay from."""
        if self._negotiated.version == 1 or params.replay_from is None:
            return False
        kind = params.replay_from.get("type")
        if kind != "start":
            raise Refused(Refusal.INVALID, f"unsupported cursor type {kind!r}", "replayFrom")
        return True

    async def _stored(self, session_id: str) -> StoredSession | created.Created:
        """Claude Code's stored session, else one this agent created that was never prompted."""
        await _imported("claude_bg_acp.claude.store")
        from claude_bg_acp.claude import store

        try:
            return await store.find(session_id)
        except store.NotStored:
            record = await anyio.to_thread.run_sync(created.find, session_id)
            if record is not None:
                return record
            raise unknown_session(session_id) from None
        except store.Unreadable as unreadable:
            message = f"Session {session_id} cannot be read: {unreadable.args[0]} holds no conversation"
            raise Rejected(Rejection.BROKEN, message, {"sessionId": session_id}) from None

    @contextlib.asynccontextmanager
    async def _opening(self, session_id: str) -> AsyncIterator[None]:
        """One request at a time finds or starts the session (else two Claude Codes could
        resume one conversation, and write one transcript)."""
        lock = self._opens.setdefault(session_id, anyio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked():  # nobody waits for it
                self._opens.pop(session_id, None)

    async def _resumed_at_once(self, session_id: str, params: LoadSessionParams[Any]) -> ClaudeRunner | None:
        """Claude Code resuming the conversation, if its transcript is where Claude Code keeps
        those of the client's folder (one look on the loop, a few system calls: a thread would
        cost more, nothing is opened); else None."""
        from claude_bg_acp.claude import conventions, store_files

        with self._prewarm.held():  # from the request on: nothing else shares the interpreter
            path = conventions.transcript_file(session_id, params.cwd)
            if path is None or not store_files.holds_something(path):
                return None
            starting = await self._start_claude(session_id, params, resume=True)
        return await self._imported_for(starting)

    async def _resuming(
        self, session_id: str, params: NewSessionParams[Any], fresh: created.Choices | None = None
    ) -> ClaudeRunner:
        """Claude Code started on the stored conversation (on a new one by that id with the
        ``fresh`` choices, for a session created earlier and never prompted), then the rest of
        the Claude side imported (while Claude Code starts)."""
        starting = await self._start_claude(session_id, params, resume=fresh is None, choices=fresh)
        return await self._imported_for(starting)

    async def _imported_for(self, starting: ClaudeRunner) -> ClaudeRunner:
        """``starting``, once the rest of the Claude side is imported (else stopped)."""
        try:
            await _imported("claude_bg_acp.session.host")
        except BaseException:
            self._tg.start_soon(starting.disconnect)
            raise
        return starting

    async def _attached(
        self, session: SessionHost, history: AsyncGenerator[ev.StoredConversation, None] | None = None
    ) -> None:
        """``session``, just started on a stored conversation, attached once Claude Code has
        resumed it (``history`` replayed meanwhile), or forgotten if it could not."""
        try:
            await session.attach(history)
        except RpcError:
            self._sessions.pop(session.session_id, None)
            raise
        self._remember(session)

    async def _start_claude(
        self,
        session_id: str,
        params: NewSessionParams[Any],
        resume: bool = False,
        choices: created.Choices | None = None,
    ) -> ClaudeRunner:
        """Start Claude Code for a session to come: ``resume`` its stored conversation, else a
        new one by that id; return once its process runs (or its start failed). Only what
        starting it needs shares the interpreter meanwhile (the prewarm waits)."""
        with self._prewarm.held():
            await _imported("claude_bg_acp.claude.runner")
            from claude_bg_acp.claude.runner import starting
            from claude_bg_acp.claude.trust import settings_may_act

            runner = starting(
                params.cwd,
                self._cli_path,
                session_id,
                params.mcp_servers,
                params.additional_directories,
                resume=resume,
                project_settings=await anyio.to_thread.run_sync(settings_may_act, params.cwd),
                choices=choices,
            )
            self._tg.start_soon(runner.start)
            await runner.launched()
        return runner

    def _start_session(
        self, session_id: str, params: NewSessionParams[Any], starting: ClaudeRunner | None = None
    ) -> SessionHost:
        from claude_bg_acp.output.tail import Grid, TailerOptions
        from claude_bg_acp.presenters.choice import presenter_for
        from claude_bg_acp.session.host import SessionHost

        tailing = TailerOptions(chunk_size=CHUNK_SIZE, backlog_limit=self._output_backlog)
        self._grid = self._grid or Grid()
        session = SessionHost(
            session_id,
            params.cwd,
            presenter_for(self._negotiated, params.cwd),
            self._endpoint,
            self._cli_path,
            tailing,
            self._grid,
            mcp_servers=params.mcp_servers,
            add_dirs=params.additional_directories,
            known=self._started.get(params.cwd),
            starting=starting,
        )
        self._sessions[session_id] = session
        self._failures.pop(session_id, None)
        self._tg.start_soon(self._run_session, session)
        return session

    async def _run_session(self, session: SessionHost) -> None:
        """Run ``session`` until it is closed or fails; a failure ends it alone."""
        try:
            await session.run()
        except Exception:
            log.exception("session %s failed", session.session_id)
        if session.failure is None or self._sessions.get(session.session_id) is not session:
            return  # closed, or its request was refused
        del self._sessions[session.session_id]
        if session.open:
            self._failures[session.session_id] = session.failure

    def _remember(self, session: SessionHost) -> None:
        """What the first Claude Code started in a directory said: the next session/new there
        answers with it at once."""
        if session.started_with is not None:
            self._started.setdefault(session.cwd, session.started_with)

    def _opened(self, session: SessionHost, request_id: jsonrpc.RequestId) -> SessionFields:
        """What the answer that tells the client of ``session`` carries besides its id (its
        config options, and v1's modes); what the client is told next (its commands, options
        that changed meanwhile) follows once the answer is written."""
        session.open = True
        self._endpoint.after_reply(request_id, lambda: session.handle(ev.AnswerWritten()))
        return session.answer_fields()

    async def _close_session(self, session_id: str) -> Empty:
        # As one that opens it: a load or resume sent right behind the close waits for it to end,
        # then resumes the stored conversation (else it re-attached to the closing session).
        async with self._opening(session_id):
            return await self._closed(session_id)

    async def _closed(self, session_id: str) -> Empty:
        session = self._sessions.get(session_id)
        failed = session.failure is not None if session is not None else session_id in self._failures
        if not failed:  # a session that failed stops what it started by itself
            await self._session(session_id).close()
        self._sessions.pop(session_id, None)
        self._failures.pop(session_id, None)
        return {}

    def _parent_of(self, session_id: str) -> SessionHost | None:
        """The session that owns subagent ``session_id``, if it is one."""
        return next((s for s in self._sessions.values() if s.has_child(session_id)), None)

    def _owner(self, session_id: str) -> SessionHost:
        """The session, or the session whose subagent it is (a child's work is its own)."""
        return self._parent_of(session_id) or self._session(session_id)

    def _session(self, session_id: str) -> SessionHost:
        session = self._sessions.get(session_id)
        failure = session.failure if session is not None else self._failures.get(session_id)
        if failure is not None:
            raise failure
        if session is None:
            raise unknown_session(session_id)
        return session


def _stops_async_tasks(client: ClientCapabilities) -> bool:
    return ASYNC_TASKS in (client.air or ())


def _runs_terminal_auth(client: ClientCapabilities) -> bool:
    return client.terminal_auth


METHODS: tuple[Method[Any], ...] = (
    RequestMethod("initialize", InitializeParams, Agent._initialize),
    RequestMethod("authenticate", AuthMethodParams, Agent._authenticate),
    RequestMethod("auth/login", AuthMethodParams, Agent._authenticate),
    RequestMethod("logout", LogoutParams, Agent._logout, requires=_runs_terminal_auth),
    RequestMethod("auth/logout", LogoutParams, Agent._logout, requires=_runs_terminal_auth),
    RequestMethod("session/new", NewSessionParams, Agent._new_session),
    RequestMethod("session/load", LoadSessionParams, Agent._load, versions=V1),
    RequestMethod("session/resume", ResumeSessionParams, Agent._resume),
    RequestMethod("session/fork", LoadSessionParams, Agent._fork),
    RequestMethod("session/list", ListSessionsParams, Agent._list_sessions),
    RequestMethod("session/delete", SessionParams, Agent._delete),
    RequestMethod("session/close", SessionParams, Agent._close),
    RequestMethod("session/prompt", PromptParams, Agent._prompt),
    RequestMethod("session/set_mode", SetModeParams, Agent._set_mode, versions=V1),
    RequestMethod("session/set_config_option", SetConfigOptionParams, Agent._set_config_option),
    RequestMethod("terminal/cancel", CancelTerminalParams, Agent._cancel_terminal),
    RequestMethod("tool_call/cancel", CancelToolCallParams, Agent._cancel_tool_call),
    RequestMethod(
        "_session/async_task/stop",
        StopAsyncTaskParams,
        Agent._stop_async_task,
        versions=V1,
        requires=_stops_async_tasks,
    ),
    NotificationMethod("session/cancel", SessionParams, Agent._cancel),
    NotificationMethod("$/cancel_request", CancelRequestParams, Agent._cancel_request),
)
"""Every method this agent takes: what dispatches a call, refuses one the client does not have,
and lists them."""
REQUESTS = {method.name: method for method in METHODS if isinstance(method, RequestMethod)}
NOTIFICATIONS = {method.name: method for method in METHODS if isinstance(method, NotificationMethod)}


def initialized(client: ClientCapabilities, logins: list[AuthMethod]) -> InitializeResponse:
    """The answer to ``initialize``, in the form of the client's version."""
    if client.version == 1:
        answer: InitializeResponseV1 = {
            "protocolVersion": 1,
            "agentInfo": AGENT_INFO,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": V1_PROMPT_CAPABILITIES,
                "sessionCapabilities": {
                    "close": {},
                    "additionalDirectories": {},
                    "list": {},
                    "resume": {},
                    "fork": {},
                    "delete": {},
                },
                "mcpCapabilities": {"http": True, "sse": True},
                **({"auth": {"logout": {}}} if logins else {}),
            },
            "authMethods": logins,
        }
        return (
            {"_meta": {"jetbrains": {"air": AIR_EXTENSIONS}}, **answer} if client.air is not None else answer
        )
    # session/new, list, resume and close are v2's baseline; v2 has no SSE transport.
    return {
        "protocolVersion": client.version,
        "info": AGENT_INFO,
        "capabilities": {
            "session": {
                "prompt": V2_PROMPT_CAPABILITIES,
                "mcp": {"stdio": {}, "http": {}},
                "additionalDirectories": {},
                "fork": {},
                "delete": {},
            }
        },
        "authMethods": logins,
    }


def login_methods(client: ClientCapabilities, cli_path: str | None) -> list[AuthMethod]:
    """Claude Code's logins, run in a terminal, for a client that can (ACP terminal auth, or
    on v1 the earlier ``_meta["terminal-auth"]`` that Zed and the ACP Registry's check send)."""
    if not client.terminal_auth:
        return []
    methods: list[AuthMethod] = []
    for method_id, (name, description, options) in LOGINS.items():
        args = ["login", *options]
        named: MethodId = {"id": method_id} if client.version == 1 else {"methodId": method_id}
        method: AuthMethod = {
            **named,
            "name": name,
            "description": description,
            "type": "terminal",
            "args": args,
        }
        if client.earlier_terminal_auth:
            # The earlier form (still read by Zed): the command itself, with a label.
            command = [sys.executable, "-m", "claude_bg_acp"]
            command += ["--cli-path", cli_path] if cli_path else []
            method["_meta"] = {
                "terminal-auth": {"command": command[0], "args": [*command[1:], *args], "label": name}
            }
        methods.append(method)
    return methods


def _opening_models(client: ClientCapabilities) -> None:
    """The params of the requests that open a session, as ``client``'s version has them, made
    before its first such request: making one (a generic model, its validator) took some tens
    of milliseconds of the first load's way to Claude Code's start."""
    for method in REQUESTS.values():
        if method.offered_to(client) and issubclass(method.params, NewSessionParams):
            method.model(client).model_rebuild()


def _check_directories(params: NewSessionParams[Any]) -> None:
    if not os.path.isabs(params.cwd) or not os.path.isdir(params.cwd):
        raise Refused(Refusal.INVALID, "must be an absolute path to an existing directory", "cwd")
    if not all(os.path.isabs(path) for path in params.additional_directories or []):
        raise Refused(Refusal.INVALID, "paths must be absolute", "additionalDirectories")


def _same_directory(session_id: str, cwd: str, requested: str) -> None:
    if os.path.realpath(cwd) != os.path.realpath(requested):
        raise Refused(Refusal.INVALID, f"session {session_id} belongs to {cwd}, not {requested}", "cwd")


@contextlib.contextmanager
def _in_rpc_terms() -> Iterator[None]:
    """A handler's refusal or rejection as the JSON-RPC error it is answered with."""
    try:
        yield
    except (Refused, Rejected) as error:
        raise errors.rpc_error(error) from None


async def _imported(module: str) -> None:
    """The one point where the agent imports the Claude side late: ``module`` (and what it
    imports) in a worker thread, so that ``initialize`` answers at once and the loop serves
    meanwhile; the ``from`` import that follows it finds the module loaded."""
    await anyio.to_thread.run_sync(importlib.import_module, module)


async def _nothing() -> AsyncGenerator[ev.StoredConversation, None]:
    """The history of a session Claude Code has not stored yet: none (replayed, it is empty)."""
    return
    yield
