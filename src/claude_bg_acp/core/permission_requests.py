"""Claude Code's ``can_use_tool`` as a question to the client (``session/request_permission``).

A permission question is asked under the session the tool use belongs to (the child whose
agent asks, else the root), under the root for a child not exposed yet: the tool call it shows
then stays the root's, never moved (``owner``). Claude's own questions (``AskUserQuestion``)
are asked as forms or choices (``user_questions``). An answer, a cancel of the turn, Claude Code
withdrawing the question, or its end decides it; whose foreground work is blocked on user
action follows every question opened and decided (``blocking``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claude_bg_acp.core import events as ev
from claude_bg_acp.core import user_questions
from claude_bg_acp.core.child_routing import ChildRouting
from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    Decide,
    DecideAnswered,
    Effect,
    Ticket,
    WithdrawPermission,
)
from claude_bg_acp.core.permission_options import choices
from claude_bg_acp.core.questions import QuestionTrigger
from claude_bg_acp.core.routes import Parts, Routes


class PermissionRequests:
    def __init__(
        self, parts: Parts, closed_modes: Callable[[], frozenset[str]], children: ChildRouting, routes: Routes
    ) -> None:
        """``closed_modes``: the modes Claude Code would refuse now (not offered as choices)."""
        self.session_id, self.policy, self.presenter = parts.session_id, parts.policy, parts.presenter
        self.questions, self.subagents, self.modes = parts.questions, parts.subagents, parts.modes
        self.tool_uses, self.foreground = parts.tool_uses, parts.foreground
        self._closed_modes = closed_modes
        self.children = children
        self.routes = routes
        self._asked_in: dict[str, str] = {}
        """Tool uses a permission question showed (as its tool call) before their transcript did,
        and the session it was asked in: the tool call stays there (an issued interaction is
        never moved)."""

    def owner(self, tool_use_id: str, session_id: str) -> str:
        """The session a tool use said in ``session_id`` shows its tool call in."""
        return self._asked_in.get(tool_use_id, session_id)

    def owned(self, tool_use_id: str, session_id: str) -> str:
        """``owner``, once its input is known: from then on its tool call is known."""
        return self._asked_in.pop(tool_use_id, session_id)

    def asked(self, asked: ev.PermissionAsked) -> list[Effect]:
        session_id = self.subagents.session_of_agent(asked.agent_id)
        foreground = asked.agent_id is None
        modes = [mode["id"] for mode in self.modes.available(self._closed_modes())]
        offered = tuple(choices(asked.tool_name, asked.suggestions, modes))
        self.questions.ask(asked.ticket, session_id, foreground, offered)
        self.tool_uses.asked(asked.ticket, asked.tool_use_id)
        known = self.tool_uses.get(asked.tool_use_id)
        if known is None and asked.tool_use_id:
            self._asked_in[asked.tool_use_id] = session_id  # a child's not exposed yet: the root
        tool_call_id = known.call_id if known else asked.tool_use_id or f"permission-{asked.ticket}"
        # Claude Code asks about some tools with an empty input (ExitPlanMode: its plan), though
        # the model's call had one: the person deciding should see what the model asked for.
        tool_input = asked.tool_input or (known.tool_input if known else {})
        self.subagents.asking(session_id, opened=True)
        questions = user_questions.read(asked.tool_name, tool_input)
        if questions is not None:
            where = (session_id, tool_call_id, known is not None)
            forms = self.policy.questions_as_forms

            def ask(session: str, call: str, tool: str, given: dict[str, Any], shown: bool) -> dict[str, Any]:
                return self.presenter.permission_request(session, call, tool, given, (), shown)

            asking = user_questions.asking(tool_input, questions, forms, where, ask)
            if not asking.asks:  # none the client can be asked: all left to the model
                return self.questions_answered(asked.ticket, user_questions.answered(asking, []))
            return [AskQuestions(asked.ticket, asking), *self.blocking()]
        params = self.presenter.permission_request(
            session_id, tool_call_id, asked.tool_name, tool_input, offered, known is not None, asked.replaced
        )
        return [AskPermission(asked.ticket, params), *self.blocking()]

    def answered(self, ticket: Ticket, option_id: str | None) -> list[Effect]:
        """``option_id`` is None when the client cancelled the question."""
        if ticket not in self.questions:
            return []
        choice = self.questions.chosen(ticket, option_id)
        if choice is None or not choice.allows:
            decision = Decide(ticket, False, message="The user rejected this tool use")
        else:
            decision = Decide(ticket, True, choice.updates)
        return [decision, *self._forget_question(ticket, QuestionTrigger.ANSWER, decision.allow)]

    def questions_answered(self, ticket: Ticket, updated_input: dict[str, Any] | None) -> list[Effect]:
        """Claude's questions answered (``updated_input``) or declined (None)."""
        if ticket not in self.questions:
            return []
        decision = (
            Decide(ticket, False, message=user_questions.DECLINED)
            if updated_input is None
            else DecideAnswered(ticket, True, updated_input=updated_input)
        )
        return [decision, *self._forget_question(ticket, QuestionTrigger.ANSWER, decision.allow)]

    def abandoned(self, ticket: Ticket) -> list[Effect]:
        """Claude Code withdrew the question."""
        return self._withdraw(ticket, "Claude Code withdrew the question") if ticket in self.questions else []

    def withdraw_all(self, why: str, foreground: bool = False) -> list[Effect]:
        """Every open question withdrawn (only the main conversation's, with ``foreground``)."""
        effects: list[Effect] = []
        for ticket in self.questions.tickets(foreground):
            effects += self._withdraw(ticket, why)
        return effects

    def _withdraw(self, ticket: Ticket, why: str) -> list[Effect]:
        # Withdraw first: once decided, the host forgets the question and its request id.
        return [
            WithdrawPermission(ticket),
            Decide(ticket, False, message=why, interrupt=True),
            *self._forget_question(ticket, QuestionTrigger.WITHDRAW),
        ]

    def _forget_question(self, ticket: Ticket, how: QuestionTrigger, allowed: bool = False) -> list[Effect]:
        """``allowed``: the tool it asked about runs now."""
        question = self.questions.decide(ticket, how)
        self.subagents.asking(question.session_id, opened=False)
        return self.routes.present(self.tool_uses.answered(ticket, allowed)) + self.blocking()

    def blocking(self) -> list[Effect]:
        """Whose foreground work is blocked on user action now: each child's (``Subagents``),
        then the root's: a question of the main conversation is open, or the turn waits on
        synchronous children that all are blocked."""
        effects = self.children.present(self.subagents.blocked())
        blocked = self.questions.blocking or self.subagents.waits_blocked(self.session_id)
        if blocked is not self.foreground.blocked:
            effects += self.routes.foreground_out(self.foreground.set_blocked(blocked))
        return effects
