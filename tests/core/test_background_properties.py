"""Property tests of the background-work rules (RFD v2) on the core's output.

Hypothesis builds a handful of background tasks of different kinds (a ``run_in_background``
Bash shell, a Bash command backgrounded mid-turn, a Monitor, a background ``Agent`` subagent, a
workflow, a task no tool started, an ``ambient`` housekeeping task), with frames shaped like the
recorded ones (``tests.support.frames``), and plays a v2 ``SessionCore`` (through
``CoreDriver``) an interleaving of their events: level signals consistent with what is live at
that point, stale level signals, duplicates of edge events, lost ``task_started`` /
``task_updated`` / ``task_notification`` events, late events of an older ``run_id``, client
cancels of whatever advertises ``cancel``, output of tailed files, drains after ``FinishTail``
(at once or later), a ``session/close``, Claude Code's death, and ticks at the core's own
deadlines and at random times, with time going forward (also past every grace period).
``Rules`` (the background rules of ``tests.support.rules``, and the checks that need to know the
tasks) reads every update as a v2 client would and checks, as they go out:

1. every ``state_update`` carries a ``background`` list;
2. an item is announced (``terminal_update`` / ``tool_call_update`` / ``subagent_update``)
   before the first snapshot that lists it;
3. a terminal's ``exitStatus`` / a tool call's final status / a child's ``idle`` goes out
   before the snapshot that removes it; nothing is listed after its final status, and nothing
   changes a final status, sends output after an exit, or still advertises ``cancel`` then;
4. each piece of work is listed at most once per snapshot; a shell is listed as its terminal,
   never as its tool call;
5. nothing about an ambient task appears (its id is in no update);
6. no exception; a cancel of what advertises ``cancel`` is accepted; ``tick`` moves the next
   deadline past ``now``; once the level signal has emptied and the grace periods have passed
   (drains done) the list is empty, the session idle, every terminal has exited and every tool
   call is final;
7. every message validates against the official v2 schema;
8. work the level signal has listed continuously for longer than the classification grace,
   that has not ended, is listed.

The same interleavings also go to a JetBrains AIR client (``play_air``): its async tasks
keep their own rules (spawned once, before anything else about them; one final state, nothing
after it), each stop by task id is answered, and every spawned task ends.

The example tests pin tricky orders, and the fixes of the product bugs the properties found.

``BG_PROPERTY_EXAMPLES`` sets the number of examples; which ones, the same every run or new
ones, is the Hypothesis profile's choice (``tests/conftest.py``).
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from claude_bg_acp.claude.conventions import KILLED_SIGNAL, ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.classifying import CLASSIFY_GRACE
from claude_bg_acp.core.effects import Effect, FinishTail, Notify, Reply, StopTask, Tail
from claude_bg_acp.core.errors import Refused
from claude_bg_acp.core.tasks import ORPHAN_GRACE
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import (
    TASKS_DIR,
    EndStatus,
    Frame,
    Kind,
    TaskSpec,
    follow_up_origin,
    result,
    state_changed,
    task_started,
    tasks_changed,
    tool_use,
)
from tests.support.properties import examples
from tests.support.rules import FINAL, TASK_FINAL, BackgroundRules, SessionView, Violation
from tests.support.schema import validate_transcript

SESSION_ID = "session-props"
TASKS_ROOT = TASKS_DIR.rsplit("/", 2)[0]
"""Where the CLI keeps task output files, up to its session id (what ``claude.conventions`` says)."""
SETTLE = 60.0
"""Seconds that are past every grace period and bound of the core."""

# --- the client's view --------------------------------------------------------------------------


@dataclass
class Rules(BackgroundRules):
    """The background rules on every update as it goes out (rules 1-4), with what needs to know
    the tasks: an ambient task appears nowhere (rule 5), a Bash tool use whose work is a process
    is never listed as its tool call, and no task is listed as two items."""

    lists: bool = True
    specs: list[TaskSpec] = field(default_factory=list)
    shells: set[str] = field(default_factory=set)
    """Tool call ids of Bash tool uses whose work is a process (listed as its terminal)."""
    ambient: set[str] = field(default_factory=set)
    most_listed: int = 0
    ever_listed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.shells = {s.tool_use_id for s in self.specs if s.is_shell and s.tool_use_id}
        self.ambient = {s.task_id for s in self.specs if s.kind == "ambient"}

    @property
    def root(self) -> SessionView:
        return self.view(SESSION_ID)

    def task_of(self, ref: str) -> TaskSpec | None:
        """The task an item id is about (ids of tasks and their tool uses nest the task id)."""
        return next((s for s in self.specs if s.task_id in ref), None)

    def see(self, session_id: str, update: dict[str, Any]) -> None:
        text = json.dumps(update)
        for task_id in self.ambient:
            if task_id in text:
                raise Violation(f"rule 5: ambient task {task_id} appears in {text}")
        super().see(session_id, update)
        if session_id == SESSION_ID and update.get("sessionUpdate") == "state_update":
            background = self.root.listed or []
            self.most_listed = max(self.most_listed, len(background))
            self.ever_listed.update(str(item.get("type")) for item in background)

    def listing(self, view: SessionView, item: dict[str, Any], background: list[dict[str, Any]]) -> None:
        ref = self.ref(item)
        if item.get("type") == "tool_call" and ref in self.shells:
            raise Violation(f"rule 4: a shell is listed as its tool call {ref}: {background}")
        spec = self.task_of(ref)
        if spec is not None:
            others = [self.ref(o) for o in background if o is not item and self.task_of(self.ref(o)) is spec]
            if others:
                raise Violation(f"rule 4: task {spec.task_id} is listed as {ref} and {others[0]}")

    def listed_tasks(self) -> set[str]:
        return {spec.task_id for item in self.root.listed or [] if (spec := self.task_of(self.ref(item)))}

    def cancellable(self) -> list[tuple[str, str]]:
        """Listed terminals and tool calls that advertise cancel: what a client may cancel."""
        return [
            (str(item["type"]), self.ref(item))
            for item in self.root.listed or []
            if item.get("type") in ("terminal", "tool_call")
            and self.root.caps.get((item["type"], self.ref(item)))
        ]


# --- scenarios ----------------------------------------------------------------------------------


@dataclass
class Step:
    """One thing that happens: an SDK frame, or an act of the session driver or the client."""

    role: str
    """A frame: ``launch``, ``hand_off``, ``started``, ``progress``, ``status``, ``bg_patch``,
    ``end``, ``level``, ``turn``. Otherwise: ``tick``, ``drain``, ``output``, ``cancel``,
    ``close``; and ``enter`` / ``leave`` (a task enters or leaves the live set) while building."""
    label: str
    frame: Frame | None = None
    task: int = -1
    arg: int = 0
    dt: float = 0.0
    current: bool = True
    """The frame names the task's current run (not an older one, and not no run at all)."""


