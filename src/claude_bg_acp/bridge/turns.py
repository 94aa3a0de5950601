"""Foreground work: prompts, turns, and the session state a v2 client sees.

Theory of operation. Two facts decide whether foreground work is going on:

- ``prompt``: a user prompt we inserted whose own result has not arrived yet. A result whose
  ``origin`` names a task notification belongs to a follow-up turn, never to a prompt.
- ``cli_busy``: Claude Code said ``running`` (session_state_changed) and no result or ``idle``
  has come since. This is how a follow-up turn that no prompt started becomes visible.

The v2 state is ``running`` while either holds (``requires_action`` while a foreground
permission question is open) and ``idle`` otherwise, with the stop reason of the last result.
A result clears ``cli_busy`` at once, so ``idle`` follows the result without waiting for the
CLI's own trailing ``idle``; a late trailing ``idle`` cannot end a newer prompt, because the
prompt fact alone keeps the state ``running``.

Prompts that arrive while foreground work is going on wait and are inserted in order when it
ends. Insertion is the moment the prompt is written to Claude Code: a v2 prompt is answered
with its ``messageId`` then; a v1 prompt is answered with its stop reason at its result.
``session/cancel`` answers waiting prompts (-32800 in v2, ``cancelled`` in v1) and interrupts
the turn; the interrupted turn's result then reports ``cancelled``.

Held v1 turns. A v1 client stops listening at the prompt's answer, so a turn whose result
arrives while subagents it spawned (during the turn or while held) are still live keeps its
answer back, with the outcome stored: the subagents' output and permission requests then
arrive inside the turn. It is released with the stored outcome at the result of a follow-up
turn once none of its subagents is live, or ``FOLLOW_UP_WAIT`` after the last one ended when
no follow-up comes (at once when it was stopped), or when Claude Code reports idle with none
left; at once, as ``cancelled``, on ``session/cancel``; and with its stored outcome when the
next prompt arrives. Background shells never hold a turn, and a turn that spawned nothing is
answered at its result.
"""

from __future__ import annotations

import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, REQUEST_CANCELLED, RpcError
from claude_bg_acp.acp.updates import ErrorObject, StateUpdate, UserMessage
from claude_bg_acp.bridge.effects import Effect, Fail, Interrupt, Notify, Query, Reply, Ticket

Version = Literal[1, 2]
State = Literal["running", "idle", "requires_action"]

AUTH_REQUIRED = -32000
FOLLOW_UP_WAIT = 3.0
"""Seconds we report ``running`` for a follow-up turn Claude Code has not started yet."""

RESULT_STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


@dataclass
class PendingPrompt:
    ticket: Ticket
    content: list[dict[str, Any]]
    claude_content: list[dict[str, Any]]


@dataclass
class PromptTurn:
    ticket: Ticket
    message_id: str
    uuid: str
    cancelled: bool = False
    spawned: set[str] = field(default_factory=set)
    """Subagent tasks started during this turn (or while it was held)."""
    outcome: Outcome | None = None
    """Set when the result came but the answer is held back."""


@dataclass(frozen=True)
class Outcome:
    """How a turn ended, from its result message."""

    stop_reason: str
    usage: dict[str, Any] | None = None
    error: RpcError | None = None


