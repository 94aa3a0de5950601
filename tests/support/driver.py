"""The one driver of ``SessionCore`` in tests: frames and requests in, effects out, no subprocess.

``CoreDriver`` holds one core, built for a client kind (protocol version and declared
capabilities, as ``session/new`` builds it) and a clock. It feeds raw Claude Code frames (built
by ``tests.support.frames`` or recorded by ``scripts/record_sdk_events.py``) through the SDK's
own ``parse_message``, so a frame the SDK could not parse fails here and not in the core, and
it turns client acts into the core's events. Every effect is kept in ``effects``.

``replay`` plays a recorded fixture: each frame at its recorded time; Claude Code's answer to
the SDK's ``initialize`` is its start (what it offers; the session is not opened to a client,
see ``open``); what the SDK sent is
turned back into the client request that caused it (the user message is a ``session/prompt``,
an ``interrupt`` a ``session/cancel``, a ``stop_task`` the client's per-item cancel, or an AIR
client's stop by task id); a
``can_use_tool`` question is answered as the recording answered it. The tailer's part is
played from the output files the recorder kept: when the core finishes a terminal, the file's
bytes go through the closing-line rule the tailer applies, then back to the core.

``stored_conversation`` reads what a recording kept of Claude Code's stored conversation the
way the agent does (the SDK's readers through ``claude.store`` and ``session.replay``), for
``attach``: a client loading or resuming the session, with the replay of a conversation (in
parts, or all of it as one) or without, up to its answer; ``answered`` is what follows the
answer. The driver keeps where the client asked and was answered, for the rules (``timeline``).
``live_after_first_turn`` is a v2 session whose recorded first turn left its work running, to
re-attach to.

``updates_of`` selects from effects the updates a session was sent (the root's by default),
of one kind if asked; ``notified`` every session's, each with its session id.

``effect_json`` and ``as_jsonrpc`` show the effects as golden lines and as the JSON-RPC
messages they become on the wire; ``check_transcript`` validates those against the schema and
the background rules (knowing where the client re-attached when the effects are the driver's
from its first), and ``assert_golden`` compares golden lines with their file (``UPDATE_GOLDEN=1``
rewrites it).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import re
import zlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any
from unittest import mock

from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk.types import PermissionUpdate

from claude_bg_acp.acp.answers import SessionFields
from claude_bg_acp.acp.capabilities import ASYNC_TASKS, ClientCapabilities
from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.claude.conventions import ExitInfo, tasks_base
from claude_bg_acp.claude.server_info import Applied, read_server_info
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.background import Kind
from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    Effect,
    Fail,
    FinishTail,
    Notify,
    Query,
    Reply,
    Tail,
)
from claude_bg_acp.core.permission_options import ALLOW_ONCE, REJECT_ONCE
from claude_bg_acp.core.session import SessionCore
from claude_bg_acp.output.closing_line import TrailerGate
from claude_bg_acp.presenters.choice import presenter_for
from claude_bg_acp.presenters.plain import PlainPresenter
from claude_bg_acp.session import replay
from tests.support.air import air_capabilities as air_capabilities_of
from tests.support.air import declares_air
from tests.support.frames import TaskSpec, result, state_changed, text
from tests.support.plain import FINAL, PlainView
from tests.support.rules import Answered, Reattach, Seen, check_updates
from tests.support.schema import validate_transcript
from tests.support.zed import ZED_CAPABILITIES, ZedView

FIXTURES = Path(__file__).parent.parent / "fixtures"
PLAIN_CAPABILITIES: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
"""A plain v1 client's ``clientCapabilities``: acpx's, exactly."""
SESSION_ID = "session-core"
CWD = "/tmp/claude-bg-acp/work"
"""The session's cwd as the recorder's normalisation writes it."""
RECORDED_TASKS_ROOT = "/tmp/claude-bg-acp/tmp/claude-0/-tmp-claude-bg-acp-work"
"""Claude Code's task directory for that cwd, as the recorder's normalisation writes it (the
replays of the goldens run without it: they learn every output file from Claude Code)."""
RECORDED_SESSION = "00000000-0000-4000-8000-5e5510000000"
"""Claude Code's session id in every recording."""
DIGEST_OVER = 4096

