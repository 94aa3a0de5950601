"""What the core asks its edges to do: the outputs of ``SessionCore.handle``.

The session host performs them in order: messages to the client through the stdio endpoint
(``ClientEffect``), commands to Claude Code through the runner (``ClaudeCommand``), a decision on a
permission question of Claude Code's (``Decide``), output files through the tailer (``Tail``,
``FinishTail``), a look at the stored session's title (``ReadTitle``) and for a prompt in its
conversation (``FindPrompt``), and lines for the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from claude_bg_acp.claude.conventions import ShellEnd
from claude_bg_acp.core.errors import Failure

if TYPE_CHECKING:
    from claude_agent_sdk.types import PermissionUpdate

    from claude_bg_acp.acp.answers import TicketAnswer
    from claude_bg_acp.acp.updates import SessionUpdate
    from claude_bg_acp.core.user_questions import Asking

Ticket = int
"""Names one pending client request (a prompt) or one pending permission question."""


@dataclass(frozen=True)
class Notify:
    """Send ``session/update`` for ``session_id``."""

    session_id: str
    update: SessionUpdate


@dataclass(frozen=True)
class Reply:
    """Answer the client request behind ``ticket``."""

    ticket: Ticket
    result: TicketAnswer


@dataclass(frozen=True)
class Fail:
    """Answer the client request behind ``ticket`` with an error."""

    ticket: Ticket
    failure: Failure


@dataclass(frozen=True)
class AskPermission:
    """Send ``session/request_permission``; its answer comes back to the core with ``ticket``."""

    ticket: Ticket
    params: dict[str, Any]


@dataclass(frozen=True)
class AskQuestions:
    """Put Claude's questions to the client (``asking.asks``, in order); the answers come back
    to the core with ``ticket`` (``QuestionsAnswered``)."""

    ticket: Ticket
    asking: Asking


@dataclass(frozen=True)
class WithdrawPermission:
    """The question behind ``ticket`` no longer applies: tell the client with ``$/cancel_request``."""

    ticket: Ticket


@dataclass(frozen=True)
class Decide:
    """Answer the SDK's ``can_use_tool`` call behind ``ticket``."""

    ticket: Ticket
    allow: bool
    updates: tuple[PermissionUpdate, ...] = ()
    """The permission updates Claude Code is to apply with the allow (the chosen option's)."""
    message: str = ""
    interrupt: bool = False


@dataclass(frozen=True)
class DecideAnswered(Decide):
    """Allowed with the user's answers to Claude's questions: ``updated_input`` replaces the input
    asked about."""

    updated_input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """Send a user message (Anthropic content blocks) to Claude Code."""

    content: list[dict[str, Any]] = field(default_factory=list)
    uuid: str | None = None
    """Claude Code names the prompts a result covers by this id (``user_message_uuids``)."""


@dataclass(frozen=True)
class Interrupt:
    """End Claude Code's current turn (background work survives; see the stop affordance)."""


@dataclass(frozen=True)
class SetPermissionMode:
    """Switch Claude Code's permission mode."""

    mode: str


@dataclass(frozen=True)
class SetModel:
    """Switch Claude Code's model (one of the values it offers)."""

    model: str


@dataclass(frozen=True)
class SetEffort:
    """Set Claude Code's effort level."""

    level: str


@dataclass(frozen=True)
class SetFast:
    """Turn Claude Code's fast mode on or off."""

    on: bool


@dataclass(frozen=True)
class ReadSettings:
    """Ask Claude Code what it has in effect; the answer comes back as ``SettingsRead``."""


@dataclass(frozen=True)
class ControlMcp:
    """Do ``action`` (``status``, ``reconnect``, ``enable`` or ``disable``) to ``server``
    through the SDK's MCP control requests, then read every server's state; the answer comes
    back as ``McpAnswered`` (``core.mcp_command``)."""

    action: str
    server: str | None


@dataclass(frozen=True)
class StopTask:
    """Stop one background task; its own end events confirm it."""

    task_id: str


@dataclass(frozen=True)
class Tail:
    """Follow ``path`` and report its bytes as output of ``task_id``."""

    task_id: str
    path: str


@dataclass(frozen=True)
class FinishTail:
    """Read ``task_id``'s file to its end now, report the rest and how it exited, then stop.
    ``end``: what Claude Code said of the task's end, which its closing line must agree with."""

    task_id: str
    end: ShellEnd = field(default_factory=ShellEnd)
    closing_line: ClassVar[bool] = True
    """Claude Code may still append its closing line: worth a moment's wait."""


@dataclass(frozen=True)
class FinishCommandTail(FinishTail):
    """The same for a foreground command's file, which gets no closing line."""

    closing_line: ClassVar[bool] = False


@dataclass(frozen=True)
class ReadTitle:
    """Read the title Claude Code stored for the conversation; it comes back as ``TitleRead``."""


@dataclass(frozen=True)
class FindPrompt:
    """Look in Claude Code's stored conversation for the user message ``message_id``, the prompt
    of ``key``; the answer comes back as ``PromptLookedUp``."""

    key: str
    message_id: str


@dataclass(frozen=True)
class Log:
    """Something the log should say (the core has no logger of its own)."""

    message: str


ClientEffect = Notify | Reply | Fail | AskPermission | AskQuestions | WithdrawPermission
ClaudeCommand = (
    Query
    | Interrupt
    | StopTask
    | SetPermissionMode
    | SetModel
    | SetEffort
    | SetFast
    | ReadSettings
    | ControlMcp
)
"""What goes to Claude Code, in order, through the runner."""
Effect = ClientEffect | ClaudeCommand | Decide | Tail | FinishTail | ReadTitle | FindPrompt | Log
