"""Foreground work: prompts, turns, and the session state a client sees.

Theory of operation. What runs in the foreground is a turn, in one of five phases:

===============  ======================  ==============================================  ===============
turn             trigger                 what happens                                    next
===============  ======================  ==============================================  ===============
``IDLE``         ``INSERT``              the next waiting prompt is written to Claude    ``PROMPTED``
                                         Code
``IDLE``,        ``RUNNING``             Claude Code says ``running`` (again, in its     ``CLAUDE_TURN``
``EXPECTING``,                           own turn)
``CLAUDE_TURN``
``IDLE``,        ``WORK_SEEN``           output of the main conversation arrives (a      ``CLAUDE_TURN``
``EXPECTING``                            turn Claude Code started itself)
``IDLE``         ``FOLLOW_UP_OWED``      a task ended by itself: its follow-up turn is   ``EXPECTING``
                                         owed (also right after the result of a turn
                                         it ended during)
``PROMPTED``,    ``RESULT``              a result: the prompt's, Claude Code's own       ``IDLE``
``CLAUDE_TURN``,                         turn's, or that of a turn that showed nothing
``EXPECTING``,                           (late, once idle)
``IDLE``
``PROMPTED``     ``ANSWERED``            the agent answered its own command              ``IDLE``
``PROMPTED``,    ``CLAUDE_IDLE``         Claude Code says ``idle`` (after a cancel,      ``IDLE``
``CLAUDE_TURN``                          ending a prompt's turn too)
``EXPECTING``    ``FOLLOW_UP_MISSED``    ``FOLLOW_UP_WAIT`` passes without one           ``IDLE``
``PROMPTED``,    ``CRASHED``             Claude Code died, and another one takes over    ``IDLE``
``CLAUDE_TURN``,
``EXPECTING``,
``IDLE``
any              ``CLOSE``               the session closes                              ``CLOSED``
any              ``GONE``                Claude Code is gone for good                    ``CLOSED``
===============  ======================  ==============================================  ===============

Every change of phase goes through ``_enter`` with its trigger, held to that table (``TURNS``:
a row whose phase leads back to itself is a trigger that leaves it as it is); what belongs to a
phase goes with it: the inserted prompt (``PROMPTED``), when to stop waiting for the follow-up
(``EXPECTING``), and a ``session/cancel`` of the turn's work (``cancelled``, until ``IDLE``).

Follow-ups are owed per task run (``owed``), from the moment Claude Code reports the task's end
(its own message, which comes before the turn it starts about it); the result of a follow-up
turn names the run it follows up (``origin.runId``), which then is owed no more. What the agent
learns later from its own pipes (a terminal's file read to its end, however far behind) moves
nothing here. Consecutive turns have an idle boundary: the ``idle`` of the turn that ended (with
its stop reason and usage), then ``running`` for the follow-up.

A Claude Code that takes over the stored conversation (after a crash, or resuming it in a new
agent process) may start with an empty turn of its own: it replays the notification of a task
that the previous one's end cut short, without a model request. Until it shows work or says
``idle`` (``restarted``), such a turn is ``hidden``: the client keeps seeing ``idle`` (so no
empty ``running`` → ``idle`` pair reaches it, nor an ``idle`` between a prompt it sent and that
prompt's insertion), and a prompt waits for the turn's end to be inserted. Once it shows work
it is a turn like any other. Once the session closes, no turn runs any more: neither what Claude
Code still does before it stops (its answer included) nor a follow-up turn is shown
(``CLOSED``, for good: a prompt is refused with the reason).

A result whose ``origin`` names a task notification belongs to a follow-up turn, never to a
prompt; Claude Code lists the prompts a result covers (``user_message_uuids``), so a prompt it
took into a turn it started itself is settled by that turn's result.

Claude Code's own state is the whole session's: with nothing in the foreground, its
``requires_action`` is a background subagent's question, and the ``running`` after the answer
is no turn either (``asked_aside``); the child's session shows that question, the root stays
``idle``.

The state a client sees is ``running`` in every phase but ``IDLE``, ``CLOSED`` and a ``hidden``
turn (``requires_action`` while a foreground permission question is open), ``idle`` otherwise
with the stop reason of the last result. A result ends the phase at once, so ``idle`` follows the
result without waiting for Claude Code's own trailing ``idle``; a late trailing ``idle`` cannot
end a newer prompt.

Prompts that arrive while the foreground is busy wait and are inserted in order once it is
idle. A prompt that is one of the agent's own commands (``task_list``: ``/tasks``, ``/stop``)
waits its turn the same way (one turn at a time: a v1 client reads the updates between a
prompt and its answer as that prompt's); at its insertion no query goes to Claude Code: the
session core answers it (``CommandDue``) and ``answered`` ends its turn ``end_turn`` at once.

``session/cancel`` cancels the waiting prompts and the foreground work, whichever phase
it is in: it interrupts the turn (ours or one Claude Code started itself) and the turn's end
then reports ``cancelled`` whatever Claude Code's result says; a follow-up turn that was only
expected is interrupted as soon as it starts (or, if it never does, the wait ends as
``cancelled``). The answer of a cancelled turn that still arrives is not shown (``muted``).

A prompt may name its submission with an ``idempotencyKey`` (v2): it is inserted at most once
(``prompt_keys``).

A turn may keep its answer back while subagents it spawned run (held turns: ``holds``).
"""

