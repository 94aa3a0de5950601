"""Background work as items a client can follow: terminals, tool calls, child sessions.

Theory of operation. The task registry says which tasks are live; this module decides what
each one is to the client and keeps the RFD's ordering rules:

- A background shell (``local_bash`` launched by Bash, or by something we cannot name) is an
  agent-owned terminal whose id is the task id. It is opened (command, cwd, cancellable)
  before the first list that names it, and its output file is tailed from then on. The Bash
  tool call's result hands the command off to it (``HandedTo``).
- Work without a process (Monitor, workflows, MCP tasks, remote agents) stays on the tool call
  that launched it, which is then detached (``in_progress``, ``paused`` while paused,
  cancellable). Work whose launching tool call already has a final status, or that no tool
  call started, gets a tool call of our own. Scheduled work is ``schedules``' business.
- A subagent is a child session (``subagents``) when the session shows subagents as sessions,
  listed while it runs detached, or once it ended while its own list is not empty (never
  while its parent's turn waits on it: it is foreground work then); one whose parent stays
  unknown is work on a tool call of our own (its parent is never guessed), which ends once the
  parent is known and the child is shown. When the session
  shows subagents in the session that launched them, a subagent that runs in the background
  is work on its Agent tool call, as a Monitor is.
- Work belongs to the session whose transcript holds the tool use that launched it: a shell or
  monitor a subagent starts is the child's, announced and listed in the child's session; a
  child is listed by its parent (the root, or another child). Work no tool use launched is the
  root's.
- When a task ends, its terminal's file is read to the end first; then its exit (or the tool
  call's final status, or the child's end); only then the list without it.
- A task that ended by itself, and work without a process however it ended (a stopped
  Monitor or subagent: ``FOLLOWED_UP_WHEN_STOPPED``), make Claude Code start a follow-up turn:
  ``FollowUpExpected``
  goes out as soon as Claude Code reports the end (before a terminal's file is read to its
  end), so the snapshot that removes the item already says ``running`` unless that turn is over
  by then; it names the task's run, which the follow-up turn's result names too.
- Every task but a subagent is also reported as a task of its own, whatever item shows it:
  ``TaskOpened``, ``TaskChanged`` whenever Claude Code says something of it, ``TaskEnded``,
  each with what is known of it then (its tool call, output file, state); a presenter that
  follows tasks as such (JetBrains AIR's async tasks) tells its client what changed.
- ``terminal/cancel``, ``tool_call/cancel`` and a stop by task id send ``stop_task``
  (``stopping``); only the SDK's events confirm the stop, unless none comes within
  ``STOP_BOUND``, when the item is finalized with an unknown exit and the log says why.
- A client that (re)attaches learns what each listed item is now (``background_list``).

These are facts about the work, the same for every client: which of them a client is shown,
and how, is its presenter's business. A task is classified once what it is is known, or on a
timer (``classifying``). An item's lifecycle:

============  ====================  ========================================================  ============
item          trigger               what happens                                              next
============  ====================  ========================================================  ============
(task)        ``CLASSIFIED``        classified                                                ``LIVE``
``LIVE``      ``FILE_TO_READ``      a terminal's task ended: its file is read to the end      ``DRAINING``
``LIVE``      ``STOPPED_BY_AGENT``  Claude Code is gone (or the close waited long enough),    ``DRAINING``
                                    and the agent stopped the terminal's process itself: its
                                    file is read to the end
``LIVE``      ``ENDED``             any other item's task ended                               ``FINAL``
``LIVE``,     ``STOP_UNCONFIRMED``  a stop was not confirmed in time                          ``FINAL``
``DRAINING``
``LIVE``      ``GONE``              Claude Code is gone, or the close waited long enough      ``FINAL``
``LIVE``,     ``HOUSEKEEPING``      its task turned out to be housekeeping                    ``FINAL``
``DRAINING``
``LIVE``      ``PLACED``            a subagent shown as work of ours found its parent         ``FINAL``
``DRAINING``, ``READ``              the file's end was read (also before its end was asked    ``FINAL``
``LIVE``                            for)
``FINAL``     ``NEW_RUN``           a new run of its task (a resumed subagent): shown anew    (task)
``FINAL``     ``PLACED``            a subagent shown as work of ours is its child session     (task)
                                    from now on
``FINAL``     ``GONE``              Claude Code is gone: forgotten                            (task)
============  ====================  ========================================================  ============

A stop request (``stop_sent_at``) is orthogonal: it waits for the task's end in any phase. A
terminal reports how its command ended from its file's closing line, else from how its process
ended when the agent stopped it (``stopped_with``), else from what its task said; a terminal
still ``DRAINING`` when Claude Code goes stays until its file is read.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from claude_bg_acp.claude.conventions import SHELL_TOOLS, ExitInfo, ShellEnd, summary_exit_code
from claude_bg_acp.core.background_facts import (
    TASK_ENDS,
    TOOL_STATUS,
    BackgroundOut,
    ChildEnded,
    FollowUpExpected,
    HandedTo,
    LiveStatus,
    RunState,
    TaskChanged,
    TaskEnd,
    TaskEnded,
    TaskOpened,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    ToolCallDetached,
    WorkEnded,
    WorkOpened,
    WorkStatus,
)
from claude_bg_acp.core.effects import FinishTail, Log, Tail
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.tasks import Task
from claude_bg_acp.core.terminals import Recent, end_of_stop, exit_of
from claude_bg_acp.core.tool_uses import ToolUse, ToolUsePhase

STOP_BOUND = 10.0
FOLLOW_UP_STATUSES = ("completed", "failed")


class Kind(enum.Enum):
    TERMINAL = "terminal"
    TOOL_CALL = "tool_call"
    SUBAGENT = "subagent"


FOLLOWED_UP_WHEN_STOPPED = frozenset({Kind.TOOL_CALL, Kind.SUBAGENT})
"""The work Claude Code starts a follow-up turn about also when it was stopped (CLI 2.1.332,
measured: a stopped background subagent 8 of 8, a stopped Monitor 8 of 8 when stopped while
its events were coming, not after its last event's turn, 1 run; a stopped shell never): the
``running`` of that turn comes no later than the snapshot that removes the item, rather than
an ``idle`` with an empty list and ``running`` 60-95 ms later. Should none come, ``running``
ends after ``FOLLOW_UP_WAIT``."""


class ItemPhase(enum.Enum):
    LIVE = "live"
    DRAINING = "draining"
    FINAL = "final"


class ItemTrigger(enum.Enum):
    CLASSIFIED = "classified"
    FILE_TO_READ = "file_to_read"
    STOPPED_BY_AGENT = "stopped_by_agent"
    ENDED = "ended"
    STOP_UNCONFIRMED = "stop_unconfirmed"
    GONE = "gone"
    HOUSEKEEPING = "housekeeping"
    PLACED = "placed"
    READ = "read"
    NEW_RUN = "new_run"


LIVE, DRAINING, FINAL = ItemPhase
ITEMS: Transitions[ItemPhase, ItemTrigger] = Transitions.of(
    "item",
    ItemPhase,
    ItemTrigger,
    ((None,), ItemTrigger.CLASSIFIED, LIVE),
    ((LIVE,), ItemTrigger.FILE_TO_READ, DRAINING),
    ((LIVE,), ItemTrigger.STOPPED_BY_AGENT, DRAINING),
    ((LIVE,), ItemTrigger.ENDED, FINAL),
    ((LIVE, DRAINING), ItemTrigger.STOP_UNCONFIRMED, FINAL),
    ((LIVE,), ItemTrigger.GONE, FINAL),
    ((LIVE, DRAINING), ItemTrigger.HOUSEKEEPING, FINAL),
    ((LIVE,), ItemTrigger.PLACED, FINAL),
    ((DRAINING, LIVE), ItemTrigger.READ, FINAL),
    ((FINAL,), ItemTrigger.NEW_RUN, None),
    ((FINAL,), ItemTrigger.PLACED, None),
    ((FINAL,), ItemTrigger.GONE, None),
)


@dataclass
class Item:
    task: Task
    kind: Kind
    ref: str
    """The terminal id, tool call id or child session id the client knows it by."""
    session_id: str
    """The session the work belongs to (for a child: its parent's)."""
    phase: ItemPhase = field(default_factory=lambda: ITEMS.move(None, ItemTrigger.CLASSIFIED))
    stop_sent_at: float | None = None
    path: str | None = None
    """The output file being tailed."""
    reported_as_task: bool = False
    """It was reported as a task of its own (``TaskOpened``: it was no subagent as far as was
    known when it opened), so its changes and its end are too, and it can be stopped by its id."""
    command: str = ""
    """A terminal's command line."""
    recent: Recent | None = None
    """A live terminal's latest output, kept to restate it."""
    stopped_with: ExitInfo | None = None
    closing: bool = False
    """Its session closes, and stopped it."""
    """How its process ended when the agent stopped it (Claude Code was gone)."""
    exit: ExitInfo | None = None
    """The exit a final terminal reported (None: unknown)."""
    ran: bool = False
    """A tool call's status was ``in_progress`` or ``paused``: it never goes back to ``pending``."""

    @property
    def final(self) -> bool:
        return self.phase is ItemPhase.FINAL

    def status(self) -> LiveStatus:
        """A tool call's live status now: its task's, but never ``pending`` again once it ran
        (the RFD: statuses never go back to ``pending``), whatever order Claude Code reports in."""
        status = _live_status(self.task)
        if status == "pending" and self.ran:
            return "in_progress"
        self.ran = self.ran or status != "pending"
        return status

    @property
    def tool_call_id(self) -> str:
        """The tool call that shows this item's work (a terminal's launching one: clients that
        draw terminals in tool calls draw it there)."""
        return self.task.tool_use_id or f"task-{self.task.task_id}"


class Background:
    def __init__(self, root_id: str, cwd: str) -> None:
        self.root_id = root_id
        self.cwd = cwd
        self.items: dict[str, Item] = {}
        self._shown: set[str] = set()
        """Every terminal id and tool call id of our own given out so far."""

    # --- tasks becoming items -------------------------------------------------------------------

    def knows(self, task_id: str) -> bool:
        return task_id in self.items

    def consider(
        self, task: Task, tool: ToolUse | None, output_file: str | None, force: bool = False
    ) -> list[BackgroundOut]:
        """Make a live task (not a subagent shown as a child session) an item once we know enough
        to say what it is."""
        if task.ended or not (force or task.started or task.tool_use_id):
            return []
        if task.backgrounded is False:
            return []
        # Known by its tool when it has one: a Bash hand-off may come before any task event.
        shell = tool.name in SHELL_TOOLS if tool is not None else task.task_type == "local_bash"
        if shell:
            owner = tool.session_id if tool is not None else self.root_id
            out = self._open_terminal(task, tool, owner, output_file)
        else:
            out = self._open_tool_call(task, tool)
        return out + self._opened(self.items[task.task_id], tool)

    def unplaced(self, task: Task) -> list[BackgroundOut]:
        """A subagent whose parent session stayed unknown: never guessed, its work is shown as a
        tool call of ours (until ``placed``)."""
        return self._open_tool_call(task, None)

    def stands_in(self, task_id: str) -> bool:
        """A subagent's work is shown as a tool call of ours (``unplaced``), not yet final."""
        item = self.items.get(task_id)
        return item is not None and item.kind is Kind.TOOL_CALL and item.task.is_subagent and not item.final

    def placed(self, task: Task, now: float) -> list[BackgroundOut]:
        """The subagent shown as a tool call of ours (``unplaced``) found its parent: that tool
        call ends (``completed``: its work goes on as the child session, which ``open_child``
        lists from now on)."""
        item = self.items.pop(task.task_id)
        out = self._finalize(item, ItemTrigger.PLACED, None, now)
        ITEMS.forget(item.phase, ItemTrigger.PLACED)
        return out

    def open_child(self, task: Task, parent_id: str) -> None:
        """An exposed subagent, listed by its parent while it runs detached, or once it ended
        while work of its own goes on (never while its parent waits on it)."""
        self.items[task.task_id] = Item(task, Kind.SUBAGENT, task.task_id, parent_id)

    def _open_terminal(
        self, task: Task, tool: ToolUse | None, owner: str, output_file: str | None
    ) -> list[BackgroundOut]:
        command = tool.tool_input.get("command") if tool else None
        if not isinstance(command, str) or not command:
            command = task.description
        item = self.items[task.task_id] = Item(
            task, Kind.TERMINAL, self._fresh(task.task_id), owner, command=command, recent=Recent()
        )
        launched_by_tool = bool(task.tool_use_id)
        opened = TerminalOpened(owner, item.ref, item.tool_call_id, command, self.cwd, True, launched_by_tool)
        return [opened, *self._follow(item, task.output_file or output_file)]

    def _open_tool_call(self, task: Task, tool: ToolUse | None) -> list[BackgroundOut]:
        if tool is not None and task.tool_use_id and not tool.final:
            # Its launching call runs already (``in_progress``): the task's start began it.
            ran = tool.phase is ToolUsePhase.RUNNING
            item = self.items[task.task_id] = Item(
                task, Kind.TOOL_CALL, tool.call_id, tool.session_id, ran=ran
            )
            return [ToolCallDetached(item.ref), WorkOpened(item.session_id, item.ref, item.status())]
        ref = self._fresh(f"task-{task.task_id}")
        item = self.items[task.task_id] = Item(task, Kind.TOOL_CALL, ref, self.root_id)
        return [WorkOpened(item.session_id, item.ref, item.status(), own_title(task))]

    def _fresh(self, ref: str) -> str:
        """``ref``, or for a new run of a task whose earlier run used it, a new one: a final
        terminal or tool call never opens again, a new run is new work."""
        fresh, run = ref, 1
        while fresh in self._shown:
            run += 1
            fresh = f"{ref}-{run}"
        self._shown.add(fresh)
        return fresh

    def _opened(self, item: Item, tool: ToolUse | None) -> list[BackgroundOut]:
        task = item.task
        if task.is_subagent:
            return []
        item.reported_as_task = True
        name = tool.name if tool is not None else None
        opened = TaskOpened(
            item.session_id,
            task.task_id,
            task.task_type,
            name,
            task.description,
            task.tool_use_id,
            task.output_file,
            _run_state(task),
        )
        return [opened]

    def changed(self, task: Task) -> list[BackgroundOut]:
        item = self.items[task.task_id]
        if item.final:
            return []
        out: list[BackgroundOut] = []
        if item.kind is Kind.TOOL_CALL:
            out.append(WorkStatus(item.session_id, item.ref, item.status()))
        if item.reported_as_task:
            state = _run_state(task)
            out.append(TaskChanged(item.session_id, task.task_id, task.tool_use_id, task.output_file, state))
        return out

    def resumed(self, task: Task) -> None:
        """A new run of a task whose item is final: it is shown anew (a final status never reopens)."""
        item = self.items.get(task.task_id)
        if item is not None and item.final:
            ITEMS.forget(item.phase, ItemTrigger.NEW_RUN)
            del self.items[task.task_id]

    def withdrawn(self, task: Task, now: float) -> list[BackgroundOut]:
        """A task turned out to be housekeeping: end whatever showed it, then forget it."""
        item = self.items.pop(task.task_id, None)
        if item is None or item.final:
            return []
        return self._finalize(item, ItemTrigger.HOUSEKEEPING, None, now, unknown=True, known_task=False)

    # --- tasks ending ----------------------------------------------------------------------------

    def ended(self, task: Task, now: float) -> list[BackgroundOut]:
        item = self.items.get(task.task_id)
        if item is None:
            return []
        if item.final:
            return self._corrected(item)
        if item.kind is Kind.TERMINAL and item.path is not None:
            if item.phase is ItemPhase.DRAINING:
                return []
            item.phase = ITEMS.move(item.phase, ItemTrigger.FILE_TO_READ)
            follow = self._follow(item, task.output_file)
            end = ShellEnd(task.end_status, summary_exit_code(task.summary))
            return [*follow, FinishTail(task.task_id, end), *_task_ended(item, task), *_follow_up(item, task)]
        return self._finalize(item, ItemTrigger.ENDED, None, now) + _follow_up(item, task)

    def drained(
        self, task_id: str, rest: bytes, exit_info: ExitInfo | None, now: float
    ) -> list[BackgroundOut]:
        """The tail read the file to its end after the task ended."""
        item = self.items.get(task_id)
        if item is None or item.final:
            return []
        return self.output(task_id, rest) + self._finalize(item, ItemTrigger.READ, exit_info, now)

    def _finalize(
        self,
        item: Item,
        trigger: ItemTrigger,
        exit_info: ExitInfo | None,
        now: float,
        unknown: bool = False,
        known_task: bool = True,
    ) -> list[BackgroundOut]:
        task = item.task if known_task else None
        draining = item.phase is ItemPhase.DRAINING  # its task's end was reported when it began
        item.phase, item.recent = ITEMS.move(item.phase, trigger), None
        out: list[BackgroundOut] = []
        if item.kind is Kind.TERMINAL:
            item.exit = None if unknown else exit_of(task, exit_info, item.stopped_with)
            out.append(
                TerminalExited(item.session_id, item.ref, item.tool_call_id, item.exit, closed=item.closing)
            )
        elif item.kind is Kind.TOOL_CALL:
            end = (
                "cancelled"
                if unknown or task is None
                else TOOL_STATUS.get(task.end_status or "", "completed")
            )
            out.append(WorkEnded(item.session_id, item.ref, end, task.summary if task else None))
        elif item.kind is Kind.SUBAGENT and task is not None:
            out.append(ChildEnded(task))
        if not draining:
            out += _task_ended(item, None if unknown else task)
        return out

    def _corrected(self, item: Item) -> list[BackgroundOut]:
        """An end event after the orphan timeout: tell the client how it really ended, unless it
        was told already (a Claude Code that took over after a crash repeats old ends)."""
        if item.kind is not Kind.TERMINAL or item.exit is not None:
            return []
        item.exit = exit_of(item.task, None, item.stopped_with)
        return [TerminalExited(item.session_id, item.ref, item.tool_call_id, item.exit, True)]

    # --- tool results --------------------------------------------------------------------------

    def hand_off(
        self, tool_use_id: str, call_id: str, output_file: str | None
    ) -> tuple[list[BackgroundOut], HandedTo | None]:
        """A tool result arrived for the model's ``tool_use_id`` (the tool call ``call_id``):
        how the call goes on, if background work owns it.

        ``output_file`` is the path the result names (Claude Code's own word for it wins over
        the one we derived). None when the tool call is ordinary and completes as usual.
        """
        item = self._live_item_of(tool_use_id)
        if item is None or item.kind is Kind.SUBAGENT:
            return [], None
        if item.kind is Kind.TERMINAL:
            return self._follow(item, output_file), HandedTo(item.ref)
        if item.ref != call_id:
            return [], None  # the work has a tool call of its own; this one just completes
        return [], HandedTo(None, "paused" if item.task.status == "paused" else "in_progress")

    def _live_item_of(self, tool_use_id: str) -> Item | None:
        return next(
            (i for i in self.items.values() if i.task.tool_use_id == tool_use_id and not i.final), None
        )

    # --- output of tailed files ----------------------------------------------------------------

    def output(self, task_id: str, data: bytes) -> list[BackgroundOut]:
        item = self.items.get(task_id)
        if item is None or item.final or not data:
            return []
        if item.recent is not None:
            item.recent.add(data)
        return [TerminalOutput(item.session_id, item.ref, item.tool_call_id, data)]

    def replaced(self, task_id: str, data: bytes) -> list[BackgroundOut]:
        item = self.items.get(task_id)
        if item is None or item.final:
            return []
        if item.recent is not None:
            item.recent.replace(data)
        return [TerminalReplaced(item.session_id, item.ref, item.tool_call_id, data)]

    # --- a client (re)attaching -------------------------------------------------------------------

    def unfinished(self) -> frozenset[str]:
        """The tasks whose items have no final status yet (a terminal may still be draining)."""
        return frozenset(item.task.task_id for item in self.items.values() if not item.final)

    # --- Claude Code gone -------------------------------------------------------------------------

    def abandon(self, now: float, stopped: Mapping[str, ExitInfo]) -> list[BackgroundOut]:
        """No end will be confirmed any more: finalize everything, so nothing stays listed.

        A terminal whose process the agent stopped (``stopped``: how it ended, by task id) has
        its file read to the end first, as has one whose file was being read already. Every
        other end is unknown.
        """
        out: list[BackgroundOut] = []
        for item in list(self.items.values()):
            if item.final:
                continue
            if item.kind is Kind.TERMINAL and item.task.task_id in stopped:
                item.stopped_with = stopped[item.task.task_id]
            if item.phase is ItemPhase.DRAINING:
                continue
            if item.stopped_with is None:
                out += self._finalize(item, ItemTrigger.GONE, None, now, unknown=True)
            elif item.path is None:
                out += self._finalize(item, ItemTrigger.GONE, None, now)
            else:
                item.phase = ITEMS.move(item.phase, ItemTrigger.STOPPED_BY_AGENT)
                out += [
                    FinishTail(item.task.task_id, end_of_stop(item.stopped_with)),
                    *_task_ended(item, None),
                ]
        return out

    def forget(self) -> None:
        """Claude Code is gone, its tasks with it (``abandon`` first); a terminal whose file is
        still being read stays until it is."""
        for key, item in list(self.items.items()):
            if item.phase is not ItemPhase.DRAINING:
                ITEMS.forget(item.phase, ItemTrigger.GONE)
                del self.items[key]

    @property
    def settled(self) -> bool:
        return all(item.final for item in self.items.values())

    # --- time -----------------------------------------------------------------------------------------

    def overdue(self, now: float) -> list[BackgroundOut]:
        out: list[BackgroundOut] = []
        for item in list(self.items.values()):
            if not item.final and item.stop_sent_at is not None and now >= item.stop_sent_at + STOP_BOUND:
                out.append(
                    Log(f"task {item.task.task_id}: no confirmation {STOP_BOUND:.0f}s after stop_task")
                )
                out += self._finalize(item, ItemTrigger.STOP_UNCONFIRMED, None, now, unknown=True)
        return out

    def next_deadline(self) -> float | None:
        """When the first stop that waits for its end is overdue."""
        deadlines = [
            i.stop_sent_at + STOP_BOUND
            for i in self.items.values()
            if i.stop_sent_at is not None and not i.final
        ]
        return min(deadlines) if deadlines else None

    def _follow(self, item: Item, path: str | None) -> list[BackgroundOut]:
        """Tail ``path`` for the item, unless it is already (Claude Code's own word for the path,
        in a tool result or a notification, wins over the one we derived)."""
        if path is None or path == item.path:
            return []
        item.path = path
        return [Tail(item.task.task_id, path)]


def _task_ended(item: Item, task: Task | None) -> list[BackgroundOut]:
    """A task's end, as a task (``task`` None: it was stopped, by us or with Claude Code)."""
    if not item.reported_as_task:
        return []
    end: TaskEnd = TASK_ENDS.get(task.end_status or "", "completed") if task is not None else "stopped"
    summary = task.summary if task is not None else None
    return [
        TaskEnded(
            item.session_id, item.task.task_id, end, summary, item.task.tool_use_id, item.task.output_file
        )
    ]


def _follow_up(item: Item, task: Task) -> list[BackgroundOut]:
    """The follow-up turn Claude Code starts about a task's end: of one that ended by itself,
    and of work without a process however it ended (``FOLLOWED_UP_WHEN_STOPPED``)."""
    by_itself = task.end_status in FOLLOW_UP_STATUSES and item.stop_sent_at is None
    if task.end_status is not None and (by_itself or item.kind in FOLLOWED_UP_WHEN_STOPPED):
        return [FollowUpExpected(task.run_id or task.task_id)]
    return []


def _run_state(task: Task) -> RunState:
    return "paused" if task.status == "paused" else "running"


def _live_status(task: Task) -> LiveStatus:
    return "paused" if task.status == "paused" else "pending" if task.status == "pending" else "in_progress"


def own_title(task: Task) -> str:
    kind = (task.task_type or "task").replace("_", " ")
    return f"{task.description} ({kind})" if task.description else f"Background {kind}"
