"""Properties of held v1 turns, over generated event sequences of one v1 session.

A small model of Claude Code turns generated operations into frames shaped like the recorded
ones (``tests.support.frames``), played through ``CoreDriver``: it runs one turn at a time from
a queue of user messages (the core's ``Query`` effects) and follow-up turns (a task that
completed or failed), spawns subagents (``local_agent``) and background shells (``local_bash``)
inside turns, ends tasks through ``task_updated`` and/or ``task_notification`` or loses those
events so that only the level signal (``background_tasks_changed``) tells, and answers the
core's ``Interrupt`` by ending the current turn. Time advances as the agent's ticker does:
``tick`` at every deadline.

Checked on every step: a prompt is answered at most once, and with the stop reason its turn
recorded (``cancelled`` only for ``session/cancel``); ``session/cancel`` answers a held prompt
(``cancelled``, with the usage its turn recorded) and the waiting ones at once; a new prompt
answers a held one at once, and no prompt is inserted while another is held; a turn none of
whose subagents is live at its result (shells do not count) is answered by the call that fed
the result; a tick does not answer a held prompt while a follow-up turn Claude Code visibly
started is still running. After the sequence, Claude Code finishes its queue, every subagent
ends and time passes: every prompt has been answered (no wedge), though shells still run.

Sequences that reach a known product bug (``KNOWN_BUGS``) are discarded by the properties; the
examples at the end pin the fixes of those it found.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Fail, Interrupt, Query, Reply
from claude_bg_acp.core.foreground import FOLLOW_UP_WAIT
from tests.support.driver import CoreDriver
from tests.support.frames import (
    RESULT_USAGE,
    Frame,
    TaskSpec,
    follow_up_origin,
    interrupted_result,
    result,
    state_changed,
    tasks_changed,
    text,
)
from tests.support.properties import examples

TaskKind = Literal["agent", "shell"]
EndStatus = Literal["completed", "failed", "killed"]
Via = Literal["updated", "notification", "both", "lost"]
Ending = Literal["end_turn", "max_tokens", "error"]

HELD_USAGE = {
    "totalTokens": sum(RESULT_USAGE.values()),
    "inputTokens": RESULT_USAGE["input_tokens"],
    "outputTokens": RESULT_USAGE["output_tokens"],
    "cachedReadTokens": RESULT_USAGE["cache_read_input_tokens"],
    "cachedWriteTokens": RESULT_USAGE["cache_creation_input_tokens"],
}
"""The usage every turn's result reports, as a prompt's answer carries it."""

KNOWN_BUGS: frozenset[str] = frozenset()
"""Product bugs the properties find (see the examples at the end): generated sequences
that reach one are discarded. Remove a name once its bug is fixed."""


# --- operations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """The client sends ``session/prompt``."""


@dataclass(frozen=True)
class Start:
    """Claude Code starts the next queued turn (saying ``running`` first, or not)."""

    says_running: bool


@dataclass(frozen=True)
class Output:
    """The current turn streams some text."""


@dataclass(frozen=True)
class Spawn:
    """The current turn launches a background task."""

    kind: TaskKind


@dataclass(frozen=True)
class End:
    """The current turn's result, possibly followed by the CLI's trailing ``idle``."""

    ending: Ending
    trailing_idle: bool


@dataclass(frozen=True)
class TaskEnds:
    """A live task ends; ``lost``: its end events never arrive, only the level says so."""

    pick: int
    status: EndStatus
    via: Via


@dataclass(frozen=True)
class Cancel:
    """``session/cancel``; an interrupted turn ends with a result, or with ``idle`` alone."""

    with_result: bool


@dataclass(frozen=True)
class Tick:
    seconds: float


Op = Prompt | Start | Output | Spawn | End | TaskEnds | Cancel | Tick

PROMPT = st.just(Prompt())
START = st.builds(Start, st.booleans())
OUTPUT = st.just(Output())
END = st.builds(End, st.sampled_from(["end_turn", "end_turn", "max_tokens", "error"]), st.booleans())
TASK_ENDS = st.builds(
    TaskEnds,
    st.integers(0, 7),
    st.sampled_from(["completed", "completed", "failed", "killed"]),
    st.sampled_from(["updated", "notification", "both", "lost"]),
)
CANCEL = st.builds(Cancel, st.booleans())
TICK = st.builds(Tick, st.sampled_from([0.1, 0.3, 0.6, 1.0, FOLLOW_UP_WAIT, 5.0]))


def weighted(*choices: tuple[st.SearchStrategy[Op], int]) -> st.SearchStrategy[Op]:
    return st.sampled_from([s for s, weight in choices for _ in range(weight)]).flatmap(lambda s: s)


def ops(spawn: st.SearchStrategy[Spawn]) -> st.SearchStrategy[Op]:
    return weighted(
        (PROMPT, 2), (START, 2), (OUTPUT, 1), (spawn, 2), (END, 2), (TASK_ENDS, 3), (CANCEL, 1), (TICK, 2)
    )


ANY_SPAWN = st.builds(Spawn, st.sampled_from(["agent", "agent", "shell"]))
SHELLS_ONLY = st.just(Spawn("shell"))


def sequences(spawn: st.SearchStrategy[Spawn], episodes: int = 8) -> st.SearchStrategy[list[Op]]:
    """Episodes (a prompt, perhaps, then a turn from start to result, with whatever happens
    meanwhile) mixed with short runs of any operations; flattened."""
    during = weighted((OUTPUT, 2), (spawn, 4), (TASK_ENDS, 2), (TICK, 2), (PROMPT, 1), (CANCEL, 1))
    after = weighted((TASK_ENDS, 4), (TICK, 3), (START, 2), (OUTPUT, 1), (END, 2), (CANCEL, 1))
    episode = st.builds(
        lambda prompt, start, middle, end, later: [*prompt, start, *middle, end, *later],
        st.sampled_from([[Prompt()], [Prompt()], [Prompt()], []]),
        START,
        st.lists(during, min_size=1, max_size=6),
        END,
        st.lists(after, max_size=6),
    )
    loose = st.lists(ops(spawn), min_size=1, max_size=3)
    chunks = st.lists(st.one_of(episode, episode, loose), max_size=episodes)
    return chunks.map(lambda parts: [op for part in parts for op in part])


# A prompt whose turn launches a subagent and ends while it runs: a held turn, if nothing else.
HOLD: list[Op] = [Prompt(), Start(True), Spawn("agent"), Output(), End("end_turn", False)]


# --- a model of Claude Code -------------------------------------------------------------------------


@dataclass
class CliTurn:
    follow_up: bool
    """Started by Claude Code itself (a task ended), not by a user message."""
    ticket: int | None = None
    """The prompt whose user message this turn answers (a follow-up may take one in)."""
    visible: bool = False
    """Claude Code showed it started: it said ``running``, or the turn produced output."""


@dataclass
class Ticket:
    number: int
    inserted: bool = False
    settled: bool = False
    """Its turn's result (or the idle that ended it cancelled) has been fed."""
    cancelled: bool = False
    """``session/cancel`` came while it was the inserted prompt whose turn had not ended."""
    outcome: str | None = None
    """The stop reason its turn's result recorded."""
    spawned: list[str] = field(default_factory=list)
    """Subagents started while it was the inserted prompt, or while it was held."""
    uuid: str | None = None
    answer: Reply | Fail | None = None
    held: bool = False
    """Its result came and it was not answered then."""


