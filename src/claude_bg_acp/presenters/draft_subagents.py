"""Child sessions in the draft form that clients read before the Subagent Sessions RFD.

Zed and JetBrains AIR read it; it is not in the ACP schema. On the parent session, a child is
announced as ``subagent_spawned`` (its session id, a name, the task and the prompt that
launched it, and whether it can be cancelled) and ended as ``subagent_state_update``
(``completed``, ``failed``, ``cancelled``, or ``disconnected`` when Claude Code is gone). The
child's own updates go out on its session id, each stamped with
``_meta.claudeCode.parentToolUseId``, the Agent tool use that launched it: that is how the
client ties the child to its parent's tool call. A child that starts working again (a resumed
subagent) is announced again; the draft has no state for it.
"""

from __future__ import annotations

from typing import Literal

from claude_bg_acp.acp.updates import SubagentSpawned, SubagentStateUpdate
from claude_bg_acp.core.effects import ClientEffect, Notify
from claude_bg_acp.core.foreground_facts import SessionState
from claude_bg_acp.core.subagents import ChildAnnounced, ChildMessaged, ChildStateChanged
from claude_bg_acp.presenters.base import with_meta

DraftState = Literal["completed", "failed", "cancelled", "disconnected"]
ENDS: dict[str | None, DraftState] = {
    "end_turn": "completed",
    "error": "failed",
    "cancelled": "cancelled",
    None: "completed",
}
"""How a child that went idle ended; one that ended without saying how most likely finished."""


class DraftSubagents:
    """The children one presenter announced, and the draft form of what happens to them."""

    def __init__(self, cancel: bool) -> None:
        """``cancel``: whether the client may cancel a child (``session/cancel`` with its id)."""
        self._capabilities = {"cancel": True} if cancel else {}
        self._spawned: dict[str, SubagentSpawned] = {}
        self._launched_by: dict[str, str] = {}
        self._ended: set[str] = set()
        """Children reported ended (a new run announces them again)."""

    def render(self, fact: ChildAnnounced | ChildStateChanged | ChildMessaged) -> list[ClientEffect]:
        if isinstance(fact, ChildMessaged):
            return []  # the draft announces a resumed child again, and has no later messages
        if isinstance(fact, ChildAnnounced):
            spawned = SubagentSpawned(
                subagent_session_id=fact.child_id,
                name=fact.description or fact.title,
                task=fact.prompt or fact.description or fact.title,
                capabilities=self._capabilities,
            )
            if fact.prompt:
                spawned.prompt = fact.prompt
            self._spawned[fact.child_id] = spawned
            self._launched_by[fact.child_id] = fact.tool_use_id
            return [Notify(fact.parent_id, spawned)]
        if fact.repeat or fact.state is SessionState.REQUIRES_ACTION:
            return []  # the draft has no lists and no waiting state
        if fact.state is SessionState.RUNNING:
            if fact.child_id not in self._ended:
                return []  # working again after a question of its own: still the same run
            self._ended.discard(fact.child_id)
            return [Notify(fact.parent_id, self._spawned[fact.child_id])]
        self._ended.add(fact.child_id)
        state = "disconnected" if fact.lost else ENDS[fact.stop_reason]
        return [Notify(fact.parent_id, SubagentStateUpdate(subagent_session_id=fact.child_id, state=state))]

    def stamp(self, effects: list[ClientEffect]) -> list[ClientEffect]:
        """Stamp every update of a child session with the tool use that launched the child."""
        return [self._stamped(effect) for effect in effects]

    def _stamped(self, effect: ClientEffect) -> ClientEffect:
        if not isinstance(effect, Notify) or effect.session_id not in self._launched_by:
            return effect
        return with_meta(effect, "claudeCode", {"parentToolUseId": self._launched_by[effect.session_id]})
