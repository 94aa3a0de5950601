"""The plan: Claude Code's todo list, or its task list, as the session's plan.

Depending on the model and the environment, Claude Code keeps a todo list (``TodoWrite``, the
whole list each time) or a task list (``TaskCreate``, ``TaskUpdate``, ``TaskList``, and
``TaskGet``, which only reads). These tool uses are not tool calls to the client; once one
succeeds, the plan is the list as it then stands, every entry with its status, and an entry in
progress is named by its ``activeForm`` (what Claude Code's terminal shows). Tasks are folded
one change at a time: a created task is pending, an update changes its status or subject, a
deleted one leaves the plan, and ``TaskList``'s result is the whole list (from Claude Code's
structured result, or from its text where only that is kept: a stored conversation). A failed
tool use changes nothing; a plan that did not change is not sent again.

Each session has its own plan (a subagent's, in its child session). A subagent shown inside its
parent's session keeps its tool calls as they are: its list is not the session's plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claude_bg_acp.claude.conventions import created_task, listed_tasks

PLAN_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"})
STATUSES = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class PlanEntry:
    content: str
    status: str


@dataclass(frozen=True)
class PlanChanged:
    session_id: str
    entries: tuple[PlanEntry, ...]


@dataclass
class _Entry:
    subject: str
    status: str
    active: str | None = None

    def shown(self) -> PlanEntry:
        content = self.active if self.status == "in_progress" and self.active else self.subject
        return PlanEntry(content, self.status if self.status in STATUSES else "pending")


@dataclass
class Plan:
    session_id: str
    _entries: dict[str, _Entry] = field(default_factory=dict)
    """By task id (a todo's position for the todo list), in order."""
    _uses: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """The plan tool uses waiting for their result: name and input."""
    _shown: tuple[PlanEntry, ...] = ()

    def input_known(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> None:
        self._uses[tool_use_id] = (name, tool_input)

    def owns(self, tool_use_id: str) -> bool:
        return tool_use_id in self._uses

    def result(
        self, tool_use_id: str, failed: bool, text: str, structured: dict[str, Any] | None
    ) -> list[PlanChanged]:
        name, tool_input = self._uses.pop(tool_use_id)
        if failed:
            return []
        structured = structured or {}
        if name == "TodoWrite":
            todos = [t for t in tool_input.get("todos") or [] if isinstance(t, dict)]
            self._entries = {
                str(index): _Entry(str(t.get("content", "")), str(t.get("status")), _text(t, "activeForm"))
                for index, t in enumerate(todos)
            }
        elif name == "TaskCreate":
            task = structured.get("task")
            task_id = task.get("id") if isinstance(task, dict) else created_task(text)
            if task_id is not None:
                subject = _text(tool_input, "subject") or ""
                self._entries[str(task_id)] = _Entry(subject, "pending", _text(tool_input, "activeForm"))
        elif name == "TaskUpdate":
            self._update(str(tool_input.get("taskId")), tool_input)
        elif name == "TaskList":
            self._listed(structured["tasks"] if "tasks" in structured else listed_tasks(text))
        return self._tell()

    def _update(self, task_id: str, change: dict[str, Any]) -> None:
        entry = self._entries.get(task_id)
        if entry is None:
            return
        if change.get("status") == "deleted":
            del self._entries[task_id]
            return
        entry.subject = _text(change, "subject") or entry.subject
        entry.active = _text(change, "activeForm") or entry.active
        entry.status = _text(change, "status") or entry.status

    def _listed(self, tasks: Any) -> None:
        if not isinstance(tasks, list):
            return
        listed: dict[str, _Entry] = {}
        for task in (t for t in tasks if isinstance(t, dict) and t.get("id") is not None):
            known = self._entries.get(str(task["id"]))
            subject = str(task.get("subject", ""))
            listed[str(task["id"])] = _Entry(
                subject, str(task.get("status")), known.active if known else None
            )
        self._entries = listed

    def _tell(self) -> list[PlanChanged]:
        entries = tuple(entry.shown() for entry in self._entries.values())
        if entries == self._shown:
            return []
        self._shown = entries
        return [PlanChanged(self.session_id, entries)]


def _text(values: dict[str, Any], key: str) -> str | None:
    value = values.get(key)
    return value if isinstance(value, str) and value else None
