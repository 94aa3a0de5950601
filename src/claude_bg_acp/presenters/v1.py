"""ACP v1 clients: the prompt's answer ends the turn, and no agent-owned terminals or list.

A v1 client stops listening to a turn at the prompt's answer, so the answer waits for the
subagents the turn started (the policy ``answers_wait_for_subagents``; see ``core.policy``). It
has no session state, no ``background`` list and no terminals of the agent's: background shells
and the work that goes on on a tool call are not shown. A tool call whose result hands its work
on ends there, with that result, as any other; should the work end before the call had a
result (Claude Code gone, the session closed), the call ends with it. Scheduled work runs until
its result, never ``pending``. A client that declares ``clientCapabilities.subagents`` gets
subagents as child sessions in the RFD's form: ``subagent_update`` on the parent (a failure is
``idle`` with the stop reason ``error`` and the ``error``, as in v2), the launching prompt and
each later task it is given as a ``session_message`` (and, replayed, each later message the child
received, from no known sender); restated with their state when it re-attaches, and after a
replay granted ``cancel`` only once it has the answer. A client that declares
``clientCapabilities.session.notices`` is told what a replay lacks. Claude Code's
permission modes are also the session's modes (``modes`` in the answer,
``current_mode_update``; Zed reads them when an agent offers no config options), the same as
the ``mode`` config option.
"""

from __future__ import annotations

from typing import Any

from claude_bg_acp.acp.answers import PromptResponse, SessionFields, SessionModeState
from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR
from claude_bg_acp.acp.updates import (
    AvailableCommand,
    CurrentModeUpdate,
    PlanEntries,
    SessionMessage,
    SubagentUpdate,
    ToolCall,
)
from claude_bg_acp.claude.server_info import SlashCommand
from claude_bg_acp.core.background import TerminalRestated, WorkEnded, WorkOpened, WorkRestated, WorkStatus
from claude_bg_acp.core.config import Options
from claude_bg_acp.core.effects import ClientEffect, Fail, Notify, Reply, Ticket
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.foreground import Outcome, PromptAnswered, PromptCancelled, PromptFact, PromptRetried
from claude_bg_acp.core.history import ChildMessageRecalled
from claude_bg_acp.core.permission_modes import ModeChanged
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
from claude_bg_acp.core.tool_uses import (
    ToolCallCut,
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolCallStarted,
)
from claude_bg_acp.presenters.base import CANCEL, BasePresenter, plan_entries
from claude_bg_acp.presenters.live_output import LiveOutput

RETRY_IN_V1 = "A retry of a prompt inserted already (idempotencyKey) has an answer in ACP v2 only"


class V1Presenter(BasePresenter):
    creating = "tool_call"
    cut_status = "failed"
    option_key = "id"
    shows_scheduled = False

    def __init__(self, subagents: bool, notices: bool = False) -> None:
        self.live = LiveOutput()
        self.policy = Policy(answers_wait_for_subagents=True, subagents_are_sessions=subagents)
        self.notices = notices
        self._working: set[str] = set()
        """Tool calls that work goes on on and that have not ended yet."""

    # --- tool calls whose work goes on ------------------------------------------------------------

    def tool_call(self, fact: ToolCallStarted | ToolCallRunning | ToolCallFinished | ToolCallCut) -> ToolCall:
        if isinstance(fact, (ToolCallFinished, ToolCallCut)):
            self._working.discard(fact.tool_call_id)
        return super().tool_call(fact)

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        self._working.discard(fact.tool_call_id)
        return super().handed_off(fact)

    def work(self, fact: WorkOpened | WorkStatus | WorkEnded | ScheduleEnded) -> list[ClientEffect]:
        if isinstance(fact, WorkOpened) and fact.title is None:
            self._working.add(fact.tool_call_id)  # its launching call: it ends at its result
        elif isinstance(fact, WorkEnded) and fact.tool_call_id in self._working:
            self._working.discard(fact.tool_call_id)
            status = self.cut_status if fact.status == "cancelled" else fact.status
            update = ToolCall(
                session_update="tool_call_update", tool_call_id=fact.tool_call_id, status=status
            )
            return [Notify(fact.session_id, update)]
        return []

    def permission_subject(self, call: dict[str, Any], title: str) -> dict[str, Any]:
        return {"toolCall": call}

    def answer_fields(self, options: Options) -> SessionFields:
        modes: SessionModeState = {"currentModeId": options.mode, "availableModes": list(options.modes)}
        return {**super().answer_fields(options), "modes": modes}

    def mode(self, fact: ModeChanged) -> list[ClientEffect]:
        return [Notify(fact.session_id, CurrentModeUpdate(current_mode_id=fact.mode_id))]

    def command(self, command: SlashCommand) -> AvailableCommand:
        wire: AvailableCommand = {"name": command.name, "description": command.description}
        if command.hint:
            wire["input"] = {"hint": command.hint}
        return wire

    def plan(self, fact: PlanChanged) -> PlanEntries:
        return PlanEntries(entries=plan_entries(fact))

    def prompt(self, fact: PromptFact) -> list[ClientEffect]:
        if isinstance(fact, PromptAnswered):
            return [answer(fact.ticket, fact.outcome)]
        if isinstance(fact, PromptCancelled):
            return [Reply(fact.ticket, {"stopReason": "cancelled"})]
        if isinstance(fact, PromptRetried):
            # Only v2 names a prompt's submission (the agent reads no key from a v1 client); a
            # session begun in v1 under a connection that went v2 gets no answer it could read.
            return [Fail(fact.ticket, Failure(Failing.ERROR, RETRY_IN_V1))]
        return []

    def child(self, fact: ChildAnnounced | ChildStateChanged | ChildMessaged) -> list[ClientEffect]:
        if isinstance(fact, ChildAnnounced):
            return announce_child(fact)
        if isinstance(fact, ChildMessaged):
            return [message_to(fact.child_id, fact.message_id, fact.text, fact.sender_id)]
        if fact.repeat:
            return []  # v1 keeps no background lists
        return [Notify(fact.parent_id, SubagentUpdate(session_id=fact.child_id, state=child_state(fact)))]

    def confirmed(self, fact: ChildConfirmed) -> list[ClientEffect]:
        grant = SubagentUpdate(
            session_id=fact.child_id, state={"state": fact.state.value}, capabilities=CANCEL
        )
        return [Notify(fact.parent_id, grant)]

    def child_message(self, fact: ChildMessageRecalled) -> list[ClientEffect]:
        return [message_to_child(fact)]

    def restate(self, fact: TerminalRestated | WorkRestated | ChildRestated) -> list[ClientEffect]:
        if not isinstance(fact, ChildRestated):
            return []  # v1 has no terminals of the agent's nor lists
        return [Notify(fact.parent_id, introduce_child(fact, {"state": fact.state.value}))]


