"""ACP v2 clients: session state, agent-owned terminals, background tool calls and the list.

A v2 prompt is answered with its ``messageId`` as soon as it is inserted; the turn is followed
through ``state_update`` (``running`` / ``requires_action`` / ``idle`` with the stop reason),
which carries the ``background`` list on every snapshot. A background shell is a terminal
(``terminal_update`` with command, cwd and ``capabilities.cancel``; byte-exact
``terminal_output_chunk``; ``exitStatus``), referenced by the Bash tool call that completes at
hand-off. Work without a process stays on its tool call, ``in_progress`` (or ``paused``,
``pending`` when scheduled) and cancellable until its final status. Every subagent is a child
session with its own ``state_update``, mirrored on the parent's ``subagent_update``. A client
that re-attaches gets each listed item whole: a terminal with its latest output as a snapshot,
a tool call with its title and status, a child with its state; all cancellable but scheduled
work, and but children until the answer when it asked for a replay (their current state and
``cancel`` follow the answer). A replay's end is marked (``replay_complete``) on the session
and on each child it announced, and what it lacks follows as a ``notice``. A replayed prompt is
a ``user_message``, as it was live; a message a child received later is an incoming
``session_message``. v2 has no session modes: the permission mode is the ``mode`` config
option; commands carry their ``type`` (``command``, with ``text`` input), and the plan is one
item plan (``plan_update``).
"""

from __future__ import annotations

import base64
from typing import Any

from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.updates import (
    AvailableCommand,
    ErrorObject,
    PlanUpdate,
    ReplayComplete,
    StateUpdate,
    SubagentUpdate,
    TerminalOutputChunk,
    TerminalUpdate,
    ToolCall,
    UserMessage,
)
from claude_bg_acp.claude.server_info import SlashCommand
from claude_bg_acp.core.attaching import ReplayCompleted
from claude_bg_acp.core.background import (
    Listed,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    TerminalRestated,
    WorkEnded,
    WorkOpened,
    WorkRestated,
    WorkStatus,
)
from claude_bg_acp.core.effects import ClientEffect, Fail, Notify, Reply
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.foreground import (
    PromptCancelled,
    PromptFact,
    PromptInserted,
    PromptRetried,
    StateReported,
)
from claude_bg_acp.core.history import ChildMessageRecalled, PromptRecalled
from claude_bg_acp.core.plan import PlanChanged
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.subagents import (
    ChildAnnounced,
    ChildConfirmed,
    ChildMessaged,
    ChildRestated,
    ChildStateChanged,
)
from claude_bg_acp.core.tool_uses import ToolCallHandedOff
from claude_bg_acp.presenters import diffs, tool_views
from claude_bg_acp.presenters.base import CANCEL, BasePresenter, exit_status, plan_entries
from claude_bg_acp.presenters.live_output import LiveOutput
from claude_bg_acp.presenters.v1 import (
    announce_child,
    child_state,
    introduce_child,
    message_to,
    message_to_child,
)

PLAN_ID = "plan"
"""The one plan of a session: Claude Code keeps one list at a time."""


