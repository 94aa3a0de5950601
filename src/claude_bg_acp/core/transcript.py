"""One session's transcript: Claude Code's messages as what happened in that session.

The root session and every exposed subagent each have one. A transcript turns:

- streamed text and thinking deltas into message chunks as they arrive; the complete assistant
  message that follows repeats them, so text of a message that was already streamed is not
  reported again (subagents are not streamed: they get the complete messages only);
- a ``tool_use`` block into ``ToolStreamed`` as soon as it starts and ``ToolInput`` once the
  complete message gives its input; a ``tool_result`` into ``ToolResulted``: its text, the
  images it holds (a ``Read`` of a picture, an MCP tool's), and Claude Code's structured form
  of the result when the message carries it for that one tool use.

It knows nothing of the tool calls' state: the session core takes the tool facts to the tool
uses (which know whether a call is new, running, detached or final) and to the background
work a result may hand off to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claude_agent_sdk.types import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)


@dataclass(frozen=True)
class MessageChunk:
    """Text (or, if ``thought``, thinking) of the agent's message ``message_id``."""

    session_id: str
    message_id: str
    thought: bool
    text: str
    launched_by: str | None = None
    """The Agent tool use whose subagent said it, if a subagent did."""


@dataclass(frozen=True)
class ToolStreamed:
    tool_use_id: str
    name: str


@dataclass(frozen=True)
class ToolInput:
    tool_use_id: str
    name: str
    tool_input: dict[str, Any]
    launched_by: str | None
    """The Agent tool use whose subagent made this tool use, if a subagent did."""
    message: str | None
    """The assistant message (its uuid) that holds it."""


@dataclass(frozen=True)
class Image:
    mime_type: str
    data: str
    """Base64, as the tool result holds it."""


@dataclass(frozen=True)
class ToolResulted:
    tool_use_id: str
    text: str
    is_error: bool
    images: tuple[Image, ...] = ()
    structured: dict[str, Any] | None = None
    """Claude Code's ``tool_use_result`` (e.g. the id of a created task)."""


TranscriptFact = MessageChunk | ToolStreamed | ToolInput | ToolResulted


class Transcript:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._streamed: set[tuple[str, bool]] = set()
        self._stream_message_id: str | None = None
        self._seen: set[str] = set()
        """Uuids of the complete assistant messages seen (Claude Code replays some, e.g. after
        a compaction)."""

    # --- streamed output ------------------------------------------------------------------------

    def stream_event(self, event: dict[str, Any]) -> list[TranscriptFact]:
        kind = event.get("type")
        if kind == "message_start":
            self._stream_message_id = str(event.get("message", {}).get("id") or "")
            return []
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                return [ToolStreamed(str(block.get("id")), str(block.get("name")))]
            return []
        if kind == "content_block_delta":
            return self._delta(event.get("delta") or {})
        return []

    def _delta(self, delta: dict[str, Any]) -> list[TranscriptFact]:
        message_id = self._stream_message_id
        if not message_id:
            return []
        if delta.get("type") == "text_delta" and delta.get("text"):
            self._streamed.add((message_id, False))
            return [MessageChunk(self.session_id, message_id, False, str(delta["text"]))]
        if delta.get("type") == "thinking_delta" and delta.get("thinking"):
            self._streamed.add((message_id, True))
            return [MessageChunk(self.session_id, message_id, True, str(delta["thinking"]))]
        return []

    # --- complete messages ------------------------------------------------------------------------

    def assistant(self, message: AssistantMessage) -> list[TranscriptFact]:
        if message.uuid is not None:
            if message.uuid in self._seen:
                return []
            self._seen.add(message.uuid)
        message_id = message.message_id or message.uuid or "assistant"
        launched_by = message.parent_tool_use_id
        facts: list[TranscriptFact] = []
        for block in message.content:
            if isinstance(block, TextBlock) and (message_id, False) not in self._streamed:
                facts.append(MessageChunk(self.session_id, message_id, False, block.text, launched_by))
            elif isinstance(block, ThinkingBlock) and (message_id, True) not in self._streamed:
                facts.append(MessageChunk(self.session_id, message_id, True, block.thinking, launched_by))
            elif isinstance(block, ToolUseBlock):
                facts.append(
                    ToolInput(block.id, block.name, block.input, message.parent_tool_use_id, message.uuid)
                )
        return facts

    def tool_results(self, message: UserMessage) -> list[ToolResulted]:
        if isinstance(message.content, str):
            return []
        blocks = [block for block in message.content if isinstance(block, ToolResultBlock)]
        # The structured result belongs to the message, so only to its one tool result.
        structured = message.tool_use_result if len(blocks) == 1 else None
        return [
            ToolResulted(
                block.tool_use_id,
                result_text(block.content),
                bool(block.is_error),
                result_images(block.content),
                structured,
            )
            for block in blocks
        ]


def result_images(content: str | list[dict[str, Any]] | None) -> tuple[Image, ...]:
    """The base64 images of a tool_result block (an image given by URL is left out)."""
    if not isinstance(content, list):
        return ()
    sources = [block.get("source") or {} for block in content if block.get("type") == "image"]
    return tuple(
        Image(str(source.get("media_type") or "image/png"), source["data"])
        for source in sources
        if source.get("type") == "base64" and isinstance(source.get("data"), str)
    )


def result_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a tool_result block (a string, or a list of content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if block.get("type") == "text")
