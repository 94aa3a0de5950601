"""The seam between what happened and how it looks on the wire.

The core's parts report facts, the same for every client; a ``Presenter`` renders each one as
the messages its client kind reads (``claude_bg_acp.presenters`` has one per kind), dropping
what its client does not show, and the session's config options as the fields of the answer
that tells the client of the session. A presenter may keep state of its own (it serves one
session): what it showed, so as to tell its client only what changed. It comes with the
``Policy`` the core follows for its client kind (``core.policy``), which the core is given when
it is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from claude_bg_acp.acp.answers import SessionFields
from claude_bg_acp.core.attaching import ReplayCompleted
from claude_bg_acp.core.background import (
    TaskChanged,
    TaskEnded,
    TaskOpened,
    TaskStopAnswered,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    TerminalRestated,
    WorkEnded,
    WorkOpened,
    WorkRestated,
    WorkStatus,
)
from claude_bg_acp.core.commands import CommandsChanged
from claude_bg_acp.core.config import Options, OptionsAnswered, OptionsChanged
from claude_bg_acp.core.effects import ClientEffect
from claude_bg_acp.core.foreground import PromptFact, StateReported
from claude_bg_acp.core.foreground_shells import ShellOutput
from claude_bg_acp.core.history import ChildMessageRecalled, HistoryIncomplete, PromptRecalled
from claude_bg_acp.core.permission_modes import ModeChanged
from claude_bg_acp.core.permission_options import Choice
from claude_bg_acp.core.plan import PlanChanged
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.subagents import ChildConfirmed, ChildFact, ChildRestated
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
    | ShellOutput
    | TerminalOpened
    | TerminalOutput
    | TerminalReplaced
    | TerminalExited
    | WorkOpened
    | WorkStatus
    | WorkEnded
    | ScheduleEnded
    | TaskOpened
    | TaskChanged
    | TaskEnded
    | TaskStopAnswered
    | ChildFact
    | ChildConfirmed
    | StateReported
    | PromptFact
    | PromptRecalled
    | ChildMessageRecalled
    | ReplayCompleted
    | HistoryIncomplete
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
    def policy(self) -> Policy:
        """What the core does differently for this client kind (given to it when it is built)."""
        ...

    def render(self, fact: Fact) -> list[ClientEffect]:
        """The messages that show ``fact`` to the client (none when it cannot see it)."""
        ...

    def answer_fields(self, options: Options) -> SessionFields:
        """What the answer to ``session/new`` (load, resume) carries besides the session id."""
        ...

    def permission_request(
        self,
        session_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        choices: Sequence[Choice],
        shown: bool,
        replaced: str | None = None,
    ) -> dict[str, Any]:
        """The params of ``session/request_permission`` for a tool use, offering ``choices``;
        ``shown``: its tool call was shown already (the request updates it; else it creates it,
        ``pending``); ``replaced``: the text of the file a ``Write`` would overwrite, if the agent
        read it."""
        ...

    def question(
        self, session_id: str, call: dict[str, Any], title: str, options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The params of ``session/request_permission`` for a question of the agent's own, shown
        as the tool call ``call``, with its ``options``."""
        ...
