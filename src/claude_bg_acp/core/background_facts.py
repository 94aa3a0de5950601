"""What happens to background work, as facts: for the presenter (a terminal opened, its output,
its exit; work on a tool call opened, its status, its end; a task opened, changed, ended; a
client restated what each listed item is now), and for the session core to route (a child's
end, a follow-up turn expected, a tool call detached, a tool result handed off).

These are facts about the work, the same for every client: which of them a client is shown,
and how, is its presenter's business. ``background`` decides when each happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core.effects import FinishTail, Log, StopTask, Tail, Ticket
from claude_bg_acp.core.tasks import Task

LiveStatus = Literal["pending", "in_progress", "paused"]
FinalStatus = Literal["completed", "failed", "cancelled"]
TOOL_STATUS: dict[str, FinalStatus] = {
    "completed": "completed",
    "failed": "failed",
    "stopped": "cancelled",
    "killed": "cancelled",
}
"""A task's end as a tool call's final status; one whose end is unknown (lost) left the level by
itself, most likely done, so ``completed``."""
RunState = Literal["running", "paused"]
TaskEnd = Literal["completed", "failed", "stopped"]
TASK_ENDS: dict[str, TaskEnd] = {
    "completed": "completed",
    "failed": "failed",
    "stopped": "stopped",
    "killed": "stopped",
}
"""A task's end as a task reports it (the same reading of a lost task as ``TOOL_STATUS``)."""


# --- what happened, for the presenter -----------------------------------------------------------


@dataclass(frozen=True)
class TerminalOpened:
    session_id: str
    terminal_id: str
    tool_call_id: str
    command: str
    cwd: str
    cancellable: bool = True
    """False for a terminal replayed from history: ``cancel`` is only granted to live ones."""
    launched_by_tool: bool = True
    """A tool call launched it (``tool_call_id`` is that call's); False for a shell no tool use
    of the session's is known to have started (``tool_call_id`` is then one of our own)."""


@dataclass(frozen=True)
class TerminalOutput:
    session_id: str
    terminal_id: str
    tool_call_id: str
    data: bytes


@dataclass(frozen=True)
class TerminalReplaced:
    """The client fell behind: the latest bytes replace what it shows."""

    session_id: str
    terminal_id: str
    tool_call_id: str
    data: bytes


@dataclass(frozen=True)
class TerminalExited:
    """``exit`` None: how it ended is unknown. ``corrected``: it was reported exited already, and
    a late end event says how."""

    session_id: str
    terminal_id: str
    tool_call_id: str
    exit: ExitInfo | None
    corrected: bool = False
    closed: bool = False
    """Its session's close stopped it (it did not end by itself)."""


@dataclass(frozen=True)
class TerminalRestated:
    """A live terminal as it is now, for a client that (re)attaches."""

    session_id: str
    terminal_id: str
    tool_call_id: str
    command: str
    cwd: str
    output: bytes


@dataclass(frozen=True)
class WorkOpened:
    """Work continues on a tool call: its launching one, or one of ours (``title`` set)."""

    session_id: str
    tool_call_id: str
    status: LiveStatus
    title: str | None = None


@dataclass(frozen=True)
class WorkStatus:
    session_id: str
    tool_call_id: str
    status: LiveStatus


@dataclass(frozen=True)
class WorkEnded:
    session_id: str
    tool_call_id: str
    status: FinalStatus
    summary: str | None


@dataclass(frozen=True)
class WorkRestated:
    """A listed tool call as it is now, for a client that (re)attaches: the tool that launched
    it (``name``, ``tool_input``), or our own ``title`` when no tool call of Claude Code's did."""

    session_id: str
    tool_call_id: str
    status: LiveStatus
    title: str | None
    name: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    cancellable: bool = True
    """False for scheduled work (``schedules``): Claude Code offers no way to unschedule it
    but the model's own tools, so nothing a client could ask for."""


@dataclass(frozen=True)
class TaskOpened:
    """A background task that is not a subagent, reported as such whatever item shows it.

    ``tool_call_id`` is its launching tool use, and ``output_file`` Claude Code's own word for
    its output file, when they are known."""

    session_id: str
    task_id: str
    task_type: str | None
    tool_name: str | None
    """The tool that launched it, when known (a Monitor runs as a ``local_bash`` task)."""
    description: str
    tool_call_id: str | None
    output_file: str | None
    state: RunState


@dataclass(frozen=True)
class TaskChanged:
    """Claude Code said something of an open task: what is known of it now (the same as before,
    or not)."""

    session_id: str
    task_id: str
    tool_call_id: str | None
    output_file: str | None
    state: RunState


@dataclass(frozen=True)
class TaskEnded:
    """A task's end, with what is known of it at its end."""

    session_id: str
    task_id: str
    end: TaskEnd
    summary: str | None
    tool_call_id: str | None
    output_file: str | None


@dataclass(frozen=True)
class TaskStopAnswered:
    """The answer to a stop request by task id: whether it sent a stop."""

    ticket: Ticket
    stopped: bool


# --- what happened, for the session core to route ---------------------------------------------


@dataclass(frozen=True)
class ChildEnded:
    """A child's task ended (or its end can no longer be observed)."""

    task: Task


@dataclass(frozen=True)
class FollowUpExpected:
    """A task ended by itself: Claude Code will start a turn about it.

    ``run`` is the task's run id (its task id when it has none): the ``origin.runId`` of that
    turn's result."""

    run: str


@dataclass(frozen=True)
class ToolCallDetached:
    """The work reports through its launching tool call from now on."""

    tool_use_id: str


@dataclass(frozen=True)
class HandedTo:
    """A tool result handed its work to a terminal (``terminal_id``) or kept it on the call."""

    terminal_id: str | None
    status: LiveStatus = "in_progress"


BackgroundFact = (
    TerminalOpened
    | TerminalOutput
    | TerminalReplaced
    | TerminalExited
    | WorkOpened
    | WorkStatus
    | WorkEnded
    | TaskOpened
    | TaskChanged
    | TaskEnded
    | ChildEnded
    | FollowUpExpected
    | ToolCallDetached
)
BackgroundOut = BackgroundFact | Tail | FinishTail | StopTask | Log