from __future__ import annotations

import enum
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import replace

from claude_bg_acp.core.background_list import Listed
from claude_bg_acp.core.effects import Fail, Interrupt, Query, Ticket
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.foreground_facts import (
    CommandDue,
    ForegroundOut,
    Outcome,
    PromptAnswered,
    PromptCancelled,
    PromptInserted,
    PromptRetried,
    PromptTurn,
    SessionState,
    StateReported,
    WaitingPrompt,
)
from claude_bg_acp.core.holds import Hold, HoldPhase, HoldTrigger
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.prompt_keys import PromptKeys

FOLLOW_UP_WAIT = 3.0
"""Seconds we report ``running`` for a follow-up turn Claude Code has not started yet."""
SESSION_CLOSED = "The session is closed"


class TurnPhase(enum.Enum):
    IDLE = "idle"
    PROMPTED = "prompted"
    CLAUDE_TURN = "claude_turn"
    EXPECTING = "expecting"
    CLOSED = "closed"


BUSY = (TurnPhase.PROMPTED, TurnPhase.CLAUDE_TURN, TurnPhase.EXPECTING)


class TurnTrigger(enum.Enum):
    """What moves the turn (the trigger column of its table)."""

    INSERT = enum.auto()
    RUNNING = enum.auto()
    WORK_SEEN = enum.auto()
    FOLLOW_UP_OWED = enum.auto()
    RESULT = enum.auto()
    ANSWERED = enum.auto()
    CLAUDE_IDLE = enum.auto()
    FOLLOW_UP_MISSED = enum.auto()
    CRASHED = enum.auto()
    CLOSE = enum.auto()
    GONE = enum.auto()


IDLE, PROMPTED, CLAUDE_TURN, EXPECTING, CLOSED = TurnPhase
TURNS: Transitions[TurnPhase, TurnTrigger] = Transitions.of(
    "turn",
    TurnPhase,
    TurnTrigger,
    ((IDLE,), TurnTrigger.INSERT, PROMPTED),
    ((IDLE, EXPECTING, CLAUDE_TURN), TurnTrigger.RUNNING, CLAUDE_TURN),
    ((IDLE, EXPECTING), TurnTrigger.WORK_SEEN, CLAUDE_TURN),
    ((IDLE,), TurnTrigger.FOLLOW_UP_OWED, EXPECTING),
    ((PROMPTED, CLAUDE_TURN, EXPECTING, IDLE), TurnTrigger.RESULT, IDLE),
    ((PROMPTED,), TurnTrigger.ANSWERED, IDLE),
    ((PROMPTED, CLAUDE_TURN), TurnTrigger.CLAUDE_IDLE, IDLE),
    ((EXPECTING,), TurnTrigger.FOLLOW_UP_MISSED, IDLE),
    ((PROMPTED, CLAUDE_TURN, EXPECTING, IDLE), TurnTrigger.CRASHED, IDLE),
    (tuple(TurnPhase), TurnTrigger.CLOSE, CLOSED),
    (tuple(TurnPhase), TurnTrigger.GONE, CLOSED),
)


