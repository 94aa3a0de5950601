"""Subagent sessions: each Agent/Task subagent as a child session of the session that launched it.

Theory of operation (the Subagent Sessions RFD). Whether children are exposed at all is the
client's business (the presenter says); when they are not, a subagent stays an ordinary tool
call and its traffic shows in the session that launched it.

- Identity: the child's session id is Claude Code's agent id (the task id of the
  ``local_agent`` task), which is also the ``agent_id`` of its permission requests.
- Parent: the session whose transcript holds the Agent tool use that launched it (the root, or
  another child for a nested one). A child whose parent is not exposed yet waits, unexposed;
  its traffic is buffered by the session core. A parent is never guessed.
- Announcement, before any of the child's traffic: the child with its title (the agent's name
  and type), its description (the tool input's ``description``) and the launching prompt,
  sent by the parent. Each later run's task (a message that resumed the subagent) is a message
  to the child too, from the session whose tool use sent it when its run names that tool use
  (else from no one: a sender is never guessed).
- ``session/cancel`` with a child's id stops that child's task only.
- The Agent tool call stays a tool call of the session that made it.
- Its own background work (shells, monitors, nested children) is its own: listed in its own
  state (``background``), which the parent's copy carries too; a child whose work ended is
  listed by its parent while its own list is not empty (``background`` decides that).
- A client that (re)attaches learns what each child it must know of is now (``restate``):
  those listed, those working and the ancestors of those; after a replay, only once it has the
  answer is a working child's state current and cancellable (``confirmed``).

A child's lifecycle:

===================  =============  ==================================================  ===================
child                trigger        what happens                                        next
===================  =============  ==================================================  ===================
(task)               ``ANNOUNCE``   announced, its parent being exposed                 ``RUNNING``
``RUNNING``          ``BLOCKED``    its foreground is blocked: a permission question    ``REQUIRES_ACTION``
                                    of its own opens, or every synchronous child it
                                    waits on is ``REQUIRES_ACTION``
``REQUIRES_ACTION``  ``UNBLOCKED``  it is no longer blocked (its last open question is  ``RUNNING``
                                    decided, a child it waited on goes on or ends)
``RUNNING``,         ``ENDED``      its task ended (``end_turn``, ``cancelled``,        ``IDLE``
``REQUIRES_ACTION``                 ``error``; no stop reason when how is unknown)
``RUNNING``,         ``LOST``       Claude Code, which ran it, is gone (``error``)      ``IDLE``
``REQUIRES_ACTION``
``IDLE``,            ``NEW_RUN``    a new run of its task (a resumed subagent), also    ``RUNNING``
``RUNNING``,                        one that a Claude Code taking over starts
``REQUIRES_ACTION``
===================  =============  ==================================================  ===================

A child is never ``unknown``: the agent always knows when its work stops (its task's end, or
the end of the Claude Code that ran it, whose processes the agent stops), and a child whose
work ended is ``idle`` before the list that drops it.

A change of its own ``background`` list is reported as a repeated snapshot of its state.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from claude_bg_acp.core.background_list import Listed
from claude_bg_acp.core.effects import StopTask
from claude_bg_acp.core.errors import Refusal, Refused
from claude_bg_acp.core.foreground_facts import SessionState
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.tasks import Task
from claude_bg_acp.core.tool_uses import ToolUse

StopReason = Literal["end_turn", "cancelled", "error"]
END_STATES: dict[str, StopReason] = {
    "completed": "end_turn",
    "failed": "error",
    "killed": "cancelled",
    "stopped": "cancelled",
}


WORKING = (SessionState.RUNNING, SessionState.REQUIRES_ACTION)


class ChildTrigger(enum.Enum):
    ANNOUNCE = "announce"
    BLOCKED = "blocked"
    UNBLOCKED = "unblocked"
    ENDED = "ended"
    LOST = "lost"
    NEW_RUN = "new_run"


CHILDREN: Transitions[SessionState, ChildTrigger] = Transitions.of(
    "child",
    SessionState,
    ChildTrigger,
    ((None,), ChildTrigger.ANNOUNCE, SessionState.RUNNING),
    ((SessionState.RUNNING,), ChildTrigger.BLOCKED, SessionState.REQUIRES_ACTION),
    ((SessionState.REQUIRES_ACTION,), ChildTrigger.UNBLOCKED, SessionState.RUNNING),
    (WORKING, ChildTrigger.ENDED, SessionState.IDLE),
    (WORKING, ChildTrigger.LOST, SessionState.IDLE),
    ((SessionState.IDLE, *WORKING), ChildTrigger.NEW_RUN, SessionState.RUNNING),
)


@dataclass
class Child:
    session_id: str
    task: Task
    """Its task (of its current run): whether it runs in the background, among others."""
    tool_use_id: str
    parent_id: str
    title: str
    description: str | None
    state: SessionState = field(default_factory=lambda: CHILDREN.move(None, ChildTrigger.ANNOUNCE))
    stop_reason: StopReason | None = None
    questions: int = 0
    """Permission questions of its own that are open."""
    background: Sequence[Listed] = ()
    """Its own background work, as last reported."""
    told: int = 1
    """The last run whose task it was shown given (the first: with its announcement)."""


# --- what happened to a child, for the presenter ----------------------------------------------


@dataclass(frozen=True)
class ChildAnnounced:
    parent_id: str
    child_id: str
    tool_use_id: str
    title: str
    description: str | None
    prompt: str | None
    cancellable: bool = True
    """False for a child replayed from history: ``cancel`` is only granted to live ones."""


@dataclass(frozen=True)
class ChildRestated:
    """A child, for a client that (re)attaches: who it is, what it does now (its own list
    comes with the snapshot of its state that follows), whether it can be cancelled."""

    parent_id: str
    child_id: str
    title: str
    description: str | None
    state: SessionState
    cancellable: bool


@dataclass(frozen=True)
class ChildConfirmed:
    """A working child's current state once the client has the answer to its re-attachment
    with a replay, and that it can be cancelled: before the answer, what the client heard of
    it was history (the Subagent Sessions RFD's freshness boundary)."""

    parent_id: str
    child_id: str
    state: SessionState
    background: Sequence[Listed]


@dataclass(frozen=True)
class ChildStateChanged:
    """The child's state snapshot, for the child and mirrored on its parent; ``repeat`` when
    only its ``background`` list changed (no new transition)."""

    parent_id: str
    child_id: str
    state: SessionState
    background: Sequence[Listed]
    stop_reason: StopReason | None = None
    error: str | None = None
    """With the ``error`` stop reason: what Claude Code said of the failure."""
    repeat: bool = False
    lost: bool = False
    """Its work ended with the Claude Code that ran it (``idle`` with the ``error``)."""


@dataclass(frozen=True)
class ChildMessaged:
    """A later task given to a child (a message that resumed its subagent): an incoming message
    on the child, from ``sender_id`` when known."""

    child_id: str
    message_id: str
    text: str
    sender_id: str | None


ChildFact = ChildAnnounced | ChildStateChanged | ChildMessaged


class Subagents:
    def __init__(self, root_id: str) -> None:
        self.root_id = root_id
        self.children: dict[str, Child] = {}

    def announce(self, task: Task, tool: ToolUse | None) -> list[ChildFact] | None:
        """Expose a subagent task as a child session; None while its parent is not known."""
        if tool is None or not task.tool_use_id:
            return None
        parent = tool.session_id
        if parent != self.root_id and parent not in self.children:
            return None
        known = self.children.get(task.task_id)
        if known is not None:
            known.task = task  # a Claude Code that took over knows it anew
            return self._report(known, ChildTrigger.NEW_RUN, None)  # the same child, working again
        description = _text(tool.tool_input.get("description")) or task.description or None
        child = Child(
            task.task_id,
            task,
            task.tool_use_id,
            parent,
            _title(tool.tool_input, task),
            description,
            told=task.run,
        )
        self.children[child.session_id] = child
        prompt = task.prompt or _text(tool.tool_input.get("prompt"))
        return [ChildAnnounced(parent, child.session_id, task.tool_use_id, child.title, description, prompt)]

    def messaged(self, task: Task, sender: ToolUse | None) -> list[ChildFact]:
        """The task of a known child's new run (a message that resumed its subagent), once its
        text is known; once per run. ``sender`` is the tool use the run names, if known: its
        session sent the message (the Agent tool use that launched the child says nothing of
        who sent a later one)."""
        child = self.children.get(task.task_id)
        if child is None or child.told >= task.run or not task.prompt:
            return []
        child.told = task.run
        if sender is not None and sender.tool_use_id != child.tool_use_id:
            return [
                ChildMessaged(
                    child.session_id, f"delegation-{sender.call_id}", task.prompt, sender.session_id
                )
            ]
        return [
            ChildMessaged(child.session_id, f"delegation-{child.session_id}-{task.run}", task.prompt, None)
        ]

    def ended(self, task: Task) -> list[ChildFact]:
        child = self.children.get(task.task_id)
        if child is None or child.state not in WORKING:
            return []
        stop_reason = END_STATES.get(task.end_status or "")
        error = (task.summary or "The subagent failed") if stop_reason == "error" else None
        return self._report(child, ChildTrigger.ENDED, stop_reason, error)

    def lost(self, reason: str) -> list[ChildFact]:
        """Claude Code is gone (``reason``), and the work of its children with it."""
        facts: list[ChildFact] = []
        for child in self.children.values():
            if child.state in WORKING:
                facts += self._report(child, ChildTrigger.LOST, "error", reason, lost=True)
        return facts

    def restate(self, session_id: str, cancellable: bool) -> ChildRestated:
        """A child, for a client that (re)attaches: who it is (its state follows);
        ``cancellable`` unless what the client hears before the answer is history."""
        child = self.children[session_id]
        return ChildRestated(
            child.parent_id,
            child.session_id,
            child.title,
            child.description,
            child.state,
            cancellable and child.state in WORKING,
        )

    def confirmed(self) -> list[ChildConfirmed]:
        """Every working child as it is now, for a client that has the answer to its replay."""
        return [
            ChildConfirmed(child.parent_id, child.session_id, child.state, child.background)
            for child in self.children.values()
            if child.state in WORKING
        ]

    def snapshot(self, session_id: str) -> ChildStateChanged:
        """The child's state as last reported, again (no new transition)."""
        child = self.children[session_id]
        return ChildStateChanged(
            child.parent_id, child.session_id, child.state, child.background, child.stop_reason, repeat=True
        )

    def working(self) -> frozenset[str]:
        return frozenset(c.session_id for c in self.children.values() if c.state in WORKING)

    def asking(self, session_id: str, opened: bool) -> None:
        """A permission question of the child's own opened (or closed): see ``blocked``."""
        child = self.children.get(session_id)
        if child is not None:
            child.questions += 1 if opened else -1

    def blocked(self) -> list[ChildFact]:
        """Each working child is ``REQUIRES_ACTION`` while its foreground work is blocked on user
        action: a question of its own is open, or it waits on synchronous children that all are
        (``waits_blocked``); else ``RUNNING``. The most nested first, so each sees its children's
        states as they are now."""
        facts: list[ChildFact] = []
        for child in reversed(list(self.children.values())):
            if child.state not in WORKING:
                continue
            blocked = child.questions > 0 or self.waits_blocked(child.session_id)
            state = SessionState.REQUIRES_ACTION if blocked else SessionState.RUNNING
            if child.state is not state:
                facts += self._report(
                    child, ChildTrigger.BLOCKED if blocked else ChildTrigger.UNBLOCKED, None
                )
        return facts

    def waits_blocked(self, session_id: str) -> bool:
        """``session_id``'s turn waits on synchronous children (not run in the background), each
        of them blocked on user action: its foreground work cannot progress (the prompt
        lifecycle's ``requires_action``; one that still works keeps it ``running``)."""
        waited = [
            c
            for c in self.children.values()
            if c.parent_id == session_id and c.state in WORKING and c.task.backgrounded is False
        ]
        return bool(waited) and all(c.state is SessionState.REQUIRES_ACTION for c in waited)

    def listing(self, session_id: str, background: Sequence[Listed]) -> list[ChildFact]:
        """The child's own background list now; a change is a repeated snapshot of its state."""
        child = self.children[session_id]
        if list(background) == list(child.background):
            return []
        child.background = background
        return [
            ChildStateChanged(
                child.parent_id, child.session_id, child.state, background, child.stop_reason, repeat=True
            )
        ]

    def cancel(self, session_id: str) -> list[StopTask]:
        """Stop the child and its working descendants (the Subagent Sessions RFD: the cancel
        cascades), the deepest first: each stop finds its subagent still there, whether or
        not Claude Code stops a subagent's own subagents with it."""
        child = self.children.get(session_id)
        if child is None:
            raise Refused(Refusal.UNKNOWN, f"unknown session {session_id}")
        return [StopTask(each.task.task_id) for each in self._subtree(child) if each.state in WORKING]

    def _subtree(self, child: Child) -> list[Child]:
        """``child`` after its descendants, the deepest first."""
        below = [c for c in self.children.values() if c.parent_id == child.session_id]
        return [*(each for c in below for each in self._subtree(c)), child]

    def child_launched_by(self, tool_use_id: str) -> str | None:
        """The child session whose subagent the Agent tool use ``tool_use_id`` launched."""
        return next((c.session_id for c in self.children.values() if c.tool_use_id == tool_use_id), None)

    def session_of_agent(self, agent_id: str | None) -> str:
        """Where a permission request of ``agent_id`` belongs: its child session, else the root."""
        if agent_id is not None and agent_id in self.children:
            return agent_id
        return self.root_id

    @staticmethod
    def _report(
        child: Child,
        trigger: ChildTrigger,
        stop_reason: StopReason | None,
        error: str | None = None,
        lost: bool = False,
    ) -> list[ChildFact]:
        child.state, child.stop_reason = CHILDREN.move(child.state, trigger), stop_reason
        return [
            ChildStateChanged(
                child.parent_id,
                child.session_id,
                child.state,
                child.background,
                stop_reason,
                error,
                lost=lost,
            )
        ]


def _title(tool_input: dict[str, Any], task: Task) -> str:
    name = _text(tool_input.get("name"))
    kind = task.subagent_type or _text(tool_input.get("subagent_type"))
    if name and kind:
        return f"{name} ({kind})"
    return name or kind or task.description or "Subagent"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
