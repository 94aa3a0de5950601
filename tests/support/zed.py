"""What a Zed user sees: Zed's capabilities, and Zed's rules for the messages it reads.

The rules were read from Zed's source (``zed-industries/zed``: ``crates/agent_servers/src/acp.rs``,
``crates/agent_servers/src/acp/subagent_updates.rs``, ``crates/acp_thread/src/acp_thread.rs``
and ``terminal.rs``); ``ZedView`` applies them, in order, to the agent's messages and builds the
threads, tool calls and display terminals Zed would show. Anything Zed would reject, log or
drop is kept in ``errors``, ``rejected`` and ``dropped``, so that a test can say "nothing lost".

What it models:

- a ``session/update`` for a session Zed does not know is dropped; an update kind the v1 schema
  does not have is rejected, except the draft child-session kinds ``subagent_spawned`` and
  ``subagent_state_update`` (sent on the parent), which Zed decodes itself: a spawn opens a
  child thread (the prompt as its first user message), known from then on;
- an update of a known child that carries ``_meta.claudeCode.parentToolUseId`` links the child
  to that tool call of its parent, once; a missing tool call is then a failed
  "Tool call not found" entry;
- ``tool_call``: first its ``_meta.terminal_info`` creates a display terminal (thread-wide, by
  id; output and exit that came before are applied now), then the call is upserted: every field
  is replaced, the status defaults to ``pending``;
- ``tool_call_update``: an unknown id pushes a failed "Tool call not found" entry; the fields
  present replace the call's (``content`` replaces the whole list); then, even when the update
  failed, ``_meta.terminal_output`` is APPENDED to its terminal (buffered while the terminal
  does not exist) and ``_meta.terminal_exit`` ends it (the first exit wins).
  ``terminal_output_delta`` is not read, nor is ``terminal_info`` on an update or output and
  exit on a ``tool_call``;
- a content item ``{type: "terminal"}`` naming a terminal that does not exist fails the whole
  update (nothing of it applies);
- ``session/request_permission`` upserts its tool call (waiting for confirmation);
- an ``elicitation/create`` form (``crates/agent_ui/src/conversation_view/elicitation.rs``)
  shows its properties in name order: a string with ``oneOf`` or ``enum`` as a single choice,
  another string, a number or an integer as a text box, a boolean as a checkbox, an array as a
  multiple choice; Zed skips a property of any other type (a question the user never sees);
- agent text and thoughts append to the thread's last message of their kind;
- a prompt answered ``cancelled`` (or with an error) marks unfinished tool calls canceled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.views import requests_of, stamped

ZED_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "session": {"configOptions": {"boolean": {}}},
    "elicitation": {"form": {}, "url": {}},
    "_meta": {"terminal_output": True, "terminal-auth": True},
    "subagents": {},
}
"""``initialize.clientCapabilities`` as Zed sends them (its ACP beta flag off)."""
ZED_CLIENT_INFO = {"name": "zed", "version": "0.230.0", "title": "Zed"}

V1_UPDATE_KINDS = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
)
"""The update kinds Zed's typed v1 handler decodes (the stable schema's)."""
DRAFT_CHILD_KINDS = ("subagent_spawned", "subagent_state_update")
UNFINISHED = ("pending", "in_progress", "waiting_for_confirmation")

JsonObject = dict[str, Any]


class Rejected(Exception):
    """Zed fails the whole update (it logs the error; nothing of the update applies)."""


@dataclass
class Terminal:
    """A display terminal: what it printed, as Zed's emulator gets the bytes, and its exit."""

    terminal_id: str
    label: str
    cwd: str | None
    output: bytearray = field(default_factory=bytearray)
    exit: tuple[int | None, str | None] | None = None
    appended_at: list[float] = field(default_factory=list)
    """When each piece of output arrived (seconds, as the caller timed the messages)."""
    exited_at: float | None = None

    @property
    def text(self) -> str:
        return self.output.decode("utf-8")


@dataclass
class ToolCallEntry:
    tool_call_id: str
    title: str
    kind: str
    status: str
    content: list[JsonObject] = field(default_factory=list)
    locations: list[JsonObject] = field(default_factory=list)
    """Where "follow the agent" goes (an update's ``locations`` replace them)."""
    raw_input: Any = None
    raw_output: Any = None
    subagent_session: str | None = None
    """A child thread linked to this call (``ToolCall::is_subagent``)."""

    @property
    def terminal_ids(self) -> list[str]:
        return [str(item["terminalId"]) for item in self.content if item.get("type") == "terminal"]


