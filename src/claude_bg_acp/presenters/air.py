"""JetBrains AIR: a v1 client that follows background work as async tasks, and subagents in the
draft form.

AIR declares what it reads in ``clientCapabilities._meta.jetbrains.air`` (see
``acp.capabilities``). Everything else it reads as the v1 client it also is (with
Zed's terminal extension when it declares that too), so this presenter wraps that one and adds:

- ``asyncTasks``: every background task that is not a subagent (shells, monitors, workflows)
  is also an async task. ``async_task_spawned`` names it by its task id, with a name and
  description (the launching tool's description), its ``taskType`` (``shell``, ``monitor``,
  ``workflow``, ``task``, else Claude Code's own type), ``canStop`` (every task can be
  stopped), the launching tool call and Claude Code's output file when known;
  ``showInTranscript`` is false when a tool call already shows the task.
  ``async_task_progress`` carries what became known later (the tool call, the output file),
  ``async_task_state_update`` the state: ``running`` / ``paused``, and once at the end
  ``completed``, ``failed`` or ``stopped`` with Claude Code's summary. The core says what is
  known of a task whenever Claude Code says something of it; this presenter keeps what it told
  AIR of each task (``AsyncTaskTold``) and sends only what changed. The tool call that
  launched a task is marked ``_meta.jetbrains.air.asyncTasks.backgrounded`` when it
  completes, so the client shows it handed its work on. ``_session/async_task/stop`` is a
  stop by task id (``core.background``); its answer is ``{stopped}``.
- ``nativeSubagentSessions``: subagents are child sessions in the draft form
  (``draft_subagents``), without a cancel.

These updates are not in the ACP schema; no other client is sent them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from claude_bg_acp.acp.answers import SessionFields
from claude_bg_acp.acp.capabilities import ASYNC_TASKS, NATIVE_SUBAGENTS
from claude_bg_acp.acp.updates import AsyncTaskProgress, AsyncTaskSpawned, AsyncTaskStateUpdate
from claude_bg_acp.core.background import RunState, TaskChanged, TaskEnded, TaskOpened
from claude_bg_acp.core.config import Options
from claude_bg_acp.core.effects import ClientEffect, Notify
from claude_bg_acp.core.history import ChildMessageRecalled
from claude_bg_acp.core.permission_options import Choice
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Fact
from claude_bg_acp.core.subagents import (
    ChildAnnounced,
    ChildConfirmed,
    ChildMessaged,
    ChildRestated,
    ChildStateChanged,
)
from claude_bg_acp.core.tool_uses import ToolCallFinished, ToolCallHandedOff
from claude_bg_acp.presenters.base import with_meta
from claude_bg_acp.presenters.draft_subagents import DraftSubagents
from claude_bg_acp.presenters.v1 import V1Presenter

AIR_VERSION = 1
TASK_TYPES = {
    "local_bash": "shell",
    "local_workflow": "workflow",
    "local_monitor": "monitor",
    "mcp": "monitor",
}
MONITOR_TOOLS = ("Monitor",)


@dataclass
class AsyncTaskTold:
    """What AIR was told of an async task so far."""

    tool_call_id: str | None
    output_file: str | None
    state: RunState


class AirPresenter:
    def __init__(self, plain: V1Presenter, capabilities: frozenset[str]) -> None:
        """``plain``: the presenter of the v1 client AIR otherwise is (it must expose children
        when AIR declares native subagent sessions)."""
        self.plain = plain
        self.async_tasks = ASYNC_TASKS in capabilities
        self.subagents = DraftSubagents(cancel=False) if NATIVE_SUBAGENTS in capabilities else None
        self._backgrounded: set[str] = set()
        """Tool calls that launched an async task."""
        self._told: dict[str, AsyncTaskTold] = {}
        """The async tasks AIR was told of and that have not ended."""

    @property
    def policy(self) -> Policy:
        # Native subagent sessions are child sessions whatever the client it otherwise is.
        sessions = self.plain.policy.subagents_are_sessions or self.subagents is not None
        return replace(self.plain.policy, subagents_are_sessions=sessions)

    def render(self, fact: Fact) -> list[ClientEffect]:
        effects: list[ClientEffect]
        match fact:
            case TaskOpened() | TaskChanged() | TaskEnded():
                effects = self._task(fact) if self.async_tasks else []
            case ChildAnnounced() | ChildStateChanged() | ChildMessaged() if self.subagents is not None:
                effects = self.subagents.render(fact)
            case ChildRestated() | ChildConfirmed() | ChildMessageRecalled() if self.subagents is not None:
                effects = []  # the draft form has no restatement, no grants and no messages
            case ToolCallFinished() | ToolCallHandedOff() if fact.tool_call_id in self._backgrounded:
                effects = [_backgrounded(effect) for effect in self.plain.render(fact)]
            case _:
                effects = self.plain.render(fact)
        return self.subagents.stamp(effects) if self.subagents is not None else effects

    def answer_fields(self, options: Options) -> SessionFields:
        return self.plain.answer_fields(options)

    def permission_request(
        self,
        session_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        choices: Sequence[Choice],
        shown: bool,
        replaced: str | None = None,
    ) -> dict[str, Any]:
        return self.plain.permission_request(
            session_id, tool_call_id, tool_name, tool_input, choices, shown, replaced
        )

    def question(
        self, session_id: str, call: dict[str, Any], title: str, options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self.plain.question(session_id, call, title, options)

    def _task(self, fact: TaskOpened | TaskChanged | TaskEnded) -> list[ClientEffect]:
        if isinstance(fact, TaskOpened):
            if fact.tool_call_id is not None:
                self._backgrounded.add(fact.tool_call_id)
            # Told running: a task opened paused says so right after.
            self._told[fact.task_id] = AsyncTaskTold(fact.tool_call_id, fact.output_file, "running")
            return [self._spawned(fact), *self._changed(fact)]
        told = self._told.get(fact.task_id)
        if told is None:
            return []
        if isinstance(fact, TaskChanged):
            return self._changed(fact)
        del self._told[fact.task_id]
        ended = AsyncTaskStateUpdate.model_validate(
            _present(asyncTaskId=fact.task_id, state=fact.end, summary=fact.summary)
        )
        return [*self._progressed(fact, told), Notify(fact.session_id, ended)]

    def _changed(self, fact: TaskOpened | TaskChanged) -> list[ClientEffect]:
        told = self._told[fact.task_id]
        effects = self._progressed(fact, told)
        if fact.state != told.state:
            told.state = fact.state
            update = AsyncTaskStateUpdate(async_task_id=fact.task_id, state=fact.state)
            effects.append(Notify(fact.session_id, update))
        return effects

    @staticmethod
    def _progressed(fact: TaskOpened | TaskChanged | TaskEnded, told: AsyncTaskTold) -> list[ClientEffect]:
        """The task's tool call or output file, when they became known after AIR was told of it."""
        tool_call_id = fact.tool_call_id if fact.tool_call_id != told.tool_call_id else None
        output_file = fact.output_file if fact.output_file != told.output_file else None
        if tool_call_id is None and output_file is None:
            return []
        told.tool_call_id, told.output_file = fact.tool_call_id, fact.output_file
        update = AsyncTaskProgress.model_validate(
            _present(asyncTaskId=fact.task_id, toolCallId=tool_call_id, outputFilePath=output_file)
        )
        return [Notify(fact.session_id, update)]

    @staticmethod
    def _spawned(fact: TaskOpened) -> ClientEffect:
        update = AsyncTaskSpawned.model_validate(
            _present(
                asyncTaskId=fact.task_id,
                name=fact.description or "Background task",
                taskType=_task_type(fact),
                description=fact.description or "Background task",
                showInTranscript=fact.tool_call_id is None,
                canStop=True,
                toolCallId=fact.tool_call_id,
                outputFilePath=fact.output_file,
            )
        )
        return Notify(fact.session_id, update)


def _task_type(fact: TaskOpened) -> str:
    if fact.tool_name in MONITOR_TOOLS:
        return "monitor"  # Claude Code runs a Monitor as a local_bash task
    if fact.task_type is None:
        return "task"
    return TASK_TYPES.get(fact.task_type, fact.task_type)


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that have a value (an optional field is left out, never sent as null)."""
    return {name: value for name, value in fields.items() if value is not None}


def _backgrounded(effect: ClientEffect) -> ClientEffect:
    """Mark the tool call that launched an async task: its work goes on in the background."""
    return with_meta(
        effect, "jetbrains", {"air": {"version": AIR_VERSION, "asyncTasks": {"backgrounded": True}}}
    )