@dataclass
class Scenario:
    specs: list[TaskSpec]
    steps: list[Step]
    drain_now: list[bool] = field(default_factory=lambda: [True])
    """Whether each ``FinishTail`` in turn is drained at once (else at a ``drain`` step or at the end)."""
    exits: list[ExitInfo | None] = field(default_factory=lambda: [None])
    """What each drain in turn says about how the command exited (cycled)."""

    def __repr__(self) -> str:
        lines = [f"{s.kind}:{s.task_id}" for s in self.specs]
        lines += [f"+{s.dt:g}s {s.label}" for s in self.steps]
        lines.append(f"drain_now={self.drain_now} exits={self.exits}")
        return "Scenario(\n  " + "\n  ".join(lines) + "\n)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


KINDS: list[Kind] = ["shell", "fg_shell", "monitor", "agent", "workflow", "nobody", "ambient"]
TOOL_CALL_KINDS = ("monitor", "agent", "workflow")
"""Kinds whose work reports through the tool call that launched it."""
NOBODY_TYPES = ["local_bash", "local_workflow", "mcp_task", "monitor_mcp", "local_agent", "remote_agent"]
AMBIENT_TYPES = ["local_agent", "monitor_ws", "local_workflow", "local_bash"]
"""Memory consolidation and skill workers (agents), auto-started watchers, housekeeping."""
SUBAGENT_TYPES = ("local_agent", "remote_agent", "in_process_teammate")
ENDS: list[tuple[str, EndStatus]] = [("completed", "completed"), ("failed", "failed"), ("killed", "stopped")]
"""How a task ends: (``task_updated`` status, ``task_notification`` status)."""
DTS = [0.0, 0.0, 0.001, 0.05, 0.2, 0.45, 0.6, 1.5, 4.0]
EXITS: list[ExitInfo | None] = [
    None,
    ExitInfo(exit_code=0, signal=None),
    ExitInfo(exit_code=3, signal=None),
    ExitInfo(exit_code=None, signal=KILLED_SIGNAL),
]


def _move_after(seq: list[Step], item: Step | None, anchor: Step | None) -> None:
    """Put ``item`` right after ``anchor`` if it comes before it."""
    if item is None or anchor is None or item not in seq or anchor not in seq:
        return
    if seq.index(item) < seq.index(anchor):
        seq.remove(item)
        seq.insert(seq.index(anchor) + 1, item)


@st.composite
def task_steps(draw: st.DrawFn, index: int, kind: Kind) -> tuple[TaskSpec, list[Step], bool]:
    """One task's own steps, in an order they may arrive in; and whether a follow-up turn comes."""
    task_id = f"t{index}{kind.replace('_', '')}"
    task_type = ""
    if kind == "nobody":
        task_type = draw(st.sampled_from(NOBODY_TYPES))
    elif kind == "ambient":
        task_type = draw(st.sampled_from(AMBIENT_TYPES))
    spec = TaskSpec(kind, task_id, task_type=task_type)

    def frame(role: str, label: str, f: Frame, current: bool = True) -> Step:
        return Step(role, f"{task_id}:{label}", f, index, current=current)

    started = frame("started", "task_started", spec.started())
    updated_end, notified_end = draw(st.sampled_from(ENDS))
    end_updated = frame("end", f"task_updated {updated_end}", spec.updated(updated_end))
    end_notified = frame("end", f"task_notification {notified_end}", spec.notification(notified_end))
    enter = Step("enter", f"{task_id}:enters the level", task=index)
    leave = Step("leave", f"{task_id}:leaves the level", task=index)
    middle = [started, end_updated, end_notified, enter, leave]
    hand_off = None
    if spec.tool_name is not None:
        hand_off = frame("hand_off", "tool_result", spec.hand_off(), current=False)  # names no run
        middle.append(hand_off)
    if kind in ("agent", "monitor", "nobody", "workflow", "ambient"):
        middle += [
            frame("progress", "task_progress", spec.progress()) for _ in range(draw(st.integers(0, 2)))
        ]
    if kind in ("workflow", "nobody", "agent"):
        for status in draw(st.lists(st.sampled_from(["paused", "running", "pending"]), max_size=3)):
            middle.append(frame("status", f"task_updated {status}", spec.updated(status)))
    bg_patch = None
    if kind == "fg_shell":
        bg_patch = frame("bg_patch", "task_updated is_backgrounded", spec.updated(backgrounded=True))
        middle.append(bg_patch)

    seq = list(draw(st.permutations(middle)))
    _move_after(seq, leave, enter)
    if bg_patch is not None:
        # Registered in the foreground, then backgrounded: only then does its tool return, does
        # it enter the level, and can it end as background work.
        _move_after(seq, bg_patch, started)
        for later in (enter, hand_off, end_updated, end_notified):
            _move_after(seq, later, bg_patch)
        _move_after(seq, leave, enter)

    # Losses of edge events (never of the level signal, which is what says a task ended).
    lossy = [end_updated, end_notified, started]
    if bg_patch is not None:
        lossy.append(bg_patch)
    for step in lossy:
        if draw(st.integers(0, 3)) == 0:
            seq.remove(step)
    # Duplicates of edge events, later on.
    for step in [s for s in seq if s.frame is not None]:
        if draw(st.integers(0, 5)) == 0:
            at = draw(st.integers(seq.index(step) + 1, len(seq)))
            seq.insert(at, Step(step.role, step.label + " (again)", step.frame, index, current=step.current))
    # A worker restart: events of an older run arrive late, after the current run is known.
    if kind != "ambient" and draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            # The older run registered first (so that the core has seen it before the newer one).
            seq.insert(0, frame("started", "task_started run00", spec.started(run_id="run00"), current=False))
        first_current = next(i for i, s in enumerate(seq) if s.current or s.role == "enter")
        late = draw(
            st.sampled_from(
                [
                    (
                        "task_notification stopped run00",
                        spec.notification("stopped", run_id="run00", reason="worker_restart"),
                    ),
                    ("task_updated killed run00", spec.updated("killed", run_id="run00")),
                    ("task_updated completed run00", spec.updated("completed", run_id="run00")),
                ]
            )
        )
        at = draw(st.integers(first_current + 1, len(seq)))
        seq.insert(at, frame("end", late[0], late[1], current=False))
    if spec.tool_name is not None:
        seq.insert(0, frame("launch", "tool_use", spec.launch(), current=False))

    ended_itself = any(s.role == "end" and s.current for s in seq) and updated_end != "killed"
    follow_up = kind != "ambient" and ended_itself and draw(st.booleans())
    return spec, seq, follow_up


