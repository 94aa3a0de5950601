"""What the foreground keeps and reports: the records of prompts and turns (a prompt waiting
for insertion with its attempts, the inserted prompt's turn, how a turn ended) and the facts for
the presenter (the session's state with its background list, a prompt inserted, retried,
answered or cancelled, an agent command due). ``foreground`` decides when each happens.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from claude_bg_acp.core.background_list import Listed
from claude_bg_acp.core.effects import Fail, FindPrompt, Interrupt, Query, Ticket
from claude_bg_acp.core.errors import Failure


class SessionState(enum.Enum):
    """What a session is doing, as ACP's session state tells it (a subagent's too)."""

    RUNNING = "running"
    REQUIRES_ACTION = "requires_action"
    IDLE = "idle"


@dataclass(frozen=True)
class WaitingPrompt:
    ticket: Ticket
    content: list[dict[str, Any]]
    claude_content: list[dict[str, Any]]
    key: str | None = None
    """Its ``idempotencyKey``: every attempt of one submission sends the same."""
    retries: list[Ticket] = field(default_factory=list)
    """Later attempts with its key that came while it waited: answered with it."""
    local: bool = False
    """One of the agent's own commands: answered by the agent, not sent to Claude Code."""

    @property
    def tickets(self) -> list[Ticket]:
        return [self.ticket, *self.retries]


@dataclass
class PromptTurn:
    ticket: Ticket
    uuid: str
    """Names the prompt to Claude Code, which stores it under it, and to the client (its
    ``messageId``), so that a replay of the stored conversation names it as it was named live."""
    spawned: set[str] = field(default_factory=set)
    """Subagent tasks started during this turn (or while it was held)."""
    outcome: Outcome | None = None
    """Set when the result came but the answer is held back."""


@dataclass(frozen=True)
class Outcome:
    """How a turn ended, from its result message."""

    stop_reason: str
    usage: dict[str, Any] | None = None
    error: Failure | None = None


# --- what happened in the foreground, for the presenter ---------------------------------------


@dataclass(frozen=True)
class StateReported:
    """The session's state, with its background list. ``outcome`` is set when the state is a new
    ``idle`` (not a repeated snapshot)."""

    session_id: str
    state: SessionState
    background: Sequence[Listed]
    outcome: Outcome | None = None


@dataclass(frozen=True)
class PromptInserted:
    session_id: str
    ticket: Ticket
    message_id: str
    content: list[dict[str, Any]]


@dataclass(frozen=True)
class PromptRetried:
    """Another attempt of a prompt inserted under the same ``idempotencyKey``: answered as that
    one, with nothing inserted again."""

    ticket: Ticket
    message_id: str


@dataclass(frozen=True)
class PromptAnswered:
    """The turn of a prompt is over (or was handed off): its answer is due."""

    ticket: Ticket
    outcome: Outcome


@dataclass(frozen=True)
class PromptCancelled:
    """A prompt that was still waiting for insertion is cancelled."""

    ticket: Ticket


@dataclass(frozen=True)
class CommandDue:
    """An agent command's turn has come: the session core answers it (``answered``)."""

    message_id: str
    content: list[dict[str, Any]]


PromptFact = PromptInserted | PromptRetried | PromptAnswered | PromptCancelled
ForegroundFact = StateReported | PromptFact
ForegroundOut = ForegroundFact | Fail | Interrupt | Query | FindPrompt | CommandDue
