"""Permission questions: Claude Code's ``can_use_tool``, asked in the session the tool use
belongs to (the root, or a subagent's child session).

A question is open from the moment Claude Code asks until it is decided, and is forgotten then:
a late or second answer finds nothing to decide. While a question of the main conversation
(``foreground``) is open, the root's turn is blocked on it (``requires_action``); one of a
child's, the child is. Its lifecycle:

=============  ============  =================================================================  =============
question       trigger       what happens                                                       next
=============  ============  =================================================================  =============
(asked)        ``ASK``       Claude Code asks: the client is asked (``AskPermission``; Claude's  ``OPEN``
                             own questions ``AskQuestions``, ``core.user_questions``)
``OPEN``       ``ANSWER``    the client answers, or cancels its request: ``Decide``             ``ANSWERED``
``OPEN``       ``WITHDRAW``  withdrawn: the turn it blocks is cancelled, the session closes,    ``WITHDRAWN``
                             Claude Code died or no longer waits for it
                             (``WithdrawPermission``, then ``Decide``: denied, interrupt)
=============  ============  =================================================================  =============
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from claude_bg_acp.core.effects import Ticket
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.permission_options import Choice


class QuestionPhase(enum.Enum):
    OPEN = "open"
    ANSWERED = "answered"
    WITHDRAWN = "withdrawn"


class QuestionTrigger(enum.Enum):
    ASK = "ask"
    ANSWER = "answer"
    WITHDRAW = "withdraw"


QUESTIONS: Transitions[QuestionPhase, QuestionTrigger] = Transitions.of(
    "question",
    QuestionPhase,
    QuestionTrigger,
    ((None,), QuestionTrigger.ASK, QuestionPhase.OPEN),
    ((QuestionPhase.OPEN,), QuestionTrigger.ANSWER, QuestionPhase.ANSWERED),
    ((QuestionPhase.OPEN,), QuestionTrigger.WITHDRAW, QuestionPhase.WITHDRAWN),
)


@dataclass
class PermissionQuestion:
    session_id: str
    """The session asking: the root, or a child session (a subagent's question)."""
    foreground: bool
    """The main conversation asks (the root's foreground turn is blocked on it)."""
    choices: tuple[Choice, ...]
    """The options the client is offered."""
    phase: QuestionPhase = QuestionPhase.OPEN


class Questions:
    """The open questions, by ticket."""

    def __init__(self) -> None:
        self._open: dict[Ticket, PermissionQuestion] = {}

    def __contains__(self, ticket: Ticket) -> bool:
        return ticket in self._open

    def ask(self, ticket: Ticket, session_id: str, foreground: bool, choices: tuple[Choice, ...]) -> None:
        self._open[ticket] = PermissionQuestion(
            session_id, foreground, choices, QUESTIONS.move(None, QuestionTrigger.ASK)
        )

    def chosen(self, ticket: Ticket, option_id: str | None) -> Choice | None:
        """The option of the open question ``ticket`` with that id (None: not one offered)."""
        return next((c for c in self._open[ticket].choices if c.option_id == option_id), None)

    def tickets(self, foreground: bool = False) -> list[Ticket]:
        """The open questions (only the main conversation's, with ``foreground``)."""
        return [ticket for ticket, question in self._open.items() if question.foreground or not foreground]

    @property
    def blocking(self) -> bool:
        """A question of the main conversation is open."""
        return any(question.foreground for question in self._open.values())

    def decide(self, ticket: Ticket, how: QuestionTrigger) -> PermissionQuestion:
        """The open question ``ticket`` is answered or withdrawn (``how``), and forgotten."""
        question = self._open[ticket]
        question.phase = QUESTIONS.move(question.phase, how)
        del self._open[ticket]
        return question
