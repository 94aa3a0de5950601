"""A client re-attaching with a replay: what waits for the replay, what marks its end, and what
waits for the answer.

Theory of operation (the Session Replay Complete RFD of the v2 Preview; Subagent Sessions,
reconnection and replay):

- From the request on, what the session says live is held: every message for the client waits,
  in order, while commands to Claude Code and the rest go on. Sent meanwhile, a live update
  would be taken for history, or history would come after something newer than itself. The
  replay's end releases it, right after the end is marked.
- The end of a replay that was all sent is marked on the session (``ReplayCompleted``: v2's
  ``replay_complete``), also when there was no history; each child the replay announces gets
  its own marker after its history (``history``). A replay that stopped short is not marked:
  its end only releases what was held, and the request fails.
- Until the answer, what the client hears of the children is history: no child is granted
  ``cancel`` before it (a child restated then is not cancellable). Once the answer is written,
  the current state of each working child follows, with ``cancel``.

An attach's phase:

=============  ===============  =========================================================  =============
attach         trigger          what happens                                               next
=============  ===============  =========================================================  =============
(none),        ``HOLD``         a client asks to re-attach with a replay, or a replay      ``HOLDING``
``REPLAYED``,                   begins (a request that supersedes one not answered yet
``ANSWERING``                   starts over)
``HOLDING``    ``COMPLETE``     the replay ends, all of it sent                            ``REPLAYED``
``HOLDING``    ``CUT_SHORT``    the replay ends short                                      (none)
``REPLAYED``   ``SYNCED``       the current state is sent                                  ``ANSWERING``
``ANSWERING``  ``ANSWERED``     the answer is written: the children's current state        (none)
                                follows
=============  ===============  =========================================================  =============
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    ClientEffect,
    Effect,
    Fail,
    Notify,
    Reply,
    WithdrawPermission,
)
from claude_bg_acp.core.lifecycle import Transitions

FOR_THE_CLIENT = (Notify, Reply, Fail, AskPermission, AskQuestions, WithdrawPermission)
"""What a replay holds back (``ClientEffect``'s kinds)."""


class AttachPhase(enum.Enum):
    HOLDING = "holding"
    REPLAYED = "replayed"
    ANSWERING = "answering"


class AttachTrigger(enum.Enum):
    HOLD = "hold"
    COMPLETE = "complete"
    CUT_SHORT = "cut_short"
    SYNCED = "synced"
    ANSWERED = "answered"


ATTACHES: Transitions[AttachPhase, AttachTrigger] = Transitions.of(
    "attach",
    AttachPhase,
    AttachTrigger,
    ((None, AttachPhase.REPLAYED, AttachPhase.ANSWERING), AttachTrigger.HOLD, AttachPhase.HOLDING),
    ((AttachPhase.HOLDING,), AttachTrigger.COMPLETE, AttachPhase.REPLAYED),
    ((AttachPhase.HOLDING,), AttachTrigger.CUT_SHORT, None),
    ((AttachPhase.REPLAYED,), AttachTrigger.SYNCED, AttachPhase.ANSWERING),
    ((AttachPhase.ANSWERING,), AttachTrigger.ANSWERED, None),
)


@dataclass(frozen=True)
class ReplayCompleted:
    """All the history of ``session_id`` that this replay had was sent."""

    session_id: str


class Attach:
    def __init__(self) -> None:
        self.phase: AttachPhase | None = None
        self._held: list[ClientEffect] = []

    def hold(self) -> None:
        """A replay is asked for, or begins: what the session says live waits for its end."""
        if self.phase is not AttachPhase.HOLDING:
            self.phase = ATTACHES.move(self.phase, AttachTrigger.HOLD)

    def holding(self, effects: list[Effect]) -> list[Effect]:
        """What of ``effects`` (of something live) goes out now: while a replay is under way, not
        what is for the client."""
        if self.phase is not AttachPhase.HOLDING:
            return effects
        self._held += [effect for effect in effects if isinstance(effect, FOR_THE_CLIENT)]
        return [effect for effect in effects if not isinstance(effect, FOR_THE_CLIENT)]

    def replayed(self, complete: bool) -> list[ClientEffect]:
        """The replay ended (its end marked first, when ``complete``): what was held."""
        if self.phase is not AttachPhase.HOLDING:
            return []
        self.phase = ATTACHES.step(
            self.phase, AttachTrigger.COMPLETE if complete else AttachTrigger.CUT_SHORT
        )
        held, self._held = self._held, []
        return held

    def synced(self) -> bool:
        """The current state is being sent: whether after a replay (then no child is granted
        ``cancel`` before the answer)."""
        if self.phase is not AttachPhase.REPLAYED:
            return False
        self.phase = ATTACHES.move(self.phase, AttachTrigger.SYNCED)
        return True

    def answered(self) -> bool:
        """The answer is written: whether the children's current state is owed (after a replay)."""
        if self.phase is not AttachPhase.ANSWERING:
            return False
        self.phase = ATTACHES.step(self.phase, AttachTrigger.ANSWERED)
        return True
