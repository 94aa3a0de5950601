"""Claude Code's tasks routed to what shows them.

Task events go to the ``TaskRegistry``; each change it reports goes to ``Subagents`` (a
subagent that is a child session), to ``Background`` (everything else: a terminal, work on a
tool call, a child as an item of its parent's list), to ``ForegroundShells`` (a shell run in
the foreground) and, for subagents, to the ``Foreground`` (held turns). A task is shown once
enough is known to say what it is (``consider``); a subagent shown as work of ours while its
parent was unknown becomes its child session once the parent is known (``place``). What
``Background`` reports goes on to the parts it concerns (``background``), and after task
changes the ``background`` lists go to the children and the foreground, which report them with
their states (``publish``). The tailed output of a task's file goes to the part that follows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_never

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import background_list, stopping
from claude_bg_acp.core.background_facts import (
    BackgroundOut,
    ChildEnded,
    FollowUpExpected,
    TaskChanged,
    TaskEnded,
    TaskOpened,
    TaskStopAnswered,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    ToolCallDetached,
    WorkEnded,
    WorkOpened,
    WorkStatus,
)
from claude_bg_acp.core.background_list import Listed
from claude_bg_acp.core.child_routing import ChildRouting
from claude_bg_acp.core.classifying import Classifying
from claude_bg_acp.core.effects import Effect, FinishTail, Log, StopTask, Tail, Ticket
from claude_bg_acp.core.permission_requests import PermissionRequests
from claude_bg_acp.core.routes import Parts, Routes
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.tasks import Change, Task, TaskChange, TaskRegistry


class TaskRouting:
    def __init__(
        self,
        parts: Parts,
        tasks_root: str | None,
        children: ChildRouting,
        permissions: PermissionRequests,
        routes: Routes,
    ) -> None:
        """``tasks_root``: where Claude Code keeps task output files, up to its session id
        (``conventions.tasks_root``)."""
        self.session_id, self.policy, self.presenter = parts.session_id, parts.policy, parts.presenter
        self.background, self.shells, self.subagents = parts.background, parts.shells, parts.subagents
        self.foreground, self.tool_uses, self.schedules = parts.foreground, parts.tool_uses, parts.schedules
        self._tasks_root = tasks_root
        self.children = children
        self.permissions = permissions
        self.routes = routes
        self.registry = TaskRegistry()
        self.classifying = Classifying()

    # --- Claude Code's word on its tasks ---------------------------------------------------------

    def system(self, subtype: str, data: dict[str, Any], now: float) -> list[Effect]:
        """A system message, which may be a task event."""
        changes = self.registry.system(subtype, data, now)
        return self.changes(changes, now) + self.children.flush(now) if changes else []

    def learned(self, task_id: str, tool_use_id: str, output_file: str | None, now: float) -> list[Effect]:
        """A tool result named the task it launched (and its output file)."""
        return self.changes(self.registry.learned(task_id, tool_use_id, output_file, now), now)

    def changes(self, changes: list[TaskChange], now: float) -> list[Effect]:
        effects: list[Effect] = []
        for change in changes:
            # A task for a tool use says that the tool runs (before its work is shown on it).
            for tool_use_id in dict.fromkeys((change.task.tool_use_id, change.task.run_tool_use_id)):
                effects += self.routes.present(self.tool_uses.started(tool_use_id))
            effects += self._change(change, now)
        # A child that ended, or went to the background, no longer blocks what waited on it.
        return effects + self.publish() + self.permissions.blocking()

    def _change(self, change: TaskChange, now: float) -> list[Effect]:
        task = change.task
        if change.kind is Change.AMBIENT:
            return self.background_out(self.background.withdrawn(task, now), now)
        if change.kind is Change.RESUMED:
            self.background.resumed(task)
        if change.kind in (Change.ENDED, Change.CORRECTED):
            effects = self.routes.shells_out(self.shells.ended(task.task_id))
            effects += self.background_out(self.background.ended(task, now), now)
            if task.is_subagent:
                effects += self.routes.foreground_out(
                    self.foreground.subagent_ended(task.task_id, task.end_status, now)
                )
            return effects
        if task.is_subagent:
            self.foreground.subagent_started(task.task_id)
        placed = self._place(task, now)
        if placed is not None:
            effects = placed
        elif self.background.knows(task.task_id):
            effects = self.background_out(self.background.changed(task), now)
        else:
            effects = self._consider(task, now)
        sender = self.tool_uses.get(task.run_tool_use_id)
        return effects + self.children.present(self.subagents.messaged(task, sender))

    def _consider(self, task: Task, now: float, force: bool = False) -> list[Effect]:
        """Show a live task once we know enough to say what it is."""
        if task.ended or not (force or task.started or task.tool_use_id):
            return []
        tool = self.tool_uses.get(task.tool_use_id)
        if tool is None and task.tool_use_id and self.children.waiting_for(task.tool_use_id):
            return []  # launched in a child not exposed yet: considered when its messages are
        if task.is_subagent and self.policy.subagents_are_sessions:
            announced = self.subagents.announce(task, tool)
            if announced is not None:
                self.background.open_child(task, self.subagents.children[task.task_id].parent_id)
                return self.children.present(announced)
            return self.background_out(self.background.unplaced(task), now) if force else []
        output_file = None
        if self._tasks_root is not None and self.registry.cli_session_id is not None:
            output_file = conventions.output_file(
                self._tasks_root, self.registry.cli_session_id, task.task_id
            )
        if task.backgrounded is False:
            return self.routes.shells_out(self.shells.follow(task, tool, output_file))
        self.shells.backgrounded(task.task_id)
        return self.background_out(self.background.consider(task, tool, output_file, force), now)

    def _place(self, task: Task, now: float) -> list[Effect] | None:
        """A subagent shown as work of ours while its parent was unknown is the child session it
        is once its parent is known: that tool call ends (its work goes on in the child), the
        child is announced, and what it said meanwhile follows. None while it stays as it is."""
        if not self.background.stands_in(task.task_id):  # only where subagents are sessions
            return None
        announced = self.subagents.announce(task, self.tool_uses.get(task.tool_use_id))
        if announced is None:
            return None
        effects = self.background_out(self.background.placed(task, now), now)
        self.background.open_child(task, self.subagents.children[task.task_id].parent_id)
        return effects + self.children.present(announced) + self.children.flush(now) + self.publish()

    def exposed(self, now: float) -> list[Effect]:
        """The live tasks a child exposed now launched, shown (or placed)."""
        effects: list[Effect] = []
        for task in self.registry.live():
            placed = self._place(task, now)
            if placed is not None:
                effects += placed
            elif not self.background.knows(task.task_id) and self.tool_uses.get(task.tool_use_id):
                effects += self._consider(task, now)
        return effects

    def tick(self, now: float) -> list[Effect]:
        effects = self.changes(self.registry.tick(now), now)
        for task in self.classifying.due(self.registry.live(), self.background.items, now):
            effects += self._consider(task, now, force=True)
            self.classifying.stall(task, self.background.items)
        effects += self.background_out(self.background.overdue(now), now) + self.publish()
        effects += self.routes.present(self.tool_uses.due(now))
        return effects + self.routes.foreground_out(self.foreground.tick(now)) + self.children.flush(now)

    def next_deadline(self) -> float | None:
        deadlines = self.classifying.deadlines(self.registry.live(), self.background.items)
        deadlines += [
            d for d in (self.registry.next_deadline(), self.background.next_deadline()) if d is not None
        ]
        return min(deadlines) if deadlines else None

    # --- the background lists ------------------------------------------------------------------

    def publish(self) -> list[Effect]:
        """The ``background`` lists: each child's (the newest, so the most nested, first), then
        the root's, so a child's own list empties before its parent's list drops it."""
        effects: list[Effect] = []
        for child in reversed(list(self.subagents.children)):
            effects += self.children.present(self.subagents.listing(child, self._listed(child)))
        return effects + self.routes.foreground_out(
            self.foreground.set_background(self._listed(self.session_id))
        )

    def _listed(self, session_id: str) -> list[Listed]:
        scheduled = [Listed("tool_call", ref) for ref in self.schedules.listed(session_id)]
        return background_list.listed(self.background.items, session_id) + scheduled

    def schedules_ended(self, ended: list[ScheduleEnded], publish: bool = True) -> list[Effect]:
        for end in ended:
            self.tool_uses.finish(end.tool_call_id)
        return self.routes.present(ended) + (self.publish() if ended and publish else [])

    # --- a task's output file ------------------------------------------------------------------

    def output(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        if self.shells.knows(task_id):
            return self.routes.shells_out(self.shells.output(task_id, data))
        return self.background_out(self.background.output(task_id, data), now)

    def replaced(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        if self.shells.knows(task_id):
            return self.routes.shells_out(self.shells.output(task_id, data, replaced=True))
        return self.background_out(self.background.replaced(task_id, data), now)

    def drained(self, task_id: str, rest: bytes, exit_info: ExitInfo | None, now: float) -> list[Effect]:
        if self.shells.knows(task_id):
            return self.routes.shells_out(self.shells.drained(task_id, rest))
        return (
            self.background_out(self.background.drained(task_id, rest, exit_info, now), now) + self.publish()
        )

    # --- stopping ------------------------------------------------------------------------------

    def cancel(
        self, kind: Literal["terminal", "tool_call"], ref: str, session_id: str, now: float
    ) -> list[Effect]:
        """``terminal/cancel`` or ``tool_call/cancel``."""
        return self.background_out(stopping.cancel(self.background.items, kind, ref, session_id, now), now)

    def stop(self, ticket: Ticket, task_id: str, now: float) -> list[Effect]:
        """A stop by task id, answered with whether it sent one."""
        outs, stopped = stopping.stop(self.background.items, task_id, now)
        return self.background_out(outs, now) + self.routes.present([TaskStopAnswered(ticket, stopped)])

    def stop_all(self, now: float) -> list[Effect]:
        """The session closes: every live task is stopped."""
        return self.background_out(stopping.stop_all(self.background.items, self.registry.live(), now), now)

    def abandon(self, now: float, stopped: Mapping[str, ExitInfo]) -> list[Effect]:
        """Finalize whatever did not confirm its end in time, so nothing stays listed (a terminal
        whose process the agent stopped, once its file is read to the end)."""
        effects = self.routes.present(self.schedules.cancel_all())
        return effects + self.background_out(self.background.abandon(now, stopped), now) + self.publish()

    def forget(self) -> None:
        """Claude Code is gone, and its tasks with it (``abandon`` first)."""
        self.background.forget()
        self.registry = TaskRegistry()

    # --- what Background reports -----------------------------------------------------------------

    def background_out(self, outs: list[BackgroundOut], now: float) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            match out:
                case Tail() | FinishTail() | StopTask() | Log():
                    effects.append(out)
                case ToolCallDetached(call_id):
                    self.tool_uses.detach(call_id)
                case FollowUpExpected(run):
                    self.foreground.expect_follow_up(run, now)
                case ChildEnded(task):
                    effects += self.children.present(self.subagents.ended(task))
                case WorkEnded():
                    self.tool_uses.finish(out.tool_call_id)
                    effects += self.presenter.render(out)
                case TerminalOpened() | TerminalOutput() | TerminalReplaced() | TerminalExited():
                    effects += self.presenter.render(out)
                case WorkOpened() | WorkStatus():
                    effects += self.presenter.render(out)
                case TaskOpened() | TaskChanged() | TaskEnded():
                    effects += self.presenter.render(out)
                case _:
                    assert_never(out)
        return effects