def _turn(label: str, origin: dict[str, Any] | None) -> list[Step]:
    return [
        Step("turn", "session_state running", state_changed("running")),
        Step("turn", f"{label} result", result(origin=origin)),
        Step("turn", "session_state idle", state_changed("idle")),
    ]


def _between_turns(steps: list[Step], at: int) -> int:
    """``at``, or the first position after it that is not inside a turn (turns do not overlap)."""
    inside = False
    for i, step in enumerate(steps):
        if i >= at and not inside:
            return i
        if (
            step.role == "turn"
            and step.frame is not None
            and step.frame.get("subtype") == "session_state_changed"
        ):
            inside = step.frame["state"] == "running"
    return len(steps)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
    built = [draw(task_steps(i, kind)) for i, kind in enumerate(kinds)]
    specs = [spec for spec, _, _ in built]
    queues = [list(seq) for _, seq, _ in built]

    # Interleave the tasks' own steps.
    total = sum(len(q) for q in queues)
    picks = draw(st.lists(st.integers(0, len(queues) - 1), min_size=total, max_size=total))
    steps: list[Step] = []
    live: list[int] = []
    for pick in picks:
        while not queues[pick]:
            pick = (pick + 1) % len(queues)
        step = queues[pick].pop(0)
        if step.role in ("enter", "leave"):
            # A change of the live set: a level signal with the whole set live at that point.
            if step.role == "enter":
                live.append(step.task)
            else:
                live.remove(step.task)
            names = [specs[i].task_id for i in sorted(live)]
            entries = [specs[i].level_entry() for i in sorted(live)]
            step = Step("level", f"level {names}", tasks_changed(entries))
        steps.append(step)

    # The prompt's turn ends after every tool result; follow-up turns come after that.
    last_result = max((i for i, s in enumerate(steps) if s.role == "hand_off"), default=-1)
    at = draw(st.integers(last_result + 1, len(steps)))
    steps[at:at] = _turn("prompt", None)[1:]
    turn_end = at + 1
    for index, (spec, _, follow_up) in enumerate(built):
        if follow_up:
            first_end = next(
                i for i, s in enumerate(steps) if s.task == index and s.role == "end" and s.current
            )
            at = _between_turns(steps, draw(st.integers(max(turn_end, first_end) + 1, len(steps))))
            steps[at:at] = _turn(f"{spec.task_id}:follow-up", follow_up_origin(spec.run_id))

    # Stale level signals: an earlier one, delivered again later.
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(steps)))
        earlier = [s.frame for s in steps[:at] if s.role == "level" and s.frame is not None]
        if earlier:
            stale = earlier[draw(st.integers(0, len(earlier) - 1))]
            steps.insert(at, Step("level", f"stale level {[e['task_id'] for e in stale['tasks']]}", stale))

    # The session driver and the client: ticks, drains, output, cancels, maybe a close.
    acts = draw(
        st.lists(
            st.tuples(
                st.integers(0, 10_000),
                st.sampled_from(["tick", "tick", "drain", "drain", "output", "cancel", "cancel"]),
                st.integers(0, 7),
            ),
            max_size=12,
        )
    )
    for position, role, arg in acts:
        steps.insert(position % (len(steps) + 1), Step(role, f"{role} {arg}", arg=arg))
    if draw(st.integers(0, 5)) == 0:
        steps.insert(draw(st.integers(0, len(steps))), Step("close", "close"))
    if draw(st.integers(0, 5)) == 0:
        steps.insert(draw(st.integers(0, len(steps))), Step("die", "Claude Code dies"))

    steps.insert(0, Step("turn", "session_state running", state_changed("running")))
    steps.append(Step("level", "level [] (the last one)", tasks_changed([])))
    dts = draw(st.lists(st.sampled_from(DTS), min_size=len(steps), max_size=len(steps)))
    for step, dt in zip(steps, dts, strict=True):
        step.dt = dt
    drain_now = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    exits = draw(st.lists(st.sampled_from(EXITS), min_size=1, max_size=4))
    return Scenario(specs, steps, drain_now, exits)


# --- the driver ---------------------------------------------------------------------------------


@dataclass
class Truth:
    """What the harness delivered about one task (for rule 8 and the known-bug steering)."""

    in_level_since: float | None = None
    dropped: bool = False
    """It left a level signal after being in one (so it may have been ended as an orphan)."""
    ended: bool = False
    cancelled: bool = False
    backgrounded: bool = True
    foreground: bool = False
    """Registered in the foreground (``is_backgrounded: false``) and not backgrounded yet."""
    first_seen: float | None = None
    started: bool = False
    """A ``task_started`` (of any run) arrived."""
    flagged: bool = False
    """A message marking it ambient arrived."""


