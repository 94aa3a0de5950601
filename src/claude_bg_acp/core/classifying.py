"""When a live task is shown: once what it is is known, or on a timer.

A task is classified (shown as the item it is: ``background``) once its launching tool is known
(``task_started`` or the tool result). One that only the level signal or ``task_started``
vouched for, yet that nothing says more of, is considered by force after ``CLASSIFY_GRACE``;
one that still has nothing to show then (a foreground shell, a child whose parent is unknown)
is stalled: no timer helps, and its next event is considered as it comes.
"""

from __future__ import annotations

from collections.abc import Container

from claude_bg_acp.core.tasks import Task

CLASSIFY_GRACE = 0.5


class Classifying:
    def __init__(self) -> None:
        self._stalled: set[str] = set()

    def due(self, live: list[Task], shown: Container[str], now: float) -> list[Task]:
        """Tasks that waited ``CLASSIFY_GRACE`` to be classified: to be considered by force now
        (``shown``: the tasks that are items)."""
        return [t for t in live if self._unclassified(t, shown) and now >= t.first_seen_at + CLASSIFY_GRACE]

    def stall(self, task: Task, shown: Container[str]) -> None:
        """Nothing to show yet (a foreground shell, a child whose parent is unknown): no timer
        helps; its next event is considered as it comes."""
        if task.task_id not in shown:
            self._stalled.add(task.task_id)

    def deadlines(self, live: list[Task], shown: Container[str]) -> list[float]:
        return [t.first_seen_at + CLASSIFY_GRACE for t in live if self._unclassified(t, shown)]

    def _unclassified(self, task: Task, shown: Container[str]) -> bool:
        """Waiting to be shown on a timer: the level signal or ``task_started`` vouched for it
        (an event that names no task type, like ``task_progress``, does not say it is not
        housekeeping), yet nothing says what it is."""
        vouched = task.in_level or task.started
        return vouched and task.task_id not in shown and task.task_id not in self._stalled
