"""Claude Code's hand-off words, which no card of any client may show.

When a tool sends its work to the background, Claude Code's result is addressed to the model:
an Agent's says itself it is internal metadata and names the agent's id and output file, a
Bash's names the absolute path of the shell's output file, a Monitor's tells the model how to
wait. ``shown_hand_offs`` finds any of them in the tool calls of a transcript (their content
and ``rawOutput``), whatever the client kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MARKS = ("Async agent launched", "Output is being written to", "Monitor started (task")
"""Words that open (or are in) each hand-off, and in nothing the agent itself writes."""


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def shown_hand_offs(updates: Iterable[dict[str, Any]]) -> list[str]:
    """The texts of tool call updates (wire form) that carry a hand-off's words."""
    return [
        text
        for update in updates
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update")
        for text in _texts([update.get("content"), update.get("rawOutput")])
        if any(mark in text for mark in MARKS)
    ]