class Player:
    """Plays steps through a v2 ``CoreDriver`` the way the session host and a client would, and
    shows every effect to the rules as it comes out."""

    def __init__(
        self,
        specs: list[TaskSpec],
        drain_now: list[bool] | None = None,
        exits: list[ExitInfo | None] | None = None,
    ) -> None:
        self.specs = specs
        self.drain_now = drain_now or [True]
        self.exits = exits or [None]
        self.driver = CoreDriver(2, session_id=SESSION_ID, tasks_root=TASKS_ROOT)
        self.rules = Rules(specs=specs)
        self.pending: list[str] = []
        self.tailed: list[str] = []
        self.finish_tails = 0
        self.late_drains = 0
        self.cancels = 0
        self.armed: list[int] = []
        """Cancels waiting for something that advertises cancel."""
        self.handed_off: set[str] = set()
        self.closed = False
        self.died = False
        """Claude Code died (closed too: nothing more is expected of it)."""
        self.truth = {s.task_id: Truth(backgrounded=s.kind != "fg_shell") for s in specs}
        self.feed(self.driver.prompt("go", dt=0.0)[1])

    @property
    def now(self) -> float:
        return self.driver.now

    @property
    def effects(self) -> list[Effect]:
        return self.driver.effects

    @property
    def updates(self) -> list[dict[str, Any]]:
        """Every update of the session, as sent."""
        return self.driver.updates()

    # --- effects ----------------------------------------------------------------------------------

    def feed(self, effects: list[Effect]) -> None:
        at_once: list[str] = []
        for effect in effects:
            if isinstance(effect, Notify):
                self.rules.see(effect.session_id, effect.update.wire())
            elif isinstance(effect, Tail):
                self.tailed.append(effect.task_id)
            elif isinstance(effect, FinishTail):
                now = self.drain_now[self.finish_tails % len(self.drain_now)]
                self.finish_tails += 1
                (at_once if now else self.pending).append(effect.task_id)
        for task_id in at_once:
            self.drain(task_id)

    def drain(self, task_id: str) -> None:
        """The tailer read the file to its end (nothing more in it)."""
        exit_info = self.exits[self.finish_tails % len(self.exits)]
        self.feed(self.driver.drained(task_id, b"", exit_info))

    # --- time -------------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        self.feed(self.driver.tick(now))
        deadline = self.driver.core.next_deadline()
        if deadline is not None and deadline <= self.now:
            raise Violation(
                f"rule 6: after tick({self.now}) the next deadline is {deadline}: the ticker spins"
            )
        self.check_listed()

    def advance(self, dt: float) -> None:
        """``CoreDriver.advance``, with the checks of ``tick`` at each deadline on the way."""
        target = self.now + dt
        while (deadline := self.driver.core.next_deadline()) is not None and deadline <= target:
            self.tick(deadline)  # raises if the deadline does not move
        self.driver.now = target

    # --- steps ------------------------------------------------------------------------------------

    def play(self, steps: list[Step]) -> None:
        for step in steps:
            self.advance(step.dt)
            self.step(step)
        self.settle()

    def step(self, step: Step) -> None:
        if step.frame is not None:
            if not self.died:  # a dead Claude Code says nothing more
                self.send(step)
        elif step.role == "tick":
            self.tick(self.now)
        elif step.role == "drain" and self.pending:
            self.late_drains += 1
            self.drain(self.pending.pop(step.arg % len(self.pending)))
        elif step.role == "output" and self.tailed:
            task_id = self.tailed[step.arg % len(self.tailed)]
            data = b"line %d\n\xff" % step.arg
            if step.arg % 2:
                self.feed(self.driver.output(task_id, data))
            else:
                self.feed(self.driver.handle(ev.OutputReplaced(task_id, data)))
        elif step.role == "cancel":
            self.armed.append(step.arg)
        elif step.role == "close" and not self.closed:
            self.closed = True
            self.feed(self.driver.handle(ev.Close()))
        elif step.role == "die" and not self.closed:
            self.closed = self.died = True  # what it ran went with it: children end idle, work final
            self.feed(self.driver.handle(ev.ClaudeDied("Claude Code exited")))
        while self.armed and self.cancel(self.armed[0]):
            self.armed.pop(0)

    def send(self, step: Step) -> None:
        assert step.frame is not None
        self.track(step)
        self.feed(self.driver.frame(step.frame, dt=0.0))

    def cancel(self, arg: int) -> bool:
        """The client cancels something that advertises cancel, if anything does."""
        targets = self.rules.cancellable()
        if not targets:
            return False
        kind, ref = targets[arg % len(targets)]
        request = (
            ev.CancelTerminal(SESSION_ID, ref) if kind == "terminal" else ev.CancelToolCall(SESSION_ID, ref)
        )
        try:
            effects = self.driver.handle(request)
        except Refused as exc:
            raise Violation(
                f"rule 6: cancel of {kind} {ref}, which advertises cancel, refused: {exc}"
            ) from exc
        spec = self.rules.task_of(ref)
        if spec is not None:
            self.truth[spec.task_id].cancelled = True
        self.cancels += 1
        self.feed(effects)
        return True

    def track(self, step: Step) -> None:
        frame = step.frame
        assert frame is not None
        if step.role == "level":
            present = {entry["task_id"] for entry in frame["tasks"]}
            for spec in self.specs:
                truth = self.truth[spec.task_id]
                if spec.task_id in present:
                    truth.first_seen = self.now if truth.first_seen is None else truth.first_seen
                    truth.flagged = truth.flagged or spec.kind == "ambient"
                    if truth.in_level_since is None and not truth.dropped:
                        truth.in_level_since = self.now
                elif truth.in_level_since is not None:
                    truth.in_level_since, truth.dropped = None, True
            return
        if step.task < 0:
            return
        spec = self.specs[step.task]
        truth = self.truth[spec.task_id]
        if step.role != "launch" and truth.first_seen is None:
            truth.first_seen = self.now
        if step.role == "started":
            truth.started = True
        if spec.kind == "ambient" and frame.get("ambient"):
            truth.flagged = True
        if step.role == "hand_off":
            self.handed_off.add(str(spec.tool_use_id))
        if step.role == "started" and spec.kind == "fg_shell" and not truth.backgrounded:
            truth.foreground = True
        if step.role in ("bg_patch", "hand_off"):
            truth.backgrounded, truth.foreground = True, False
        if step.role == "end" and step.current:
            truth.ended, truth.foreground = True, False

    def check_listed(self) -> None:
        """Rule 8: what the level has listed for a while, and that has not ended, is listed."""
        if self.closed:
            return
        listed = self.rules.listed_tasks()
        for spec in self.specs:
            truth = self.truth[spec.task_id]
            if (
                spec.kind != "ambient"
                and truth.in_level_since is not None
                and self.now >= truth.in_level_since + CLASSIFY_GRACE
                and not (truth.ended or truth.cancelled or truth.dropped)
                and truth.backgrounded
                and spec.task_id not in listed
            ):
                raise Violation(
                    f"rule 8: {spec.task_id} is in the level since {truth.in_level_since} and not listed "
                    f"at {self.now}: {self.rules.root.listed}"
                )

    def settle(self) -> None:
        """Nothing more comes from Claude Code: drains finish and every grace period passes."""
        for _ in range(10):
            while self.pending:
                self.drain(self.pending.pop(0))
            self.advance(SETTLE)
            if self.closed and not self.driver.core.settled:
                self.feed(self.driver.handle(ev.CloseTimedOut()))
            if not self.pending:
                break
        self.tick(self.now)


