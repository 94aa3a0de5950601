"""The task registry: what Claude Code is running outside the foreground, per its task events.

Theory of operation. Claude Code reports work two ways, and neither is enough alone:

- the level signal, ``background_tasks_changed``: the full live set at every change (replace
  semantics). It decides what is live.
- the edge events, ``task_started`` / ``task_progress`` / ``task_updated`` /
  ``task_notification``: they carry the details (tool use, type, status, output file, summary).

They arrive in any order. A task is known from whichever comes first. It ends at the first
terminal status, from ``task_updated`` (completed, failed, killed) or ``task_notification``
(completed, failed, stopped). A task that leaves the level with no end event is given a grace
period for its end event to catch up; after it, the task ends as ``lost`` (how is unknown),
and a later end event corrects the details (never the fact that it ended). Events that name an
older ``run_id`` of a task (run ids sort by plain string order; a worker restarted it) are
ignored; a newer run of a task that had ended (a resumed subagent) makes it live again. A task
marked ``ambient`` on any message is housekeeping: it is dropped, and withdrawn if it was
already reported.

The registry reports what changed as ``TaskChange`` values; ``background`` decides what each
change means for the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

TERMINAL_STATUSES = frozenset({"completed", "failed", "stopped", "killed"})
LOST = "lost"
"""The end of a task that left the level signal with no end event: how it ended is unknown."""
ORPHAN_GRACE = 0.5
"""Seconds a task may be missing from the level before its end event is given up on."""


@dataclass
class Task:
    task_id: str
    task_type: str | None = None
    description: str = ""
    tool_use_id: str | None = None
    run_id: str | None = None
    subagent_type: str | None = None
    parent_task_id: str | None = None
    backgrounded: bool | None = None
    status: str = "running"
    end_status: str | None = None
    summary: str | None = None
    output_file: str | None = None
    prompt: str | None = None
    started: bool = False
    first_seen_at: float = 0.0
    in_level: bool = False
    left_level_at: float | None = None

    @property
    def ended(self) -> bool:
        return self.end_status is not None


ChangeKind = Literal["seen", "changed", "ended", "corrected", "resumed", "ambient"]


@dataclass(frozen=True)
class TaskChange:
    kind: ChangeKind
    task: Task


class TaskRegistry:
    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}
        self.ambient: set[str] = set()

    # --- the edge events ------------------------------------------------------------------------

    def started(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        task.started = True
        task.tool_use_id = task.tool_use_id or _str(data.get("tool_use_id"))
        task.prompt = task.prompt or _str(data.get("prompt"))
        if data.get("is_backgrounded") is not None:
            task.backgrounded = bool(data["is_backgrounded"])
        return changes or [TaskChange("changed", task)]

    def updated(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        patch: dict[str, Any] = data["patch"] if isinstance(data.get("patch"), dict) else {}
        status = _str(data.get("status")) or _str(patch.get("status"))
        if patch.get("is_backgrounded") is not None:
            task.backgrounded = bool(patch["is_backgrounded"])
        if status in TERMINAL_STATUSES:
            return changes + self._end(task, status)
        if status is not None:
            task.status = status
        return changes or [TaskChange("changed", task)]

    def notification(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        task.summary = _str(data.get("summary")) or task.summary
        task.output_file = _str(data.get("output_file")) or task.output_file
        task.tool_use_id = task.tool_use_id or _str(data.get("tool_use_id"))
        return changes + self._end(task, _str(data.get("status")) or "completed")

    def progress(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is not None and not task.tool_use_id and _str(data.get("tool_use_id")):
            task.tool_use_id = _str(data.get("tool_use_id"))
            return changes or [TaskChange("changed", task)]
        return changes

    def learned(
        self, task_id: str, tool_use_id: str, output_file: str | None, now: float
    ) -> list[TaskChange]:
        """A tool result named a background task (before, or instead of, its own events)."""
        task, changes = self._task({"task_id": task_id}, now)
        if task is None:
            return changes
        task.tool_use_id = task.tool_use_id or tool_use_id
        task.output_file = task.output_file or output_file
        task.backgrounded = True  # the tool result says so, whatever an earlier event said
        return changes or [TaskChange("changed", task)]

    # --- the level signal -----------------------------------------------------------------------

    def level(self, entries: list[dict[str, Any]], now: float) -> list[TaskChange]:
        changes: list[TaskChange] = []
        live: set[str] = set()
        for entry in entries:
            task, seen = self._task(entry, now)
            changes += seen
            if task is not None:
                live.add(task.task_id)
                task.in_level, task.left_level_at = True, None
        for task in self.tasks.values():
            if task.in_level and task.task_id not in live:
                task.in_level = False
                if not task.ended:
                    task.left_level_at = now
        return changes

    def tick(self, now: float) -> list[TaskChange]:
        changes: list[TaskChange] = []
        for task in self.tasks.values():
            if task.left_level_at is not None and not task.ended and now >= task.left_level_at + ORPHAN_GRACE:
                changes += self._end(task, LOST)
        return changes

    def next_deadline(self) -> float | None:
        pending = [
            t.left_level_at for t in self.tasks.values() if t.left_level_at is not None and not t.ended
        ]
        return min(pending) + ORPHAN_GRACE if pending else None

    def live(self) -> list[Task]:
        return [task for task in self.tasks.values() if not task.ended]

    # --- rules ----------------------------------------------------------------------------------------

    def _task(self, data: dict[str, Any], now: float) -> tuple[Task | None, list[TaskChange]]:
        """The task an event is about, or None if it is ambient or of an older run."""
        task_id = _str(data.get("task_id"))
        if task_id is None or task_id in self.ambient:
            return None, []
        if data.get("ambient"):
            # Only some events carry the flag: a task seen before it is withdrawn now.
            self.ambient.add(task_id)
            known = self.tasks.pop(task_id, None)
            return None, [TaskChange("ambient", known)] if known is not None else []
        task = self.tasks.get(task_id)
        changes: list[TaskChange] = []
        if task is None:
            task = self.tasks[task_id] = Task(task_id, first_seen_at=now)
            changes.append(TaskChange("seen", task))
        run_id = _str(data.get("run_id"))
        if run_id is not None and task.run_id is not None and run_id < task.run_id:
            return None, []  # run ids sort by plain string order: this one is late
        if run_id is not None and run_id != task.run_id:
            if task.run_id is not None and task.ended:
                # The same task started again (a resumed subagent): it is live once more.
                task.end_status, task.status, task.left_level_at = None, "running", None
                changes.append(TaskChange("resumed", task))
            task.run_id = run_id
        _fill(task, data)
        return task, changes

    @staticmethod
    def _end(task: Task, status: str) -> list[TaskChange]:
        if task.ended:
            # A late end event after an orphan was finalized may still say how it ended.
            if task.end_status == LOST and status != LOST:
                task.end_status, task.left_level_at = status, None
                return [TaskChange("corrected", task)]
            return []
        task.end_status = status
        task.status = status
        return [TaskChange("ended", task)]


def _fill(task: Task, data: dict[str, Any]) -> None:
    task.task_type = task.task_type or _str(data.get("task_type"))
    task.description = task.description or _str(data.get("description")) or ""
    task.subagent_type = task.subagent_type or _str(data.get("subagent_type"))
    task.parent_task_id = task.parent_task_id or _str(data.get("parent_task_id"))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