@dataclass
class Message:
    role: str
    """``user``, ``assistant`` or ``thought``."""
    text: str


@dataclass
class Form:
    """An ``elicitation/create`` form as Zed shows it."""

    message: str
    fields: dict[str, str]
    """Each field Zed shows, in its order: ``choice``, ``choices``, ``text`` or ``checkbox``."""


@dataclass
class Thread:
    session_id: str
    parent: str | None = None
    title: str = ""
    entries: list[Message | ToolCallEntry] = field(default_factory=list)
    tool_calls: dict[str, ToolCallEntry] = field(default_factory=dict)
    linked: bool = False
    state: str | None = None
    """A child's last ``subagent_state_update``."""
    titled: list[tuple[float, str]] = field(default_factory=list)
    """Each title ``session_info_update`` gave the thread, and when it arrived."""

    def text(self, role: str = "assistant") -> str:
        return "".join(e.text for e in self.entries if isinstance(e, Message) and e.role == role)


@dataclass
class ZedView:
    root: str
    threads: dict[str, Thread] = field(default_factory=dict)
    terminals: dict[str, Terminal] = field(default_factory=dict)
    """Zed keys terminals per thread; ids here are unique across threads, so one map serves."""
    pending_output: dict[str, bytearray] = field(default_factory=dict)
    pending_exit: dict[str, tuple[int | None, str | None]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    rejected: list[JsonObject] = field(default_factory=list)
    dropped: list[JsonObject] = field(default_factory=list)
    prompt_answers: list[tuple[float, JsonObject]] = field(default_factory=list)
    forms: list[Form] = field(default_factory=list)
    _requests: dict[Any, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.threads[self.root] = Thread(self.root)

    # --- building it ------------------------------------------------------------------------------

    @classmethod
    def replay(
        cls,
        root: str,
        agent_lines: Iterable[Any],
        client_lines: Iterable[Any] = (),
        times: Iterable[float] | None = None,
    ) -> ZedView:
        """Apply the agent's messages in order (``times``: when each arrived, in seconds)."""
        view = cls(root)
        view._requests = requests_of(client_lines)
        for line, t in stamped(agent_lines, times):
            view.see(line, t)
        return view

    @classmethod
    def of_run(cls, run: Any) -> ZedView:
        """The view of a ``tests.support.acp_client.ClientRun`` (times in seconds)."""
        times = [t / 1000 for t in run.agent_line_times]
        return cls.replay(run.session_id(), run.agent_lines, run.client_lines, times)

    def see(self, message: Any, t: float = 0.0) -> None:
        if not isinstance(message, Mapping):
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method == "session/update":
            self._notification(params, t)
        elif method == "session/request_permission":
            self._permission(params)
        elif method == "elicitation/create":
            self._form(params)
        elif "method" not in message and self._requests.get(message.get("id")) == "session/prompt":
            self._answered(message, t)

    # --- session/update -----------------------------------------------------------------------------

    def _notification(self, params: Mapping[str, Any], t: float) -> None:
        session_id = str(params.get("sessionId"))
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind in DRAFT_CHILD_KINDS:
            self._child(session_id, update)
            return
        thread = self.threads.get(session_id)
        if thread is None:
            self.dropped.append(dict(params))
            return
        self._attribution(thread, update)
        if kind not in V1_UPDATE_KINDS:
            self.rejected.append(dict(params))
            return
        try:
            self._apply(thread, update, t)
        except Rejected as error:
            self.errors.append(f"{session_id}: {error}: {update}")

    def _apply(self, thread: Thread, update: Mapping[str, Any], t: float) -> None:
        kind = update["sessionUpdate"]
        meta = update.get("_meta") or {}
        if kind == "tool_call":
            info = meta.get("terminal_info")
            if isinstance(info, Mapping) and isinstance(info.get("terminal_id"), str):
                self._create_terminal(
                    str(info["terminal_id"]), str(update.get("title", "")), info.get("cwd"), t
                )
            self._upsert(thread, update, str(update.get("status", "pending")))
        elif kind == "tool_call_update":
            try:
                self._update(thread, update)
            finally:  # Zed reads the terminal keys even when the update itself failed
                self._terminal_meta(meta, t)
        elif kind == "session_info_update" and isinstance(update.get("title"), str):
            thread.title = update["title"]
            thread.titled.append((t, thread.title))
        elif kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            role = {"agent_message_chunk": "assistant", "agent_thought_chunk": "thought"}.get(kind, "user")
            content = update.get("content") or {}
            self._say(thread, role, str(content.get("text", "")) if content.get("type") == "text" else "")

    @staticmethod
    def _say(thread: Thread, role: str, text: str) -> None:
        last = thread.entries[-1] if thread.entries else None
        if isinstance(last, Message) and last.role == role:
            last.text += text
        else:
            thread.entries.append(Message(role, text))

    # --- tool calls ----------------------------------------------------------------------------------

    def _content(self, items: Any) -> list[JsonObject]:
        content = [dict(item) for item in items or [] if isinstance(item, Mapping)]
        for item in content:
            if item.get("type") == "terminal" and item.get("terminalId") not in self.terminals:
                raise Rejected(f"Terminal with id `{item.get('terminalId')}` not found")
        return content

    def _upsert(self, thread: Thread, call: Mapping[str, Any], status: str) -> None:
        call_id = str(call["toolCallId"])
        content = self._content(call.get("content"))
        known = thread.tool_calls.get(call_id)
        if known is None:
            known = thread.tool_calls[call_id] = ToolCallEntry(call_id, "", "other", status)
            thread.entries.append(known)
        known.title = str(call.get("title") or known.title)
        known.kind = str(call.get("kind") or "other")
        known.status = status
        known.content = content
        known.locations = [dict(location) for location in call.get("locations") or []]
        known.raw_input = call.get("rawInput")
        known.raw_output = call.get("rawOutput")

    def _update(self, thread: Thread, update: Mapping[str, Any]) -> None:
        call_id = str(update["toolCallId"])
        known = thread.tool_calls.get(call_id)
        if known is None:
            self._not_found(thread, call_id)
            raise Rejected(f"Tool call not found: {call_id}")
        content = self._content(update["content"]) if update.get("content") is not None else None
        if update.get("title") is not None:
            known.title = str(update["title"])
        if update.get("kind") is not None:
            known.kind = str(update["kind"])
        if update.get("status") is not None:
            known.status = str(update["status"])
        if content is not None:
            known.content = content
        if update.get("locations") is not None:
            known.locations = [dict(location) for location in update["locations"]]
        if "rawInput" in update:
            known.raw_input = update["rawInput"]
        if "rawOutput" in update:
            known.raw_output = update["rawOutput"]

    @staticmethod
    def _not_found(thread: Thread, call_id: str) -> None:
        entry = ToolCallEntry(call_id, "Tool call not found", "fetch", "failed")
        thread.tool_calls[call_id] = entry
        thread.entries.append(entry)

    def _permission(self, params: Mapping[str, Any]) -> None:
        thread = self.threads.get(str(params.get("sessionId")))
        call = params.get("toolCall")
        if thread is None or not isinstance(call, Mapping):
            self.dropped.append(dict(params))
            return
        try:
            if str(call.get("toolCallId")) in thread.tool_calls:
                self._update(thread, {**call, "status": "waiting_for_confirmation"})
            else:
                self._upsert(thread, call, "waiting_for_confirmation")
        except Rejected as error:
            self.errors.append(f"permission request: {error}")

    def _form(self, params: Mapping[str, Any]) -> None:
        schema = params.get("requestedSchema") or {}
        fields: dict[str, str] = {}
        for name, prop in sorted((schema.get("properties") or {}).items()):
            kind = {"number": "text", "integer": "text", "boolean": "checkbox", "array": "choices"}.get(
                prop.get("type"), "choice" if prop.get("oneOf") or prop.get("enum") else "text"
            )
            if prop.get("type") not in ("string", "number", "integer", "boolean", "array"):
                self.errors.append(f"form field {name}: Zed skips a property of type {prop.get('type')!r}")
                continue
            fields[name] = kind
        self.forms.append(Form(str(params.get("message")), fields))

    def _answered(self, response: Mapping[str, Any], t: float) -> None:
        self.prompt_answers.append((t, dict(response)))
        result = response.get("result") or {}
        if "error" in response or result.get("stopReason") in ("cancelled", "max_tokens"):
            for thread in self.threads.values():
                for call in thread.tool_calls.values():
                    if call.status in UNFINISHED:
                        call.status = "canceled"

    # --- display terminals ---------------------------------------------------------------------------

    def _create_terminal(self, terminal_id: str, label: str, cwd: Any, t: float) -> None:
        if terminal_id in self.terminals:
            self.errors.append(f"terminal_info for terminal {terminal_id}, which exists already")
            return
        terminal = self.terminals[terminal_id] = Terminal(
            terminal_id, label, cwd if isinstance(cwd, str) else None
        )
        if terminal_id in self.pending_output:
            terminal.output += self.pending_output.pop(terminal_id)
            terminal.appended_at.append(t)
        if terminal_id in self.pending_exit:
            terminal.exit, terminal.exited_at = self.pending_exit.pop(terminal_id), t

    def _terminal_meta(self, meta: Mapping[str, Any], t: float) -> None:
        output = meta.get("terminal_output")
        if isinstance(output, Mapping) and isinstance(output.get("terminal_id"), str):
            data = output.get("data")
            if isinstance(data, str):
                self._append(str(output["terminal_id"]), data.encode("utf-8"), t)
        ended = meta.get("terminal_exit")
        if isinstance(ended, Mapping) and isinstance(ended.get("terminal_id"), str):
            code = ended.get("exit_code")
            signal = ended.get("signal")
            status = (
                code if isinstance(code, int) and code >= 0 else None,
                signal if isinstance(signal, str) else None,
            )
            terminal = self.terminals.get(str(ended["terminal_id"]))
            if terminal is None:
                self.pending_exit[str(ended["terminal_id"])] = status
            elif terminal.exit is None:
                terminal.exit, terminal.exited_at = status, t

    def _append(self, terminal_id: str, data: bytes, t: float) -> None:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            self.pending_output.setdefault(terminal_id, bytearray()).extend(data)
            return
        terminal.output += data
        terminal.appended_at.append(t)

    # --- subagents (the draft form) -------------------------------------------------------------------

    def _child(self, parent: str, update: Mapping[str, Any]) -> None:
        child = update.get("subagentSessionId")
        if not isinstance(child, str):
            self.errors.append(f"malformed {update.get('sessionUpdate')}: {update}")
            return
        if update["sessionUpdate"] == "subagent_state_update":
            if child in self.threads:
                self.threads[child].state = str(update.get("state"))
            return
        if child in self.threads or parent not in self.threads:
            return
        thread = self.threads[child] = Thread(child, parent, str(update.get("name", "")))
        if isinstance(update.get("prompt"), str):
            thread.entries.append(Message("user", update["prompt"]))

    def _attribution(self, thread: Thread, update: Mapping[str, Any]) -> None:
        meta = update.get("_meta") or {}
        claude = meta.get("claudeCode") if isinstance(meta, Mapping) else None
        tool_use = claude.get("parentToolUseId") if isinstance(claude, Mapping) else None
        if thread.parent is None or thread.linked or not isinstance(tool_use, str) or not tool_use:
            return
        thread.linked = True
        parent = self.threads[thread.parent]
        call = parent.tool_calls.get(tool_use)
        if call is None:
            self._not_found(parent, tool_use)
            self.errors.append(
                f"child {thread.session_id} linked to tool call {tool_use}, unknown to its parent"
            )
            return
        call.subagent_session = thread.session_id

    # --- what a test asks ---------------------------------------------------------------------------

    def thread(self, session_id: str | None = None) -> Thread:
        return self.threads[session_id or self.root]

    def drawn(self, tool_call: ToolCallEntry) -> list[Terminal]:
        """The terminals the tool call's card draws."""
        return [self.terminals[t] for t in tool_call.terminal_ids]

    def calls(self, title: str | None = None, session_id: str | None = None) -> list[ToolCallEntry]:
        return [
            call
            for call in self.thread(session_id).tool_calls.values()
            if title is None or call.title == title
        ]

    def problems(self) -> list[str]:
        """What a Zed user would miss, or what Zed would log as wrong: empty when all is shown."""
        found = [*self.errors]
        found += [f"rejected (not a v1 update): {params}" for params in self.rejected]
        found += [f"dropped (unknown session): {params}" for params in self.dropped]
        found += [f"output for terminal {t} that was never created" for t in self.pending_output]
        found += [f"exit of terminal {t} that was never created" for t in self.pending_exit]
        drawn = {
            t for thread in self.threads.values() for c in thread.tool_calls.values() for t in c.terminal_ids
        }
        found += [f"terminal {t} is never drawn" for t in self.terminals if t not in drawn]
        return found