def check_settled(player: Player) -> None:
    """Rule 6: nothing wedges."""
    rules = player.rules.root
    if rules.listed != []:
        raise Violation(f"rule 6: the list is not empty at the end: {rules.listed}")
    if rules.last_state != "idle":
        raise Violation(f"rule 6: the session is {rules.last_state} at the end")
    if rules.terminals - rules.exited:
        raise Violation(
            f"rule 6: terminals without exitStatus at the end: {sorted(rules.terminals - rules.exited)}"
        )
    unfinished = {call: status for call, status in rules.tool_status.items() if status not in FINAL}
    if unfinished:
        raise Violation(f"rule 6: tool calls without a final status at the end: {unfinished}")
    running = {child: state for child, state in rules.children.items() if state != "idle"}
    if running:
        raise Violation(f"rule 6: subagents not idle at the end: {running}")


_VALID: set[str] = set()
"""Notifications already validated (validation is slow, and the same ones recur)."""


def check_schema(effects: list[Effect]) -> None:
    """Rule 7: the official v2 schema (strict) accepts every message."""
    agent_lines, client_lines = as_jsonrpc(effects)
    keys = [json.dumps(line, sort_keys=True) for line in agent_lines]
    fresh = [line for line, key in zip(agent_lines, keys, strict=True) if "id" in line or key not in _VALID]
    violations = validate_transcript(fresh, client_lines, 2)
    if violations:
        raise Violation("rule 7: " + "\n".join(violations[:5]))
    _VALID.update(keys)


def play(scenario: Scenario) -> Player:
    player = Player(scenario.specs, scenario.drain_now, scenario.exits)
    player.play(scenario.steps)
    check_settled(player)
    check_schema(player.effects)
    return player


EXAMPLES = int(os.environ.get("BG_PROPERTY_EXAMPLES", examples(500)))


