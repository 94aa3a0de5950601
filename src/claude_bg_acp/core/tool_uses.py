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
(unknown), ``STREAMING``       ``INPUT``     the complete assistant message gives its input  ``RUNNING``
``STREAMING``, ``RUNNING``,    ``DETACH``    background work reports through it (a Monitor,  ``DETACHED``
``DETACHED``                                 a workflow, a scheduled wakeup)
``STREAMING``, ``RUNNING``,    ``FINISH``    its result; the work it reports (detached)      ``FINAL``
``DETACHED``                                 ended
``STREAMING``, ``RUNNING``     ``CUT``       its turn was cancelled or failed; Claude Code   ``FINAL``
                                             died; the session closed
=============================  ============  ==============================================  =============

A ``FINAL`` tool call never changes again (a late result or message is ignored), and only the
work a ``DETACHED`` one reports for ends it. A result that handed work off is taken once: the
same result again (an SDK event delivered twice) changes nothing. The session core moves tool
uses through these phases; what each step looks like is the presenter's business.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from claude_bg_acp.claude import file_tools
from claude_bg_acp.claude.conventions import SHELL_TOOLS, ExitInfo, shell_result
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.transcript import Image


class ToolUsePhase(enum.Enum):
    STREAMING = "streaming"
    RUNNING = "running"
    DETACHED = "detached"
    FINAL = "final"


class ToolUseTrigger(enum.Enum):
    STARTS = "starts"
    INPUT = "input"
    DETACH = "detach"
    FINISH = "finish"
    CUT = "cut"


STREAMING, RUNNING, DETACHED, FINAL = ToolUsePhase
TOOL_USES: Transitions[ToolUsePhase, ToolUseTrigger] = Transitions.of(
    "tool use",
    ToolUsePhase,
    ToolUseTrigger,
    ((None,), ToolUseTrigger.STARTS, STREAMING),
    ((None, STREAMING), ToolUseTrigger.INPUT, RUNNING),
    ((STREAMING, RUNNING, DETACHED), ToolUseTrigger.DETACH, DETACHED),
    ((STREAMING, RUNNING, DETACHED), ToolUseTrigger.FINISH, FINAL),
    ((STREAMING, RUNNING), ToolUseTrigger.CUT, FINAL),
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
    """Its input is known: ``in_progress`` (``pending`` for work that is only scheduled);
    ``first`` when the client has not seen it yet."""

    session_id: str
    tool_call_id: str
    name: str
    tool_input: dict[str, Any]
    first: bool
    shell: bool
    pending: bool = False


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
    ) -> list[ToolCallRunning]:
        """``pending``: the call only schedules work (it stays ``pending``, never ``in_progress``)."""
        use = self._latest.get(tool_use_id)
        if use is not None and use.final and use.message not in (None, message):
            use = None  # an id the model reused in a new message
        first = use is None
        if use is None:
            running = TOOL_USES.move(None, ToolUseTrigger.INPUT)
            use = self._add(ToolUse(tool_use_id, name, tool_input, session_id, running, launched_by))
        use.tool_input, use.message = tool_input, use.message or message
        if use.final:
            return []
        if use.phase is ToolUsePhase.STREAMING:
            use.phase = TOOL_USES.move(use.phase, ToolUseTrigger.INPUT)
        return [ToolCallRunning(session_id, use.call_id, name, tool_input, first, use.shell, pending)]

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