CLIENTS: dict[str, tuple[int, dict[str, Any]]] = {
    "v1-plain": (1, PLAIN_CAPABILITIES),
    "v1-subagents": (1, {"subagents": {}}),
    "v1-terminal-meta": (1, ZED_CAPABILITIES),
    "v2": (2, {}),
    "air": (1, air_capabilities_of("asyncTasks", "nativeSubagentSessions")),
}
"""The client kinds of the replay goldens: (protocol version, declared capabilities). The
``v1-plain`` kind declares exactly what acpx declares (``fs`` and ``terminal``, no extension:
a plain v1 client, like Toad's or the Python SDK's); ``v1-subagents`` a plain one that reads
child sessions; ``v1-terminal-meta`` exactly what Zed declares (its ``_meta`` terminal
extension and ``subagents`` among it)."""

Frame = dict[str, Any]


def load_frames(scenario: str) -> list[Frame]:
    path = FIXTURES / "sdk_events" / f"{scenario}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def recorded_server_info(scenario: str = "text") -> dict[str, Any]:
    """Claude Code's answer to the SDK's ``initialize``, as a recording has it."""
    found = (info for frame in load_frames(scenario) if (info := _server_info(frame["msg"])) is not None)
    return next(found)


def _server_info(msg: Frame) -> dict[str, Any] | None:
    """The payload of Claude Code's answer to ``initialize`` (the one that lists its models)."""
    payload = (msg.get("response") or {}).get("response") if msg.get("type") == "control_response" else None
    return payload if isinstance(payload, dict) and "models" in payload else None


