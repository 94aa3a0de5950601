"""The task registry: what Claude Code is running outside the foreground, per its task events.

Theory of operation. Claude Code reports work two ways, and neither is enough alone:

- the level signal, ``background_tasks_changed``: the full live set at every change (replace
  semantics). It decides what is live.
- the edge events, ``task_started`` / ``task_progress`` / ``task_updated`` /
  ``task_notification``: they carry the details (tool use, type, status, output file, summary).

They arrive in any order. A task is known from whichever comes first. Its lifecycle:

==========  ==============  ==========================================================  ==========
task        trigger         what happens                                                next
==========  ==============  ==========================================================  ==========
``LIVE``,   ``END``         a terminal status (``task_updated``: completed, failed,     ``ENDED``
``LOST``                    killed; ``task_notification``: completed, failed,
                            stopped); after ``LOST``, a late one says how it ended
                            ("corrected")
``LIVE``    ``ORPHANED``    it left the level and ``ORPHAN_GRACE`` passed with no end   ``LOST``
                            event (how it ended is unknown)
``ENDED``,  ``NEW_RUN``     an event of a newer ``run_id`` (a resumed subagent)         ``LIVE``
``LOST``
==========  ==============  ==========================================================  ==========

Events that name an older ``run_id`` (run ids sort by plain string order; a worker restarted
the task) are ignored. A task marked ``ambient`` on any message is housekeeping: it is dropped,
and withdrawn if it was already reported. Statuses are the SDK's own literals.

The registry reports what changed as ``TaskChange`` values; the session core routes each one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from claude_agent_sdk.types import TERMINAL_TASK_STATUSES, TaskNotificationStatus, TaskUpdatedStatus

from claude_bg_acp.core.lifecycle import Transitions

ORPHAN_GRACE = 0.5
"""Seconds a task may be missing from the level before its end event is given up on."""
AGENT_TASK_TYPES = ("local_agent", "remote_agent", "in_process_teammate")

Status = TaskUpdatedStatus | TaskNotificationStatus
EndStatus = Literal["completed", "failed", "killed", "stopped"]


class TaskPhase(enum.Enum):
    LIVE = "live"
    ENDED = "ended"
    LOST = "lost"


class TaskTrigger(enum.Enum):
    END = "end"
    ORPHANED = "orphaned"
    NEW_RUN = "new_run"


TASKS: Transitions[TaskPhase, TaskTrigger] = Transitions.of(
    "task",
    TaskPhase,
    TaskTrigger,
    ((TaskPhase.LIVE, TaskPhase.LOST), TaskTrigger.END, TaskPhase.ENDED),
    ((TaskPhase.LIVE,), TaskTrigger.ORPHANED, TaskPhase.LOST),
    ((TaskPhase.ENDED, TaskPhase.LOST), TaskTrigger.NEW_RUN, TaskPhase.LIVE),
)


@dataclass
class Task:
    task_id: str
    task_type: str | None = None
    description: str = ""
    tool_use_id: str | None = None
    run_id: str | None = None
    subagent_type: str | None = None
    backgrounded: bool | None = None
    status: Status = "running"
    phase: TaskPhase = TaskPhase.LIVE
    summary: str | None = None
    output_file: str | None = None
    prompt: str | None = None
    """What its current run was asked to do (a subagent's task, as ``task_started`` says it)."""
    run: int = 1
    """Its runs so far: a resumed subagent's current run is its second or later."""
    run_tool_use_id: str | None = None
    """The tool use its current run's ``task_started`` names (for a resumed subagent, the one
    that sent it the message that resumed it, if it names one)."""
    started: bool = False
    first_seen_at: float = 0.0
    in_level: bool = False
    left_level_at: float | None = None

    @property
    def ended(self) -> bool:
        return self.phase is not TaskPhase.LIVE

    @property
    def end_status(self) -> EndStatus | None:
        """How it ended, when that is known."""
        if self.phase is TaskPhase.ENDED and self.status in TERMINAL_TASK_STATUSES:
            return self.status  # type: ignore[return-value]
        return None

    @property
    def is_subagent(self) -> bool:
        return self.task_type in AGENT_TASK_TYPES or self.subagent_type is not None


class Change(enum.Enum):
    SEEN = "seen"
    CHANGED = "changed"
    ENDED = "ended"
    CORRECTED = "corrected"
    RESUMED = "resumed"
    AMBIENT = "ambient"


@dataclass(frozen=True)
class TaskChange:
    kind: Change
    task: Task


class TaskRegistry:
    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}
        self.ambient: set[str] = set()
        self.cli_session_id: str | None = None
        """Claude Code's session id, from the first task event (it names the output folder)."""

    def system(self, subtype: str, data: dict[str, Any], now: float) -> list[TaskChange]:
        """A system message of Claude Code's; those that are not about tasks change nothing."""
        self.cli_session_id = self.cli_session_id or _str(data.get("session_id"))
        if subtype == "task_started":
            changes = self._started(data, now)
        elif subtype == "task_updated":
            changes = self._updated(data, now)
        elif subtype == "task_notification":
            changes = self._notification(data, now)
        elif subtype == "task_progress":
            changes = self._progress(data, now)
        elif subtype == "background_tasks_changed":
            tasks = data.get("tasks")
            changes = self._level(tasks if isinstance(tasks, list) else [], now)
        else:
            return []
        return changes

    # --- the edge events ------------------------------------------------------------------------

    def _started(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        task.started = True
        task.tool_use_id = task.tool_use_id or _str(data.get("tool_use_id"))
        task.run_tool_use_id = task.run_tool_use_id or _str(data.get("tool_use_id"))
        task.prompt = task.prompt or _str(data.get("prompt"))
        if data.get("is_backgrounded") is not None:
            task.backgrounded = bool(data["is_backgrounded"])
        return changes or [TaskChange(Change.CHANGED, task)]

    def _updated(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        patch: dict[str, Any] = data["patch"] if isinstance(data.get("patch"), dict) else {}
        status = _str(data.get("status")) or _str(patch.get("status"))
        if patch.get("is_backgrounded") is not None:
            task.backgrounded = bool(patch["is_backgrounded"])
        if status in TERMINAL_TASK_STATUSES:
            return changes + self._end(task, status)  # type: ignore[arg-type]
        if status in ("pending", "running", "paused"):
            task.status = status  # type: ignore[assignment]
        return changes or [TaskChange(Change.CHANGED, task)]

    def _notification(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is None:
            return changes
        task.summary = _str(data.get("summary")) or task.summary
        task.output_file = _str(data.get("output_file")) or task.output_file
        task.tool_use_id = task.tool_use_id or _str(data.get("tool_use_id"))
        status = _str(data.get("status"))
        return changes + self._end(task, status if status in TERMINAL_TASK_STATUSES else "completed")  # type: ignore[arg-type]

    def _progress(self, data: dict[str, Any], now: float) -> list[TaskChange]:
        task, changes = self._task(data, now)
        if task is not None and not task.tool_use_id and _str(data.get("tool_use_id")):
            task.tool_use_id = _str(data.get("tool_use_id"))
            return changes or [TaskChange(Change.CHANGED, task)]
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
        return changes or [TaskChange(Change.CHANGED, task)]

    # --- the level signal -----------------------------------------------------------------------

    def _level(self, entries: list[dict[str, Any]], now: float) -> list[TaskChange]:
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
                task.phase = TASKS.move(task.phase, TaskTrigger.ORPHANED)
                changes.append(TaskChange(Change.ENDED, task))
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
            return None, [TaskChange(Change.AMBIENT, known)] if known is not None else []
        task = self.tasks.get(task_id)
        changes: list[TaskChange] = []
        if task is None:
            task = self.tasks[task_id] = Task(task_id, first_seen_at=now)
            changes.append(TaskChange(Change.SEEN, task))
        run_id = _str(data.get("run_id"))
        if run_id is not None and task.run_id is not None and run_id < task.run_id:
            return None, []  # run ids sort by plain string order: this one is late
        if run_id is not None and run_id != task.run_id:
            if task.run_id is not None and task.ended:
                # The same task started again (a resumed subagent): it is live once more.
                task.phase = TASKS.move(task.phase, TaskTrigger.NEW_RUN)
                task.status, task.left_level_at = "running", None
                task.run, task.prompt, task.run_tool_use_id = task.run + 1, None, None
                changes.append(TaskChange(Change.RESUMED, task))
            task.run_id = run_id
        _fill(task, data)
        return task, changes

    @staticmethod
    def _end(task: Task, status: EndStatus) -> list[TaskChange]:
        if task.phase is TaskPhase.LOST:
            # A late end event after an orphan was finalized may still say how it ended.
            task.phase = TASKS.move(task.phase, TaskTrigger.END)
            task.status, task.left_level_at = status, None
            return [TaskChange(Change.CORRECTED, task)]
        if task.ended:
            return []
        task.phase, task.status = TASKS.move(task.phase, TaskTrigger.END), status
        return [TaskChange(Change.ENDED, task)]


def _fill(task: Task, data: dict[str, Any]) -> None:
    task.task_type = task.task_type or _str(data.get("task_type"))
    task.description = task.description or _str(data.get("description")) or ""
    task.subagent_type = task.subagent_type or _str(data.get("subagent_type"))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
