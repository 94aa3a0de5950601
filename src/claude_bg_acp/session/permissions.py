"""The permission bridge: Claude Code's questions to the core, the core's to the client, and back.

How it works. Claude Code asks through the SDK's ``can_use_tool`` (``asked``): the question gets
a ticket, goes to the core (``PermissionAsked``) and waits for the core's ``Decide``
(``decide``), which carries the client's choice, or the core's own (a mode that allows, a
close). Claude Code may withdraw a question by cancelling the call: the core learns it
(``PermissionAbandoned``), and withdraws the client's request in turn.

The client is asked with ``session/request_permission`` (``ask``, one task per question); its
answer goes to the core (``PermissionAnswered``; an error or an answer that is not a selection
counts as a rejection). The core withdraws a request that no longer applies (``withdraw``): the
task stops waiting, and the client is told with ``$/cancel_request``; a withdrawn request's late
answer is not passed on. A request may outlive the question behind it, and the reverse.

Claude's questions (``AskUserQuestion``) are put to the client by the requests the core planned
(``ask_questions``: a form, or one permission request per question, in turn, until the user
declines or a request fails), and their answers go to the core read (``QuestionsAnswered``).
They are withdrawn as any request: the one out at the time is cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from claude_agent_sdk.types import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from claude_bg_acp.acp.schema import PermissionResponse
from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.core import events as ev
from claude_bg_acp.core import user_questions
from claude_bg_acp.core.effects import AskPermission, AskQuestions, Decide, DecideAnswered, Ticket
from claude_bg_acp.session.overwritten import replaced_text
from claude_bg_acp.session.waiter import Waiter

log = logging.getLogger(__name__)


@dataclass
class Ask:
    """The client request that puts a question to the user (the one out now, of Claude's
    questions); it may outlive the question."""

    request_id: int
    scope: anyio.CancelScope


class PermissionBridge:
    def __init__(
        self,
        endpoint: Endpoint,
        handle: Callable[[ev.Event], None],
        tickets: Iterator[Ticket],
        folders: Sequence[str] = (),
    ) -> None:
        """``handle`` feeds the session's core; ``tickets`` are the session's, shared with its
        other requests; ``folders``: the session's, where a file a ``Write`` would overwrite is
        read for the request to show (``overwritten``)."""
        self._endpoint = endpoint
        self._folders = tuple(folders)
        self._handle = handle
        self._tickets = tickets
        self._questions: dict[Ticket, Waiter] = {}
        self._asks: dict[Ticket, Ask] = {}

    async def asked(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """Claude Code's question (the runner's ``can_use_tool``), answered with the core's decision."""
        replaced = await replaced_text(tool_name, tool_input, self._folders)
        ticket = next(self._tickets)
        waiter = self._questions[ticket] = Waiter()
        suggestions = tuple(context.suggestions)
        self._handle(
            ev.PermissionAsked(
                ticket, tool_name, tool_input, context.tool_use_id, context.agent_id, replaced, suggestions
            )
        )
        try:
            result: PermissionResult = await waiter.wait()
            return result
        except anyio.get_cancelled_exc_class():
            # Claude Code withdrew the question (or went away): so does the client's prompt.
            self._handle(ev.PermissionAbandoned(ticket))
            raise
        finally:
            self._questions.pop(ticket, None)

    def decide(self, effect: Decide) -> None:
        waiter = self._questions.get(effect.ticket)
        if waiter is None:
            return
        result: PermissionResult
        if effect.allow:
            result = PermissionResultAllow(
                updated_input=effect.updated_input if isinstance(effect, DecideAnswered) else None,
                updated_permissions=list(effect.updates) or None,
            )
        else:
            result = PermissionResultDeny(message=effect.message, interrupt=effect.interrupt)
        waiter.settle(result)

    async def ask(self, effect: AskPermission) -> None:
        """Ask the client, and tell the core the answer unless the request was withdrawn."""
        ask = self._asks[effect.ticket] = Ask(self._endpoint.new_request_id(), anyio.CancelScope())
        option_id: str | None = None
        with ask.scope:
            try:
                result = await self._endpoint.request(
                    "session/request_permission", effect.params, ask.request_id
                )
                outcome = PermissionResponse.model_validate(result).outcome
                option_id = outcome.option_id if outcome.outcome == "selected" else None
            except Exception as exc:
                log.warning("permission request failed, treated as rejected: %s", exc)
        self._asks.pop(effect.ticket, None)
        if not ask.scope.cancelled_caught:
            self._handle(ev.PermissionAnswered(effect.ticket, option_id))

    async def ask_questions(self, effect: AskQuestions) -> None:
        """Put Claude's questions to the client, and tell the core the answers unless withdrawn."""
        ask = self._asks[effect.ticket] = Ask(0, anyio.CancelScope())
        results: list[object] = []
        with ask.scope:
            for request in effect.asking.asks:
                ask.request_id = self._endpoint.new_request_id()
                try:
                    result = await self._endpoint.request(request.method, request.params, ask.request_id)
                except Exception as exc:
                    log.warning("%s failed, its questions are left to the model: %s", request.method, exc)
                    result = None
                results.append(result)
                if user_questions.ends(result):
                    break
        self._asks.pop(effect.ticket, None)
        if not ask.scope.cancelled_caught:
            answered = user_questions.answered(effect.asking, results)
            self._handle(ev.QuestionsAnswered(effect.ticket, answered))

    async def withdraw(self, ticket: Ticket) -> None:
        ask = self._asks.pop(ticket, None)
        if ask is None:
            return
        ask.scope.cancel()
        await self._endpoint.notify("$/cancel_request", {"requestId": ask.request_id})

    async def withdraw_all(self) -> None:
        """The session failed: no question of it is answered any more."""
        for ticket in list(self._asks):
            await self.withdraw(ticket)
