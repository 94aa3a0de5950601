"""Stops of background work asked for: ``terminal/cancel`` and ``tool_call/cancel`` (refusing
what cannot be cancelled in that session), a stop by task id (answered with whether it sent
one), the item ``/stop`` chose, and the close's stop of every live task. Each sends
``stop_task`` once (``stop_sent_at``); only the task's end confirms it (``background``: unless
none comes within ``STOP_BOUND``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from claude_bg_acp.core.background import Item
from claude_bg_acp.core.background_facts import BackgroundOut
from claude_bg_acp.core.effects import StopTask
from claude_bg_acp.core.errors import Refusal, Refused
from claude_bg_acp.core.tasks import Task


def cancel(
    items: Mapping[str, Item], kind: Literal["terminal", "tool_call"], ref: str, session_id: str, now: float
) -> list[BackgroundOut]:
    """``terminal/cancel`` or ``tool_call/cancel`` in ``session_id``: refuses what cannot
    be cancelled there."""
    item = next(
        (i for i in items.values() if i.kind.value == kind and i.ref == ref and i.session_id == session_id),
        None,
    )
    noun = "terminal" if kind == "terminal" else "tool call"
    if item is None:
        raise Refused(Refusal.UNKNOWN, f"unknown {noun} {ref}")
    if item.final:
        raise Refused(Refusal.FINISHED, f"{noun} {ref} has already finished")
    return stop_item(item, now)


def stop(items: Mapping[str, Item], task_id: str, now: float) -> tuple[list[BackgroundOut], bool]:
    """A stop by task id: whether a stop was sent (none for a task that is unknown, a
    subagent, finished, or being stopped already)."""
    item = items.get(task_id)
    if item is None or not item.reported_as_task or item.final or item.stop_sent_at is not None:
        return [], False
    return stop_item(item, now), True


def stop_item(item: Item, now: float) -> list[BackgroundOut]:
    """``item`` stopped (also the one ``/stop`` chose: ``task_list``), unless it is already."""
    if item.stop_sent_at is not None:
        return []
    item.stop_sent_at = now
    return [StopTask(item.task.task_id)]


def stop_all(items: Mapping[str, Item], live: list[Task], now: float) -> list[BackgroundOut]:
    """The session closes: stop every live task; the normal end path finalizes them."""
    out: list[BackgroundOut] = []
    for task in live:
        item = items.get(task.task_id)
        if item is not None:
            item.closing = True
        if item is None or item.stop_sent_at is None:
            out.append(StopTask(task.task_id))
            if item is not None:
                item.stop_sent_at = now
    return out
