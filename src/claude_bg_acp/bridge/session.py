"""One ACP session's core: SDK messages and client requests in, effects out.

``SessionCore`` owns the translation of Claude Code's stream into ACP updates:

- streamed text and thinking deltas become ``agent_message_chunk`` / ``agent_thought_chunk``
  as they arrive; the complete assistant message that follows repeats them, so text of a
  message that was already streamed is not sent again;
- a ``tool_use`` becomes a tool call as soon as its block starts (``pending``), and is updated
  with its input and ``in_progress`` when the complete message arrives; its ``tool_result``
  completes or fails it;
- results and ``session_state_changed`` drive the foreground lifecycle (see ``turns``);
- ``can_use_tool`` becomes a permission question, answered through ``Decide``.

Output of subagents (messages with a ``parent_tool_use_id``) belongs to child sessions and is
left out here. Every method takes ``now`` (seconds, monotonic) so that timers stay testable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import Message, StreamEvent

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, RpcError
from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.acp.updates import ContentChunk, TextContent, ToolCall
from claude_bg_acp.bridge import tools
from claude_bg_acp.bridge.effects import (
    AskPermission,
    Decide,
    Effect,
    Notify,
    Ticket,
    WithdrawPermission,
)
from claude_bg_acp.bridge.prompts import to_claude_content
from claude_bg_acp.bridge.turns import Foreground, HeldPrompt, Version

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"
PERMISSION_OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow", "kind": "allow_always"},
    {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
]


@dataclass
class ToolState:
    name: str
    announced: bool = False
    finished: bool = False


@dataclass
class Question:
    tool_use_id: str | None
    foreground: bool


@dataclass
class SessionCore:
    session_id: str
    version: Version
    foreground: Foreground = field(init=False)
    tool_calls: dict[str, ToolState] = field(default_factory=dict)
    questions: dict[Ticket, Question] = field(default_factory=dict)
    streamed: set[tuple[str, str]] = field(default_factory=set)
    stream_message_id: str | None = None
    stream_blocks: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.foreground = Foreground(self.session_id, self.version)

    def opened(self, now: float) -> list[Effect]:
        """A v2 session starts idle, and reports its (empty) background list from the start."""
        return self.foreground.opened()

    # --- client requests ----------------------------------------------------------------------

    def prompt(self, ticket: Ticket, content: list[ContentBlock], now: float) -> list[Effect]:
        wire = [block.wire() for block in content]
        return self.foreground.submit(HeldPrompt(ticket, wire, to_claude_content(wire)))

    def cancel(self, now: float) -> list[Effect]:
        effects = self.foreground.cancel()
        for ticket in [t for t, q in self.questions.items() if q.foreground]:
            effects += self._withdraw(ticket, "The user cancelled the turn")
        return effects

    def close(self, now: float) -> list[Effect]:
        effects: list[Effect] = []
        for ticket in list(self.questions):
            effects += self._withdraw(ticket, "The session was closed")
        return effects + self.foreground.close()

    # --- Claude Code ---------------------------------------------------------------------------

    def sdk_message(self, message: Message, now: float) -> list[Effect]:
        if getattr(message, "parent_tool_use_id", None):
            return []
        if isinstance(message, StreamEvent):
            return self._stream_event(message.event)
        if isinstance(message, AssistantMessage):
            return self._assistant(message)
        if isinstance(message, UserMessage):
            return self._tool_results(message)
        if isinstance(message, ResultMessage):
            return self._result(message)
        if isinstance(message, SystemMessage) and message.subtype == "session_state_changed":
            return self.foreground.cli_state(str(message.data.get("state")))
        return []

    def permission_requested(
        self,
        ticket: Ticket,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        agent_id: str | None,
        now: float,
    ) -> list[Effect]:
        foreground = agent_id is None
        self.questions[ticket] = Question(tool_use_id, foreground)
        call = self._tool_call_fields(tool_use_id or f"permission-{ticket}", tool_name, tool_input)
        call["status"] = "pending"
        view = tools.describe(tool_name, tool_input)
        if self.version == 1:
            params: dict[str, Any] = {"toolCall": call}
        else:
            params = {"title": f"Allow {view.title}?", "subject": {"type": "tool_call", "toolCall": call}}
        params.update(sessionId=self.session_id, options=PERMISSION_OPTIONS)
        effects: list[Effect] = [AskPermission(ticket, params)]
        if foreground:
            effects += self.foreground.set_blocked(True)
        return effects

    def permission_answered(self, ticket: Ticket, option_id: str | None, now: float) -> list[Effect]:
        """``option_id`` is None when the client cancelled the question."""
        if ticket not in self.questions:
            return []
        allow = option_id in (ALLOW_ONCE, ALLOW_ALWAYS)
        message = "" if allow else "The user rejected this tool use"
        decision = Decide(ticket, allow, always=option_id == ALLOW_ALWAYS, message=message)
        return [decision, *self._forget_question(ticket)]

    def sdk_failed(self, reason: str, now: float) -> list[Effect]:
        effects: list[Effect] = []
        for ticket in list(self.questions):
            effects += self._withdraw(ticket, "Claude Code stopped")
        return effects + self.foreground.fail(RpcError(INTERNAL_ERROR, reason))

    # --- translation -----------------------------------------------------------------------------

    def _stream_event(self, event: dict[str, Any]) -> list[Effect]:
        kind = event.get("type")
        if kind == "message_start":
            self.stream_message_id = str(event.get("message", {}).get("id") or "")
            self.stream_blocks = {}
            return []
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            self.stream_blocks[int(event.get("index", 0))] = str(block.get("type"))
            if block.get("type") == "tool_use":
                return self._announce_tool(str(block.get("id")), str(block.get("name")))
            return []
        if kind == "content_block_delta":
            return self._delta(event.get("delta") or {})
        return []

    def _delta(self, delta: dict[str, Any]) -> list[Effect]:
        message_id = self.stream_message_id
        if not message_id:
            return []
        if delta.get("type") == "text_delta" and delta.get("text"):
            self.streamed.add((message_id, "text"))
            return [self._chunk("agent_message_chunk", message_id, str(delta["text"]))]
        if delta.get("type") == "thinking_delta" and delta.get("thinking"):
            self.streamed.add((message_id, "thinking"))
            return [self._chunk("agent_thought_chunk", message_id, str(delta["thinking"]))]
        return []

    def _assistant(self, message: AssistantMessage) -> list[Effect]:
        message_id = message.message_id or message.uuid or "assistant"
        effects: list[Effect] = []
        for block in message.content:
            if isinstance(block, TextBlock) and (message_id, "text") not in self.streamed:
                effects.append(self._chunk("agent_message_chunk", message_id, block.text))
            elif isinstance(block, ThinkingBlock) and (message_id, "thinking") not in self.streamed:
                effects.append(self._chunk("agent_thought_chunk", message_id, block.thinking))
            elif isinstance(block, ToolUseBlock):
                effects += self._tool_use(block)
        return effects

    def _chunk(self, kind: str, message_id: str, text: str) -> Notify:
        chunk = ContentChunk(session_update=kind, content=TextContent(text=text))  # type: ignore[arg-type]
        chunk.message_id = message_id
        return Notify(self.session_id, chunk)

    def _announce_tool(self, tool_use_id: str, name: str) -> list[Effect]:
        if tool_use_id in self.tool_calls:
            return []
        self.tool_calls[tool_use_id] = ToolState(name, announced=True)
        view = tools.describe(name, {})
        call = ToolCall(
            session_update=self._creating(),
            tool_call_id=tool_use_id,
            title=view.title,
            kind=view.kind,
            status="pending",
        )
        return [Notify(self.session_id, call)]

    def _tool_use(self, block: ToolUseBlock) -> list[Effect]:
        state = self.tool_calls.setdefault(block.id, ToolState(block.name))
        if state.finished:
            return []
        fields = self._tool_call_fields(block.id, block.name, block.input)
        fields["status"] = "in_progress"
        kind = "tool_call_update" if state.announced else self._creating()
        state.announced = True
        return [Notify(self.session_id, ToolCall.model_validate({"sessionUpdate": kind, **fields}))]

    def _tool_call_fields(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        view = tools.describe(name, tool_input)
        fields: dict[str, Any] = {
            "toolCallId": tool_use_id,
            "title": view.title,
            "kind": view.kind,
            "rawInput": tool_input,
        }
        if view.locations is not None:
            fields["locations"] = view.locations
        if view.content is not None:
            fields["content"] = view.content
        return fields

    def _tool_results(self, message: UserMessage) -> list[Effect]:
        if isinstance(message.content, str):
            return []
        effects: list[Effect] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                effects += self._tool_result(block)
        return effects

    def _tool_result(self, block: ToolResultBlock) -> list[Effect]:
        state = self.tool_calls.get(block.tool_use_id)
        if state is None or state.finished:
            return []
        state.finished = True
        text = tools.result_text(block.content)
        update = ToolCall(
            session_update="tool_call_update",
            tool_call_id=block.tool_use_id,
            status="failed" if block.is_error else "completed",
        )
        if text:
            update.content = [tools.text_content(text)]
        update.raw_output = block.content
        return [Notify(self.session_id, update)]

    def _result(self, message: ResultMessage) -> list[Effect]:
        origin: dict[str, Any] = dict(message.origin or {})
        follow_up = bool(origin) and origin.get("kind") not in (None, "user")
        effects = self._close_tool_calls("cancelled" if message.subtype != "success" else None)
        return effects + self.foreground.result(
            message.subtype, message.stop_reason, follow_up, message.usage, message.errors
        )

    def _close_tool_calls(self, status: str | None) -> list[Effect]:
        """A turn that ended early leaves its unfinished tool calls with a final status."""
        if status is None:
            return []
        effects: list[Effect] = []
        for tool_use_id, state in self.tool_calls.items():
            if not state.finished:
                state.finished = True
                update = ToolCall(session_update="tool_call_update", tool_call_id=tool_use_id, status=status)
                effects.append(Notify(self.session_id, update))
        return effects

    def _creating(self) -> Literal["tool_call", "tool_call_update"]:
        # v2 has no separate creating variant: the first tool_call_update creates the call.
        return "tool_call" if self.version == 1 else "tool_call_update"

    # --- permission questions ------------------------------------------------------------------

    def _withdraw(self, ticket: Ticket, why: str) -> list[Effect]:
        return [
            Decide(ticket, False, message=why, interrupt=True),
            WithdrawPermission(ticket),
            *self._forget_question(ticket),
        ]

    def _forget_question(self, ticket: Ticket) -> list[Effect]:
        question = self.questions.pop(ticket)
        if question.foreground and not any(q.foreground for q in self.questions.values()):
            return self.foreground.set_blocked(False)
        return []
