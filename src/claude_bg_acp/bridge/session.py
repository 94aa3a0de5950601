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
from claude_bg_acp.bridge.background import Background, ToolUse
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
from claude_bg_acp.output import ExitInfo

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"
PERMISSION_OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow", "kind": "allow_always"},
    {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
]


@dataclass
class Question:
    tool_use_id: str | None
    foreground: bool


@dataclass
class SessionCore:
    session_id: str
    version: Version
    cwd: str = "/"
    tasks_root: str | None = None
    """Where Claude Code keeps task output files, up to the CLI's session id (see claude.paths)."""
    foreground: Foreground = field(init=False)
    background: Background = field(init=False)
    tool_calls: dict[str, ToolUse] = field(default_factory=dict)
    questions: dict[Ticket, Question] = field(default_factory=dict)
    streamed: set[tuple[str, str]] = field(default_factory=set)
    stream_message_id: str | None = None
    stream_blocks: dict[int, str] = field(default_factory=dict)
    turn_error: str | None = None
    """The API error an assistant message of this turn reported (e.g. ``max_output_tokens``)."""

    def __post_init__(self) -> None:
        self.foreground = Foreground(self.session_id, self.version)
        self.background = Background(
            self.session_id, self.cwd, self.version, self.foreground, self.tool_calls, self.tasks_root
        )

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
        """Closing starts: withdraw questions, end the turn, and stop every background task.

        The tasks' own end events finalize them (``settled`` tells when); ``abandon`` finalizes
        whatever did not confirm in time.
        """
        effects: list[Effect] = []
        for ticket in list(self.questions):
            effects += self._withdraw(ticket, "The session was closed")
        return effects + self.foreground.close() + self.background.stop_all(now)

    @property
    def settled(self) -> bool:
        return self.background.settled

    def abandon(self, now: float) -> list[Effect]:
        return self.background.abandon(now)

    # --- Claude Code ---------------------------------------------------------------------------

    def sdk_message(self, message: Message, now: float) -> list[Effect]:
        if getattr(message, "parent_tool_use_id", None):
            return []
        if isinstance(message, StreamEvent):
            return self._stream_event(message.event)
        if isinstance(message, AssistantMessage):
            return self._assistant(message)
        if isinstance(message, UserMessage):
            return self._tool_results(message, now)
        if isinstance(message, ResultMessage):
            return self._result(message)
        if isinstance(message, SystemMessage):
            if message.subtype == "session_state_changed":
                return self.foreground.cli_state(str(message.data.get("state")))
            return self.background.system(message.subtype, message.data, now)
        return []

    # --- background work ---------------------------------------------------------------------------

    def cancel_terminal(self, terminal_id: str, now: float) -> list[Effect]:
        return self.background.cancel_terminal(terminal_id, now)

    def cancel_tool_call(self, tool_call_id: str, now: float) -> list[Effect]:
        return self.background.cancel_tool_call(tool_call_id, now)

    def terminal_output(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        return self.background.output(task_id, data)

    def terminal_snapshot(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        return self.background.snapshot(task_id, data)

    def terminal_drained(
        self, task_id: str, rest: bytes, exit_info: ExitInfo | None, now: float
    ) -> list[Effect]:
        return self.background.drained(task_id, rest, exit_info, now)

    def tick(self, now: float) -> list[Effect]:
        return self.background.tick(now) + self.foreground.tick(now)

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.background.next_deadline(), self.foreground.next_deadline()) if d]
        return min(deadlines) if deadlines else None

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
        if message.error is not None:
            self.turn_error = str(message.error)
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
        self.tool_calls[tool_use_id] = ToolUse(name, {}, announced=True)
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
        state = self.tool_calls.setdefault(block.id, ToolUse(block.name, block.input))
        state.tool_input = block.input
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

    def _tool_results(self, message: UserMessage, now: float) -> list[Effect]:
        if isinstance(message.content, str):
            return []
        effects: list[Effect] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                effects += self._tool_result(block, now)
        return effects

    def _tool_result(self, block: ToolResultBlock, now: float) -> list[Effect]:
        state = self.tool_calls.get(block.tool_use_id)
        if state is None or state.finished:
            return []
        text = tools.result_text(block.content)
        effects, handed_off = self.background.hand_off(block.tool_use_id, text, now)
        if handed_off is not None:
            # Background work now owns this tool call (or its terminal does).
            update = ToolCall.model_validate(
                {"sessionUpdate": "tool_call_update", "toolCallId": block.tool_use_id, **handed_off}
            )
            state.finished = handed_off["status"] in tools.FINAL_STATUSES
            return [*effects, Notify(self.session_id, update)]
        state.finished = True
        update = ToolCall(
            session_update="tool_call_update",
            tool_call_id=block.tool_use_id,
            status="failed" if block.is_error else "completed",
        )
        if text:
            update.content = [tools.text_content(text)]
        update.raw_output = block.content
        return [*effects, Notify(self.session_id, update)]

    def _result(self, message: ResultMessage) -> list[Effect]:
        origin: dict[str, Any] = dict(message.origin or {})
        # Anything but a human's message is a turn Claude Code started by itself.
        follow_up = origin.get("kind", "human") != "human"
        effects = self._close_tool_calls("cancelled" if message.subtype != "success" else None)
        outcome = self.foreground.outcome_of(
            message.subtype,
            message.stop_reason,
            message.usage,
            message.is_error,
            message.errors or ([message.result] if message.is_error and message.result else []),
            self.turn_error,
        )
        self.turn_error = None
        return effects + self.foreground.result(outcome, follow_up)

    def _close_tool_calls(self, status: str | None) -> list[Effect]:
        """A turn that ended early leaves its unfinished tool calls with a final status."""
        if status is None:
            return []
        effects: list[Effect] = []
        for tool_use_id, state in self.tool_calls.items():
            if not state.finished and not self.background.owns(tool_use_id):
                state.finished = True
                update = ToolCall(session_update="tool_call_update", tool_call_id=tool_use_id, status=status)
                effects.append(Notify(self.session_id, update))
        return effects

    def _creating(self) -> Literal["tool_call", "tool_call_update"]:
        # v2 has no separate creating variant: the first tool_call_update creates the call.
        return "tool_call" if self.version == 1 else "tool_call_update"

    # --- permission questions ------------------------------------------------------------------

    def _withdraw(self, ticket: Ticket, why: str) -> list[Effect]:
        # Withdraw first: once decided, the driver forgets the question and its request id.
        return [
            WithdrawPermission(ticket),
            Decide(ticket, False, message=why, interrupt=True),
            *self._forget_question(ticket),
        ]

    def _forget_question(self, ticket: Ticket) -> list[Effect]:
        question = self.questions.pop(ticket)
        if question.foreground and not any(q.foreground for q in self.questions.values()):
            return self.foreground.set_blocked(False)
        return []
