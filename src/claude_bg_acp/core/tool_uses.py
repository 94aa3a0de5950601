"""Tool uses: the one record of every tool call's lifecycle, whichever transcript it is in.

A tool use becomes an ACP tool call as soon as its block starts streaming. The model's ids
are unique across the main conversation and its subagents, so one index serves every
transcript; each entry remembers the session it belongs to (a subagent finds the session that
launched it through it). Should the model use an id again in a new message, that is a new
tool call with an id of its own, never a final one reopened. Its lifecycle:

=============================  ============  ==============================================  =============
tool use                       trigger       what happens                                    next
=============================  ============  ==============================================  =============
(unknown)                      ``STARTS``    its block starts streaming                      ``STREAMING``
(unknown), ``STREAMING``       ``INPUT``     the complete assistant message gives its input  ``WAITING``
``WAITING``                    ``BEGIN``     it runs: its permission was granted, a task     ``RUNNING``
                                             started for it, or ``START_GRACE`` passed and
                                             no question came for it
``STREAMING``, ``WAITING``,    ``DETACH``    background work reports through it (a Monitor,  ``DETACHED``
``RUNNING``, ``DETACHED``                    a workflow, a scheduled wakeup)
``STREAMING``, ``WAITING``,    ``FINISH``    its result; the work it reports (detached)      ``FINAL``
``RUNNING``, ``DETACHED``                    ended
``STREAMING``, ``WAITING``,    ``CUT``       its turn was cancelled or failed; Claude Code   ``FINAL``
``RUNNING``                                  died; the session closed
=============================  ============  ==============================================  =============

A call is ``pending`` until it runs (the prompt lifecycle RFD: "pending = awaiting approval").
Claude Code says when a tool's permission is asked (``can_use_tool``, which comes before the tool
runs) and when it is granted, but nothing when a tool that asks nothing starts; its hooks do not
tell either (``PreToolUse`` runs before the permission check, ``PostToolUse`` after the tool).
So a ``WAITING`` call begins at the first of: its question allowed; a task started for it (a
shell, a subagent); ``START_GRACE`` after its input with no question for it (the time is passed
in, ``due``). A call asked about never begins by the grace, only by its answer (a denial or a
withdrawal leaves it ``pending`` until its result or cut ends it). A question that comes after
the grace (a slow ``PreToolUse`` hook of the user's, a check slower than the grace) finds the
call ``in_progress`` already, and it stays so: statuses only move forward.

A ``FINAL`` tool call never changes again (a late result or message is ignored), and only the
work a ``DETACHED`` one reports for ends it. A result that handed work off is taken once: the
same result again (an SDK event delivered twice) changes nothing. The session core moves tool
uses through these phases; what each step looks like is the presenter's business.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal

from claude_bg_acp.claude import file_tools
from claude_bg_acp.claude.conventions import SHELL_TOOLS, ExitInfo, shell_result
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.transcript import Image

START_GRACE = 2.0
"""Seconds after its input that a call no question came for begins (``in_progress``). Claude Code
asks ``can_use_tool`` 20 to 660 ms after the input's assistant message (the longest seen on a
loaded machine, ``scripts/bench_start_grace.py``): three times that, and no more, since a call
that asks nothing shows ``pending`` while the grace lasts."""


class ToolUsePhase(enum.Enum):
    STREAMING = "streaming"
    WAITING = "waiting"
    RUNNING = "running"
    DETACHED = "detached"
    FINAL = "final"


class ToolUseTrigger(enum.Enum):
    STARTS = "starts"
    INPUT = "input"
    BEGIN = "begin"
    DETACH = "detach"
    FINISH = "finish"
    CUT = "cut"


STREAMING, WAITING, RUNNING, DETACHED, FINAL = ToolUsePhase
TOOL_USES: Transitions[ToolUsePhase, ToolUseTrigger] = Transitions.of(
    "tool use",
    ToolUsePhase,
    ToolUseTrigger,
    ((None,), ToolUseTrigger.STARTS, STREAMING),
    ((None, STREAMING), ToolUseTrigger.INPUT, WAITING),
    ((WAITING,), ToolUseTrigger.BEGIN, RUNNING),
    ((STREAMING, WAITING, RUNNING, DETACHED), ToolUseTrigger.DETACH, DETACHED),
    ((STREAMING, WAITING, RUNNING, DETACHED), ToolUseTrigger.FINISH, FINAL),
    ((STREAMING, WAITING, RUNNING), ToolUseTrigger.CUT, FINAL),
)


@dataclass
class ToolUse:
    tool_use_id: str
    """The model's id of the tool use."""
    name: str
    tool_input: dict[str, Any]
    session_id: str
    """The transcript (root or subagent session) the tool use belongs to."""
    phase: ToolUsePhase
    launched_by: str | None = None
    """For a subagent's own tool use, the Agent tool use that launched the subagent."""
    call_id: str = ""
    """The tool call's id on the wire: the model's id, unless the model used that id before."""
    message: str | None = None
    """The assistant message that gave its input (None while only streamed)."""
    handed_off: bool = False
    """Its result handed its work off to the background (or scheduled it)."""
    scheduled: bool = False
    """It only schedules work."""
    start_by: float | None = None
    """When a ``WAITING`` call no question came for begins (None: only a positive sign starts it)."""

    def __post_init__(self) -> None:
        self.call_id = self.call_id or self.tool_use_id

    @property
    def final(self) -> bool:
        return self.phase is ToolUsePhase.FINAL

    @property
    def shell(self) -> bool:
        """It runs a shell command (in the foreground, or handed to a background shell)."""
        return self.name in SHELL_TOOLS


