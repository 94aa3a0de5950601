"""Everything that can happen to a session, as the core's inputs.

``SessionCore.handle(event, now)`` takes one of these at a time and returns the effects to
perform. They are small immutable values, grouped by where they come from:

- the client: a prompt and its withdrawal, ``session/cancel`` (of the session or of a child),
  per-item cancels, a permission-mode switch, a permission answer, the close and its timeout
  (with how the processes the agent stopped itself ended);
- Claude Code: a message, a permission question, a question it stopped waiting for, its death
  (with how the processes it left running ended, once the agent stopped them);
- the output tailer: bytes of a task's output file, a snapshot of it, and its end;
- the clock: a tick at the core's next deadline.

A client request the core refuses (unknown terminal, unknown mode ...) raises ``RpcError``
from ``handle`` before anything changes; otherwise the request is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.closing_line import ExitInfo
from claude_bg_acp.core.effects import Ticket

if TYPE_CHECKING:
    # Only named here: the agent imports the events before the SDK is needed (see ``agent``).
    from claude_agent_sdk.types import Message

# --- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """``session/prompt``; answered through ``ticket``."""

    ticket: Ticket
    content: list[ContentBlock]


@dataclass(frozen=True)
class WithdrawPrompt:
    """``$/cancel_request`` for a prompt: refused (-32800) unless it was inserted already."""

    ticket: Ticket


@dataclass(frozen=True)
class CancelTurn:
    """``session/cancel`` on the session: end the foreground turn; background work stays."""


@dataclass(frozen=True)
class CancelChild:
    """``session/cancel`` naming a subagent's session: stop that child's work only."""

    session_id: str


@dataclass(frozen=True)
class CancelTerminal:
    terminal_id: str


@dataclass(frozen=True)
class CancelToolCall:
    tool_call_id: str


@dataclass(frozen=True)
class ChooseMode:
    """``session/set_mode``: one of Claude Code's permission modes."""

    mode_id: str


@dataclass(frozen=True)
class PermissionAnswered:
    """The client's answer to a permission question; ``option_id`` None when it cancelled it."""

    ticket: Ticket
    option_id: str | None


@dataclass(frozen=True)
class Close:
    """Closing starts: questions are withdrawn, the turn ends, every background task is stopped."""


@dataclass(frozen=True)
class CloseTimedOut:
    """The close waited long enough: finalize whatever did not confirm its end."""

    stopped: Mapping[str, ExitInfo] = field(default_factory=dict)
    """Tasks whose processes the agent stopped itself once Claude Code was gone: how each ended."""


# --- Claude Code ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeMessage:
    message: Message


@dataclass(frozen=True)
class PermissionAsked:
    """Claude Code's ``can_use_tool``; decided through ``ticket``."""

    ticket: Ticket
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None
    agent_id: str | None
    """The subagent asking, or None for the main conversation."""


@dataclass(frozen=True)
class PermissionAbandoned:
    """Claude Code no longer waits for the answer to this question."""

    ticket: Ticket


@dataclass(frozen=True)
class ClaudeDied:
    """Claude Code is gone. Unless ``fatal``, another one takes over the conversation."""

    reason: str
    fatal: bool = True
    stopped: Mapping[str, ExitInfo] = field(default_factory=dict)
    """Tasks whose processes it left running, which the agent stopped: how each ended."""


# --- the output tailer ------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputRead:
    """The next bytes of a task's output, exactly as the file holds them."""

    task_id: str
    data: bytes


@dataclass(frozen=True)
class OutputReplaced:
    """The client fell behind (or the file restarted): these bytes replace everything sent."""

    task_id: str
    data: bytes


@dataclass(frozen=True)
class OutputEnded:
    """The file was read to its end after the task ended: the rest, and how it exited."""

    task_id: str
    rest: bytes
    exit: ExitInfo | None


# --- the clock --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tick:
    """The core's next deadline (``SessionCore.next_deadline``) has passed."""


Event = (
    Prompt
    | WithdrawPrompt
    | CancelTurn
    | CancelChild
    | CancelTerminal
    | CancelToolCall
    | ChooseMode
    | PermissionAnswered
    | Close
    | CloseTimedOut
    | ClaudeMessage
    | PermissionAsked
    | PermissionAbandoned
    | ClaudeDied
    | OutputRead
    | OutputReplaced
    | OutputEnded
    | Tick
)