def explore(examples: int) -> Any:
    """How the properties are explored: ``examples`` scenarios (pinned or new, as the profile
    says)."""
    return settings(
        max_examples=examples,
        deadline=None,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@explore(EXAMPLES)
@given(scenarios())
def test_background_rules_hold_for_any_interleaving(scenario: Scenario) -> None:
    player = play(scenario)
    for kind in sorted(player.rules.ever_listed):
        event(f"listed a {kind}")
    event(f"most items listed at once: {min(player.rules.most_listed, 3)}")
    event(f"cancels accepted: {min(player.cancels, 2)}")
    event(f"drains done later: {min(player.late_drains, 2)}")
    event(f"closed: {player.closed}")
    event(f"Claude Code died: {player.died}")


# --- the same interleavings through JetBrains AIR -------------------------------------------------


def play_air(scenario: Scenario) -> tuple[BackgroundRules, int]:
    """Plays a scenario to an AIR client (async tasks and draft children; v1, so no list, no
    terminals and nothing to drain), which stops an open async task by its id where the v2
    client cancels an item. Checks as it goes: the background rules with AIR's (``rules``,
    rule 6 and 7), every stop is answered (``stopped: true`` exactly when it sent
    ``stop_task``), and at the end every message validates (AIR's own updates against its
    contract), every spawned task has its final state and no ambient task was spawned. Returns
    the rules' view and how many stops were sent."""
    driver = CoreDriver.for_client("air", session_id=SESSION_ID, tasks_root=TASKS_ROOT)
    rules = BackgroundRules()
    tasks = rules.view(SESSION_ID).tasks

    def feed(effects: list[Effect]) -> list[Effect]:
        for effect in effects:
            if isinstance(effect, Notify):
                rules.see(effect.session_id, effect.update.wire())
        return effects

    feed(driver.prompt("go", dt=0.0)[1])
    closed, stops = False, 0
    for step in scenario.steps:
        feed(driver.advance(step.dt))
        if step.frame is not None:
            feed(driver.frame(step.frame, dt=0.0))
        elif step.role == "tick":
            feed(driver.tick())
        elif step.role == "cancel" and (
            open_tasks := sorted(t for t, s in tasks.items() if s not in TASK_FINAL)
        ):
            ticket, effects = driver.stop_task(open_tasks[step.arg % len(open_tasks)])
            (answer,) = [e.result for e in feed(effects) if isinstance(e, Reply) and e.ticket == ticket]
            sent = any(isinstance(e, StopTask) for e in effects)
            if answer != {"stopped": sent}:
                raise Violation(f"the stop answered {answer} for {effects}")
            stops += sent
        elif step.role == "close" and not closed:
            closed = True
            feed(driver.handle(ev.Close()))
    for _ in range(3):
        feed(driver.advance(SETTLE))
        if closed and not driver.core.settled:
            feed(driver.handle(ev.CloseTimedOut()))
    unfinished = {task: state for task, state in tasks.items() if state not in TASK_FINAL}
    if unfinished:
        raise Violation(f"async tasks without a final state at the end: {unfinished}")
    ambient = {spec.task_id for spec in scenario.specs if spec.kind == "ambient"} & set(tasks)
    if ambient:
        raise Violation(f"ambient tasks were spawned: {ambient}")
    agent_lines, client_lines = as_jsonrpc(driver.effects, driver.requests)
    violations = validate_transcript(agent_lines, client_lines, 1, air=True)
    if violations:
        raise Violation("\n".join(violations[:5]))
    return rules, stops


@explore(EXAMPLES // 2)
@given(scenarios())
def test_air_async_tasks_end_once_for_any_interleaving(scenario: Scenario) -> None:
    rules, stops = play_air(scenario)
    event(f"async tasks: {min(len(rules.view(SESSION_ID).tasks), 3)}")
    event(f"stops sent: {min(stops, 2)}")
    event(f"children: {min(len(rules.drafts), 2)}")


# --- examples -----------------------------------------------------------------------------------


def drive(specs: list[TaskSpec], script: list[tuple[float, Frame | str]], settle: bool = True) -> Player:
    """Plays ``(time, frame)`` pairs (or ``(time, "tick")``) with every rule checked strictly."""
    player = Player(specs)
    for at, what in script:
        player.advance(max(0.0, at - player.now))
        if isinstance(what, str):
            assert what == "tick"
            player.tick(at)
        else:
            role, task = role_of(specs, what)
            player.send(Step(role, role, what, task))
    if settle:
        if not any(not isinstance(what, str) and what["type"] == "result" for _, what in script):
            # The turn those tool uses belong to ends, as every turn of Claude Code does.
            player.send(Step("turn", "turn", result(), -1))
        player.settle()
        check_settled(player)
    check_schema(player.effects)
    return player


def role_of(specs: list[TaskSpec], frame: Frame) -> tuple[str, int]:
    """What a hand-written frame is to the player, and the index of the task it is about."""
    ids = {s.task_id: i for i, s in enumerate(specs)} | {s.tool_use_id: i for i, s in enumerate(specs)}
    if frame["type"] == "assistant":
        return "launch", ids.get(frame["message"]["content"][0]["id"], -1)
    if frame["type"] == "user":
        return "hand_off", ids.get(frame["message"]["content"][0]["tool_use_id"], -1)
    if frame["type"] == "result" or frame.get("subtype") == "session_state_changed":
        return "turn", -1
    subtype, task = frame["subtype"], ids.get(frame.get("task_id"), -1)
    if subtype == "background_tasks_changed":
        return "level", -1
    status = (frame.get("patch") or {}).get("status")
    if subtype == "task_notification" or status in ("completed", "failed", "killed"):
        return "end", task
    if subtype == "task_started":
        return "started", task
    return ("bg_patch" if "is_backgrounded" in (frame.get("patch") or {}) else "status"), task


def updates_for(player: Player, ref: str) -> list[dict[str, Any]]:
    return [u for u in player.updates if ref in (u.get("terminalId"), u.get("toolCallId"))]


def snapshots(player: Player) -> list[dict[str, Any]]:
    return [u for u in player.updates if u["sessionUpdate"] == "state_update"]


def test_level_signal_before_task_started() -> None:
    """The level names the shell first; ``task_started`` (naming the Bash tool use) follows."""
    shell = TaskSpec("shell", "t0shell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.01, tasks_changed([shell.level_entry()])),
            (0.02, shell.started()),
            (0.03, shell.hand_off()),
            (0.04, result()),
            (2.0, shell.updated("completed")),
            (2.0, shell.notification("completed")),
            (2.0, tasks_changed([])),
        ],
    )
    terminal = updates_for(player, "t0shell")
    assert terminal[0]["command"] == shell.tool_input()["command"]
    assert terminal[0]["capabilities"] == {"cancel": {}}
    assert terminal[-1]["exitStatus"] == {"exitCode": 0, "signal": None}
    bash = updates_for(player, shell.tool_use_id or "")
    assert bash[-1]["status"] == "completed"
    assert {"type": "terminal", "terminalId": "t0shell"} in bash[-1]["content"]
    assert [{"type": "terminal", "terminalId": "t0shell"}] in [s["background"] for s in snapshots(player)]


def test_level_signal_long_before_task_started() -> None:
    """``task_started`` is late: the shell is listed from the level alone, as one terminal."""
    shell = TaskSpec("shell", "t0shell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.0, tasks_changed([shell.level_entry()])),
            (1.0, "tick"),
            (1.1, shell.started()),
            (1.2, shell.hand_off()),
            (1.3, result()),
            (3.0, shell.notification("failed")),
            (3.0, tasks_changed([])),
        ],
    )
    assert player.rules.root.terminals == {"t0shell"}
    assert updates_for(player, "t0shell")[-1]["exitStatus"] == {"exitCode": 3, "signal": None}
    assert updates_for(player, shell.tool_use_id or "")[-1]["status"] == "completed"


def test_notification_after_the_orphan_was_finalized() -> None:
    """The task leaves the level with no end event; after the grace it ends, how unknown; the
    notification that comes later corrects the terminal's exit status, and lists nothing."""
    shell, monitor = TaskSpec("shell", "t0shell"), TaskSpec("monitor", "t1monitor")
    both = [shell.level_entry(), monitor.level_entry()]
    player = drive(
        [shell, monitor],
        [
            (0.0, shell.launch()),
            (0.0, monitor.launch()),
            (0.0, tasks_changed(both)),
            (0.0, shell.started()),
            (0.0, monitor.started()),
            (0.01, shell.hand_off()),
            (0.01, monitor.hand_off()),
            (0.02, result()),
            (1.0, tasks_changed([])),
            (1.0 + ORPHAN_GRACE + 0.1, "tick"),
        ],
        settle=False,
    )
    assert player.rules.root.listed == []
    # How it ended is unknown: an exit status with no code and no signal.
    assert updates_for(player, "t0shell")[-1]["exitStatus"] == {}
    assert player.rules.root.tool_status[monitor.tool_use_id or ""] == "completed"
    sent = len(player.updates)
    for frame in (shell.notification("completed"), monitor.notification("completed")):
        role, task = role_of([shell, monitor], frame)
        player.send(Step(role, "late", frame, task))
    late = player.updates[sent:]
    assert late == [
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "t0shell",
            "exitStatus": {"exitCode": 0, "signal": None},
        }
    ]
    player.settle()
    check_settled(player)
    check_schema(player.effects)