# --- what happened to a tool call, for the presenter ------------------------------------------


@dataclass(frozen=True)
class ToolCallStarted:
    """Its block started streaming: a ``pending`` tool call with a title from its name."""

    session_id: str
    tool_call_id: str
    name: str
    shell: bool


@dataclass(frozen=True)
class ToolCallRunning:
    """Its input is known: ``in_progress``, or ``pending`` while it ``waits`` to run (or when it
    is work that is only scheduled); ``first`` when the client has not seen it yet."""

    session_id: str
    tool_call_id: str
    name: str
    tool_input: dict[str, Any]
    first: bool
    shell: bool
    pending: bool = False
    waits: bool = False


@dataclass(frozen=True)
class ToolCallBegan(ToolCallRunning):
    """It waited, and runs now (``in_progress``); what the client was shown of it stays."""


@dataclass(frozen=True)
class CommandEnded:
    """A foreground shell command's output and exit, as its tool result tells them."""

    output: str
    exit: ExitInfo | None


@dataclass(frozen=True)
class ToolCallFinished:
    """Its result came: ``completed`` or ``failed``, with the result's text (and, for a shell,
    what the command printed and how it exited; for a file tool that succeeded, what it read or
    changed)."""

    session_id: str
    tool_call_id: str
    failed: bool
    text: str
    command: CommandEnded | None = None
    images: tuple[Image, ...] = ()
    review: file_tools.Review | None = None


@dataclass(frozen=True)
class ToolCallCut:
    """It never got a result: its turn was cancelled, or it failed (an error ended the turn, or
    Claude Code died)."""

    session_id: str
    tool_call_id: str
    failed: bool


@dataclass(frozen=True)
class ToolCallHandedOff:
    """Its result (``text``; ``failed`` when it was an error) handed the work on: to a terminal
    (``terminal_id``; the call is done), or to background work that reports through the call
    (``status``: ``in_progress`` or ``paused`` for a task, ``pending`` for scheduled work)."""

    session_id: str
    tool_call_id: str
    text: str
    terminal_id: str | None
    status: Literal["pending", "in_progress", "paused"]
    failed: bool = False