class Foreground:
    def __init__(self, session_id: str, version: Version) -> None:
        self.session_id = session_id
        self.version = version
        self.prompt: PromptTurn | None = None
        self.cli_busy = False
        self.blocked = False
        self.waiting: deque[PendingPrompt] = deque()
        self.reported: State = "idle"
        self.last_outcome: Outcome | None = None
        self.background: list[dict[str, Any]] | None = [] if version == 2 else None
        self._next_message = 0
        self.gone: RpcError | None = None
        self.follow_up_until: float | None = None
        self.live_subagents: set[str] = set()
        self.holding: PromptTurn | None = None
        self.release_at: float | None = None

    @property
    def busy(self) -> bool:
        return self.prompt is not None or self.cli_busy or self.follow_up_until is not None

    def state(self) -> State:
        if not self.busy:
            return "idle"
        return "requires_action" if self.blocked else "running"

    # --- inputs ---------------------------------------------------------------------------

    def submit(self, held: PendingPrompt) -> list[Effect]:
        if self.gone is not None:
            return [Fail(held.ticket, self.gone)]
        # The next prompt hands a held turn off with the outcome it recorded.
        effects = self._release()
        self.waiting.append(held)
        return effects + self._report()

    def cli_state(self, state: str) -> list[Effect]:
        if state in ("running", "requires_action"):
            self.cli_busy = True
            self.follow_up_until = None
            self.release_at = None
        elif state == "idle":
            self.cli_busy = False
            if self.prompt is not None and self.prompt.cancelled:
                # An interrupt that produced no result still ends the cancelled prompt.
                return self._settle(Outcome("cancelled"))
            if not self._hold_needed():
                return self._release() + self._report()
        return self._report()

    def withdraw(self, ticket: Ticket) -> list[Effect]:
        waiting = next((prompt for prompt in self.waiting if prompt.ticket == ticket), None)
        if waiting is None:
            return []  # inserted already: its answer stands
        self.waiting.remove(waiting)
        return [Fail(ticket, RpcError(REQUEST_CANCELLED, "Prompt withdrawn before insertion"))]

    def work_seen(self) -> list[Effect]:
        """Output of the main conversation arrived: Claude Code is working, whatever it said.

        A follow-up turn may start with output and no ``running``; from here on it is the
        turn's own result, not a timer, that ends the wait for it.
        """
        if self.prompt is not None or self.cli_busy:
            return []
        self.cli_busy = True
        self.follow_up_until = None
        self.release_at = None
        return self._report()

    def outcome_of(
        self,
        subtype: str,
        stop_reason: str | None,
        usage: dict[str, Any] | None,
        is_error: bool,
        errors: list[str],
        api_error: str | None,
    ) -> Outcome:
        """How a result message says the turn ended."""
        acp_usage = _usage(usage)
        if self.prompt is not None and self.prompt.cancelled:
            return Outcome("cancelled", acp_usage)
        if api_error == "max_output_tokens":
            return Outcome("max_tokens", acp_usage)
        if subtype == "error_max_turns":
            return Outcome("max_turn_requests", acp_usage)
        if subtype == "success" and not is_error:
            return Outcome(RESULT_STOP_REASONS.get(stop_reason or "end_turn", "end_turn"), acp_usage)
        message = "; ".join(errors) or f"Claude Code ended the turn: {subtype}"
        code = AUTH_REQUIRED if api_error == "authentication_failed" else INTERNAL_ERROR
        return Outcome("error", acp_usage, RpcError(code, message))

    def answers_prompt(self, uuids: set[str], origin_kind: str) -> bool:
        """Whether a result is the end of the inserted prompt's turn (else Claude Code's own).

        Claude Code lists the prompts a result covers; a prompt it took into a turn it started
        itself is covered by that turn's result. Without the list, the origin decides.
        """
        if self.prompt is None:
            return origin_kind == "human"
        if uuids:
            return self.prompt.uuid in uuids
        return origin_kind == "human"

    def result(self, outcome: Outcome, follow_up: bool) -> list[Effect]:
        self.cli_busy = False
        self.follow_up_until = None
        if follow_up and self.prompt is not None:
            return self._report()
        if follow_up and not self._hold_needed():
            # The promised summary of the held turn's subagents has been streamed by now.
            return self._release() + self._settle(outcome)
        return self._settle(outcome)

    # --- subagents and held turns --------------------------------------------------------------

    def subagent_started(self, task_id: str) -> None:
        if task_id in self.live_subagents:
            return
        self.live_subagents.add(task_id)
        for turn in (self.prompt, self.holding):
            if turn is not None:
                turn.spawned.add(task_id)

    def subagent_ended(self, task_id: str, status: str | None, now: float) -> list[Effect]:
        self.live_subagents.discard(task_id)
        if self.holding is None or self._hold_needed():
            return []
        if self.cli_busy:
            return []  # the turn that runs now releases the hold at its result
        if status in ("completed", "failed"):
            # Claude Code follows a finished subagent up with a turn; its result releases.
            self.release_at = now + FOLLOW_UP_WAIT
            return []
        return self._release() + self._report()

    def cancel(self) -> list[Effect]:
        effects = self._release(Outcome("cancelled")) + self._refuse_waiting()
        if self.prompt is not None and not self.prompt.cancelled:
            self.prompt.cancelled = True
            effects.append(Interrupt())
        elif self.prompt is None and self.cli_busy:
            effects.append(Interrupt())
        return effects

    def close(self) -> list[Effect]:
        """The session closes: nothing more is inserted, and the turn ends as cancelled."""
        effects = self._release() + self._refuse_waiting()
        self.cli_busy = False
        if self.prompt is not None or self.reported != "idle":
            effects += self._settle(Outcome("cancelled"))
        return effects

    def set_blocked(self, blocked: bool) -> list[Effect]:
        self.blocked = blocked
        return self._report()

    def expect_follow_up(self, now: float) -> None:
        """Finished background work will start a turn: report it ``running`` from now on.

        Claude Code starts that turn by itself a few milliseconds later; if it does not within
        ``FOLLOW_UP_WAIT``, ``tick`` reports ``idle`` again, with no stop reason.
        """
        if not self.busy:
            self.follow_up_until = now + FOLLOW_UP_WAIT
            self.last_outcome = None

    def tick(self, now: float) -> list[Effect]:
        effects: list[Effect] = []
        if self.follow_up_until is not None and now >= self.follow_up_until:
            self.follow_up_until = None
        if self.release_at is not None and now >= self.release_at:
            effects += self._release()
        return effects + self._report()

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.follow_up_until, self.release_at) if d is not None]
        return min(deadlines) if deadlines else None

    def set_background(self, background: list[dict[str, Any]]) -> list[Effect]:
        """A new list (or a state change that came with it) goes out in one snapshot."""
        if self.version != 2:
            return []
        changed = background != self.background
        self.background = background
        if self.state() != self.reported:
            return self._report()
        return [self._state_update(self.reported, repeat=True)] if changed else []

    def fail(self, error: RpcError) -> list[Effect]:
        """Claude Code is gone: end the turn with an error and refuse what was held and what comes."""
        self.gone = error
        self.cli_busy = False
        effects = self._release()
        while self.waiting:
            held = self.waiting.popleft()
            effects.append(Fail(held.ticket, error))
        return effects + self._settle(Outcome("error", error=error))

    def crashed(self, error: RpcError) -> list[Effect]:
        """Claude Code died and another one takes over: the running turn ends with ``error``."""
        self.cli_busy = False
        self.follow_up_until = None
        self.live_subagents.clear()
        effects = self._release()
        if self.prompt is None and self.reported == "idle":
            return effects + self._report()
        return effects + self._settle(Outcome("error", error=error))

    # --- transitions ------------------------------------------------------------------------

    def _insert_next(self) -> list[Effect]:
        # The next prompt hands a held turn off, also when it waited while that turn ran.
        effects = self._release()
        held = self.waiting.popleft()
        self._next_message += 1
        message_id = f"user-{self._next_message}"
        # A name-based UUID keeps replays deterministic and is unique per session and message.
        prompt_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"acp:{self.session_id}/{message_id}"))
        self.prompt = PromptTurn(held.ticket, message_id, prompt_uuid)
        effects += self._report()
        if self.version == 2:
            effects += [
                Notify(
                    self.session_id,
                    UserMessage.model_validate({"messageId": message_id, "content": held.content}),
                ),
                Reply(held.ticket, {"messageId": message_id}),
            ]
        effects.append(Query(held.claude_content, prompt_uuid))
        return effects

    def _settle(self, outcome: Outcome) -> list[Effect]:
        effects: list[Effect] = []
        prompt, self.prompt = self.prompt, None
        self.last_outcome = outcome
        if prompt is not None and self.version == 1:
            if prompt.spawned & self.live_subagents and outcome.stop_reason != "cancelled":
                prompt.outcome, self.holding = outcome, prompt
            else:
                effects.append(_v1_answer(prompt.ticket, outcome))
        return effects + self._report()

    def _hold_needed(self) -> bool:
        return self.holding is not None and bool(self.holding.spawned & self.live_subagents)

    def _release(self, outcome: Outcome | None = None) -> list[Effect]:
        """Answer the held turn: with ``outcome`` if given, else with the one it recorded."""
        held, self.holding = self.holding, None
        self.release_at = None
        if held is None or held.outcome is None:
            return []
        return [_v1_answer(held.ticket, outcome or held.outcome)]

    def _refuse_waiting(self) -> list[Effect]:
        """Answer every prompt not inserted yet as cancelled (-32800 in v2)."""
        effects: list[Effect] = []
        while self.waiting:
            held = self.waiting.popleft()
            if self.version == 2:
                effects.append(
                    Fail(held.ticket, RpcError(REQUEST_CANCELLED, "Prompt cancelled before insertion"))
                )
            else:
                effects.append(Reply(held.ticket, {"stopReason": "cancelled"}))
        return effects

    def _report(self) -> list[Effect]:
        """Report a changed state; once idle, insert the next held prompt (after the idle)."""
        effects: list[Effect] = []
        state = self.state()
        if state != self.reported:
            self.reported = state
            if self.version == 2:
                effects.append(self._state_update(state, repeat=False))
        if not self.busy and self.waiting and self.gone is None:
            effects += self._insert_next()
        return effects

    def _state_update(self, state: State, repeat: bool) -> Notify:
        update = StateUpdate(state=state)
        if self.background is not None:
            update.background = self.background
        outcome = self.last_outcome
        if state == "idle" and outcome is not None and not repeat:
            update.stop_reason = outcome.stop_reason
            if outcome.usage is not None:
                update.usage = outcome.usage
            if outcome.error is not None:
                update.error = ErrorObject(code=outcome.error.code, message=outcome.error.message)
        return Notify(self.session_id, update)


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    inputs = int(usage.get("input_tokens") or 0)
    outputs = int(usage.get("output_tokens") or 0)
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_write = int(usage.get("cache_creation_input_tokens") or 0)
    return {
        "totalTokens": inputs + outputs + cache_read + cache_write,
        "inputTokens": inputs,
        "outputTokens": outputs,
        "cachedReadTokens": cache_read,
        "cachedWriteTokens": cache_write,
    }


def _v1_answer(ticket: Ticket, outcome: Outcome) -> Effect:
    if outcome.error is not None:
        return Fail(ticket, outcome.error)
    result: dict[str, Any] = {"stopReason": outcome.stop_reason}
    if outcome.usage is not None:
        result["usage"] = outcome.usage
    return Reply(ticket, result)
