"""The seam between what happened and how it looks on the wire.

The core's parts report facts; a ``Presenter`` renders each one as the messages its client
kind reads (``claude_bg_acp.presenters`` has one per kind), and the session's config options
as the fields of the answer that tells the client of the session. The presenter also tells the
core what its client can see at all (``Visibility``) and whether a prompt's answer must wait
for the subagents its turn started (``holds_turns``: clients that stop listening at the
answer).
"""

from __future__ import annotations

from typing import Any, Protocol

from claude_bg_acp.core.background import (
    TaskEnded,
    TaskOpened,
    TaskProgressed,
    TaskStateChanged,
    TaskStopAnswered,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    TerminalRestated,
    Visibility,
    WorkEnded,
    WorkOpened,
    WorkRestated,
    WorkStatus,
)
from claude_bg_acp.core.commands import CommandsChanged
from claude_bg_acp.core.config import Options, OptionsAnswered, OptionsChanged
from claude_bg_acp.core.effects import ClientEffect
from claude_bg_acp.core.foreground import PromptAnswered, PromptCancelled, PromptInserted, StateReported
from claude_bg_acp.core.history import PromptRecalled
from claude_bg_acp.core.permission_modes import ModeChanged
from claude_bg_acp.core.plan import PlanChanged
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.subagents import ChildAnnounced, ChildRestated, ChildStateChanged
from claude_bg_acp.core.titles import TitleChanged
from claude_bg_acp.core.tool_uses import (
    ToolCallCut,
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolCallStarted,
)
from claude_bg_acp.core.transcript import MessageChunk
from claude_bg_acp.core.usage import UsageReported

Fact = (
    MessageChunk
    | ToolCallStarted
    | ToolCallRunning
    | ToolCallFinished
    | ToolCallCut
    | ToolCallHandedOff
    | TerminalOpened
    | TerminalOutput
    | TerminalReplaced
    | TerminalExited
    | WorkOpened
    | WorkStatus
    | WorkEnded
    | ScheduleEnded
    | TaskOpened
    | TaskProgressed
    | TaskStateChanged
    | TaskEnded
    | TaskStopAnswered
    | ChildAnnounced
    | ChildStateChanged
    | StateReported
    | PromptInserted
    | PromptAnswered
    | PromptCancelled
    | PromptRecalled
    | ModeChanged
    | TitleChanged
    | TerminalRestated
    | WorkRestated
    | ChildRestated
    | OptionsChanged
    | OptionsAnswered
    | CommandsChanged
    | UsageReported
    | PlanChanged
)


class Presenter(Protocol):
    @property
    def visibility(self) -> Visibility:
        """What of background work the client can see."""
        ...

    @property
    def holds_turns(self) -> bool:
        """Whether a prompt's answer waits for the subagents its turn started."""
        ...

    def render(self, fact: Fact) -> list[ClientEffect]:
        """The messages that show ``fact`` to the client (none when it cannot see it)."""
        ...

    def answer_fields(self, options: Options) -> dict[str, Any]:
        """What the answer to ``session/new`` (load, resume) carries besides the session id."""
        ...

    def permission_request(
        self, session_id: str, tool_call_id: str, tool_name: str, tool_input: dict[str, Any]
    ) -> dict[str, Any]:
        """The params of ``session/request_permission`` for a tool use."""
        ...