Cli = Literal["origin", "uuids", "uuids-taking-prompts-in"]
"""How Claude Code tells which prompt a result ends: by ``origin`` alone (older), by echoing the
user message uuids, and also taking a prompt written during a follow-up turn into that turn."""


class World:
    def __init__(self, expose_subagents: bool, cli: Cli = "uuids", in_property: bool = False) -> None:
        self.d = CoreDriver(1, {"subagents": {}} if expose_subagents else {})
        """A v1 client that declares subagents or not; the results name their prompts as ``cli``
        says, so the driver does not echo uuids itself."""
        self.cli = cli
        self.in_property = in_property
        self.queue: deque[CliTurn] = deque()
        self.turn: CliTurn | None = None
        self.tasks: dict[str, TaskSpec] = {}
        self.ended_tasks: dict[str, Via] = {}
        self.tickets: dict[int, Ticket] = {}
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1)

    # --- the client and the clock -------------------------------------------------------------

    def apply(self, op: Op) -> None:
        if isinstance(op, Tick):
            self.advance(op.seconds)
            return
        self.advance(0.01)
        if isinstance(op, Prompt):
            self.prompt()
        elif isinstance(op, Start):
            self.start(op.says_running)
        elif isinstance(op, Output):
            if self.turn is not None:
                self.turn.visible = True
                self.feed(text("Working on it."))
        elif isinstance(op, Spawn):
            if self.turn is not None:
                self.turn.visible = True
                self.spawn(op.kind)
        elif isinstance(op, End):
            if self.turn is not None:
                self.end(op.ending, op.trailing_idle)
        elif isinstance(op, TaskEnds):
            live = list(self.tasks)
            if live:
                self.task_ends(live[op.pick % len(live)], op.status, op.via)
        else:
            self.cancel(op.with_result)

    def prompt(self) -> None:
        ticket = Ticket(next(self._numbers))
        self.tickets[ticket.number] = ticket
        held = self.held()
        _, effects = self.d.prompt(f"prompt-{ticket.number}", ticket.number, dt=0.001)
        answered = self.absorb(effects, "prompt")
        # The next prompt hands a held turn off at once, with the outcome it recorded.
        for number in held:
            assert number in answered, f"prompt {number} was held and not answered by the next prompt"

    def cancel(self, with_result: bool) -> None:
        held = self.held()
        waiting = [t.number for t in self.tickets.values() if not t.inserted and t.answer is None]
        active = self.active()
        if active is not None:
            active.cancelled = True
        effects = self.d.handle(ev.CancelTurn(), 0.001)
        answered = self.absorb(effects, "cancel")
        for number in held + waiting:
            assert number in answered, f"prompt {number} not answered at once by session/cancel"
            assert self.reason(number) == "cancelled"
        for number in held:  # its turn's result came: what it used is not lost
            answer = self.tickets[number].answer
            assert isinstance(answer, Reply) and answer.result.get("usage") == HELD_USAGE, answer
        if active is not None:
            assert active.number not in answered, "the cancelled turn is answered when it ends"
        if any(isinstance(e, Interrupt) for e in effects) and self.turn is not None:
            self.interrupted(with_result)

    def advance(self, seconds: float) -> None:
        d = self.d
        target = d.now + seconds
        for _ in range(1000):
            deadline = d.core.next_deadline()
            if deadline is None or deadline > target:
                break
            self.ticked(d.tick(deadline))
            assert d.core.next_deadline() != deadline or d.now > deadline, "a deadline does not move"
        else:
            raise AssertionError("the deadlines never settle")
        self.ticked(d.tick(target))

    def ticked(self, effects: list[Effect]) -> None:
        held = self.held()
        answered = self.absorb(effects, "tick")
        follow_up_runs = self.turn is not None and self.turn.follow_up and self.turn.visible
        for number in answered & set(held) if follow_up_runs else ():
            # The held turn waits for the follow-up's result: its summary is what the hold is for.
            # (A subagent whose end events were lost counts as stopped: released at once.)
            if not any(self.ended_tasks.get(t) == "lost" for t in self.tickets[number].spawned):
                self.known_bug("tick-releases-mid-follow-up")
                raise AssertionError(f"a tick answered held prompt {number} mid follow-up turn")

    # --- Claude Code ----------------------------------------------------------------------------

    def feed(self, frame: Frame) -> set[int]:
        return self.absorb(self.d.frame(frame, dt=0.001))

    def start(self, says_running: bool) -> None:
        if self.turn is not None or not self.queue:
            return
        self.turn = self.queue.popleft()
        if says_running:
            self.turn.visible = True
            self.feed(state_changed("running"))

    def spawn(self, kind: TaskKind) -> None:
        n = next(self._ids)
        task = TaskSpec(
            kind,
            f"{kind}{n:02d}",
            run_id=f"run{n:02d}",
            tool_use_id=f"toolu_{kind}{n:02d}",
            description=f"{kind} {n}",
        )
        self.feed(task.launch())
        self.tasks[task.task_id] = task
        self.feed(tasks_changed(self.level()))
        if kind == "agent":
            for number in [t.number for t in [self.active()] if t is not None] + self.held():
                self.tickets[number].spawned.append(task.task_id)
        self.feed(task.started())
        self.feed(task.hand_off())

    def end(self, ending: Ending, trailing_idle: bool) -> None:
        turn = self.turn
        assert turn is not None
        self.turn = None
        if ending == "end_turn":
            frame = result()
        elif ending == "max_tokens":
            frame = result(stop_reason="max_tokens")
        else:
            frame = result("error_during_execution", None, True, None, ["the model request failed"])
        # Claude Code says idle when nothing is queued; a prompt the result lets in is inserted
        # before that idle is read, which must not end the new prompt's turn.
        queued = bool(self.queue)
        self.settle_result(turn, frame, ending)
        if trailing_idle and not queued:
            self.feed(state_changed("idle"))

    def interrupted(self, with_result: bool) -> None:
        turn = self.turn
        assert turn is not None
        active = self.active()
        idle_only = not with_result and not turn.follow_up and active is not None and not self.queue
        self.turn = None
        if idle_only:
            # No result: Claude Code only says idle, which still ends the cancelled prompt.
            assert active is not None and active.number == turn.ticket
            active.settled, active.outcome = True, "cancelled"
            answered = self.feed(state_changed("idle"))
            assert active.number in answered, "an interrupt's idle ends the cancelled prompt"
            return
        self.settle_result(turn, interrupted_result(), "error")

    def settle_result(self, turn: CliTurn, frame: Frame, ending: Ending) -> None:
        """Feed a turn's result; a prompt with no subagent left must be answered by it."""
        if turn.follow_up:
            frame["origin"] = follow_up_origin("run")
        if self.cli != "origin" and turn.ticket is not None:
            frame["user_message_uuids"] = [self.tickets[turn.ticket].uuid]
        if turn.ticket is None:
            self.feed(frame)
            return
        ticket = self.tickets[turn.ticket]
        assert self.active() is ticket, "Claude Code answers the user messages in the order it got them"
        ticket.settled = True
        ticket.outcome = "cancelled" if ticket.cancelled else ending
        answered = self.feed(frame)
        no_subagent_left = all(self.ended_tasks.get(t) not in (None, "lost") for t in ticket.spawned)
        if no_subagent_left:
            assert ticket.number in answered, (
                f"prompt {ticket.number} has no live subagent and was not answered at its result"
            )
        elif ticket.number not in answered:
            ticket.held = True
            self.note("a turn is held")

    def task_ends(self, task_id: str, status: EndStatus, via: Via) -> None:
        task = self.tasks.pop(task_id)
        self.ended_tasks[task_id] = via
        if task.kind == "agent" and status == "completed":
            self.feed(text(f"{task_id} finished its work", parent=task.tool_use_id))
        if via in ("updated", "both"):
            self.feed(task.updated(status))
        if via in ("notification", "both"):
            self.feed(task.notification("stopped" if status == "killed" else status))
        self.feed(tasks_changed(self.level()))
        if status in ("completed", "failed"):
            self.queue.append(CliTurn(follow_up=True))

    def level(self) -> list[dict[str, Any]]:
        return [t.level_entry() for t in self.tasks.values()]

    # --- the core's answers ----------------------------------------------------------------------

    def known_bug(self, name: str) -> None:
        """A property is violated in a way ``KNOWN_BUGS`` names: discard the example in a property
        test (an example shows the bug), fail anywhere else."""
        if self.in_property and name in KNOWN_BUGS:
            self.note(f"discarded: known bug {name}")
            reject()

    def note(self, what: str) -> None:
        if self.in_property:
            event(what)

    def absorb(self, effects: list[Effect], context: str = "frame") -> set[int]:
        answered: set[int] = set()
        for effect in effects:
            if isinstance(effect, Reply | Fail):
                ticket = self.tickets.get(effect.ticket)
                assert ticket is not None, f"answer for unknown ticket {effect.ticket}"
                assert ticket.answer is None, (
                    f"prompt {effect.ticket} answered twice: {ticket.answer} {effect}"
                )
                ticket.answer = effect
                answered.add(effect.ticket)
                self.check_answer(ticket, context)
                if ticket.held:
                    self.note(f"a held turn is answered by a {context}")
            elif isinstance(effect, Query):
                number = int(effect.content[0]["text"].removeprefix("prompt-"))
                ticket = self.tickets[number]
                assert not ticket.inserted
                assert self.active() is None, "a prompt is inserted while another one runs"
                if self.held():
                    # It hands the held turn off first, as a prompt that arrives during the hold does.
                    self.known_bug("insert-while-held")
                    raise AssertionError(f"prompt {number} inserted while {self.held()} are held")
                ticket.inserted, ticket.uuid = True, effect.uuid
                turn = self.turn
                if self.cli == "uuids-taking-prompts-in" and turn and turn.follow_up and turn.ticket is None:
                    turn.ticket = number  # this follow-up turn's result will name it
                else:
                    self.queue.append(CliTurn(follow_up=False, ticket=number))
        return answered

    def check_answer(self, ticket: Ticket, context: str) -> None:
        """The stop reason its turn recorded; ``cancelled`` from session/cancel before that."""
        reason = self.reason(ticket.number)
        if context == "cancel" or not ticket.settled:
            # Before its turn ended only session/cancel may answer it (checked in cancel()).
            assert (context, reason) == ("cancel", "cancelled"), (
                f"prompt {ticket.number} answered {reason} by a {context} before its turn ended"
            )
            return
        assert reason == ticket.outcome, (
            f"prompt {ticket.number}: recorded {ticket.outcome}, answered {reason}"
        )

    def reason(self, number: int) -> str:
        answer = self.tickets[number].answer
        assert answer is not None
        if isinstance(answer, Fail):
            assert rpc_error(answer.failure).code == INTERNAL_ERROR
            return "error"
        result: Any = answer.result
        return str(result["stopReason"])

    def held(self) -> list[int]:
        return [t.number for t in self.tickets.values() if t.settled and t.answer is None]

    def active(self) -> Ticket | None:
        return next((t for t in self.tickets.values() if t.inserted and not t.settled), None)

    # --- the end -------------------------------------------------------------------------------

    def finish(self) -> None:
        """Claude Code works off its queue, every subagent ends, time passes: all answered."""
        self.work_off()
        for task in [t for t in self.tasks.values() if t.kind == "agent"]:
            self.advance(0.05)
            self.task_ends(task.task_id, "completed", "both")
            self.work_off()
        self.advance(2 * FOLLOW_UP_WAIT)
        self.work_off()
        self.advance(2 * FOLLOW_UP_WAIT)
        unanswered = [t.number for t in self.tickets.values() if t.answer is None]
        assert not unanswered, f"prompts never answered: {unanswered}"
        assert not [t for t in self.tasks.values() if t.kind == "agent"]

    def work_off(self) -> None:
        for _ in range(100):
            if self.turn is not None:
                self.advance(0.05)
                self.end("end_turn", trailing_idle=False)
            elif self.queue:
                self.advance(0.05)
                self.start(says_running=True)
            else:
                return
        raise AssertionError("Claude Code never runs out of turns")