class V2Presenter(BasePresenter):
    creating = "tool_call_update"
    cut_status = "cancelled"
    option_key = "configId"
    booleans = True
    shows_scheduled = True
    diff_form = staticmethod(diffs.v2)

    def __init__(self) -> None:
        self.live = LiveOutput()
        self.policy = Policy(answers_wait_for_subagents=False, subagents_are_sessions=True)
        self.notices = True  # v2 clients need no capability for notices

    def permission_subject(self, call: dict[str, Any], title: str) -> dict[str, Any]:
        return {"title": f"Allow {title}?", "subject": {"type": "tool_call", "toolCall": call}}

    def command(self, command: SlashCommand) -> AvailableCommand:
        wire: AvailableCommand = {"type": "command", "name": command.name, "description": command.description}
        if command.hint:
            wire["input"] = {"type": "text", "hint": command.hint}
        return wire

    def plan(self, fact: PlanChanged) -> PlanUpdate:
        return PlanUpdate(plan={"type": "items", "planId": PLAN_ID, "entries": plan_entries(fact)})

    def state(self, fact: StateReported) -> list[ClientEffect]:
        update = StateUpdate(state=fact.state.value, background=[listed(entry) for entry in fact.background])
        outcome = fact.outcome
        if outcome is not None:
            update.stop_reason = outcome.stop_reason
            if outcome.usage is not None:
                update.usage = outcome.usage
            if outcome.error is not None:
                error = rpc_error(outcome.error)
                update.error = ErrorObject(code=error.code, message=error.message)
        return [Notify(fact.session_id, update)]

    def prompt(self, fact: PromptFact) -> list[ClientEffect]:
        if isinstance(fact, PromptInserted):
            message = UserMessage.model_validate({"messageId": fact.message_id, "content": fact.content})
            return [Notify(fact.session_id, message), Reply(fact.ticket, {"messageId": fact.message_id})]
        if isinstance(fact, PromptRetried):  # its first attempt's answer, nothing shown again
            return [Reply(fact.ticket, {"messageId": fact.message_id})]
        if isinstance(fact, PromptCancelled):
            return [Fail(fact.ticket, Failure(Failing.WITHDRAWN, "Prompt cancelled before insertion"))]
        return []  # answered at insertion

    def recalled(self, fact: PromptRecalled) -> list[ClientEffect]:
        message = UserMessage.model_validate({"messageId": fact.message_id, "content": fact.content})
        return [Notify(fact.session_id, message)]

    def child_message(self, fact: ChildMessageRecalled) -> list[ClientEffect]:
        return [message_to_child(fact)]

    def replay_completed(self, fact: ReplayCompleted) -> list[ClientEffect]:
        return [Notify(fact.session_id, ReplayComplete())]

    def restate(self, fact: TerminalRestated | WorkRestated | ChildRestated) -> list[ClientEffect]:
        match fact:
            case TerminalRestated():
                output = {"data": base64.b64encode(fact.output).decode("ascii")}
                terminal = TerminalUpdate(
                    terminal_id=fact.terminal_id,
                    command=fact.command,
                    cwd=fact.cwd,
                    output=output,
                    capabilities=CANCEL,
                )
                return [Notify(fact.session_id, terminal)]
            case WorkRestated(name=str(name)):
                fields = self.call_fields(fact.tool_call_id, name, fact.tool_input)
            case WorkRestated():
                fields = {"toolCallId": fact.tool_call_id, "title": fact.title, "kind": "other"}
            case ChildRestated():
                # Its state (with its own list, whose work is restated in between) follows.
                return [Notify(fact.parent_id, introduce_child(fact, None))]
        call = {"sessionUpdate": "tool_call_update", **fields, "status": fact.status}
        if fact.cancellable:
            call["capabilities"] = CANCEL
        return [Notify(fact.session_id, ToolCall.model_validate(call))]

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        text = tool_views.text_content(fact.text)
        fields: dict[str, Any]
        if fact.terminal_id is not None:
            fields = {
                "status": "completed",
                "content": [{"type": "terminal", "terminalId": fact.terminal_id}, text],
            }
        elif fact.status == "pending":
            fields = {"status": "pending", "content": [text]}
        else:
            fields = {"status": fact.status, "content": [text], "capabilities": CANCEL}
        update = ToolCall.model_validate(
            {"sessionUpdate": "tool_call_update", "toolCallId": fact.tool_call_id, **fields}
        )
        return [Notify(fact.session_id, update)]

    def terminal(
        self, fact: TerminalOpened | TerminalOutput | TerminalReplaced | TerminalExited
    ) -> list[ClientEffect]:
        update: TerminalUpdate | TerminalOutputChunk
        match fact:
            case TerminalOpened():
                update = TerminalUpdate(terminal_id=fact.terminal_id, command=fact.command, cwd=fact.cwd)
                if fact.cancellable:
                    update.capabilities = CANCEL
            case TerminalOutput():
                update = TerminalOutputChunk(fact.terminal_id, fact.data)
            case TerminalReplaced():
                encoded = base64.b64encode(fact.data).decode("ascii")
                update = TerminalUpdate(terminal_id=fact.terminal_id, output={"data": encoded})
            case TerminalExited(corrected=True):
                update = TerminalUpdate(terminal_id=fact.terminal_id, exit_status=exit_status(fact.exit))
            case TerminalExited():
                update = TerminalUpdate(
                    terminal_id=fact.terminal_id, exit_status=exit_status(fact.exit), capabilities=None
                )
        return [Notify(fact.session_id, update)]

    def work(self, fact: WorkOpened | WorkStatus | WorkEnded | ScheduleEnded) -> list[ClientEffect]:
        update = ToolCall(
            session_update="tool_call_update", tool_call_id=fact.tool_call_id, status=fact.status
        )
        match fact:
            case WorkOpened(title=str(title)):
                update = ToolCall(
                    session_update="tool_call_update",
                    tool_call_id=fact.tool_call_id,
                    title=title,
                    kind="other",
                    status=fact.status,
                    capabilities=CANCEL,
                )
            case WorkOpened():
                update.capabilities = CANCEL
            case ScheduleEnded():
                update.capabilities = None
            case WorkEnded():
                update.capabilities = None
                if fact.summary:
                    update.content = [tool_views.text_content(fact.summary)]
        return [Notify(fact.session_id, update)]

    def child(self, fact: ChildAnnounced | ChildStateChanged | ChildMessaged) -> list[ClientEffect]:
        if isinstance(fact, ChildMessaged):
            return [message_to(fact.child_id, fact.message_id, fact.text, fact.sender_id)]
        if isinstance(fact, ChildAnnounced):
            # The same first snapshot on the parent's announcement and on the child.
            first: dict[str, Any] = {"state": "running", "background": []}
            return [*announce_child(fact, first), Notify(fact.child_id, StateUpdate.model_validate(first))]
        # One snapshot, on the child and mirrored on its parent (the RFD's two reports of one
        # state).
        state = child_state(fact)
        state["background"] = [listed(entry) for entry in fact.background]
        own = StateUpdate.model_validate(state)
        return [
            Notify(fact.child_id, own),
            Notify(fact.parent_id, SubagentUpdate(session_id=fact.child_id, state=state)),
        ]

    def confirmed(self, fact: ChildConfirmed) -> list[ClientEffect]:
        # The child's current snapshot, and its parent's copy, which grants the cancel.
        state = {"state": fact.state.value, "background": [listed(entry) for entry in fact.background]}
        grant = SubagentUpdate(session_id=fact.child_id, state=state, capabilities=CANCEL)
        return [Notify(fact.child_id, StateUpdate.model_validate(state)), Notify(fact.parent_id, grant)]


def listed(entry: Listed) -> dict[str, Any]:
    key = {"terminal": "terminalId", "tool_call": "toolCallId", "subagent": "sessionId"}[entry.kind]
    return {"type": entry.kind, key: entry.ref}