class CoreDriver:
    """One ``SessionCore`` with a clock; see the module docstring.

    With ``echo_uuids`` (current Claude Code), a result that has no ``origin`` and names no user
    messages gets ``user_message_uuids`` naming the oldest user message written to Claude Code
    whose result has not come yet, as Claude Code echoes the uuid ``Query`` sent; without it
    (older Claude Code), results name none and the origin alone tells a follow-up turn.
    """

    def __init__(
        self,
        version: int = 2,
        capabilities: dict[str, Any] | None = None,
        *,
        session_id: str = SESSION_ID,
        tasks_root: str | None = None,
        echo_uuids: bool = False,
        allow_bypass: bool = True,
        instance: str = "",
    ) -> None:
        """``instance``: the agent process's, as the session host names it (see ``Foreground``)."""
        self.session_id = session_id
        self.version = version
        client = ClientCapabilities.declared(version, capabilities)
        presenter = presenter_for(client)
        self.core = SessionCore(
            session_id, presenter, presenter.policy, CWD, tasks_root, allow_bypass, instance=instance
        )
        self.now = 0.0
        self.echo_uuids = echo_uuids
        self.stops_tasks = ASYNC_TASKS in (client.air or ())
        """The client stops a task by its id (JetBrains AIR's async tasks)."""
        draws_terminals = client.terminal_output
        self.cancels = (
            {Kind.TERMINAL, Kind.TOOL_CALL} if version >= 2 else {Kind.TERMINAL} if draws_terminals else set()
        )
        """The items the client is shown and can stop: a v2 client's terminals and tool calls, the
        terminals a client with Zed's extension draws in the tool calls that launched them."""
        self.requests: dict[int, str] = {}
        """The client requests other than prompts the core answers, by ticket."""
        self.effects: list[Effect] = []
        self.sent: deque[str | None] = deque()
        """The uuids of the user messages written to Claude Code (``Query``), oldest first."""
        self.marks: dict[int, list[Reattach | Answered]] = {}
        """Where a client asked to re-attach and was answered, by the number of effects before."""
        self._tickets = itertools.count(1)
        self._paths: dict[str, str] = {}
        self._questions: dict[str, int] = {}

    @classmethod
    def for_client(cls, client: str, **options: Any) -> CoreDriver:
        version, capabilities = CLIENTS[client]
        return cls(version, capabilities, **options)

    # --- in --------------------------------------------------------------------------------------

    def handle(self, event: ev.Event, dt: float = 0.0) -> list[Effect]:
        """Any event, ``dt`` seconds after the last one."""
        self.now += dt
        effects = self.core.handle(event, self.now)
        self.effects += effects
        self.sent.extend(e.uuid for e in effects if isinstance(e, Query))
        return effects

    def frame(self, frame: Frame, dt: float = 0.01) -> list[Effect]:
        """A frame of Claude Code's, parsed by the SDK as the runner does."""
        if self.echo_uuids and frame.get("type") == "result":
            frame = self._echoing(frame)
        message = parse_message(frame)
        assert message is not None, frame
        return self.handle(ev.ClaudeMessage(message), dt)

    def frames(self, *frames: Frame) -> list[Effect]:
        effects: list[Effect] = []
        for frame in frames:
            effects += self.frame(frame)
        return effects

    def _echoing(self, frame: Frame) -> Frame:
        named = frame.get("user_message_uuids")
        if named is not None:  # the frame says which it covers: those are answered
            for uuid in named:
                if uuid in self.sent:
                    self.sent.remove(uuid)
            return frame
        if "origin" in frame or not self.sent:
            return frame  # a turn Claude Code started itself covers no user message
        covered = self.sent.popleft()
        return frame if covered is None else {**frame, "user_message_uuids": [covered]}

    def ticket(self) -> int:
        return next(self._tickets)

    def prompt(
        self,
        words: str | list[dict[str, Any]],
        ticket: int | None = None,
        dt: float = 0.01,
        key: str | None = None,
    ) -> tuple[int, list[Effect]]:
        """``session/prompt`` with text (or content blocks), and its ``idempotencyKey`` if given;
        its ticket names the answer."""
        ticket = self.ticket() if ticket is None else ticket
        blocks = [{"type": "text", "text": words}] if isinstance(words, str) else words
        content = [ContentBlock.model_validate(block) for block in blocks]
        return ticket, self.handle(ev.Prompt(ticket, content, key), dt)

    def cancel(self) -> list[Effect]:
        return self.handle(ev.CancelTurn(), 0.01)

    def start(
        self,
        server_info: dict[str, Any],
        model: str | None = None,
        effort: str | None = None,
        disabled: frozenset[str] = frozenset(),
        fast: bool = False,
    ) -> list[Effect]:
        """Claude Code started: its initialize answer, and what it has in effect (``disabled``:
        the permission modes its settings disable; ``fast``: fast mode is on)."""
        applied = Applied(model, effort, disabled, fast)
        return self.handle(ev.ClaudeStarted(read_server_info(server_info), applied))

    def open(self) -> tuple[SessionFields, list[Effect]]:
        """``session/new``'s answer fields, then what follows once the client has it."""
        fields = self.core.presenter.answer_fields(self.core.answer())
        return fields, self.handle(ev.AnswerWritten())

    def choose(self, config_id: str, value: Any) -> tuple[int, list[Effect]]:
        """``session/set_config_option``; its ticket names the answer."""
        ticket = self.ticket()
        self.requests[ticket] = "session/set_config_option"
        return ticket, self.handle(ev.ChooseOption(ticket, config_id, value), 0.01)

    def settings_read(
        self, model: str | None, effort: str | None, disabled: frozenset[str] = frozenset()
    ) -> list[Effect]:
        """Claude Code's answer to a ``ReadSettings``."""
        return self.handle(ev.SettingsRead(Applied(model, effort, disabled)))

    def stop_task(self, task_id: str) -> tuple[int, list[Effect]]:
        """AIR's ``_session/async_task/stop``; its ticket names the answer."""
        ticket = self.ticket()
        self.requests[ticket] = "_session/async_task/stop"
        return ticket, self.handle(ev.CancelTask(ticket, task_id), 0.01)

    def ask(
        self,
        ticket: int,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None = None,
        agent_id: str | None = None,
        suggestions: tuple[PermissionUpdate, ...] = (),
    ) -> list[Effect]:
        """Claude Code's ``can_use_tool``."""
        return self.handle(
            ev.PermissionAsked(ticket, tool_name, tool_input, tool_use_id, agent_id, suggestions=suggestions)
        )

    def answer(self, ticket: int, option_id: str | None) -> list[Effect]:
        return self.handle(ev.PermissionAnswered(ticket, option_id))

    def output(self, task_id: str, data: bytes) -> list[Effect]:
        return self.handle(ev.OutputRead(task_id, data))

    def drained(self, task_id: str, rest: bytes = b"", exit_info: ExitInfo | None = None) -> list[Effect]:
        return self.handle(ev.OutputEnded(task_id, rest, exit_info))

    def recall(self, *parts: ev.StoredConversation) -> list[Effect]:
        """A stored conversation replayed: its parts in order, each followed by the output files
        the replay waits at, read as the session host reads them; then its end."""
        effects: list[Effect] = []
        for part in parts:
            effects += self.handle(ev.Recall(part))
            while (stored := self.core.awaited_output) is not None:
                for piece in replay.output_pieces(stored):
                    effects += self.handle(ev.Recall(piece))
        return effects + self.handle(ev.Recalled())

    def resync(self) -> list[Effect]:
        return self.handle(ev.Resync())

    def attach(self, *parts: ev.StoredConversation) -> list[Effect]:
        """A client loads or resumes the session, as the session host has it: with ``parts``
        (a stored conversation, whole or in parts) replayed, held from the request on; without,
        no replay; then the current state. What comes before the answer (``answered``: after)."""
        self._mark(Reattach(self.session_id, replay=bool(parts)))
        effects = (self.handle(ev.Attaching()) + self.recall(*parts)) if parts else []
        effects += self.resync()
        self._mark(Answered(self.session_id))
        return effects

    def answered(self) -> list[Effect]:
        """The answer to a load, resume or ``session/new`` is written: what follows it."""
        return self.handle(ev.AnswerWritten())

    def _mark(self, mark: Reattach | Answered) -> None:
        self.marks.setdefault(len(self.effects), []).append(mark)

    def timeline(self, effects: list[Effect]) -> list[Seen]:
        """The updates among ``effects`` as the rules follow them, with where the client
        re-attached when ``effects`` are the driver's from its first; the tool call of each
        permission request among them, which a client applies as a ``tool_call_update`` (v2's
        schema says so), is one."""
        ours = len(effects) <= len(self.effects) and all(
            a is b for a, b in zip(effects, self.effects[: len(effects)], strict=True)
        )
        marks = self.marks if ours else {}
        seen: list[Seen] = []
        for index, effect in enumerate(effects):
            seen += marks.get(index, [])
            if isinstance(effect, Notify):
                seen.append((effect.session_id, effect.update.wire()))
            else:
                seen += [(params["sessionId"], call) for params, call in _asked_calls(effect)]
        return seen + marks.get(len(effects), [])

    def tick(self, to: float | None = None) -> list[Effect]:
        """The ticker: at ``to`` (never back in time), or now."""
        self.now = max(self.now, to if to is not None else self.now)
        return self.handle(ev.Tick())

    def advance(self, seconds: float) -> list[Effect]:
        """Time passes; the ticker fires at each deadline on the way."""
        target = self.now + seconds
        effects: list[Effect] = []
        while (deadline := self.core.next_deadline()) is not None and deadline <= target:
            effects += self.tick(deadline)
            if self.core.next_deadline() == deadline:
                break  # a deadline that does not move: the caller's checks say so
        self.now = target
        return effects

    # --- replaying a recording -------------------------------------------------------------------

    def replay(self, recorded: list[Frame]) -> list[Effect]:
        """Play a recording; the effects come back with each drain's right after the effects of
        the frame that asked for it, as a tailer that reads at once would answer."""
        files = {frame["path"]: _file_bytes(frame) for frame in recorded if frame["dir"] == "file"}
        replayed: list[Effect] = []
        for frame in recorded:
            if frame["dir"] in ("in", "out"):
                self.now = float(frame.get("dt", 0.0))
                effects = (
                    self._recorded_in(frame["msg"])
                    if frame["dir"] == "in"
                    else self._recorded_out(frame["msg"])
                )
                replayed += self._with_drains(effects, files)
        return replayed

    def _with_drains(self, effects: list[Effect], files: dict[str, bytes]) -> list[Effect]:
        """The effects, then what the drains they ask for answer: as the host performs a
        ``FinishTail`` (its drain starts once the effects of the event are out)."""
        answered = list(effects)
        for effect in effects:
            if isinstance(effect, Tail):
                self._paths[effect.task_id] = effect.path
        for effect in effects:
            if isinstance(effect, FinishTail):
                data = files.get(self._paths.get(effect.task_id, ""), b"")
                answered += self._with_drains(self._drain(effect.task_id, data), files)
        return answered

    def _recorded_in(self, msg: Frame) -> list[Effect]:
        if msg.get("type") == "control_request":
            request = msg["request"]
            if request.get("subtype") != "can_use_tool":
                return []
            ticket = self._questions[msg["request_id"]] = self.ticket()
            tool_input = request.get("input") or {}
            suggested = tuple(
                PermissionUpdate.from_dict(s) for s in request.get("permission_suggestions") or []
            )
            return self.ask(
                ticket,
                request["tool_name"],
                tool_input,
                request.get("tool_use_id"),
                request.get("agent_id"),
                suggested,
            )
        if (info := _server_info(msg)) is not None:
            return self.handle(ev.ClaudeStarted(read_server_info(info), None))
        if msg.get("type") in ("control_response", "control_cancel_request"):
            return []
        message = parse_message(msg)
        return self.handle(ev.ClaudeMessage(message)) if message is not None else []

    def _recorded_out(self, msg: Frame) -> list[Effect]:
        if msg.get("type") == "user" and not msg.get("parent_tool_use_id"):
            return self.prompt(_blocks(msg["message"]["content"]), dt=0.0)[1]
        request = msg.get("request") or {}
        if msg.get("type") == "control_request" and request.get("subtype") == "interrupt":
            return self.handle(ev.CancelTurn())
        if msg.get("type") == "control_request" and request.get("subtype") == "stop_task":
            return self._stop(str(request.get("task_id")))
        if msg.get("type") == "control_response":
            ticket = self._questions.pop(str(msg["response"].get("request_id")), None)
            if ticket is None:
                return []
            behavior = (msg["response"].get("response") or {}).get("behavior")
            return self.answer(ticket, ALLOW_ONCE if behavior == "allow" else REJECT_ONCE)
        return []

    def _stop(self, task_id: str) -> list[Effect]:
        """The recorder stopped a task: the client's per-item cancel does the same."""
        if self.stops_tasks:
            return self.stop_task(task_id)[1]
        item = self.core.background.items.get(task_id)
        if item is None or item.kind not in self.cancels or not (item.task.tool_use_id or self.version >= 2):
            return []  # nothing the client could cancel
        if item.kind is Kind.TERMINAL:
            return self.handle(ev.CancelTerminal(item.session_id, item.ref))
        return self.handle(ev.CancelToolCall(item.session_id, item.ref))

    def _drain(self, task_id: str, data: bytes) -> list[Effect]:
        gate = TrailerGate()
        shown = gate.feed(data)
        rest, exit_info = gate.close()
        return self.output(task_id, shown) + self.drained(task_id, rest, exit_info)

    # --- out -------------------------------------------------------------------------------------

    @staticmethod
    def notified(effects: Iterable[Effect]) -> list[tuple[str, dict[str, Any]]]:
        """``(session id, wire form)`` of each update among ``effects``, in order."""
        return [(e.session_id, e.update.wire()) for e in effects if isinstance(e, Notify)]

    def updates_of(
        self, effects: Iterable[Effect], kind: str | None = None, session_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The wire form of the updates among ``effects`` sent to ``session_id`` (the root by
        default), only those of ``kind`` (their ``sessionUpdate``) where given."""
        wanted = session_id or self.session_id
        return [
            update
            for sent_to, update in self.notified(effects)
            if sent_to == wanted and kind in (None, update["sessionUpdate"])
        ]

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The wire form of every update sent so far to ``session_id`` (the root by default)."""
        return self.updates_of(self.effects, session_id=session_id)


def live_after_first_turn(recording: str) -> CoreDriver:
    """A v2 session that ran ``recording`` up to its first turn's end: its work still runs."""
    frames = load_frames(recording)
    first_result = next(
        i for i, f in enumerate(frames) if f["dir"] == "in" and f["msg"].get("type") == "result"
    )
    driver = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    driver.replay(frames[: first_result + 1])
    return driver


def stored_conversation(recorded: list[Frame], config_dir: Path) -> ev.StoredConversation:
    """What the recording kept of the stored conversation, written under ``config_dir`` as Claude
    Code lays it out (``store_recorded``) and read back as the agent reads it, as one part."""
    with mock.patch.dict(os.environ, store_recorded(recorded, config_dir)):
        return read_whole()


def read_whole(session_id: str = RECORDED_SESSION, cwd: str = CWD) -> ev.StoredConversation:
    """A stored conversation as the agent reads it (``session.replay``), its parts joined into one."""
    return joined(list(replay._parts(session_id, cwd)))


def joined(parts: list[ev.StoredConversation]) -> ev.StoredConversation:
    """The parts of a conversation as one, as a replay of it in one go takes it."""
    return ev.StoredConversation(
        [message for part in parts for message in part.messages],
        [child for part in parts for child in part.children],
        {task_id: output for part in parts for task_id, output in part.outputs.items()},
        [note for part in parts for note in part.notes],
    )


def store_recorded(recorded: list[Frame], config_dir: Path, *, rename: bool = False) -> dict[str, str]:
    """Write the transcripts the recording kept under ``config_dir/projects``, and its output
    files in Claude Code's task directory under ``config_dir/tmp`` (the recorder's uid is not
    ours); the environment that names both (``CLAUDE_CONFIG_DIR``, ``CLAUDE_CODE_TMPDIR``).
    With ``rename`` the transcripts name the output files where they now are (the goldens keep
    the recorded paths)."""
    env = {"CLAUDE_CONFIG_DIR": str(config_dir), "CLAUDE_CODE_TMPDIR": str(config_dir / "tmp")}
    files = [line for line in recorded if line["dir"] == "file"]
    bases = {re.sub(r"(/claude-\d+)/.*$", r"\1", line["path"]) for line in files}
    for line in files:
        for base in bases:
            if line["path"].startswith(base + "/"):
                path = Path(tasks_base(env) + line["path"][len(base) :])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(_file_bytes(line))
    project = config_dir / "projects" / CWD.replace("/", "-")
    for line in (line for line in recorded if line["dir"] == "stored"):
        path = project / line["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        record = json.dumps(line["record"])
        for base in bases if rename else ():
            record = record.replace(base + "/", tasks_base(env) + "/")
        with path.open("a") as file:
            file.write(record + ("\n" if path.suffix == ".jsonl" else ""))
    return env


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def effect_json(effect: Effect, root: str = SESSION_ID) -> dict[str, Any]:
    if isinstance(effect, Notify):
        session = "root" if effect.session_id == root else effect.session_id
        return {"notify": _digested(effect.update.wire()), "session": session}
    if isinstance(effect, Fail):
        return {"fail": {"ticket": effect.ticket, "error": rpc_error(effect.failure).to_wire()}}
    return {type(effect).__name__: asdict(effect)}


def as_jsonrpc(
    effects: list[Effect], requests: Mapping[int, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent's lines and the client requests they answer, as they would go over stdio;
    ``requests`` names the method of a ticket that is not a prompt (``CoreDriver.requests``)."""
    agent: list[dict[str, Any]] = []
    client: list[dict[str, Any]] = []
    for effect in effects:
        if isinstance(effect, Notify):
            params = {"sessionId": effect.session_id, "update": effect.update.wire()}
            agent.append({"jsonrpc": "2.0", "method": "session/update", "params": params})
        elif isinstance(effect, Reply):
            method = (requests or {}).get(effect.ticket, "session/prompt")
            client.append({"jsonrpc": "2.0", "id": effect.ticket, "method": method})
            agent.append({"jsonrpc": "2.0", "id": effect.ticket, "result": effect.result})
        elif isinstance(effect, Fail):
            client.append({"jsonrpc": "2.0", "id": effect.ticket, "method": "session/prompt"})
            agent.append(
                {"jsonrpc": "2.0", "id": effect.ticket, "error": rpc_error(effect.failure).to_wire()}
            )
        elif isinstance(effect, AskPermission):
            request = {"jsonrpc": "2.0", "id": f"ask-{effect.ticket}", "method": "session/request_permission"}
            agent.append({**request, "params": effect.params})
        elif isinstance(effect, AskQuestions):
            agent += [
                {
                    "jsonrpc": "2.0",
                    "id": f"ask-{effect.ticket}-{i}",
                    "method": ask.method,
                    "params": ask.params,
                }
                for i, ask in enumerate(effect.asking.asks)
            ]
    return agent, client


def _asked_calls(effect: Effect) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The permission requests of an effect that asks the client, each with its tool call as the
    update a client applies it as."""
    if isinstance(effect, AskPermission):
        asked = [effect.params]
    elif isinstance(effect, AskQuestions):
        asked = [ask.params for ask in effect.asking.asks if ask.method == "session/request_permission"]
    else:
        return []
    calls = [
        (params, params.get("toolCall") or params.get("subject", {}).get("toolCall")) for params in asked
    ]
    return [
        (params, {"sessionUpdate": "tool_call_update", **call}) for params, call in calls if call is not None
    ]


def _file_bytes(line: dict[str, Any]) -> bytes:
    """A recorded output file (stored plainly, or compressed when large)."""
    if "data_b64" in line:
        return base64.b64decode(line["data_b64"])
    if "data_zlib_b64" in line:
        return zlib.decompress(base64.b64decode(line["data_zlib_b64"]))
    return b""


def _digested(value: Any) -> Any:
    """``value`` with long strings (terminal output of a burst) replaced by their digest, so a
    golden file stays reviewable and small while still pinning every byte."""
    if isinstance(value, str) and len(value) > DIGEST_OVER:
        return f"sha256:{hashlib.sha256(value.encode()).hexdigest()} ({len(value)} chars)"
    if isinstance(value, dict):
        return {key: _digested(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_digested(item) for item in value]
    return value


def shell_past_the_answer(d: CoreDriver, shell: TaskSpec) -> int:
    """A prompt that starts ``shell`` in the background, whose output is read before its
    hand-off (a euro sign cut in half between two reads), after the prompt's answer, and at its
    exit 0 after Claude Code's notice; the prompt's ticket."""
    ticket, _ = d.prompt("Run a background job.")
    d.frames(state_changed("running"), shell.launch(), shell.started())
    d.output(shell.task_id, b"first \xe2\x82")
    d.frames(shell.hand_off(), text("Started."), result())
    d.output(shell.task_id, b"\xac\nsecond\n")
    d.frames(shell.notification("completed"))
    d.drained(shell.task_id, b"last\n", ExitInfo(0, None))
    return ticket


def check_transcript(driver: CoreDriver, effects: list[Effect], client: str, recorded: bool = False) -> None:
    """The effects, as the wire carries them, are valid for the client kind's version, keep the
    background rules, and leave no terminal that Zed would show running forever, nor, when they
    are a whole recording of the real CLI (``recorded``: every piece of work in it ended), a
    tool call a plain v1 client would show running."""
    agent_lines, client_lines = as_jsonrpc(effects, driver.requests)
    version, capabilities = CLIENTS[client]
    violations = validate_transcript(agent_lines, client_lines, version, air=declares_air(capabilities))
    assert not violations, "\n".join(violations)
    check_updates(driver.timeline(effects), version)
    if capabilities == ZED_CAPABILITIES:
        shown = ZedView.replay(driver.session_id, agent_lines, client_lines)
        assert not shown.problems(), "\n".join(shown.problems())
        running = [t.terminal_id for t in shown.terminals.values() if t.exit is None]
        assert not running, f"Zed would show these terminals running forever: {running}"
    if isinstance(driver.core.presenter, PlainPresenter):
        plain = PlainView.replay(agent_lines, client_lines)
        assert not plain.problems, "\n".join(plain.problems)
        running = [card.title for card in plain.cards.values() if card.status not in FINAL]
        assert not recorded or not running, (
            f"a plain v1 client would show these tool calls running forever: {running}"
        )


def assert_golden(golden: Path, lines: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
    if os.environ.get("UPDATE_GOLDEN") or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
        assert os.environ.get("UPDATE_GOLDEN"), f"wrote a new golden file {golden.name}; review and commit it"
    assert text == golden.read_text()
