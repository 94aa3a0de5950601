"""Held turns (the policy ``answers_wait_for_subagents``: for clients that stop listening at a
prompt's answer, v1). A turn whose result arrives while subagents it spawned (during the turn
or while held) are still live keeps its answer back, with the outcome stored: the subagents'
output and permission requests then arrive inside the turn. Background shells never hold a
turn, and a turn that spawned nothing is answered at its result. A hold has a lifecycle of its
own, beside the turn's (``foreground``'s ``TURNS``), and its own way from phase to phase
(``Hold.move``, asked with the trigger):

========  =======================  ===================================================  ========
hold      trigger                  what happens                                         next
========  =======================  ===================================================  ========
``NONE``  ``HOLD_AT_RESULT``       a prompt's result comes while subagents it spawned   ``HELD``
                                   are live
``HELD``, ``SUBAGENTS_DONE``       its last subagent ended by itself while no turn      ``DUE``
``DUE``                            runs: Claude Code follows that up; the release is
                                   due ``FOLLOW_UP_WAIT`` after, if no follow-up turn
                                   starts
``DUE``   ``TURN_STARTS``          a turn starts: its result releases the hold          ``HELD``
                                   (below)
``HELD``, ``FOLLOW_UP_RESULT``     released with the stored outcome: the result of a    ``NONE``
``DUE``                            follow-up turn, with none of its subagents live
``HELD``, ``CLAUDE_IDLE``          released: Claude Code reports ``idle``, with none    ``NONE``
``DUE``                            of its subagents live
``HELD``, ``SUBAGENTS_STOPPED``    released: its last subagent was stopped (at once:    ``NONE``
``DUE``                            nothing follows a stop)
``HELD``, ``NEXT_PROMPT``          released: the next prompt arrives                    ``NONE``
``DUE``
``HELD``, ``CLAUDE_DIED``          released: Claude Code died                           ``NONE``
``DUE``
``HELD``, ``CANCEL``               released as ``cancelled`` with the stored usage:     ``NONE``
``DUE``                            ``session/cancel``
``HELD``, ``CLOSE``                released: the session closes                         ``NONE``
``DUE``
``DUE``   ``FOLLOW_UP_MISSED``     ``FOLLOW_UP_WAIT`` passed without a follow-up turn   ``NONE``
========  =======================  ===================================================  ========
"""

from __future__ import annotations

import enum

from claude_bg_acp.core.foreground_facts import ForegroundOut, Outcome, PromptAnswered, PromptTurn
from claude_bg_acp.core.lifecycle import Transitions


class HoldPhase(enum.Enum):
    NONE = "none"
    HELD = "held"
    DUE = "due"


class HoldTrigger(enum.Enum):
    """What moves the hold (the trigger column of its table)."""

    HOLD_AT_RESULT = enum.auto()
    SUBAGENTS_DONE = enum.auto()
    TURN_STARTS = enum.auto()
    FOLLOW_UP_RESULT = enum.auto()
    CLAUDE_IDLE = enum.auto()
    SUBAGENTS_STOPPED = enum.auto()
    NEXT_PROMPT = enum.auto()
    CLAUDE_DIED = enum.auto()
    CANCEL = enum.auto()
    CLOSE = enum.auto()
    FOLLOW_UP_MISSED = enum.auto()


HELD_OR_DUE = (HoldPhase.HELD, HoldPhase.DUE)
HOLDS: Transitions[HoldPhase, HoldTrigger] = Transitions.of(
    "hold",
    HoldPhase,
    HoldTrigger,
    ((HoldPhase.NONE,), HoldTrigger.HOLD_AT_RESULT, HoldPhase.HELD),
    (HELD_OR_DUE, HoldTrigger.SUBAGENTS_DONE, HoldPhase.DUE),
    ((HoldPhase.DUE,), HoldTrigger.TURN_STARTS, HoldPhase.HELD),
    (HELD_OR_DUE, HoldTrigger.FOLLOW_UP_RESULT, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.CLAUDE_IDLE, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.SUBAGENTS_STOPPED, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.NEXT_PROMPT, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.CLAUDE_DIED, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.CANCEL, HoldPhase.NONE),
    (HELD_OR_DUE, HoldTrigger.CLOSE, HoldPhase.NONE),
    ((HoldPhase.DUE,), HoldTrigger.FOLLOW_UP_MISSED, HoldPhase.NONE),
)


class Hold:
    """A prompt's turn whose answer is held, and when the hold is released if no follow-up turn
    starts."""

    def __init__(self) -> None:
        self.phase: HoldPhase = HoldPhase.NONE
        self.held: PromptTurn | None = None
        """The held turn, unless ``NONE``."""
        self.release_at: float | None = None
        """While ``DUE``: when the held turn is released if no follow-up turn started."""

    def move(self, trigger: HoldTrigger, release_at: float | None = None) -> None:
        """The hold's one way from phase to phase (``HOLDS``, asked with the trigger);
        ``release_at`` is ``DUE``'s."""
        self.phase = HOLDS.move(self.phase, trigger)
        self.release_at = release_at
        if self.phase is HoldPhase.NONE:
            self.held = None

    def needed(self, live_subagents: set[str]) -> bool:
        """Subagents the held turn spawned are live."""
        return self.held is not None and bool(self.held.spawned & live_subagents)

    def release(self, trigger: HoldTrigger) -> list[ForegroundOut]:
        """Answer the held turn with the outcome it recorded; on ``session/cancel`` with that
        stop reason instead, which the v1 schema requires after a cancel, and the usage it
        recorded, which the held-turns PR keeps (its stored outcome)."""
        held = self.held
        if held is None:
            return []
        self.move(trigger)
        outcome = held.outcome
        if trigger is HoldTrigger.CANCEL:
            outcome = Outcome("cancelled", outcome.usage if outcome is not None else None)
        return [PromptAnswered(held.ticket, outcome)] if outcome is not None else []