class ToolUses:
    """Every tool call, by its wire id; the model's ids lead to the latest call that used them."""

    def __init__(self) -> None:
        self._calls: dict[str, ToolUse] = {}
        self._latest: dict[str, ToolUse] = {}
        self._asking: dict[Hashable, str] = {}
        """The model's id of the tool use each open permission question is about, by ticket."""
        self._begun: set[str] = set()
        """Model ids of tool uses known to run before their input was (a question allowed, a
        task started, ahead of a subagent's messages that are not exposed yet)."""
        self._timed: dict[str, ToolUse] = {}
        """The calls whose grace runs, by wire id."""

    def get(self, tool_use_id: str | None) -> ToolUse | None:
        """The latest tool call the model's ``tool_use_id`` names."""
        return self._latest.get(tool_use_id or "")

    def _add(self, use: ToolUse) -> ToolUse:
        if use.call_id in self._calls:
            # The model used this id before, in another message: a new tool call all the same.
            use.call_id = (
                f"{use.tool_use_id}~{sum(c.tool_use_id == use.tool_use_id for c in self._calls.values())}"
            )
        self._calls[use.call_id] = self._latest[use.tool_use_id] = use
        return use

    def streaming(self, session_id: str, tool_use_id: str, name: str) -> list[ToolCallStarted]:
        if tool_use_id in self._latest:
            return []
        use = self._add(
            ToolUse(tool_use_id, name, {}, session_id, TOOL_USES.move(None, ToolUseTrigger.STARTS))
        )
        return [ToolCallStarted(session_id, use.call_id, name, use.shell)]

    def input_known(
        self,
        session_id: str,
        tool_use_id: str,
        name: str,
        tool_input: dict[str, Any],
        launched_by: str | None,
        message: str | None,
        pending: bool = False,
        now: float | None = None,
    ) -> list[ToolCallRunning]:
        """``pending``: the call only schedules work (it stays ``pending``, never ``in_progress``);
        ``now``: when its input came (None: it runs already, nothing asks for it)."""
        use = self._latest.get(tool_use_id)
        if use is not None and use.final and use.message not in (None, message):
            use = None  # an id the model reused in a new message
        first = use is None
        if use is None:
            waiting = TOOL_USES.move(None, ToolUseTrigger.INPUT)
            use = self._add(ToolUse(tool_use_id, name, tool_input, session_id, waiting, launched_by))
        use.tool_input, use.message, use.scheduled = tool_input, use.message or message, pending
        if use.final:
            return []
        if use.phase is ToolUsePhase.STREAMING:
            use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.INPUT)
        if use.phase is ToolUsePhase.WAITING:
            if now is None or tool_use_id in self._begun:
                self._begun.discard(tool_use_id)
                use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.BEGIN)
            elif use.start_by is None and tool_use_id not in self._asking.values():
                use.start_by = now + START_GRACE
                self._timed[use.call_id] = use
        waits = use.phase is ToolUsePhase.WAITING
        return [ToolCallRunning(session_id, use.call_id, name, tool_input, first, use.shell, pending, waits)]

    # --- when a waiting call begins -------------------------------------------------------------

    def asked(self, ticket: Hashable, tool_use_id: str | None) -> None:
        """A permission question (``ticket``) for it: it waits for the answer, not the grace."""
        if not tool_use_id:
            return
        self._asking[ticket] = tool_use_id
        use = self._latest.get(tool_use_id)
        if use is not None:
            use.start_by = None

    def answered(self, ticket: Hashable, allowed: bool) -> list[ToolCallBegan]:
        """The question was answered (``allowed``), declined or withdrawn: only an allowed call
        begins; any other waits for its result (a denial's) or its cut."""
        tool_use_id = self._asking.pop(ticket, None)
        return self.started(tool_use_id) if allowed else []

    def started(self, tool_use_id: str | None) -> list[ToolCallBegan]:
        """A sign that it runs (its question allowed, a task started for it): a waiting call begins."""
        if not tool_use_id:
            return []
        use = self._latest.get(tool_use_id)
        if use is None or use.phase is ToolUsePhase.STREAMING:
            self._begun.add(tool_use_id)
            return []
        return self._begin(use) if use.phase is ToolUsePhase.WAITING else []

    def due(self, now: float) -> list[ToolCallBegan]:
        """The waiting calls whose grace has passed with no question for them begin."""
        began: list[ToolCallBegan] = []
        for use in self._timing():
            if use.start_by is not None and use.start_by <= now:
                began += self._begin(use)
        return began

    def next_deadline(self) -> float | None:
        """When the next waiting call's grace passes."""
        return min((use.start_by for use in self._timing() if use.start_by is not None), default=None)

    def _timing(self) -> list[ToolUse]:
        """The calls whose grace still runs (those that began, were asked about or ended before
        it passed are let go)."""
        for call_id, use in list(self._timed.items()):
            if use.phase is not ToolUsePhase.WAITING or use.start_by is None:
                del self._timed[call_id]
        return list(self._timed.values())

    def _begin(self, use: ToolUse) -> list[ToolCallBegan]:
        use.phase, use.start_by = TOOL_USES.move(use.phase, ToolUseTrigger.BEGIN), None
        fields = (use.session_id, use.call_id, use.name, use.tool_input, False, use.shell, use.scheduled)
        return [ToolCallBegan(*fields)]

    def detach(self, call_id: str) -> None:
        """Background work reports through this tool call from now on."""
        use = self._calls.get(call_id)
        if use is not None and not use.final:
            use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.DETACH)

    def finish(self, call_id: str) -> bool:
        """Give it its final status; False when it had one already (or is unknown)."""
        use = self._calls.get(call_id)
        if use is None or use.final:
            return False
        use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.FINISH)
        return True

    def result(
        self,
        use: ToolUse,
        failed: bool,
        text: str,
        images: tuple[Image, ...] = (),
        handed_off: bool = False,
        structured: dict[str, Any] | None = None,
    ) -> list[ToolCallFinished]:
        """``handed_off``: the result only says that a background shell runs the command (so it
        tells no exit); ``structured``: Claude Code's structured form of the result."""
        if not self.finish(use.call_id):
            return []
        command = None
        if use.shell and not handed_off:
            output, code = shell_result(text, failed)
            command = CommandEnded(output, None if code is None else ExitInfo(code, None))
        review = None if failed else file_tools.review(use.name, use.tool_input, text, structured)
        return [ToolCallFinished(use.session_id, use.call_id, failed, text, command, images, review)]

    def cut(self, session_id: str, failed: bool) -> list[ToolCallCut]:
        """The turn of ``session_id`` ended early: its running tool calls end with it.

        A subagent's own tool calls are its work, and detached ones are background work: an
        interrupt of the turn, or an error that ends it, ends neither.
        """
        return self._cut(lambda use: use.session_id == session_id and not use.launched_by, failed)

    def cut_all(self, failed: bool = True) -> list[ToolCallCut]:
        """Claude Code died (``failed``) or the session closes (cancelled): every tool call still
        waiting for a result ends, in every session (detached ones end with the background work
        they report)."""
        return self._cut(lambda use: True, failed)

    def _cut(self, which: Callable[[ToolUse], bool], failed: bool) -> list[ToolCallCut]:
        cut: list[ToolCallCut] = []
        for use in self._calls.values():
            if use.phase in (ToolUsePhase.FINAL, ToolUsePhase.DETACHED) or not which(use):
                continue
            use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.CUT)
            cut.append(ToolCallCut(use.session_id, use.call_id, failed))
        return cut