def test_bash_backgrounded_mid_turn() -> None:
    """A foreground Bash is not listed; ``patch.is_backgrounded: true`` moves it to the list."""
    shell = TaskSpec("fg_shell", "t0fgshell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.1, shell.started()),
            (0.2, shell.updated(backgrounded=True)),
            (0.2, tasks_changed([shell.level_entry()])),
            (0.2, shell.hand_off()),
            (0.3, result()),
            (2.0, shell.updated("killed")),
            (2.0, shell.notification("stopped")),
            (2.0, tasks_changed([])),
        ],
    )
    lists = [s["background"] for s in snapshots(player)]
    terminal = updates_for(player, shell.task_id)
    assert terminal[0]["command"] == shell.tool_input()["command"]
    assert [{"type": "terminal", "terminalId": shell.task_id}] in lists
    assert all(item["type"] == "terminal" for items in lists for item in items)
    assert terminal[-1]["exitStatus"] == {"exitCode": None, "signal": KILLED_SIGNAL}
    assert updates_for(player, shell.tool_use_id or "")[-1]["status"] == "completed"


def test_paused_workflow_is_paused_then_in_progress() -> None:
    workflow = TaskSpec("workflow", "t0workflow")
    call = workflow.tool_use_id or ""
    player = drive(
        [workflow],
        [
            (0.0, workflow.launch()),
            (0.0, tasks_changed([workflow.level_entry()])),
            (0.0, workflow.started()),
            (0.1, workflow.hand_off()),
            (0.2, result()),
            (1.0, workflow.updated("paused")),
            (2.0, workflow.updated("running")),
            (3.0, workflow.updated("completed")),
            (3.0, workflow.notification("completed")),
            (3.0, tasks_changed([])),
        ],
    )
    statuses = [u["status"] for u in updates_for(player, call) if "status" in u]
    assert statuses[-3:] == ["paused", "in_progress", "completed"]
    listed = [s["background"] for s in snapshots(player)]
    assert [{"type": "tool_call", "toolCallId": call}] in listed
    # Paused work stays listed: the list only changes when the workflow ends.
    paused_at = next(i for i, u in enumerate(player.updates) if u.get("status") == "paused")
    ended_at = next(
        i
        for i, u in enumerate(player.updates)
        if u.get("status") == "completed" and u.get("toolCallId") == call
    )
    lists_until_the_end = [
        u["background"] for u in player.updates[:ended_at] if u["sessionUpdate"] == "state_update"
    ]
    lists_before_the_pause = [
        u["background"] for u in player.updates[:paused_at] if u["sessionUpdate"] == "state_update"
    ]
    # The list in force when it paused, and every one sent while paused or resumed.
    in_force = lists_until_the_end[max(len(lists_before_the_pause) - 1, 0) :]
    assert in_force and all(items == [{"type": "tool_call", "toolCallId": call}] for items in in_force)


def test_ended_shell_is_removed_with_running_for_its_follow_up() -> None:
    """Finished work that starts a follow-up turn is removed by a snapshot that says running."""
    shell = TaskSpec("shell", "t0shell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.0, tasks_changed([shell.level_entry()])),
            (0.0, shell.started()),
            (0.0, shell.hand_off()),
            (0.1, result()),
            (0.1, state_changed("idle")),
            (2.0, shell.updated("completed")),
            (2.0, shell.notification("completed")),
            (2.0, tasks_changed([])),
            (2.01, state_changed("running")),
            (2.1, result(origin=follow_up_origin())),
            (2.1, state_changed("idle")),
        ],
    )
    states = snapshots(player)
    removal = next(
        now for before, now in itertools.pairwise(states) if before["background"] and not now["background"]
    )
    assert removal["state"] == "running"


def test_a_foreground_task_does_not_make_the_ticker_spin() -> None:
    """A foreground subagent is live but not background work: the deadline must still move."""
    agent = TaskSpec("agent", "t0agent")
    player = drive([agent], [(0.0, agent.launch()), (0.0, agent.started(backgrounded=False))], settle=False)
    player.tick(1.0)
    player.tick(5.0)
    assert player.rules.root.listed == []


# --- product bugs the properties found, fixed since ---------------------------------------------
# Each example pins one fix (B1 to B10; there never was a B4): what once went wrong, and what must
# hold instead, besides every rule checked on the way.


def final_statuses(player: Player, tool_call_id: str) -> list[str]:
    return [str(u["status"]) for u in updates_for(player, tool_call_id) if u.get("status") in FINAL]


def test_b1_shell_hand_off_before_its_task_events() -> None:
    """Once, a Bash hand-off that came before the level signal and ``task_started`` made the
    shell a tool call. It must be a terminal from the hand-off on: the Bash call completes,
    pointing at it, the terminal is what is listed, and it exits."""
    shell = TaskSpec("shell", "t0shell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.0, shell.hand_off()),
            (0.0, tasks_changed([shell.level_entry()])),
            (1.0, shell.notification("completed")),
            (1.0, tasks_changed([])),
        ],
    )
    root = player.rules.root
    assert root.terminals == root.exited == {"t0shell"}
    assert root.shell_calls == {shell.tool_use_id} and root.tool_status == {shell.tool_use_id: "completed"}
    assert player.rules.ever_listed == {"terminal"}


def test_b2_monitor_ends_before_its_tool_result() -> None:
    """Once, a Monitor whose task ended before its tool result came got two final statuses:
    ``failed`` from its task's end, then another from the result. Its tool call must end once,
    as its task did."""
    monitor = TaskSpec("monitor", "t0monitor")
    player = drive(
        [monitor],
        [
            (0.0, monitor.launch()),
            (0.0, monitor.started()),
            (0.0, monitor.notification("failed")),
            (0.0, tasks_changed([])),
            (0.01, monitor.hand_off()),
        ],
    )
    assert final_statuses(player, str(monitor.tool_use_id)) == ["failed"]


