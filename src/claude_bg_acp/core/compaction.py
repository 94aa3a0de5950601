"""A compaction of the conversation, shown as a tool call while it runs and with what it did.

Claude Code compacts the conversation when told (``/compact``) or by itself when the context
fills up, and says so in system messages (CLI 2.1.332): ``status`` ``compacting`` when it
starts (an automatic one's with ``compact_output_chars``, again as the summary grows);
``status`` with ``compact_result`` (``success``, or ``failed`` with a ``compact_error``) when
it is over; after a success, the boundary (``compact_boundary``, whose ``compact_metadata``
has the ``trigger``, ``manual`` or ``auto``, and the size of the context before and after:
``pre_tokens``, ``post_tokens``).

The compaction is a tool call of the session's own (``COMPACT``, a name no tool of Claude
Code's has), so it lives as every tool call does (``tool_uses``: it is cut with a cancelled
turn) and each presenter shows it as it shows tool calls: it opens at ``compacting``, and ends
at the boundary (completed, with the tokens before and after) or at a failed result. A boundary
without a ``compacting`` before it opens and ends one at once, under the boundary's own id
(``compaction-<uuid>``): so does a stored one, which a replay (``history``) makes into that
message again. ``as_tool_call`` makes the steps the tool call, the live session's and a
replay's one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claude_bg_acp.core.tool_uses import ToolCallFinished, ToolCallRunning, ToolUses

COMPACT = "Compact"
"""The tool name of a compaction's tool call."""


@dataclass(frozen=True)
class CompactionOpened:
    tool_use_id: str
    tool_input: dict[str, Any]


@dataclass(frozen=True)
class CompactionEnded:
    tool_use_id: str
    failed: bool
    text: str


CompactionStep = CompactionOpened | CompactionEnded


class Compaction:
    def __init__(self) -> None:
        self._running: str | None = None
        self._count = 0

    def system(self, subtype: str, data: dict[str, Any]) -> list[CompactionStep]:
        """What a system message of Claude Code's does to the compaction (nothing, mostly)."""
        if subtype == "status" and data.get("status") == "compacting":
            # Only an automatic compaction's statuses count the summary's characters.
            trigger = "auto" if "compact_output_chars" in data else "manual"
            return self._open({"trigger": trigger}) if self._running is None else []
        if subtype == "status" and data.get("compact_result") == "failed":
            error = data.get("compact_error")
            return self._end(True, f"Compaction failed: {error}" if error else "Compaction failed")
        if subtype == "compact_boundary":
            metadata = data.get("compact_metadata")
            uuid = data.get("uuid")
            return self._boundary(
                metadata if isinstance(metadata, dict) else {}, uuid if isinstance(uuid, str) else None
            )
        return []

    def _boundary(self, metadata: dict[str, Any], uuid: str | None) -> list[CompactionStep]:
        trigger = metadata.get("trigger")
        opened = (
            self._open({"trigger": trigger} if isinstance(trigger, str) else {}, uuid)
            if self._running is None
            else []
        )
        return opened + self._end(
            False, _done(_tokens(metadata, "pre_tokens"), _tokens(metadata, "post_tokens"))
        )

    def _open(self, tool_input: dict[str, Any], uuid: str | None = None) -> list[CompactionStep]:
        """``uuid``: the boundary's, which names a compaction seen only at its end (a stored one
        replayed in another process must not take the id of a live one's count)."""
        self._count += 1
        self._running = f"compaction-{uuid or self._count}"
        return [CompactionOpened(self._running, tool_input)]

    def _end(self, failed: bool, text: str) -> list[CompactionStep]:
        running, self._running = self._running, None
        return [] if running is None else [CompactionEnded(running, failed, text)]


def as_tool_call(
    session_id: str, steps: list[CompactionStep], tool_uses: ToolUses
) -> list[ToolCallRunning | ToolCallFinished]:
    """The compaction's tool call in ``session_id``, as ``tool_uses`` keeps every tool call:
    opened (it runs: nothing asks for it), then ended."""
    facts: list[ToolCallRunning | ToolCallFinished] = []
    for step in steps:
        if isinstance(step, CompactionOpened):
            facts += tool_uses.input_known(session_id, step.tool_use_id, COMPACT, step.tool_input, None, None)
        elif (use := tool_uses.get(step.tool_use_id)) is not None:
            facts += tool_uses.result(use, step.failed, step.text)
    return facts


def _tokens(metadata: dict[str, Any], key: str) -> int | None:
    value = metadata.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _done(before: int | None, after: int | None) -> str:
    if before is None:
        return "Compacted the conversation."
    if after is None:
        return f"Compacted the conversation: {before:,} tokens before."
    return f"Compacted the conversation: {before:,} tokens before, {after:,} after."