def child_state(fact: ChildStateChanged) -> dict[str, Any]:
    """A child's state snapshot; a repeat (only its list changed) is no new completion: no stop
    reason."""
    state: dict[str, Any] = {"state": fact.state.value}
    if fact.stop_reason is not None and not fact.repeat:
        state["stopReason"] = fact.stop_reason
    if fact.error is not None and not fact.repeat:
        state["error"] = {"code": INTERNAL_ERROR, "message": fact.error}
    return state


def answer(ticket: Ticket, outcome: Outcome) -> ClientEffect:
    """The answer to a v1 prompt: its stop reason (and usage), or the turn's error."""
    if outcome.error is not None:
        return Fail(ticket, outcome.error)
    result: PromptResponse = {"stopReason": outcome.stop_reason}
    if outcome.usage is not None:
        result["usage"] = outcome.usage
    return Reply(ticket, result)


def announce_child(fact: ChildAnnounced, state: dict[str, Any] | None = None) -> list[ClientEffect]:
    """The child on its parent (``subagent_update``, with its first ``state``: ``running``), then
    the prompt that launched it."""
    announcement = SubagentUpdate(
        session_id=fact.child_id,
        title=fact.title,
        description=fact.description,
        state=state or {"state": "running"},
    )
    if fact.cancellable:
        announcement.capabilities = CANCEL
    effects: list[ClientEffect] = [Notify(fact.parent_id, announcement)]
    if fact.prompt:
        effects.append(
            message_to(fact.child_id, f"delegation-{fact.tool_use_id}", fact.prompt, fact.parent_id)
        )
    return effects


def message_to(child_id: str, message_id: str, text: str, sender_id: str | None) -> ClientEffect:
    """A task given to a child, as an incoming ``session_message`` on it (no sender when unknown)."""
    message = SessionMessage(
        message_id=message_id, recipient_session_id=child_id, content=[{"type": "text", "text": text}]
    )
    if sender_id is not None:
        message.sender_session_id = sender_id
    return Notify(child_id, message)


def introduce_child(fact: ChildRestated, state: dict[str, Any] | None) -> SubagentUpdate:
    """A child restated to a client that (re)attaches: who it is, its ``state`` where the
    version has it here, and ``cancel`` when granted."""
    child = SubagentUpdate(session_id=fact.child_id, title=fact.title)
    if fact.description is not None:
        child.description = fact.description
    if fact.cancellable:
        child.capabilities = CANCEL
    if state is not None:
        child.state = state
    return child


def message_to_child(fact: ChildMessageRecalled) -> ClientEffect:
    """A message the child received, replayed as the child's incoming view of it: the sender is
    left out, as its transcript does not name one (never taken to be the parent or the user)."""
    message = SessionMessage(
        message_id=fact.message_id, recipient_session_id=fact.session_id, content=fact.content
    )
    return Notify(fact.session_id, message)