def test_b3_workflow_started_after_the_classification_grace() -> None:
    """Once, a workflow known from the level alone past the grace got a tool call of ours, and
    when ``task_started`` then named its launching tool call, that one stayed ``in_progress``,
    advertising a cancel that was refused, forever. Both calls must end (the launching one with
    its own result, ours with the task), and nothing may advertise cancel at the end."""
    workflow = TaskSpec("workflow", "t0workflow")
    player = drive(
        [workflow],
        [
            (0.0, workflow.launch()),
            (0.0, tasks_changed([workflow.level_entry()])),
            (0.6, "tick"),
            (0.7, workflow.started()),
            (0.7, workflow.hand_off()),
            (0.8, result()),
            (2.0, workflow.notification("completed")),
            (2.0, tasks_changed([])),
        ],
    )
    root = player.rules.root
    assert root.tool_status == {workflow.tool_use_id: "completed", "task-t0workflow": "completed"}
    assert not any(root.caps.values())


def test_b5_backgrounded_bash_without_its_patch() -> None:
    """Once, a Bash backgrounded mid-turn whose ``is_backgrounded`` patch was lost was never
    listed, though its tool result says it runs in the background. The result alone must make
    it a listed terminal."""
    shell = TaskSpec("fg_shell", "t0fgshell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.0, shell.started()),
            (0.1, shell.hand_off()),
            (0.1, tasks_changed([shell.level_entry()])),
        ],
        settle=False,
    )
    assert player.rules.root.listed == [{"type": "terminal", "terminalId": "t0fgshell"}]


def test_b6_late_event_of_an_unseen_older_run() -> None:
    """Once, run ids were compared by arrival, not by their string order: a late
    ``task_notification`` of an older run never seen (a worker restart) ended the current run.
    The current run's terminal must stay listed, and not exit."""
    shell = TaskSpec("shell", "t0shell", run_id="run02")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.0, tasks_changed([shell.level_entry()])),
            (0.0, shell.started()),
            (0.0, shell.hand_off()),
            (0.1, shell.notification("stopped", run_id="run01", reason="worker_restart")),
        ],
        settle=False,
    )
    assert player.rules.root.listed == [{"type": "terminal", "terminalId": "t0shell"}]
    assert player.rules.root.exited == set()


def test_b7_resumed_subagent_is_listed_again() -> None:
    """Once, a resumed task (the same ``task_id``, a new ``run_id`` after its end) was never
    listed again. The child session must run again, and be listed again."""
    agent = TaskSpec("agent", "t0agent")
    send_id = "toolu_t0agent_send"
    resumed = task_started(
        "t0agent",
        "run02",
        agent.description,
        "local_agent",
        tool_use_id=send_id,
        is_backgrounded=True,
        subagent_type="general-purpose",
    )
    player = drive(
        [agent],
        [
            (0.0, agent.launch()),
            (0.0, tasks_changed([agent.level_entry()])),
            (0.0, agent.started()),
            (0.0, agent.hand_off()),
            (0.1, result()),
            (1.0, agent.notification("completed")),
            (1.0, tasks_changed([])),
            (
                2.0,
                tool_use(send_id, "SendMessage", {"to": "t0agent", "message": "one more thing"}),
            ),
            (2.0, resumed),
            (2.0, tasks_changed([agent.level_entry(run_id="run02")])),
            (3.0, "tick"),
        ],
        settle=False,
    )
    assert player.rules.root.children == {"t0agent": "running"}
    assert player.rules.root.listed == [{"type": "subagent", "sessionId": "t0agent"}]


def test_b8_ambient_task_seen_first_by_its_progress() -> None:
    """Once, an ambient task first seen without its ``ambient`` flag (by a ``task_progress``) was
    classified after the grace: announced, and listed forever. Nothing may ever name it."""
    ambient = TaskSpec("ambient", "t0ambient")
    player = drive(
        [ambient],
        [
            (0.0, ambient.progress()),
            (0.6, "tick"),
            (0.7, ambient.started()),
            (0.7, tasks_changed([ambient.level_entry()])),
            (2.0, ambient.notification("completed")),
            (2.0, tasks_changed([])),
        ],
    )
    assert not [u for u in player.updates if "t0ambient" in json.dumps(u)]
    assert player.rules.ever_listed == set()


def test_b9_subagent_without_task_started() -> None:
    """Once, a background subagent that ``task_started`` did not name within the classification
    grace (the event late or lost) was hidden for good: never listed while it ran. Its tool
    result is enough: it must be a child session, listed while it runs, idle at its end."""
    agent = TaskSpec("agent", "t0agent")
    player = drive(
        [agent],
        [
            (0.0, agent.launch()),
            (0.0, tasks_changed([agent.level_entry()])),
            (0.0, agent.progress()),
            (0.01, agent.hand_off()),
            (0.1, result()),
            (1.0, "tick"),
            (2.0, agent.notification("completed")),
            (2.0, tasks_changed([])),
        ],
    )
    assert player.rules.ever_listed == {"subagent"}
    assert player.rules.root.children == {"t0agent": "idle"}


def test_b10_bash_backgrounded_after_the_grace() -> None:
    """Once, a foreground Bash backgrounded later than the classification grace (Ctrl+B after a
    few seconds) was hidden for good: never listed. Once backgrounded it must be a listed
    terminal, which exits."""
    shell = TaskSpec("fg_shell", "t0fgshell")
    player = drive(
        [shell],
        [
            (0.0, shell.launch()),
            (0.1, shell.started()),
            (3.0, shell.updated(backgrounded=True)),
            (3.0, tasks_changed([shell.level_entry()])),
            (3.0, shell.hand_off()),
            (3.5, "tick"),
            (5.0, shell.notification("completed")),
            (5.0, tasks_changed([])),
        ],
    )
    assert player.rules.ever_listed == {"terminal"}
    assert player.rules.root.terminals == player.rules.root.exited == {"t0fgshell"}
