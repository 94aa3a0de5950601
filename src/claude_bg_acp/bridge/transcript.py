"""One session's transcript: Claude Code's messages as that session's ACP updates.

The root session and every exposed subagent each have one. A transcript turns:

- streamed text and thinking deltas into ``agent_message_chunk`` / ``agent_thought_chunk`` as
  they arrive; the complete assistant message that follows repeats them, so text of a message
  that was already streamed is not sent again (subagents are not streamed: they get the
  complete messages only);
- a ``tool_use`` into a tool call as soon as its block starts (``pending``), updated with its
  input and ``in_progress`` when the complete message arrives; its ``tool_result`` completes
  or fails it, unless background work takes the tool call over (see ``background``).

Tool uses are kept in one index shared by all transcripts (ids are unique across them), with
the session each belongs to, so a subagent can find the session that launched it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claude_bg_acp.acp.updates import ContentChunk, TextContent, ToolCall
from claude_bg_acp.bridge import tools
from claude_bg_acp.bridge.effects import Effect, Notify
from claude_bg_acp.bridge.tools import ToolUse
from claude_bg_acp.bridge.turns import Version

if TYPE_CHECKING:
    from claude_bg_acp.bridge.background import Background


class Transcript:
    def __init__(
        self, session_id: str, version: Version, tool_uses: dict[str, ToolUse], background: Background
    ) -> None:
        self.session_id = session_id
        self.version = version
        self._tool_uses = tool_uses
        self._background = background
        self._streamed: set[tuple[str, str]] = set()
        self._stream_message_id: str | None = None

    # --- streamed output ------------------------------------------------------------------------

    def stream_event(self, event: dict[str, Any]) -> list[Effect]:
        kind = event.get("type")
        if kind == "message_start":
            self._stream_message_id = str(event.get("message", {}).get("id") or "")
            return []
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                return self._announce_tool(str(block.get("id")), str(block.get("name")))
            return []
        if kind == "content_block_delta":
            return self._delta(event.get("delta") or {})
        return []

    def _delta(self, delta: dict[str, Any]) -> list[Effect]:
        message_id = self._stream_message_id
        if not message_id:
            return []
        if delta.get("type") == "text_delta" and delta.get("text"):
            self._streamed.add((message_id, "text"))
            return [self._chunk("agent_message_chunk", message_id, str(delta["text"]))]
        if delta.get("type") == "thinking_delta" and delta.get("thinking"):
            self._streamed.add((message_id, "thinking"))
            return [self._chunk("agent_thought_chunk", message_id, str(delta["thinking"]))]
        return []

    # --- complete messages ------------------------------------------------------------------------

    def assistant(self, message: AssistantMessage) -> list[Effect]:
        message_id = message.message_id or message.uuid or "assistant"
        effects: list[Effect] = []
        for block in message.content:
            if isinstance(block, TextBlock) and (message_id, "text") not in self._streamed:
                effects.append(self._chunk("agent_message_chunk", message_id, block.text))
            elif isinstance(block, ThinkingBlock) and (message_id, "thinking") not in self._streamed:
                effects.append(self._chunk("agent_thought_chunk", message_id, block.thinking))
            elif isinstance(block, ToolUseBlock):
                effects += self._tool_use(block, message.parent_tool_use_id)
        return effects

    def tool_results(self, message: UserMessage, now: float) -> list[Effect]:
        if isinstance(message.content, str):
            return []
        effects: list[Effect] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                effects += self._tool_result(block, now)
        return effects

    def close_tool_calls(self, status: str) -> list[Effect]:
        """A turn that ended early leaves its unfinished tool calls with a final status."""
        if self.version == 1 and status == "cancelled":
            status = "failed"  # v1 has no cancelled tool call status
        effects: list[Effect] = []
        for tool_use_id, state in self._tool_uses.items():
            # A subagent's tool calls are its own work; an interrupt of the turn does not end them.
            if state.session_id != self.session_id or state.finished or state.subagent_tool_use:
                continue
            if self._background.owns(tool_use_id):
                continue
            state.finished = True
            update = ToolCall(session_update="tool_call_update", tool_call_id=tool_use_id, status=status)
            effects.append(Notify(self.session_id, update))
        return effects

    def tool_call_fields(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
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

    # --- tool calls -----------------------------------------------------------------------------------

    def _announce_tool(self, tool_use_id: str, name: str) -> list[Effect]:
        if tool_use_id in self._tool_uses:
            return []
        self._tool_uses[tool_use_id] = ToolUse(name, {}, self.session_id, announced=True)
        view = tools.describe(name, {})
        call = ToolCall(
            session_update=self._creating(),
            tool_call_id=tool_use_id,
            title=view.title,
            kind=view.kind,
            status="pending",
        )
        return [Notify(self.session_id, call)]

    def _tool_use(self, block: ToolUseBlock, subagent_tool_use: str | None) -> list[Effect]:
        state = self._tool_uses.setdefault(
            block.id, ToolUse(block.name, block.input, self.session_id, subagent_tool_use=subagent_tool_use)
        )
        state.tool_input = block.input
        if state.finished:
            return []
        fields = self.tool_call_fields(block.id, block.name, block.input)
        fields["status"] = "in_progress"
        kind = "tool_call_update" if state.announced else self._creating()
        state.announced = True
        return [Notify(self.session_id, ToolCall.model_validate({"sessionUpdate": kind, **fields}))]

    def _tool_result(self, block: ToolResultBlock, now: float) -> list[Effect]:
        state = self._tool_uses.get(block.tool_use_id)
        if state is None or state.finished:
            return []
        text = tools.result_text(block.content)
        effects, handed_off = self._background.hand_off(block.tool_use_id, text, now)
        after: list[Effect] = []
        if handed_off is None:
            handed_off, before, after = self._background.scheduling(
                block.tool_use_id, text, bool(block.is_error)
            )
            effects += before
        if handed_off is not None:
            # Background work now owns this tool call (or its terminal does).
            fields = {"content": [tools.text_content(text)], **handed_off}
            update = ToolCall.model_validate(
                {"sessionUpdate": "tool_call_update", "toolCallId": block.tool_use_id, **fields}
            )
            state.finished = handed_off["status"] in tools.FINAL_STATUSES
            return [*effects, Notify(self.session_id, update), *after]
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

    def _chunk(self, kind: str, message_id: str, text: str) -> Notify:
        chunk = ContentChunk(session_update=kind, content=TextContent(text=text))  # type: ignore[arg-type]
        chunk.message_id = message_id
        return Notify(self.session_id, chunk)

    def _creating(self) -> Literal["tool_call", "tool_call_update"]:
        # v2 has no separate creating variant: the first tool_call_update creates the call.
        return "tool_call" if self.version == 1 else "tool_call_update"
