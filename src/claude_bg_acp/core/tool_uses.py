"""Tool uses: the one record of every tool call's lifecycle, whichever transcript it is in.

A tool use becomes an ACP tool call as soon as its block starts streaming. Ids are unique
across the main conversation and its subagents, so one index serves every transcript; each
entry remembers the session it belongs to (a subagent finds the session that launched it
through it). Its lifecycle:

=============================  ==============================================  =============
phase                          what happens                                    next phase
=============================  ==============================================  =============
(unknown)                      its block starts streaming                      ``STREAMING``
(unknown), ``STREAMING``       the complete assistant message gives its input  ``RUNNING``
``STREAMING``, ``RUNNING``     background work reports through it (a Monitor,  ``DETACHED``
                               a workflow, a scheduled wakeup)
``STREAMING``, ``RUNNING``     its result; the turn ended early                ``FINAL``
``DETACHED``                   the work ended                                  ``FINAL``
=============================  ==============================================  =============

A ``FINAL`` tool call never changes again (a late result or message is ignored), and only the
work a ``DETACHED`` one reports for ends it. The session core moves tool uses through these
phases; what each step looks like is the presenter's business.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal


class Phase(enum.Enum):
    STREAMING = "streaming"
    RUNNING = "running"
    DETACHED = "detached"
    FINAL = "final"


@dataclass
class ToolUse:
    tool_use_id: str
    name: str
    tool_input: dict[str, Any]
    session_id: str
    """The transcript (root or subagent session) the tool use belongs to."""
    phase: Phase
    launched_by: str | None = None
    """For a subagent's own tool use, the Agent tool use that launched the subagent."""

    @property
    def final(self) -> bool:
        return self.phase is Phase.FINAL


# --- what happened to a tool call, for the presenter ------------------------------------------


@dataclass(frozen=True)
class ToolCallStarted:
    """Its block started streaming: a ``pending`` tool call with a title from its name."""

    session_id: str
    tool_use_id: str
    name: str


@dataclass(frozen=True)
class ToolCallRunning:
    """Its input is known: ``in_progress``; ``first`` when the client has not seen it yet."""

    session_id: str
    tool_use_id: str
    name: str
    tool_input: dict[str, Any]
    first: bool


@dataclass(frozen=True)
class ToolCallFinished:
    """Its result came: ``completed`` or ``failed``, with the result's text."""

    session_id: str
    tool_use_id: str
    failed: bool
    text: str
    raw_output: Any


@dataclass(frozen=True)
class ToolCallCut:
    """The turn it belonged to ended early; it never got a result."""

    session_id: str
    tool_use_id: str


@dataclass(frozen=True)
class ToolCallHandedOff:
    """Its result handed the work on: to a terminal (``terminal_id``; the call completes), or
    to background work that reports through the call (``status``: ``in_progress`` or
    ``paused`` for a task, ``pending`` for scheduled work)."""

    session_id: str
    tool_use_id: str
    text: str
    terminal_id: str | None
    status: Literal["pending", "in_progress", "paused"]


class ToolUses:
    def __init__(self) -> None:
        self._uses: dict[str, ToolUse] = {}

    def get(self, tool_use_id: str | None) -> ToolUse | None:
        return self._uses.get(tool_use_id or "")

    def streaming(self, session_id: str, tool_use_id: str, name: str) -> list[ToolCallStarted]:
        if tool_use_id in self._uses:
            return []
        self._uses[tool_use_id] = ToolUse(tool_use_id, name, {}, session_id, Phase.STREAMING)
        return [ToolCallStarted(session_id, tool_use_id, name)]

    def input_known(
        self,
        session_id: str,
        tool_use_id: str,
        name: str,
        tool_input: dict[str, Any],
        launched_by: str | None,
    ) -> list[ToolCallRunning]:
        use = self._uses.get(tool_use_id)
        first = use is None
        if use is None:
            use = self._uses[tool_use_id] = ToolUse(
                tool_use_id, name, tool_input, session_id, Phase.RUNNING, launched_by
            )
        use.tool_input = tool_input
        if use.final:
            return []
        if use.phase is Phase.STREAMING:
            use.phase = Phase.RUNNING
        return [ToolCallRunning(session_id, tool_use_id, name, tool_input, first)]

    def detach(self, tool_use_id: str) -> None:
        """Background work reports through this tool call from now on."""
        use = self._uses.get(tool_use_id)
        if use is not None and not use.final:
            use.phase = Phase.DETACHED

    def finish(self, tool_use_id: str) -> bool:
        """Give it its final status; False when it had one already (or is unknown)."""
        use = self._uses.get(tool_use_id)
        if use is None or use.final:
            return False
        use.phase = Phase.FINAL
        return True

    def result(self, tool_use_id: str, failed: bool, text: str, raw_output: Any) -> list[ToolCallFinished]:
        use = self._uses[tool_use_id]
        if not self.finish(tool_use_id):
            return []
        return [ToolCallFinished(use.session_id, tool_use_id, failed, text, raw_output)]

    def unfinished(self) -> list[ToolUse]:
        """Every tool use without its final status."""
        return [use for use in self._uses.values() if not use.final]

    def cut(self, session_id: str) -> list[ToolCallCut]:
        """The turn of ``session_id`` ended early: its running tool calls end with it.

        A subagent's own tool calls are its work, and detached ones are background work: an
        interrupt of the turn ends neither.
        """
        cut: list[ToolCallCut] = []
        for use in self._uses.values():
            if use.session_id != session_id or use.launched_by or use.phase in (Phase.FINAL, Phase.DETACHED):
                continue
            use.phase = Phase.FINAL
            cut.append(ToolCallCut(session_id, use.tool_use_id))
        return cut
