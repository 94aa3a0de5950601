"""The ``background`` list: the items each session lists now, and what each is, restated to a
client that (re)attaches.

A terminal or a tool call is listed until its final status. A child is listed by its parent
while it runs detached (while its parent's turn waits on it, it is foreground work, not listed:
its own work is listed in its own session), and once it ended while its own list is not empty.
A client that (re)attaches learns what each listed item is now: a terminal with its command,
cwd and latest output (the last ``RESTATE_LIMIT`` bytes, kept while it runs: ``terminals``), a
tool call with its status; both cancellable. Its children are ``subagents``' to restate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from claude_bg_acp.core.background import Item, Kind, own_title
from claude_bg_acp.core.background_facts import TerminalRestated, WorkRestated
from claude_bg_acp.core.tool_uses import ToolUse


@dataclass(frozen=True)
class Listed:
    """One entry of the ``background`` list."""

    kind: Literal["terminal", "tool_call", "subagent"]
    ref: str


def listed(items: Mapping[str, Item], session_id: str) -> list[Listed]:
    """The work of ``session_id`` to list now."""
    return [
        entry
        for item in items.values()
        if item.session_id == session_id and (entry := _entry(items, item)) is not None
    ]


def _entry(items: Mapping[str, Item], item: Item) -> Listed | None:
    if item.kind is Kind.SUBAGENT:
        # While it works in the foreground its parent waits on it: foreground work, not
        # listed (its own work is listed in its session); once it ended, its work goes on.
        if not item.final:
            return Listed("subagent", item.ref) if item.task.backgrounded is not False else None
        return Listed("subagent", item.ref) if listed(items, item.ref) else None
    if item.final:
        return None
    if item.kind is Kind.TERMINAL:
        return Listed("terminal", item.ref)
    return Listed("tool_call", item.ref)


def restate(
    items: Mapping[str, Item], session_id: str, cwd: str, tool_of: Callable[[str | None], ToolUse | None]
) -> list[TerminalRestated | WorkRestated]:
    """What each terminal and tool call ``session_id`` lists is now (its children are
    ``subagents``' to say)."""
    out: list[TerminalRestated | WorkRestated] = []
    for item in items.values():
        if item.session_id != session_id or _entry(items, item) is None:
            continue
        if item.kind is Kind.TERMINAL:
            output = item.recent.latest() if item.recent is not None else b""
            out.append(TerminalRestated(session_id, item.ref, item.tool_call_id, item.command, cwd, output))
        elif item.kind is Kind.TOOL_CALL:
            tool = tool_of(item.task.tool_use_id) if item.ref == item.task.tool_use_id else None
            status = item.status()
            if tool is None:
                out.append(WorkRestated(session_id, item.ref, status, own_title(item.task)))
            else:
                out.append(WorkRestated(session_id, item.ref, status, None, tool.name, tool.tool_input))
    return out