class Foreground:
    def __init__(self, session_id: str, answers_wait_for_subagents: bool, instance: str = "") -> None:
        """``answers_wait_for_subagents``: the session's policy of held turns (``core.policy``).
        ``instance`` tells apart the prompt ids of each process that hosts the session (a resumed
        one counts its prompts from one again)."""
        self.session_id = session_id
        self.instance = instance
        self.answers_wait_for_subagents = answers_wait_for_subagents
        self.phase: TurnPhase = TurnPhase.IDLE
        self.prompt: PromptTurn | None = None
        """The inserted prompt, while ``PROMPTED``."""
        self.follow_up_until: float | None = None
        """While ``EXPECTING``: when to stop waiting for the follow-up turn."""
        self.cancelled = False
        """``session/cancel`` came for the work of the current phase (one of ``BUSY``)."""
        self.refusal = Failure(Failing.ERROR, SESSION_CLOSED)
        """Once ``CLOSED``: what a prompt is refused with (why Claude Code is gone, if it is)."""
        self.blocked = False
        """A foreground permission question is open."""
        self.owed: set[str] = set()
        """The runs of tasks that ended by themselves whose follow-up turn has not ended yet."""
        self.waiting: deque[WaitingPrompt] = deque()
        self.keys = PromptKeys(session_id)
        self.reported = SessionState.IDLE
        self.last_outcome: Outcome | None = None
        self.background: Sequence[Listed] = []
        self._next_message = 0
        self.live_subagents: set[str] = set()
        self.holds = Hold()
        self.restarted = False
        """A new Claude Code took over the stored conversation and has shown no work yet."""
        self.asked_aside = False
        """Claude Code said ``requires_action`` while the foreground was idle: a background
        subagent's question (Claude Code's state is the whole session's), and the ``running``
        after its answer is no turn either."""

    @property
    def busy(self) -> bool:
        return self.phase in BUSY

    @property
    def hidden(self) -> bool:
        """The running turn is the empty one of a Claude Code that took over (see above)."""
        return self.restarted and self.phase is TurnPhase.CLAUDE_TURN

    @property
    def unseen(self) -> bool:
        """What Claude Code reports now is no turn of the client's: a hidden turn runs, or the
        session is closed (or Claude Code gone for good)."""
        return self.hidden or self.phase is TurnPhase.CLOSED

    def state(self) -> SessionState:
        if not self.busy or self.hidden:
            return SessionState.IDLE
        return SessionState.REQUIRES_ACTION if self.blocked else SessionState.RUNNING

    # --- inputs ---------------------------------------------------------------------------

    def submit(self, prompt: WaitingPrompt) -> list[ForegroundOut]:
        retried = self.keys.attempt(prompt, self.waiting)
        if retried is not None:
            return retried
        if self.phase is TurnPhase.CLOSED:
            return [Fail(prompt.ticket, self.refusal)]
        # The next prompt hands a held turn off with the outcome it recorded.
        out = self.holds.release(HoldTrigger.NEXT_PROMPT)
        self.waiting.append(prompt)
        return out + self.keys.look_up(prompt) + self._report()

    def looked_up(self, key: str, stored: bool | None) -> list[ForegroundOut]:
        """Whether the stored conversation has the prompt of ``key`` (None: it could not be read)."""
        return self.keys.looked_up(key, stored, self.waiting) + self._report()

    @property
    def muted(self) -> bool:
        """The running turn was cancelled, or the session closed: what it still says is not shown."""
        closed = self.phase is TurnPhase.CLOSED
        return closed or (self.cancelled and self.phase in (TurnPhase.PROMPTED, TurnPhase.CLAUDE_TURN))

    def cli_state(self, state: str) -> list[ForegroundOut]:
        out: list[ForegroundOut] = []
        if state in ("running", "requires_action") and self._aside(state):
            return []
        if state in ("running", "requires_action"):
            out += self._claude_turn(TurnTrigger.RUNNING)
        elif state == "idle":
            self.restarted = False
            if self.cancelled and self.phase is not TurnPhase.EXPECTING:
                # An interrupt that produced no result still ends the cancelled work.
                return self._settle(Outcome("cancelled"), TurnTrigger.CLAUDE_IDLE)
            if self.phase is TurnPhase.CLAUDE_TURN:
                self._enter(TurnTrigger.CLAUDE_IDLE)
            if not self.holds.needed(self.live_subagents):
                return self.holds.release(HoldTrigger.CLAUDE_IDLE) + self._report()
        return out + self._report()

    def _aside(self, state: str) -> bool:
        """A state that is a background subagent's question, not a turn: ``requires_action``
        while nothing runs in the foreground (a turn of the root's starts ``running``, or with
        output), and the ``running`` that answers it. Output of the main conversation still
        starts a turn (``work_seen``)."""
        idle = self.phase is TurnPhase.IDLE and self.holds.phase is HoldPhase.NONE
        aside = idle and (state == "requires_action" or self.asked_aside)
        self.asked_aside = aside and state == "requires_action"
        return aside

    def withdraw(self, ticket: Ticket) -> list[ForegroundOut]:
        withdrawn: list[ForegroundOut] = [
            Fail(ticket, Failure(Failing.WITHDRAWN, "Prompt withdrawn before insertion"))
        ]
        waiting = next((prompt for prompt in self.waiting if ticket in prompt.tickets), None)
        if waiting is None:
            return []  # inserted already: its answer stands
        if ticket in waiting.retries:
            waiting.retries.remove(ticket)
        elif waiting.retries:  # the submission still waits, for the attempts that remain
            first, *rest = waiting.retries
            self.waiting[self.waiting.index(waiting)] = replace(waiting, ticket=first, retries=rest)
        else:
            self.waiting.remove(waiting)
        return withdrawn

    def work_seen(self) -> list[ForegroundOut]:
        """Output of the main conversation arrived: Claude Code is working, whatever it said.

        A follow-up turn may start with output and no ``running``; from here on it is the
        turn's own result, not a timer, that ends the wait for it.
        """
        self.restarted = False  # a hidden turn shows itself now
        if self.phase in (TurnPhase.PROMPTED, TurnPhase.CLAUDE_TURN):
            return self._report()
        return self._claude_turn(TurnTrigger.WORK_SEEN) + self._report()

    def answers_prompt(self, uuids: set[str], origin_kind: str) -> bool:
        """Whether a result is the end of the inserted prompt's turn (else Claude Code's own).

        Claude Code lists the prompts a result covers; a prompt it took into a turn it started
        itself is covered by that turn's result. Without the list, the origin decides.
        """
        if self.prompt is None:
            return origin_kind == "human"
        if uuids:
            return self.prompt.uuid in uuids
        return origin_kind == "human"

    def result(
        self, outcome: Outcome, follow_up: bool, now: float, run: str | None = None
    ) -> list[ForegroundOut]:
        """A result; ``run``: the task run a follow-up turn's result names (``origin.runId``)."""
        if run is not None:
            self.owed.discard(run)
        if follow_up and self.prompt is not None:
            return self._report()  # Claude Code's turn before the prompt's: the prompt's is to come
        if follow_up and not self.holds.needed(self.live_subagents):
            # The promised summary of the held turn's subagents has been streamed by now.
            return self.holds.release(HoldTrigger.FOLLOW_UP_RESULT) + self._settle(
                outcome, TurnTrigger.RESULT, now
            )
        return self._settle(outcome, TurnTrigger.RESULT, now)

    def answered(self, now: float) -> list[ForegroundOut]:
        """The agent answered its own command (``CommandDue``): its turn ends, with no model
        request."""
        return self._settle(Outcome("end_turn"), TurnTrigger.ANSWERED, now)

    # --- subagents and held turns --------------------------------------------------------------

    def subagent_started(self, task_id: str) -> None:
        if task_id in self.live_subagents:
            return
        self.live_subagents.add(task_id)
        for turn in (self.prompt, self.holds.held):
            if turn is not None:
                turn.spawned.add(task_id)

    def subagent_ended(self, task_id: str, status: str | None, now: float) -> list[ForegroundOut]:
        self.live_subagents.discard(task_id)
        if self.holds.phase is HoldPhase.NONE or self.holds.needed(self.live_subagents):
            return []
        if self.phase is TurnPhase.CLAUDE_TURN:
            return []  # the turn that runs now releases the hold at its result
        if status in ("completed", "failed"):
            # Claude Code follows a finished subagent up with a turn; its result releases.
            self.holds.move(HoldTrigger.SUBAGENTS_DONE, now + FOLLOW_UP_WAIT)
            return []
        return self.holds.release(HoldTrigger.SUBAGENTS_STOPPED) + self._report()

    def cancel(self) -> list[ForegroundOut]:
        out = self.holds.release(HoldTrigger.CANCEL) + self._refuse_waiting()
        if not self.busy or self.cancelled:
            return out
        self.cancelled = True
        # An expected turn may be running already, silently: interrupt it now, and again when
        # it shows itself.
        out.append(Interrupt())
        return out

    def close(self) -> list[ForegroundOut]:
        """The session closes: nothing more is inserted or expected, the turn ends as cancelled."""
        out = self.holds.release(HoldTrigger.CLOSE) + self._refuse_waiting()
        was_busy = self.prompt is not None or self.reported is not SessionState.IDLE
        self._close(Failure(Failing.ERROR, SESSION_CLOSED), TurnTrigger.CLOSE)
        if was_busy:
            out += self._settle(Outcome("cancelled"), TurnTrigger.CLOSE)
        return out

    def set_blocked(self, blocked: bool) -> list[ForegroundOut]:
        self.blocked = blocked
        return self._report()

    def expect_follow_up(self, run: str, now: float) -> None:
        """A task run ended by itself: Claude Code will start a turn about it; report it
        ``running`` from now on (once the running turn is over, if one runs).

        Claude Code starts that turn by itself a few milliseconds later; if it does not within
        ``FOLLOW_UP_WAIT``, ``tick`` reports ``idle`` again, with no stop reason.
        """
        if self.phase is TurnPhase.CLOSED:
            return  # the session closed (or Claude Code is gone for good): nothing follows
        self.owed.add(run)
        if not self.busy:
            self._expect(now)

    def resuming(self) -> None:
        """Claude Code starts on the stored conversation: a turn it runs before it shows work is
        its replay of what the previous one left, and keys are looked for there (see the module
        docstring)."""
        self.restarted = True
        self.keys.stored_before = True

    def tick(self, now: float) -> list[ForegroundOut]:
        out: list[ForegroundOut] = []
        if self.follow_up_until is not None and now >= self.follow_up_until:
            cancelled = self.cancelled
            self._enter(TurnTrigger.FOLLOW_UP_MISSED)
            self.owed.clear()  # none came: Claude Code owes nothing we still wait for
            if cancelled:
                self.last_outcome = Outcome("cancelled")
        if self.holds.release_at is not None and now >= self.holds.release_at:
            out += self.holds.release(HoldTrigger.FOLLOW_UP_MISSED)
        return out + self._report()

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.follow_up_until, self.holds.release_at) if d is not None]
        return min(deadlines) if deadlines else None

    def snapshot(self) -> StateReported:
        """The state as last reported, again (no new completion): for a client that re-attaches."""
        return StateReported(self.session_id, self.reported, self.background)

    def set_background(self, background: Sequence[Listed]) -> list[ForegroundOut]:
        """A new list (or a state change that came with it) goes out in one snapshot."""
        changed = background != self.background
        self.background = background
        if self.state() != self.reported:
            return self._report()
        return [StateReported(self.session_id, self.reported, self.background)] if changed else []

    def fail(self, error: Failure) -> list[ForegroundOut]:
        """Claude Code is gone: end the turn with an error and refuse what was held and what comes.
        Its subagents went with it: nothing holds the turn's answer."""
        self.live_subagents.clear()
        out = self.holds.release(HoldTrigger.CLAUDE_DIED)
        self._close(error, TurnTrigger.GONE)
        while self.waiting:
            out += [Fail(ticket, error) for ticket in self.waiting.popleft().tickets]
        return out + self._settle(Outcome("error", error=error), TurnTrigger.GONE)

    def crashed(self, error: Failure) -> list[ForegroundOut]:
        """Claude Code died and another one takes over: the running turn ends with ``error``."""
        self.live_subagents.clear()
        out = self.holds.release(HoldTrigger.CLAUDE_DIED)
        quiet = self.prompt is None and self.reported is SessionState.IDLE
        self._stop()
        self.restarted = True
        if quiet:
            return out + self._report()
        return out + self._settle(Outcome("error", error=error), TurnTrigger.CRASHED)

    # --- transitions ------------------------------------------------------------------------

    def _enter(self, trigger: TurnTrigger) -> None:
        """The turn's one way from phase to phase (``TURNS``, asked with the trigger); what
        belonged to the phase it leaves goes with it."""
        self.phase = TURNS.move(self.phase, trigger)
        if self.phase is not TurnPhase.EXPECTING:
            self.follow_up_until = None
        if self.phase not in BUSY:
            self.cancelled = False

    def _claude_turn(self, trigger: TurnTrigger) -> list[ForegroundOut]:
        """Claude Code is running a turn: ours, if a prompt is in, else one of its own
        (``trigger``: it says so, or its work shows)."""
        if self.phase is TurnPhase.CLOSED:
            return []  # the session closed (or Claude Code is gone for good): nothing more runs
        expected = self.phase is TurnPhase.EXPECTING
        if self.phase is not TurnPhase.PROMPTED:
            self._enter(trigger)
        if self.holds.phase is HoldPhase.DUE:
            self.holds.move(HoldTrigger.TURN_STARTS)  # the turn's result releases it, not the timer
        # The turn was cancelled before it started: interrupt it now.
        return [Interrupt()] if expected and self.cancelled else []

    def _stop(self) -> None:
        """Whatever ran in the foreground is over; an inserted prompt is settled by the caller."""
        if self.phase not in (TurnPhase.PROMPTED, TurnPhase.CLOSED):
            self._enter(TurnTrigger.CRASHED)
        self.owed.clear()

    def _close(self, refusal: Failure, trigger: TurnTrigger) -> None:
        """No turn runs any more (``trigger``: the session closed, or Claude Code is gone for
        good); an inserted prompt is settled by the caller."""
        self.refusal = refusal
        self._enter(trigger)
        self.owed.clear()

    def _insert_next(self) -> list[ForegroundOut]:
        # The next prompt hands a held turn off, also when it waited while that turn ran.
        out = self.holds.release(HoldTrigger.NEXT_PROMPT)
        self._enter(TurnTrigger.INSERT)
        waiting = self.waiting.popleft()
        self.restarted = False
        self._next_message += 1
        if waiting.key is not None:
            prompt_uuid = self.keys.keyed_id(waiting.key)
        else:
            # A name-based UUID keeps replays deterministic and is unique per session and message.
            instance = f"{self.instance}/" if self.instance else ""
            name = f"acp:{self.session_id}/{instance}user-{self._next_message}"
            prompt_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
        self.prompt = PromptTurn(waiting.ticket, prompt_uuid)
        out += self._report()
        out.append(PromptInserted(self.session_id, waiting.ticket, prompt_uuid, waiting.content))
        out += [PromptRetried(ticket, prompt_uuid) for ticket in waiting.retries]
        if waiting.key is not None:
            self.keys.inserted[waiting.key] = prompt_uuid
        if waiting.local:
            out.append(CommandDue(prompt_uuid, waiting.content))
        else:
            out.append(Query(waiting.claude_content, prompt_uuid))
        return out

    def _settle(
        self, outcome: Outcome, trigger: TurnTrigger, now: float | None = None
    ) -> list[ForegroundOut]:
        """The turn ended on ``trigger`` (with its result at ``now``, if it had one)."""
        out: list[ForegroundOut] = []
        prompt, self.prompt = self.prompt, None
        if self.phase is not TurnPhase.CLOSED:
            self._enter(trigger)
        self.last_outcome = outcome
        if prompt is not None:
            spawned_live = prompt.spawned & self.live_subagents
            if self.answers_wait_for_subagents and spawned_live and outcome.stop_reason != "cancelled":
                prompt.outcome, self.holds.held = outcome, prompt
                self.holds.move(HoldTrigger.HOLD_AT_RESULT)
            else:
                out.append(PromptAnswered(prompt.ticket, outcome))
        if self.owed and now is not None and outcome.stop_reason != "cancelled":
            # Work that ended during this turn is followed up at once: this turn's idle, then
            # running again, with no prompt inserted in between.
            out += self._report(insert=False)
            self._expect(now)
        return out + self._report()

    def _expect(self, now: float) -> None:
        self._enter(TurnTrigger.FOLLOW_UP_OWED)
        self.follow_up_until = now + FOLLOW_UP_WAIT
        self.last_outcome = None

    def _refuse_waiting(self) -> list[ForegroundOut]:
        """Every prompt not inserted yet is cancelled."""
        out: list[ForegroundOut] = []
        while self.waiting:
            out += [PromptCancelled(ticket) for ticket in self.waiting.popleft().tickets]
        return out

    def _report(self, insert: bool = True) -> list[ForegroundOut]:
        """Report a changed state; once idle, insert the next waiting prompt (after the idle)."""
        out: list[ForegroundOut] = []
        state = self.state()
        if state != self.reported:
            self.reported = state
            outcome = self.last_outcome if state is SessionState.IDLE else None
            out.append(StateReported(self.session_id, state, self.background, outcome))
        if (
            insert
            and self.phase is TurnPhase.IDLE
            and self.waiting
            and self.waiting[0].key not in self.keys.looking_up
        ):
            out += self._insert_next()
        return out
