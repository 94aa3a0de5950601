"""Background work as a client sees it: terminals, tool calls, child sessions, the ``background`` list.

Theory of operation. The task registry says which tasks are live; this module decides what
each one is to the client and keeps the RFD's ordering rules:

- A background shell (``local_bash`` launched by Bash, or by something we cannot name) is an
  agent-owned terminal whose id is the task id. Its ``terminal_update`` (command, cwd,
  ``capabilities.cancel``) goes out before the first list that names it, and its output file
  is tailed from then on. The Bash tool call completes at hand-off, as Claude Code's does, and
  its content references the terminal.
- Work without a process (Monitor, workflows, MCP tasks, remote agents) stays on the tool call
  that launched it: ``in_progress`` (``paused`` while paused) with ``capabilities.cancel``.
  Work whose launching tool call already has a final status, or that no tool call started,
  gets a tool call of our own, announced first. Scheduled work is ``schedules``' business.
- A subagent is a child session (``subagents``), listed while it runs detached.
- When a task ends, its terminal's file is read to the end first; then ``exitStatus`` (or the
  tool call's final status, or the child's ``idle``) with ``capabilities: null``; only then the
  list without it.
- A task that ended by itself makes Claude Code start a follow-up turn, so the snapshot that
  removes it already says ``running`` (see ``Foreground.expect_follow_up``).
- ``terminal/cancel`` and ``tool_call/cancel`` send ``stop_task``; only the SDK's events confirm
  the stop, unless none comes within ``STOP_BOUND``, when the item is finalized with an unknown
  exit and the log says why.

A task is classified once its launching tool is known (``task_started`` or the tool result),
or after ``CLASSIFY_GRACE`` on the level signal alone. v1 clients have no agent-owned terminals
and no list: they see shells only through the ``_meta`` extension (``meta_terminals``) when
they declare it, and child sessions when they declare ``subagents``; the registry is kept for
held prompts either way.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any, Literal

from claude_bg_acp.acp.jsonrpc import INVALID_PARAMS, RpcError
from claude_bg_acp.acp.updates import TerminalOutputChunk, TerminalUpdate, ToolCall
from claude_bg_acp.bridge import tools
from claude_bg_acp.bridge.effects import Effect, FinishTail, Log, Notify, StopTask, Tail
from claude_bg_acp.bridge.meta_terminals import MetaTerminals
from claude_bg_acp.bridge.schedules import Schedules
from claude_bg_acp.bridge.subagents import Subagents, is_subagent
from claude_bg_acp.bridge.tasks import Task, TaskChange, TaskRegistry
from claude_bg_acp.bridge.tools import ToolUse
from claude_bg_acp.bridge.turns import Foreground, Version
from claude_bg_acp.output import KILLED_SIGNAL, ExitInfo

CLASSIFY_GRACE = 0.5
STOP_BOUND = 10.0
CANCEL: dict[str, Any] = {"cancel": {}}
SHELL_TOOLS = ("Bash",)
FOLLOW_UP_STATUSES = ("completed", "failed")
TOOL_STATUS = {"completed": "completed", "failed": "failed", "stopped": "cancelled", "killed": "cancelled"}
"""A task's end as a tool call's final status; one whose end is unknown (lost) left the level by
itself, most likely done, so ``completed``."""
HANDOFF = re.compile(
    r"running in background with ID: (\S+?)\.? Output is being written to: (\S+?)\.?(?:\s|$)"
)
EXIT_CODE = re.compile(r"exit code (-?\d+)")

ItemKind = Literal["terminal", "tool_call", "subagent", "hidden"]
"""``hidden``: a task we keep track of but do not show (v1 shells, children we may not expose)."""


@dataclass
class Item:
    task_id: str
    kind: ItemKind
    ref: str
    listed: bool = False
    tailing: bool = False
    draining: bool = False
    final: bool = False
    stop_sent_at: float | None = None
    path: str | None = None
    """The output file being tailed."""


class Background:
    def __init__(
        self,
        session_id: str,
        cwd: str,
        version: Version,
        foreground: Foreground,
        tool_uses: dict[str, ToolUse],
        subagents: Subagents,
        tasks_root: str | None = None,
        meta_terminals: MetaTerminals | None = None,
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.version = version
        self.registry = TaskRegistry()
        self.items: dict[str, Item] = {}
        self._foreground = foreground
        self._tool_uses = tool_uses
        self._subagents = subagents
        self._tasks_root = tasks_root
        self._meta = meta_terminals
        self.schedules = Schedules()
        self._stalled: set[str] = set()
        self._cli_session: str | None = None

    # --- SDK events -------------------------------------------------------------------------------

    def system(self, subtype: str, data: dict[str, Any], now: float) -> list[Effect]:
        self._cli_session = self._cli_session or _text(data.get("session_id"))
        registry = self.registry
        if subtype == "task_started":
            changes = registry.started(data, now)
        elif subtype == "task_updated":
            changes = registry.updated(data, now)
        elif subtype == "task_notification":
            changes = registry.notification(data, now)
        elif subtype == "task_progress":
            changes = registry.progress(data, now)
        elif subtype == "background_tasks_changed":
            tasks = data.get("tasks")
            changes = registry.level(tasks if isinstance(tasks, list) else [], now)
        else:
            return []
        return self._apply(changes, now)

    def hand_off(self, tool_use_id: str, text: str, now: float) -> tuple[list[Effect], dict[str, Any] | None]:
        """A tool result arrived: say how its tool call should look, if background work owns it.

        Returns the effects to send first and the fields for the tool call's update (None when
        the tool call is ordinary and completes as usual).
        """
        match = HANDOFF.search(text)
        effects: list[Effect] = []
        if match:
            effects = self._apply(self.registry.learned(match[1], tool_use_id, match[2], now), now)
        item = self._item_for_tool_use(tool_use_id)
        if item is None or item.kind in ("subagent", "hidden"):
            return effects, None
        if match and item.kind == "terminal":
            effects += self._follow(item, match[2])
        if item.kind == "tool_call" and item.ref != tool_use_id:
            return effects, None  # the work has a tool call of its own; this one just completes
        if self._meta is not None and item.kind == "terminal":
            return effects, {
                "status": "completed",
                "content": [tools.text_content(text)],
                "_meta": self._meta.info(item.ref),
            }
        if self.version != 2:
            return effects, None
        if item.kind == "terminal":
            content = [{"type": "terminal", "terminalId": item.ref}, tools.text_content(text)]
            return effects, {"status": "completed", "content": content}
        status = "paused" if self.registry.tasks[item.task_id].status == "paused" else "in_progress"
        return effects, {"status": status, "content": [tools.text_content(text)], "capabilities": CANCEL}

    def scheduling(
        self, tool_use_id: str, text: str, is_error: bool
    ) -> tuple[dict[str, Any] | None, list[Effect], list[Effect]]:
        """A scheduling tool's result (see ``schedules``): its update fields, effects before it
        (calls it ended) and after it (the list that now names it)."""
        tool = self._tool_uses.get(tool_use_id)
        if self.version != 2 or is_error or tool is None:
            return None, [], []
        fields, ended = self.schedules.tool_result(tool_use_id, tool, text)
        before: list[Effect] = [self._notify(update) for update in ended]
        if fields is None:
            return None, before + (self._publish() if ended else []), []
        return fields, before, self._publish()

    def schedule_fired(self) -> list[Effect]:
        ended = self.schedules.fired()
        return [self._notify(update) for update in ended] + (self._publish() if ended else [])

    # --- output of tailed files --------------------------------------------------------------------

    def output(self, task_id: str, data: bytes) -> list[Effect]:
        item = self.items.get(task_id)
        if item is None or item.final or not data:
            return []
        if self._meta is not None:
            return [*self._meta.output(self._tool_call_of(item), item.ref, data)]
        return [self._notify(TerminalOutputChunk.of(item.ref, data))]

    def snapshot(self, task_id: str, data: bytes) -> list[Effect]:
        """The client fell behind: replace what it has with the latest bytes."""
        item = self.items.get(task_id)
        if item is None or item.final:
            return []
        if self._meta is not None:
            return [*self._meta.replace(self._tool_call_of(item), item.ref, data)]
        return [self._notify(TerminalUpdate(terminal_id=item.ref, output={"data": _b64(data)}))]

    def _tool_call_of(self, item: Item) -> str:
        task = self.registry.tasks.get(item.task_id)
        return (task.tool_use_id if task else None) or f"task-{item.task_id}"

    def drained(self, task_id: str, rest: bytes, exit_info: ExitInfo | None, now: float) -> list[Effect]:
        """The tail read the file to its end after the task ended."""
        item = self.items.get(task_id)
        if item is None or item.final:
            return []
        return self.output(task_id, rest) + self._finalize(item, exit_info, now) + self._publish()

    # --- client requests ---------------------------------------------------------------------------

    def cancel_terminal(self, terminal_id: str, now: float) -> list[Effect]:
        return self._cancel("terminal", terminal_id, now)

    def cancel_tool_call(self, tool_call_id: str, now: float) -> list[Effect]:
        return self._cancel("tool_call", tool_call_id, now)

    def stop_all(self, now: float) -> list[Effect]:
        """The session closes: stop every live task; the normal end path finalizes them."""
        effects: list[Effect] = []
        for task in self.registry.live():
            item = self.items.get(task.task_id)
            if item is None or item.stop_sent_at is None:
                effects.append(StopTask(task.task_id))
                if item is not None:
                    item.stop_sent_at = now
        return effects

    def abandon(self, now: float) -> list[Effect]:
        """Finalize whatever did not confirm its end in time, so nothing stays listed."""
        effects: list[Effect] = [self._notify(update) for update in self.schedules.cancel_all()]
        for item in list(self.items.values()):
            if not item.final:
                effects += self._finalize(item, None, now, unknown=True)
        return effects + self._publish()

    def reset(self, now: float) -> list[Effect]:
        """Claude Code is gone: finalize what it ran and forget its tasks."""
        effects = self.abandon(now)
        self.items.clear()
        self.registry = TaskRegistry()
        return effects

    @property
    def settled(self) -> bool:
        return all(item.final for item in self.items.values())

    # --- time -----------------------------------------------------------------------------------------

    def tick(self, now: float) -> list[Effect]:
        effects = self._apply(self.registry.tick(now), now)
        for task in self.registry.live():
            if self._unclassified(task) and now >= task.first_seen_at + CLASSIFY_GRACE:
                effects += self._consider(task, now, force=True)
                if task.task_id not in self.items:
                    # Nothing to show yet (a foreground shell, a child whose parent is unknown):
                    # no timer helps; its next event is considered as it comes.
                    self._stalled.add(task.task_id)
        for item in list(self.items.values()):
            if not item.final and item.stop_sent_at is not None and now >= item.stop_sent_at + STOP_BOUND:
                effects.append(Log(f"task {item.task_id}: no confirmation {STOP_BOUND:.0f}s after stop_task"))
                effects += self._finalize(item, None, now, unknown=True)
        return effects + self._publish()

    def next_deadline(self) -> float | None:
        deadlines = [self.registry.next_deadline()]
        deadlines += [t.first_seen_at + CLASSIFY_GRACE for t in self.registry.live() if self._unclassified(t)]
        deadlines += [
            i.stop_sent_at + STOP_BOUND
            for i in self.items.values()
            if i.stop_sent_at is not None and not i.final
        ]
        present = [d for d in deadlines if d is not None]
        return min(present) if present else None

    def _unclassified(self, task: Task) -> bool:
        """Waiting to be shown on a timer: the level signal or ``task_started`` vouched for it
        (an event that names no task type, like ``task_progress``, does not say it is not
        housekeeping), yet nothing says what it is."""
        vouched = task.in_level or task.started
        return vouched and task.task_id not in self.items and task.task_id not in self._stalled

    def listed(self) -> list[dict[str, Any]]:
        return [_list_entry(item) for item in self.items.values() if item.listed] + self.schedules.listed()

    # --- rules ------------------------------------------------------------------------------------------

    def _apply(self, changes: list[TaskChange], now: float) -> list[Effect]:
        effects: list[Effect] = []
        for change in changes:
            task = change.task
            if change.kind == "ambient":
                effects += self._withdrawn(task, now)
                continue
            if change.kind == "resumed" and task.task_id in self.items and self.items[task.task_id].final:
                del self.items[task.task_id]  # a new run: shown anew (a final status never reopens)
            if change.kind in ("ended", "corrected"):
                effects += self._ended(task, now)
                if is_subagent(task):
                    effects += self._foreground.subagent_ended(task.task_id, task.end_status, now)
                continue
            if is_subagent(task):
                self._foreground.subagent_started(task.task_id)
            if task.task_id in self.items:
                effects += self._changed(task)
            else:
                effects += self._consider(task, now)
        return effects + self._publish()

    def _withdrawn(self, task: Task, now: float) -> list[Effect]:
        """A task turned out to be housekeeping: end whatever showed it, then forget it."""
        item = self.items.pop(task.task_id, None)
        if item is None or item.final:
            return []
        item.listed = False
        return self._finalize(item, None, now, unknown=True)

    def _consider(self, task: Task, now: float, force: bool = False) -> list[Effect]:
        """Make a live task an item once we know enough to say what it is."""
        if task.ended or not (force or task.started or task.tool_use_id):
            return []
        if is_subagent(task) and self._subagents.exposed:
            effects = self._open_subagent(task)
            if task.task_id in self.items or not force or self.version != 2:
                return effects
            # Its parent stays unknown: never guessed, the work is shown as a tool call of ours.
            return self._open_tool_call(task, None)
        if task.backgrounded is False:
            return []
        tool = self._tool_uses.get(task.tool_use_id or "")
        # Known by its tool when it has one: a Bash hand-off may come before any task event.
        shell = tool.name in SHELL_TOOLS if tool is not None else task.task_type == "local_bash"
        if self.version != 2:
            # v1: only shells of a client that reads terminal output from ``_meta`` are shown.
            if shell and self._meta is not None and task.tool_use_id:
                return self._open_terminal(task, tool)
            self.items[task.task_id] = Item(task.task_id, "hidden", task.task_id)
            return []
        if shell:
            return self._open_terminal(task, tool)
        return self._open_tool_call(task, tool)

    def _open_subagent(self, task: Task) -> list[Effect]:
        effects = self._subagents.announce(task)
        if effects is None:
            return []
        item = self.items[task.task_id] = Item(task.task_id, "subagent", task.task_id)
        item.listed = self.version == 2 and task.backgrounded is not False
        return effects

    def _open_terminal(self, task: Task, tool: ToolUse | None) -> list[Effect]:
        item = self.items[task.task_id] = Item(task.task_id, "terminal", task.task_id)
        command = _text(tool.tool_input.get("command")) if tool else None
        update = TerminalUpdate(
            terminal_id=item.ref, command=command or task.description, cwd=self.cwd, capabilities=CANCEL
        )
        effects: list[Effect] = [self._notify(update)] if self.version == 2 else []
        if self._meta is not None:
            self._meta.open(item.ref)
        effects += self._follow(item, task.output_file or self._output_path(task.task_id))
        item.listed = self.version == 2
        return effects

    def _open_tool_call(self, task: Task, tool: ToolUse | None) -> list[Effect]:
        if tool is not None and task.tool_use_id and not tool.finished:
            item = self.items[task.task_id] = Item(task.task_id, "tool_call", task.tool_use_id)
            update = ToolCall(
                session_update="tool_call_update",
                tool_call_id=item.ref,
                status=_live_status(task),
                capabilities=CANCEL,
            )
        else:
            item = self.items[task.task_id] = Item(task.task_id, "tool_call", f"task-{task.task_id}")
            update = ToolCall(
                session_update="tool_call_update",
                tool_call_id=item.ref,
                title=_own_title(task),
                kind="other",
                status=_live_status(task),
                capabilities=CANCEL,
            )
        item.listed = True
        return [self._notify(update)]

    def _changed(self, task: Task) -> list[Effect]:
        item = self.items[task.task_id]
        if item.kind == "subagent" and not item.final:
            item.listed = self.version == 2 and task.backgrounded is not False
        if item.kind != "tool_call" or item.final:
            return []
        update = ToolCall(session_update="tool_call_update", tool_call_id=item.ref, status=_live_status(task))
        return [self._notify(update)]

    def _ended(self, task: Task, now: float) -> list[Effect]:
        item = self.items.get(task.task_id)
        if item is None:
            return []
        if item.final:
            return self._corrected(item, task)
        if item.kind == "terminal" and item.tailing:
            if item.draining:
                return []
            item.draining = True
            return [*self._follow(item, task.output_file), FinishTail(task.task_id)]
        return self._finalize(item, None, now)

    def _finalize(
        self, item: Item, exit_info: ExitInfo | None, now: float, unknown: bool = False
    ) -> list[Effect]:
        task = self.registry.tasks.get(item.task_id)
        item.final, item.listed = True, False
        effects: list[Effect] = []
        if item.kind == "terminal":
            status = {} if unknown else _exit_status(task, exit_info)
            if self._meta is not None:
                effects += self._meta.exited(self._tool_call_of(item), item.ref, status)
            else:
                update = TerminalUpdate(terminal_id=item.ref, exit_status=status, capabilities=None)
                effects.append(self._notify(update))
        elif item.kind == "tool_call":
            effects.append(self._notify(_final_tool_call(item, task, unknown)))
            if item.ref in self._tool_uses:
                # Final now: the tool result that may still come must not give a second status.
                self._tool_uses[item.ref].finished = True
        elif item.kind == "subagent" and task is not None:
            effects += self._subagents.ended(task)
        if task is not None and task.end_status in FOLLOW_UP_STATUSES and item.stop_sent_at is None:
            self._foreground.expect_follow_up(now)
        return effects

    def _corrected(self, item: Item, task: Task) -> list[Effect]:
        """An end event after the orphan timeout: tell the client how it really ended."""
        if item.kind == "terminal":
            return [self._notify(TerminalUpdate(terminal_id=item.ref, exit_status=_exit_status(task, None)))]
        return []

    def _cancel(self, kind: ItemKind, ref: str, now: float) -> list[Effect]:
        item = next((i for i in self.items.values() if i.kind == kind and i.ref == ref), None)
        noun = "terminal" if kind == "terminal" else "tool call"
        if item is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown {noun} {ref}")
        if item.final:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {noun} {ref} has already finished")
        if item.stop_sent_at is not None:
            return []
        item.stop_sent_at = now
        return [StopTask(item.task_id)]

    def _publish(self) -> list[Effect]:
        if self.version != 2:
            return []
        return self._foreground.set_background(self.listed())

    def owns(self, tool_use_id: str) -> bool:
        """True while live background work reports through this tool call."""
        return any(
            i.kind == "tool_call" and i.ref == tool_use_id and not i.final for i in self.items.values()
        )

    def _item_for_tool_use(self, tool_use_id: str) -> Item | None:
        for item in self.items.values():
            task = self.registry.tasks.get(item.task_id)
            if task is not None and task.tool_use_id == tool_use_id and not item.final:
                return item
        return None

    def _follow(self, item: Item, path: str | None) -> list[Effect]:
        """Tail ``path`` for the item, unless it is already (Claude Code's own word for the path,
        in a tool result or a notification, wins over the one we derived)."""
        if path is None or path == item.path:
            return []
        item.path, item.tailing = path, True
        return [Tail(item.task_id, path)]

    def _output_path(self, task_id: str) -> str | None:
        if self._tasks_root is None or self._cli_session is None:
            return None
        return f"{self._tasks_root}/{self._cli_session}/tasks/{task_id}.output"

    def _notify(self, update: TerminalUpdate | TerminalOutputChunk | ToolCall) -> Notify:
        return Notify(self.session_id, update)


def _list_entry(item: Item) -> dict[str, Any]:
    if item.kind == "terminal":
        return {"type": "terminal", "terminalId": item.ref}
    if item.kind == "subagent":
        return {"type": "subagent", "sessionId": item.ref}
    return {"type": "tool_call", "toolCallId": item.ref}


def _final_tool_call(item: Item, task: Task | None, unknown: bool) -> ToolCall:
    end = "cancelled" if unknown or task is None else TOOL_STATUS.get(task.end_status or "", "completed")
    update = ToolCall(session_update="tool_call_update", tool_call_id=item.ref, status=end, capabilities=None)
    if task is not None and task.summary:
        update.content = [tools.text_content(task.summary)]
    return update


def _live_status(task: Task) -> str:
    return "paused" if task.status == "paused" else "pending" if task.status == "pending" else "in_progress"


def _own_title(task: Task) -> str:
    kind = (task.task_type or "task").replace("_", " ")
    return f"{task.description} ({kind})" if task.description else f"Background {kind}"


def _exit_status(task: Task | None, exit_info: ExitInfo | None) -> dict[str, Any]:
    if exit_info is not None and (exit_info.exit_code is not None or exit_info.signal is not None):
        return {"exitCode": exit_info.exit_code, "signal": exit_info.signal}
    if task is not None and task.summary and (match := EXIT_CODE.search(task.summary)):
        return {"exitCode": int(match[1]), "signal": None}
    if task is not None and task.end_status in ("killed", "stopped"):
        return {"exitCode": None, "signal": KILLED_SIGNAL}
    if task is not None and task.end_status == "completed":
        return {"exitCode": 0, "signal": None}
    return {}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
