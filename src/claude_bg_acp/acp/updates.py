"""The session updates we send (``session/update`` params), built on ``schema.WireModel``."""

from __future__ import annotations

from typing import Any, Literal

from claude_bg_acp.acp.schema import ContentBlock, WireModel


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class ContentChunk(WireModel):
    session_update: Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
    content: ContentBlock | TextContent
    message_id: str | None = None


class UserMessage(WireModel):
    session_update: Literal["user_message"] = "user_message"
    message_id: str
    content: list[ContentBlock] | None = None


class ToolCallContent(WireModel):
    type: Literal["content", "terminal", "diff"]


class ToolCall(WireModel):
    """v1's creating ``tool_call`` and both versions' ``tool_call_update`` (an upsert in v2)."""

    session_update: Literal["tool_call", "tool_call_update"]
    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[dict[str, Any]] | None = None
    locations: list[dict[str, Any]] | None = None
    raw_input: Any = None
    raw_output: Any = None
    capabilities: dict[str, Any] | None = None


class ErrorObject(WireModel):
    code: int
    message: str
    data: Any = None


class StateUpdate(WireModel):
    session_update: Literal["state_update"] = "state_update"
    state: Literal["running", "idle", "requires_action", "unknown"]
    stop_reason: str | None = None
    error: ErrorObject | None = None
    usage: dict[str, Any] | None = None
    background: list[dict[str, Any]] | None = None


class TerminalUpdate(WireModel):
    session_update: Literal["terminal_update"] = "terminal_update"
    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: dict[str, Any] | None = None
    exit_status: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None


class TerminalOutputChunk(WireModel):
    session_update: Literal["terminal_output_chunk"] = "terminal_output_chunk"
    terminal_id: str
    data: str


class SubagentUpdate(WireModel):
    session_update: Literal["subagent_update"] = "subagent_update"
    session_id: str
    title: str | None = None
    description: str | None = None
    capabilities: dict[str, Any] | None = None
    state: dict[str, Any] | None = None


class SessionMessage(WireModel):
    session_update: Literal["session_message"] = "session_message"
    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    content: list[dict[str, Any]] | None = None


SessionUpdate = (
    ContentChunk
    | UserMessage
    | ToolCall
    | StateUpdate
    | TerminalUpdate
    | TerminalOutputChunk
    | SubagentUpdate
    | SessionMessage
)