CLIS = st.sampled_from(["uuids", "uuids-taking-prompts-in", "origin"])


def run(
    sequence: list[Op],
    expose_subagents: bool,
    cli: Cli = "uuids",
    after_each: Callable[[World], None] | None = None,
) -> World:
    world = World(expose_subagents, cli, in_property=True)
    for op in sequence:
        world.apply(op)
        if after_each is not None:
            after_each(world)
    world.finish()
    return world


SETTINGS = settings(
    max_examples=examples(250),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- properties -------------------------------------------------------------------------------------


@SETTINGS
@given(sequence=sequences(ANY_SPAWN), expose=st.booleans(), cli=CLIS)
def test_every_prompt_is_answered_once_with_its_own_outcome_and_none_wedges(
    sequence: list[Op], expose: bool, cli: Cli
) -> None:
    run(sequence, expose, cli)


@SETTINGS
@given(sequence=sequences(SHELLS_ONLY), cli=CLIS)
def test_shells_never_hold_a_turn(sequence: list[Op], cli: Cli) -> None:
    def no_shell_is_a_subagent(world: World) -> None:
        # What would hold a turn: the core counting a live shell among the turn's subagents.
        assert not world.d.core.foreground.live_subagents, "a shell counts as a subagent"

    world = run(sequence, expose_subagents=False, cli=cli, after_each=no_shell_is_a_subagent)
    no_shell_is_a_subagent(world)  # shells still run after finish()


@SETTINGS
@given(middle=sequences(ANY_SPAWN, episodes=3), expose=st.booleans(), cli=CLIS)
def test_session_cancel_answers_a_held_prompt_at_once(middle: list[Op], expose: bool, cli: Cli) -> None:
    run([*HOLD, *middle, Cancel(True)], expose, cli)


@SETTINGS
@given(middle=sequences(ANY_SPAWN, episodes=3), expose=st.booleans(), cli=CLIS)
def test_a_new_prompt_answers_a_held_one_with_its_recorded_outcome(
    middle: list[Op], expose: bool, cli: Cli
) -> None:
    run([*HOLD, *middle, Prompt()], expose, cli)


# A held turn left alone: its subagents end (or their ends are lost), follow-ups run, time passes.
RELEASES = st.lists(
    weighted((TASK_ENDS, 4), (START, 3), (OUTPUT, 1), (END, 3), (TICK, 3), (st.just(Spawn("agent")), 1)),
    max_size=20,
)


@SETTINGS
@given(
    middle=RELEASES,
    expose=st.booleans(),
    cli=CLIS,
    ending=st.sampled_from(["end_turn", "max_tokens", "error"]),
)
def test_a_held_turn_is_released_with_its_recorded_outcome(
    middle: list[Op], expose: bool, cli: Cli, ending: Ending
) -> None:
    world = run([*HOLD[:-1], End(ending, False), *middle], expose, cli)
    assert world.reason(1) == ending


# --- examples ----------------------------------------------------------------------------------------


def play(sequence: list[Op], expose_subagents: bool = False) -> World:
    world = World(expose_subagents)
    for op in sequence:
        world.apply(op)
    return world


def test_a_held_turn_is_answered_at_the_follow_up_result_after_its_subagent() -> None:
    world = play(HOLD)
    assert world.held() == [1]
    world.task_ends("agent01", "completed", "both")
    assert world.held() == [1]  # the follow-up turn's summary is still to come
    world.apply(Start(True))
    world.apply(Output())
    world.apply(Tick(FOLLOW_UP_WAIT + 1))  # a follow-up that said running may take its time
    assert world.held() == [1]
    world.apply(End("end_turn", True))
    assert world.held() == [] and world.reason(1) == "end_turn"


def test_a_held_turn_is_answered_after_the_wait_when_no_follow_up_comes() -> None:
    world = play(HOLD)
    world.task_ends("agent01", "failed", "notification")
    world.apply(Tick(FOLLOW_UP_WAIT - 0.5))
    assert world.held() == [1]
    world.apply(Tick(1.0))
    assert world.held() == [] and world.reason(1) == "end_turn"


def test_a_lost_subagent_end_is_healed_by_the_level_signal() -> None:
    world = play(HOLD, expose_subagents=True)
    world.task_ends("agent01", "killed", "lost")
    assert world.held() == [1]
    world.apply(Tick(1.0))  # past the orphan grace: stopped, and nothing follows a stop
    assert world.held() == [] and world.reason(1) == "end_turn"


def test_a_subagent_spawned_while_held_extends_the_hold() -> None:
    world = play(HOLD)
    world.task_ends("agent01", "completed", "both")
    world.apply(Start(True))
    world.apply(Spawn("agent"))  # the follow-up launches another helper
    world.apply(End("end_turn", False))
    world.apply(Tick(2 * FOLLOW_UP_WAIT))
    assert world.held() == [1]
    world.task_ends("agent02", "killed", "updated")
    assert world.held() == [] and world.reason(1) == "end_turn"


@pytest.mark.parametrize("expose", [False, True])
def test_a_turn_with_shells_only_is_answered_at_its_result(expose: bool) -> None:
    # settle_result asserts that the answer came in the call that fed the result.
    world = play(
        [Prompt(), Start(False), Spawn("shell"), Spawn("shell"), Output(), End("max_tokens", False)], expose
    )
    assert world.reason(1) == "max_tokens"
    world.task_ends("shell01", "completed", "both")
    world.apply(Prompt())  # the shell's follow-up is pending: the prompt waits, then runs
    world.finish()


def test_cancel_of_a_held_turn_sends_nothing_to_an_idle_claude_code() -> None:
    world = play(HOLD)
    effects = world.d.handle(ev.CancelTurn())
    assert effects == [Reply(1, {"stopReason": "cancelled", "usage": HELD_USAGE})]


# Product bugs the properties found, fixed since; each example pins its fix.


def test_a_prompt_sent_during_a_turn_that_is_then_held_hands_it_off() -> None:
    world = play(
        [
            Prompt(),
            Start(True),
            Spawn("agent"),
            Prompt(),
            End("end_turn", False),
            Start(True),
            Spawn("agent"),
            End("end_turn", False),
        ]
    )
    world.finish()


def test_a_held_turn_waits_for_a_follow_up_that_starts_without_a_running_state() -> None:
    world = play(HOLD)
    world.task_ends("agent01", "completed", "both")
    world.apply(Start(False))
    world.apply(Output())
    world.apply(Tick(FOLLOW_UP_WAIT + 0.5))


def test_a_held_turn_waits_for_the_running_follow_up_when_its_last_subagent_ends() -> None:
    world = play([Prompt(), Start(True), Spawn("agent"), Spawn("agent"), End("end_turn", False)])
    world.task_ends("agent01", "completed", "both")
    world.apply(Start(True))
    world.apply(Output())
    world.task_ends("agent02", "completed", "both")
    world.apply(Tick(FOLLOW_UP_WAIT + 0.5))
