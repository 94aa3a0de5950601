"""The foreground lifecycle through ``SessionCore``: prompts, turns, cancel, and the v2 state.

Frames come from ``tests.support.frames`` (shaped like the recorded real-CLI frames under
``fixtures/sdk_events``) and go through ``CoreDriver``, as the replay's do: they stand in where
the real CLI cannot be made to produce the exact interleaving a test needs (a prompt arriving
mid-turn at a chosen moment, a permission question of a subagent while the parent turn runs,
an error result). The recorded scenarios themselves are covered by ``test_replay``. Every test
runs twice: against a Claude Code whose results name the user messages they end
(``user_message_uuids``, echoing the uuid of our ``Query``) and against one whose results do
not, where only ``origin`` tells a follow-up turn from a prompt's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from claude_bg_acp.acp.answers import PromptAccepted
from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, REQUEST_CANCELLED
from claude_bg_acp.acp.updates import StateUpdate, UserMessage
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import (
    AskPermission,
    Decide,
    Effect,
    Fail,
    FindPrompt,
    Interrupt,
    Notify,
    Query,
    Reply,
    WithdrawPermission,
)
from claude_bg_acp.core.foreground import FOLLOW_UP_WAIT
from claude_bg_acp.core.permission_options import ALLOW_ONCE
from claude_bg_acp.core.turn_outcome import LOGIN_HINT
from tests.support.driver import CoreDriver, check_transcript
from tests.support.frames import (
    Frame,
    TaskSpec,
    assistant,
    follow_up_origin,
    follow_up_result,
    interrupt_marker,
    interrupted_result,
    max_output_tokens,
    result,
    state_changed,
    tasks_changed,
    text,
    tool_use,
)
from tests.support.rules import BackgroundRules, Violation

ROOT = "session-turns"
ACP_USAGE = {
    "totalTokens": 112,
    "inputTokens": 24,
    "outputTokens": 88,
    "cachedReadTokens": 0,
    "cachedWriteTokens": 0,
}
"""The ACP form of the usage every ``frames.result`` reports."""
HELPER = TaskSpec("agent", "agent01", tool_use_id="toolu_agent", description="background helper")
"""The background subagent a turn launches."""

NewDriver = Callable[..., CoreDriver]


@pytest.fixture(autouse=True, params=[True, False], ids=["uuids", "origin"])
def cli_echoes_uuids(request: pytest.FixtureRequest) -> bool:
    """Every test runs against Claude Code that echoes user message uuids and one that does not."""
    return bool(request.param)


@pytest.fixture
def new_driver(cli_echoes_uuids: bool) -> NewDriver:
    """``new_driver(version, echo_uuids=None)``: a driver of the root session (no capabilities
    declared), whose Claude Code echoes uuids as this run of the test says unless told."""

    def new(version: int, echo_uuids: bool | None = None, instance: str = "") -> CoreDriver:
        echo = cli_echoes_uuids if echo_uuids is None else echo_uuids
        return CoreDriver(version, session_id=ROOT, echo_uuids=echo, instance=instance)

    return new


def states(effects: list[Effect], session: str = ROOT) -> list[tuple[str, str | None]]:
    """The state updates of ``session``: (state, stop reason)."""
    return [
        (e.update.state, e.update.stop_reason)
        for e in effects
        if isinstance(e, Notify) and e.session_id == session and isinstance(e.update, StateUpdate)
    ]


def state_updates(effects: list[Effect], session: str = ROOT) -> list[StateUpdate]:
    return [
        e.update
        for e in effects
        if isinstance(e, Notify) and e.session_id == session and isinstance(e.update, StateUpdate)
    ]


def answers(effects: list[Effect]) -> list[Reply | Fail]:
    return [e for e in effects if isinstance(e, Reply | Fail)]


def user_messages(effects: list[Effect]) -> list[UserMessage]:
    return [e.update for e in effects if isinstance(e, Notify) and isinstance(e.update, UserMessage)]


def queries(effects: list[Effect]) -> list[str]:
    return [block["text"] for e in effects if isinstance(e, Query) for block in e.content]


def index_of(effects: list[Effect], predicate: Any) -> int:
    return next(i for i, e in enumerate(effects) if predicate(e))


def is_state(state: str) -> Any:
    return lambda e: isinstance(e, Notify) and isinstance(e.update, StateUpdate) and e.update.state == state


def is_answer(ticket: int) -> Any:
    return lambda e: isinstance(e, Reply | Fail) and e.ticket == ticket


def run_turn(d: CoreDriver, words: str = "Hello.") -> list[Effect]:
    """The CLI's side of a plain user turn, from ``running`` to its result."""
    return d.frames(state_changed("running"), text(words), result())


# --- insertion ----------------------------------------------------------------------------------


def test_v2_prompt_is_answered_with_its_message_id_at_insertion(new_driver: NewDriver) -> None:
    d = new_driver(2)
    ticket, effects = d.prompt("Say hello.")

    assert states(effects) == [("running", None)]
    [message] = user_messages(effects)
    assert message.wire()["content"] == [{"type": "text", "text": "Say hello."}]
    assert answers(effects) == [Reply(ticket, {"messageId": message.message_id})]
    assert queries(effects) == ["Say hello."]
    # The running state goes out before the user message; both in the call that inserts.
    assert index_of(effects, is_state("running")) < index_of(
        effects, lambda e: isinstance(e, Notify) and isinstance(e.update, UserMessage)
    )

    turn = run_turn(d)
    assert states(turn) == [("idle", "end_turn")]
    [idle] = state_updates(turn)
    assert idle.usage == ACP_USAGE
    assert answers(turn) == []  # answered once, at insertion


def test_v2_message_ids_are_distinct_for_identical_prompts(new_driver: NewDriver) -> None:
    d = new_driver(2)
    first, inserted = d.prompt("Same words.")
    run_turn(d)
    second, again = d.prompt("Same words.")
    [one], [two] = user_messages(inserted), user_messages(again)
    assert one.message_id != two.message_id
    assert answers(again) == [Reply(second, {"messageId": two.message_id})]
    assert first != second


@pytest.mark.parametrize("version", [1, 2])
def test_prompts_during_a_turn_wait_and_are_inserted_after_an_idle_boundary_in_order(
    version: int, new_driver: NewDriver
) -> None:
    d = new_driver(version)
    first, _ = d.prompt("first")
    d.frames(state_changed("running"), text("working on the first"))

    second, held2 = d.prompt("second")
    third, held3 = d.prompt("third")
    for held in (held2, held3):
        assert answers(held) == [] and queries(held) == [] and user_messages(held) == []
        assert states(held) == []  # still the same running interval

    ended = d.frame(result())
    assert queries(ended) == ["second"]
    if version == 2:
        assert states(ended) == [("idle", "end_turn"), ("running", None)]
        assert index_of(ended, is_state("idle")) < index_of(ended, is_state("running"))
        [message] = user_messages(ended)
        assert answers(ended) == [Reply(second, {"messageId": message.message_id})]
        assert index_of(ended, is_state("running")) < index_of(ended, is_answer(second))
    else:
        assert answers(ended) == [Reply(first, {"stopReason": "end_turn", "usage": ACP_USAGE})]
        # The first prompt is answered before the second is written to Claude Code.
        assert index_of(ended, is_answer(first)) < index_of(ended, lambda e: isinstance(e, Query))

    # The CLI's trailing idle of the first turn arrives after the second was inserted: it does
    # not end the second prompt's turn.
    late = d.frame(state_changed("idle"))
    assert states(late) == [] and answers(late) == [] and queries(late) == []

    ended2 = d.frames(state_changed("running"), text("working on the second"), result())
    assert queries(ended2) == ["third"]
    if version == 2:
        assert states(ended2) == [("idle", "end_turn"), ("running", None)]
        assert [a.ticket for a in answers(ended2)] == [third]
    else:
        assert answers(ended2) == [Reply(second, {"stopReason": "end_turn", "usage": ACP_USAGE})]

    ended3 = d.frame(result())
    assert queries(ended3) == []
    if version == 2:
        assert states(ended3) == [("idle", "end_turn")]
        assert answers(ended3) == []
    else:
        assert answers(ended3) == [Reply(third, {"stopReason": "end_turn", "usage": ACP_USAGE})]


# --- retries: a submission named by its idempotencyKey (v2 Preview) ----------------------------------


def test_v2_a_retry_of_an_inserted_prompt_is_answered_with_its_message_id_and_inserts_nothing(
    new_driver: NewDriver,
) -> None:
    """Idempotency Keys RFD: the agent inserts a key's user message at most once and answers
    every retry with the original ``messageId``, during its turn and after it."""
    d = new_driver(2)
    _, inserted = d.prompt("Say hello.", key="k-1")
    [message] = user_messages(inserted)
    retried = [d.prompt("Say hello.", key="k-1")]
    run_turn(d)
    retried.append(d.prompt("Say hello.", key="k-1"))
    for ticket, effects in retried:
        assert effects == [Reply(ticket, {"messageId": message.message_id})]
    _, again = d.prompt("Say hello.", key="k-2")  # another submission, the same words
    [message2] = user_messages(again)
    assert message2.message_id != message.message_id and queries(again) == ["Say hello."]
    assert finds(d.effects) == [], "a conversation begun in this process has no prompt of another"
    check_transcript(d, d.effects, "v2")


def finds(effects: list[Effect]) -> list[FindPrompt]:
    return [e for e in effects if isinstance(e, FindPrompt)]


def taken_over(new_driver: NewDriver) -> CoreDriver:
    """A v2 session in a second agent process, whose Claude Code took over the stored conversation."""
    d = new_driver(2, instance="second")
    d.handle(ev.ClaudeResuming())
    return d


def test_v2_after_a_restart_a_retry_stored_by_the_first_process_is_answered_with_its_message_id(
    new_driver: NewDriver,
) -> None:
    """A key's message id is the session's and the key's alone, so the prompt the first process
    inserted is stored under the id a second one derives: the host looks for it in the stored
    conversation; meanwhile the attempts wait, and so does a prompt after them (prompts go in in
    order). Found: every attempt gets the first process's ``messageId``, nothing is inserted,
    and a later attempt is answered at once."""
    first = new_driver(2, instance="first")
    _, inserted = first.prompt("Say hello.", key="k")
    [original] = user_messages(inserted)
    d = taken_over(new_driver)
    attempt, asked = d.prompt("Say hello.", key="k")
    assert finds(asked) == [FindPrompt("k", original.message_id)] and answers(asked) == []
    retry, joined = d.prompt("Say hello.", key="k")
    after, waits = d.prompt("Next.")
    assert finds(joined + waits) == [] and queries(joined + waits) == []
    found = d.handle(ev.PromptLookedUp("k", True))
    reply: PromptAccepted = {"messageId": original.message_id}
    [next_message] = user_messages(found)
    assert queries(found) == ["Next."] and next_message.wire()["content"][0]["text"] == "Next."
    assert answers(found) == [
        Reply(attempt, reply),
        Reply(retry, reply),
        Reply(after, {"messageId": next_message.message_id}),
    ]
    run_turn(d)
    later, at_once = d.prompt("Say hello.", key="k")
    assert at_once == [Reply(later, reply)]
    assert queries(d.effects) == ["Next."]
    check_transcript(d, d.effects, "v2")


@pytest.mark.parametrize("stored", [False, None], ids=["not-stored", "unreadable"])
def test_v2_after_a_restart_a_key_not_stored_goes_in_and_an_unreadable_store_refuses_it(
    new_driver: NewDriver, stored: bool | None
) -> None:
    """Not in the stored conversation: the prompt goes in as any other, under its key's id.
    The conversation could not be read: every attempt is refused, nothing inserted (the client
    may try again), rather than the prompt perhaps run twice."""
    d = taken_over(new_driver)
    attempt, asked = d.prompt("Say hello.", key="k")
    [look] = finds(asked)
    out = d.handle(ev.PromptLookedUp("k", stored))
    if stored is False:
        [message] = user_messages(out)
        assert message.message_id == look.message_id and queries(out) == ["Say hello."]
        assert answers(out) == [Reply(attempt, {"messageId": look.message_id})]
    else:
        [refused] = answers(out)
        assert isinstance(refused, Fail) and refused.ticket == attempt and queries(out) == []
        assert (
            rpc_error(refused.failure).code == INTERNAL_ERROR and "idempotencyKey" in refused.failure.message
        )
    check_transcript(d, d.effects, "v2")


def waiting_twice(new_driver: NewDriver) -> tuple[CoreDriver, list[tuple[int, list[Effect]]]]:
    """A v2 turn runs; two attempts of one submission (key ``k``) come meanwhile."""
    d = new_driver(2)
    d.prompt("first")
    d.frames(state_changed("running"), text("working on the first"))
    return d, [d.prompt("second", key="k") for _ in range(2)]


def test_v2_a_retry_while_its_prompt_waits_is_answered_with_it_at_its_insertion(
    new_driver: NewDriver,
) -> None:
    d, [(waiting, held), (retry, joined)] = waiting_twice(new_driver)
    assert answers(held) == answers(joined) == [] and queries(joined) == []
    ended = d.frame(result())
    assert queries(ended) == ["second"]
    [message] = user_messages(ended)
    reply: PromptAccepted = {"messageId": message.message_id}
    assert answers(ended) == [Reply(waiting, reply), Reply(retry, reply)]
    assert d.frame(result()) and queries(d.effects).count("second") == 1
    check_transcript(d, d.effects, "v2")


@pytest.mark.parametrize("withdrawn", ["first", "retry"])
def test_v2_withdrawing_one_attempt_leaves_the_submission_to_the_others(
    new_driver: NewDriver, withdrawn: str
) -> None:
    d, [(first, _), (retry, _)] = waiting_twice(new_driver)
    gone, stays = (first, retry) if withdrawn == "first" else (retry, first)
    out = d.handle(ev.WithdrawPrompt(gone))
    [refused] = answers(out)
    assert isinstance(refused, Fail) and refused.ticket == gone
    assert rpc_error(refused.failure).code == REQUEST_CANCELLED
    ended = d.frame(result())
    [message] = user_messages(ended)
    assert queries(ended) == ["second"]
    assert answers(ended) == [Reply(stays, {"messageId": message.message_id})]


def test_v2_session_cancel_cancels_every_attempt_of_a_waiting_prompt(new_driver: NewDriver) -> None:
    d, attempts = waiting_twice(new_driver)
    tickets = [ticket for ticket, _ in attempts]
    cancelled = d.cancel()
    assert [a.ticket for a in answers(cancelled)] == tickets
    assert all(isinstance(a, Fail) for a in answers(cancelled))
    d.frame(interrupted_result())
    assert queries(d.effects).count("second") == 0


def test_a_v1_session_given_a_key_inserts_its_prompt_once_and_refuses_the_retry(
    new_driver: NewDriver,
) -> None:
    """Keys are v2's: the agent reads none from a v1 client. A v1 session still gets one when a
    later ``initialize`` made the connection v2 (a session keeps the version it was created
    with): its prompt still goes in once, and a retry, which v1 could answer only with the
    turn's outcome, is refused rather than run again."""
    d = new_driver(1)
    first, _ = d.prompt("Say hello.", key="k")
    retry, out = d.prompt("Say hello.", key="k")
    [refused] = answers(out)
    assert isinstance(refused, Fail) and refused.ticket == retry and queries(out) == []
    assert answers(run_turn(d)) == [Reply(first, {"stopReason": "end_turn", "usage": ACP_USAGE})]


# --- cancel ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_cancel_answers_waiting_prompts_and_interrupts_the_turn(version: int, new_driver: NewDriver) -> None:
    d = new_driver(version)
    first, _ = d.prompt("first")
    d.frames(state_changed("running"), text("working"))
    second, _ = d.prompt("second")
    third, _ = d.prompt("third")

    cancelled = d.handle(ev.CancelTurn(), 0.01)
    assert [e for e in cancelled if isinstance(e, Interrupt)] == [Interrupt()]
    if version == 2:
        refusals = [e for e in cancelled if isinstance(e, Fail)]
        assert [f.ticket for f in refusals] == [second, third]
        assert {rpc_error(f.failure).code for f in refusals} == {REQUEST_CANCELLED}
        assert not [e for e in cancelled if isinstance(e, Reply)]
    else:
        assert answers(cancelled) == [
            Reply(second, {"stopReason": "cancelled"}),
            Reply(third, {"stopReason": "cancelled"}),
        ]
    assert states(cancelled) == []  # the turn is not over until Claude Code says so
    assert queries(cancelled) == []

    # A prompt that arrives after session/cancel is not covered by it.
    fourth, after = d.prompt("fourth")
    assert answers(after) == [] and queries(after) == []

    ended = d.frames(interrupt_marker(), interrupted_result())
    if version == 2:
        assert states(ended) == [("idle", "cancelled"), ("running", None)]
        [idle] = [u for u in state_updates(ended) if u.state == "idle"]
        assert idle.error is None
        [message] = user_messages(ended)
        assert answers(ended) == [Reply(fourth, {"messageId": message.message_id})]
    else:
        assert answers(ended) == [Reply(first, {"stopReason": "cancelled", "usage": ACP_USAGE})]
    assert queries(ended) == ["fourth"]


@pytest.mark.parametrize("version", [1, 2])
def test_an_interrupt_that_yields_no_result_still_ends_the_cancelled_turn(
    version: int, new_driver: NewDriver
) -> None:
    d = new_driver(version)
    ticket, _ = d.prompt("first")
    d.frames(state_changed("running"), text("working"))
    assert Interrupt() in d.handle(ev.CancelTurn(), 0.01)

    ended = d.frame(state_changed("idle"))
    if version == 2:
        assert states(ended) == [("idle", "cancelled")]
    else:
        assert answers(ended) == [Reply(ticket, {"stopReason": "cancelled"})]


def test_v2_cancel_while_idle_sends_nothing_to_claude_code(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.prompt("first")
    run_turn(d)
    assert d.handle(ev.CancelTurn(), 0.01) == []


def test_v2_cancel_withdraws_the_open_foreground_question(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.prompt("first")
    d.frames(state_changed("running"), tool_use("toolu_fg", "Bash", {"command": "touch x"}))
    asked = d.ask(50, "Bash", {"command": "touch x"}, "toolu_fg")
    assert states(asked) == [("requires_action", None)]

    cancelled = d.handle(ev.CancelTurn(), 0.01)
    assert WithdrawPermission(50) in cancelled
    [decision] = [e for e in cancelled if isinstance(e, Decide)]
    assert (decision.ticket, decision.allow, decision.interrupt) == (50, False, True)
    assert Interrupt() in cancelled
    # Still cancelling: no longer blocked on the user, the turn's end is still to come.
    assert states(cancelled) == [("running", None)]
    assert states(d.frames(interrupt_marker(), interrupted_result())) == [("idle", "cancelled")]


# --- follow-up turns -------------------------------------------------------------------------------


@pytest.mark.parametrize("says_running", [True, False], ids=["running-first", "output-first"])
def test_a_follow_up_turn_is_running_then_idle_with_no_prompt(
    says_running: bool, new_driver: NewDriver
) -> None:
    d = new_driver(2)
    effects: list[Effect] = []
    if says_running:
        effects += d.frame(state_changed("running"))
    effects += d.frame(text("BG_DONE_ACK: saw the background task notification."))
    effects += d.frame(follow_up_result())
    effects += d.frame(state_changed("idle"))

    assert states(effects) == [("running", None), ("idle", "end_turn")]
    assert answers(effects) == [] and queries(effects) == [] and user_messages(effects) == []


def chunks(effects: list[Effect]) -> list[str]:
    """The agent text sent to the root session."""
    return [
        e.update.content.text  # type: ignore[union-attr]
        for e in effects
        if isinstance(e, Notify)
        and e.session_id == ROOT
        and getattr(e.update, "session_update", "") == "agent_message_chunk"
    ]


@pytest.mark.parametrize("says_running", [True, False], ids=["running-first", "output-first"])
def test_cancel_stops_a_turn_claude_code_started_itself(says_running: bool, new_driver: NewDriver) -> None:
    """A follow-up turn (no prompt of ours) is interrupted by session/cancel and ends ``cancelled``,
    without the ``error`` Claude Code's interrupted result reports; its late answer is not shown."""
    d = new_driver(2)
    started = d.frame(state_changed("running")) if says_running else d.frame(text("Looking at the result"))
    assert states(started) == [("running", None)]

    cancelled = d.handle(ev.CancelTurn(), 0.01)
    assert [e for e in cancelled if isinstance(e, Interrupt)] == [Interrupt()]
    assert d.handle(ev.CancelTurn(), 0.01) == []  # once is enough

    ended = d.frames(text("BG_DONE_ACK: the interrupted answer"), interrupt_marker(), interrupted_result())
    assert chunks(ended) == []
    assert states(ended) == [("idle", "cancelled")]
    [idle] = state_updates(ended)
    assert idle.error is None
    assert states(d.frame(state_changed("idle"))) == []

    # The session goes on: a new prompt is answered as usual, and its text shown.
    _, inserted = d.prompt("next")
    assert queries(inserted) == ["next"]
    after = d.frames(state_changed("running"), text("fresh answer"), result(), state_changed("idle"))
    assert chunks(after) == ["fresh answer"]
    assert states(after)[-1] == ("idle", "end_turn")


def test_cancel_while_a_follow_up_is_only_expected_interrupts_it_when_it_starts(
    new_driver: NewDriver,
) -> None:
    """A finished task promised a follow-up turn (``running`` already reported): a cancel in that
    window is not dropped: the turn is interrupted as it starts and ends ``cancelled``."""
    d = new_driver(2)
    shell = TaskSpec("shell", "bash01")
    d.frames(shell.launch(), shell.started(), tasks_changed([shell.level_entry()]), shell.hand_off())
    d.frames(result(), state_changed("idle"))
    expecting = d.frames(shell.updated("completed"), shell.notification("completed"), tasks_changed([]))
    expecting += d.drained("bash01")
    assert ("running", None) in states(expecting)

    # It may be running already, silently: interrupted at once, and again as it shows itself.
    assert [e for e in d.handle(ev.CancelTurn(), 0.01) if isinstance(e, Interrupt)] == [Interrupt()]
    begun = d.frame(state_changed("running"))
    assert Interrupt() in begun
    ended = d.frames(text("BG_DONE_ACK"), interrupt_marker(), interrupted_result(), state_changed("idle"))
    assert chunks(ended) == []
    assert states(ended) == [("idle", "cancelled")]


def test_cancel_while_a_follow_up_is_only_expected_and_none_comes(new_driver: NewDriver) -> None:
    d = new_driver(2)
    shell = TaskSpec("shell", "bash01")
    d.frames(shell.launch(), shell.started(), tasks_changed([shell.level_entry()]), shell.hand_off())
    d.frames(result(), state_changed("idle"))
    d.frames(shell.updated("completed"), shell.notification("completed"), tasks_changed([]))
    assert ("running", None) in states(d.drained("bash01"))
    d.handle(ev.CancelTurn(), 0.01)
    waited = d.advance(FOLLOW_UP_WAIT + 0.1)
    assert states(waited) == [("idle", "cancelled")]


def test_v1_follow_up_result_answers_no_prompt(new_driver: NewDriver) -> None:
    d = new_driver(1)
    ticket, _ = d.prompt("first")
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]
    follow = d.frames(
        state_changed("running"), text("BG_DONE_ACK"), follow_up_result(), state_changed("idle")
    )
    assert answers(follow) == []


def test_a_prompt_during_a_follow_up_turn_waits_for_its_idle(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.frames(state_changed("running"), text("BG_DONE_ACK"))
    ticket, held = d.prompt("while the follow-up runs")
    assert answers(held) == [] and queries(held) == []

    ended = d.frame(follow_up_result())
    assert states(ended) == [("idle", "end_turn"), ("running", None)]
    assert [a.ticket for a in answers(ended)] == [ticket]
    assert queries(ended) == ["while the follow-up runs"]


@pytest.mark.parametrize("version", [1, 2])
def test_a_prompt_taken_into_a_follow_up_turn_settles_at_that_turns_result(
    version: int, new_driver: NewDriver
) -> None:
    # Only a Claude Code that echoes uuids says which prompts a follow-up turn covered.
    d = new_driver(version, echo_uuids=True)
    # Claude Code starts a follow-up turn but says nothing yet: the prompt is inserted at once...
    ticket, inserted = d.prompt("while the follow-up starts")
    [uuid] = [e.uuid for e in inserted if isinstance(e, Query)]
    assert uuid is not None
    # ...and Claude Code takes it into that turn, whose result then covers it.
    effects = d.frames(text("BG_DONE_ACK, and about your question..."))
    effects += d.frame({**follow_up_result(), "user_message_uuids": [uuid]})
    if version == 2:
        assert states(effects) == [("idle", "end_turn")]
        assert answers(effects) == []
    else:
        assert answers(effects) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]


def test_a_follow_up_result_naming_no_prompt_leaves_the_inserted_prompt_running(
    cli_echoes_uuids: bool, new_driver: NewDriver
) -> None:
    d = new_driver(1)
    ticket, _ = d.prompt("first")
    d.frame(text("BG_DONE_ACK"))  # a follow-up turn Claude Code started before reading the prompt
    follow = d.frame(
        {**follow_up_result(), "user_message_uuids": []} if cli_echoes_uuids else follow_up_result()
    )
    assert answers(follow) == []
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]


def _finished_subagent_while_idle(d: CoreDriver) -> list[Effect]:
    """A v2 turn launches a subagent and ends; the subagent then completes while idle."""
    _with_running_subagent(d)
    d.frame(text("The subagent is working in the background."))
    assert states(d.frame(result()))[-1] == ("idle", "end_turn")
    return d.frames(HELPER.updated("completed"), HELPER.notification("completed"), tasks_changed([]))


def test_the_snapshot_that_removes_finished_work_already_says_running(new_driver: NewDriver) -> None:
    d = new_driver(2)
    ended = _finished_subagent_while_idle(d)
    updates = state_updates(ended)
    assert [(u.state, u.background) for u in updates][-1] == ("running", [])

    follow = d.frames(text("BG_DONE_ACK"), follow_up_result())
    assert states(follow) == [("idle", "end_turn")]


def test_a_long_follow_up_turn_without_a_running_state_stays_running(new_driver: NewDriver) -> None:
    d = new_driver(2)
    _finished_subagent_while_idle(d)
    started = d.now
    d.frame(text("Summarising what the helper found..."))  # the follow-up turn's first output

    assert states(d.tick(started + FOLLOW_UP_WAIT + 0.5)) == []  # still the same turn
    assert states(d.frame(follow_up_result())) == [("idle", "end_turn")]


# --- consecutive turns, and the follow-up each ended task owes ---------------------------------------

WINDOWS = {"claude-opus-5-5": {"inputTokens": 1, "outputTokens": 1, "costUSD": 0.5, "contextWindow": 200_000}}
"""A result's ``modelUsage``: with it, each turn's end also sends a ``usage_update`` (what the
background rules checker reads as a turn's end)."""
QUICK = TaskSpec("shell", "bash01")
SLOW = TaskSpec("shell", "bash02", run_id="run02")


def launched(d: CoreDriver, *shells: TaskSpec) -> list[Effect]:
    """The CLI's side of a turn that hands ``shells`` off to the background (the turn runs on)."""
    effects = d.frame(state_changed("running"))
    for shell in shells:
        effects += d.frames(shell.launch(), shell.started())
    effects += d.frame(tasks_changed([shell.level_entry() for shell in shells]))
    for shell in shells:
        effects += d.frame(shell.hand_off())
    return effects


def ends(shell: TaskSpec, still_running: list[TaskSpec] | None = None) -> list[Frame]:
    """Claude Code reports that ``shell`` ended by itself."""
    level = [other.level_entry() for other in still_running or []]
    return [shell.updated("completed"), shell.notification("completed"), tasks_changed(level)]


def follow_up(run_id: str = "run01") -> list[Frame]:
    """The turn Claude Code starts by itself about a task run that ended."""
    ended = {**follow_up_result(run_id=run_id), "modelUsage": WINDOWS}
    return [state_changed("running"), text("BG_DONE_ACK"), ended, state_changed("idle")]


@pytest.mark.parametrize("drained", ["during-the-turn", "after-the-follow-up"])
def test_consecutive_turns_have_an_idle_boundary(drained: str, new_driver: NewDriver) -> None:
    """A shell ends while the prompt's turn runs: Claude Code follows it up right after that
    turn's result. The prompt's turn ends with its own ``idle`` (its stop reason and usage), then
    the follow-up is ``running`` (already with the removal of the shell), then ``idle``."""
    d = new_driver(2)
    _, inserted = d.prompt("Start a quick job.")
    effects = inserted + launched(d, QUICK) + d.frames(*ends(QUICK))
    if drained == "during-the-turn":
        effects += d.drained(QUICK.task_id)
    user_end = d.frames(text("Started it."), result(model_usage=WINDOWS))
    assert states(user_end) == [("idle", "end_turn"), ("running", None)]
    assert state_updates(user_end)[0].usage == ACP_USAGE
    follow = d.frames(state_changed("idle"), *follow_up())
    if drained == "after-the-follow-up":
        follow += d.drained(QUICK.task_id)
    assert [s for s in states(follow) if s != ("idle", None)] == [("idle", "end_turn")]
    check_transcript(d, effects + user_end + follow, "v2")


def test_the_rules_checker_finds_consecutive_turns_without_an_idle() -> None:
    """What the agent sent before the boundary (the follow-up's turn running on from the
    prompt's): rule 8 breaks at the second turn's end."""
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "state_update", "state": "running", "background": []},
        {"sessionUpdate": "usage_update", "used": 35, "size": 200_000},
        {"sessionUpdate": "usage_update", "used": 31, "size": 200_000},
    ]
    rules = BackgroundRules(lists=True)
    rules.see(ROOT, updates[0])
    rules.see(ROOT, updates[1])
    with pytest.raises(Violation, match="rule 8: two turns of session-turns ended with no idle"):
        rules.see(ROOT, updates[2])


def test_v1_answers_the_prompt_with_its_own_turn_when_a_follow_up_runs_on(new_driver: NewDriver) -> None:
    d = new_driver(1)
    ticket, _ = d.prompt("Start a quick job.")
    launched(d, QUICK)
    d.frames(*ends(QUICK))
    d.drained(QUICK.task_id)
    user_end = d.frames(text("Started it."), result(stop_reason="max_tokens"))
    assert answers(user_end) == [Reply(ticket, {"stopReason": "max_tokens", "usage": ACP_USAGE})]
    assert answers(d.frames(*follow_up())) == []


def test_a_prompt_sent_during_the_turn_waits_for_the_follow_up_it_owes(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.prompt("Start a quick job.")
    launched(d, QUICK)
    d.frames(*ends(QUICK))
    _, waiting = d.prompt("And then?")
    assert queries(waiting) == []
    user_end = d.frame(result())
    assert states(user_end) == [("idle", "end_turn"), ("running", None)] and queries(user_end) == []
    follow = d.frames(*follow_up())
    assert states(follow)[:2] == [("idle", "end_turn"), ("running", None)]
    assert queries(follow) == ["And then?"]


@pytest.mark.parametrize("when", ["idle", "prompted"])
def test_a_follow_up_that_ran_before_its_shell_was_read_to_the_end_is_not_awaited_again(
    when: str, new_driver: NewDriver
) -> None:
    """The tailer reads a terminal's file to its end long after the task ended when the client
    reads slowly: by then Claude Code's follow-up turn has run. Its end changes nothing but the
    list, and the next prompt goes in at once."""
    d = new_driver(2)
    d.prompt("Start a job.")
    launched(d, QUICK)
    d.frames(result(), state_changed("idle"))
    ended = d.frames(*ends(QUICK))
    assert states(ended) == [("running", None)]  # Claude Code said so: its turn follows
    assert states(d.frames(*follow_up())) == [("idle", "end_turn")]
    if when == "prompted":
        _, inserted = d.prompt("Next.")
        assert queries(inserted) == ["Next."]
    drained = d.drained(QUICK.task_id)
    assert [(u.state, u.stop_reason, u.background) for u in state_updates(drained)] == [
        ("idle" if when == "idle" else "running", None, [])
    ]
    assert d.core.next_deadline() is None
    if when == "idle":
        _, inserted = d.prompt("Next.")
        assert queries(inserted) == ["Next."]
    check_transcript(d, d.effects, "v2")


def test_each_ended_task_owes_its_own_follow_up(new_driver: NewDriver) -> None:
    """Two shells end during a turn: two follow-up turns, each matched to its task by the run
    its result names; an idle between each."""
    d = new_driver(2)
    d.prompt("Start two jobs.")
    launched(d, QUICK, SLOW)
    d.frames(*ends(QUICK, still_running=[SLOW]), *ends(SLOW))
    assert states(d.frame(result())) == [("idle", "end_turn"), ("running", None)]
    first = d.frames(*follow_up("run01"))
    assert [s for s in states(first) if s[1] or s[0] == "running"] == [
        ("idle", "end_turn"),
        ("running", None),
    ]
    second = d.frames(*follow_up("run02"))
    assert states(second) == [("idle", "end_turn")]
    assert d.core.next_deadline() is None


def test_what_claude_code_still_says_after_the_session_closed_is_not_shown(new_driver: NewDriver) -> None:
    """The close ends the turn as ``cancelled``; Claude Code may still answer before it stops
    (a follow-up turn it had begun): that answer would come after the idle, outside any turn."""
    d = new_driver(2)
    d.prompt("A question.")
    d.frame(state_changed("running"))
    assert states(d.handle(ev.Close(), 0.01)) == [("idle", "cancelled")]
    late = d.frames(text("An answer nobody waits for."), result(model_usage=WINDOWS), state_changed("idle"))
    assert chunks(late) == [] and states(late) == []
    assert not d.updates_of(late, "usage_update")


# --- a Claude Code that resumes the stored conversation ------------------------------------------------


def empty_turn() -> list[Frame]:
    """What the bundled CLI sends when it resumes a conversation whose shell the end of the
    previous agent process cut short: that task's notification, and a turn without a model
    request (``num_turns: 0``)."""
    cut = TaskSpec("shell", "bash09")
    ended = {**result(result_text="", origin={"kind": "task-notification"}), "num_turns": 0}
    ended["usage"] = {key: 0 for key in ended["usage"]}
    return [cut.notification("stopped"), state_changed("running"), ended, state_changed("idle")]


def test_a_resumed_claude_codes_empty_turn_is_not_shown_and_a_prompt_waits_for_its_end(
    new_driver: NewDriver,
) -> None:
    d = new_driver(2)
    d.handle(ev.ClaudeResuming())
    notified, running, ended, idle = empty_turn()
    assert states(d.frames(notified, running)) == []
    assert states(d.resync()) == [("idle", None)]  # what the client resuming the session is told
    ticket, waiting = d.prompt("And now?")
    assert states(waiting) == [] and queries(waiting) == [] and answers(waiting) == []
    inserted = d.frame(ended)
    assert states(inserted) == [("running", None)]
    assert queries(inserted) == ["And now?"] and [a.ticket for a in answers(inserted)] == [ticket]
    turn = d.frame(idle) + run_turn(d) + d.frame(state_changed("idle"))
    assert states(turn) == [("idle", "end_turn")]
    assert state_updates(turn)[0].usage == ACP_USAGE
    check_transcript(d, d.effects, "v2")


def test_a_resumed_claude_code_that_works_is_a_turn_the_prompt_waits_for(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.handle(ev.ClaudeResuming())
    d.frame(state_changed("running"))
    _, waiting = d.prompt("And now?")
    assert queries(waiting) == []
    working = d.frame(text("The job that was cut short printed half its lines."))
    assert states(working) == [("running", None)]
    ended = d.frames(result(origin=follow_up_origin()), state_changed("idle"))
    assert states(ended) == [("idle", "end_turn"), ("running", None)]
    assert queries(ended) == ["And now?"]
    check_transcript(d, d.effects, "v2")


# --- permission questions ----------------------------------------------------------------------------


@pytest.mark.parametrize("client", ["v1-plain", "v2"])
def test_a_question_leaves_the_status_of_a_tool_call_that_runs_as_it_is(
    new_driver: NewDriver, client: str
) -> None:
    """A client applies a permission request's tool call as an update (v2's schema says so):
    one already ``in_progress`` is not put back to ``pending`` (statuses never go back); one the
    question shows first is created ``pending``."""
    d = new_driver(int(client[1]))
    d.prompt("Touch a file.")
    d.frames(state_changed("running"), tool_use("toolu_touch", "Bash", {"command": "touch x"}))
    asked = d.ask(1, "Bash", {"command": "touch x"}, "toolu_touch", None)
    first = d.ask(2, "Bash", {"command": "touch y"}, "toolu_unseen", None)
    calls = [
        e.params.get("toolCall") or e.params["subject"]["toolCall"]
        for e in asked + first
        if isinstance(e, AskPermission)
    ]
    assert [call.get("status") for call in calls] == [None, "pending"]
    check_transcript(d, d.effects, client)


def test_requires_action_while_a_foreground_question_is_open(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.prompt("Create a file.")
    d.frames(state_changed("running"), tool_use("toolu_fg", "Bash", {"command": "touch x"}))

    asked = d.ask(50, "Bash", {"command": "touch x"}, "toolu_fg")
    assert next(e for e in asked if isinstance(e, AskPermission)).params["sessionId"] == ROOT
    assert states(asked) == [("requires_action", None)]

    answered = d.answer(50, ALLOW_ONCE)
    assert Decide(50, True) in answered
    assert states(answered) == [("running", None)]
    assert states(run_turn(d)) == [("idle", "end_turn")]


def test_requires_action_lasts_until_the_last_foreground_question_is_answered(new_driver: NewDriver) -> None:
    d = new_driver(2)
    d.prompt("Create two files.")
    d.frame(state_changed("running"))
    assert states(d.ask(50, "Bash", {"command": "touch a"}, "t-a")) == [("requires_action", None)]
    assert states(d.ask(51, "Bash", {"command": "touch b"}, "t-b")) == []
    assert states(d.answer(50, ALLOW_ONCE)) == []
    assert states(d.answer(51, None)) == [("running", None)]


def _with_running_subagent(d: CoreDriver) -> None:
    d.prompt("Start a background helper.")
    d.frames(
        state_changed("running"),
        HELPER.launch(),
        tasks_changed([HELPER.level_entry()]),
        HELPER.started(),
        HELPER.hand_off(),
    )


@pytest.mark.parametrize("parent_turn", ["running", "ended"])
def test_a_subagent_question_does_not_change_the_foreground_state(
    parent_turn: str, new_driver: NewDriver
) -> None:
    d = new_driver(2)
    _with_running_subagent(d)
    expected = "running"
    if parent_turn == "ended":
        d.frames(text("The subagent is working in the background."), result())
        expected = "idle"
    assert d.core.foreground.state().value == expected

    asked = d.ask(60, "Bash", {"command": "touch sub"}, "toolu_sub", "agent01")
    [ask] = [e for e in asked if isinstance(e, AskPermission)]
    assert ask.params["sessionId"] == "agent01"
    assert states(asked) == []
    answered = d.answer(60, ALLOW_ONCE)
    assert Decide(60, True) in answered
    assert states(answered) == []
    assert d.core.foreground.state().value == expected


# --- how turns end -----------------------------------------------------------------------------------


ERROR_ENDINGS = [
    pytest.param(
        [],
        result("error_during_execution", None, True, None, ["the model request failed"]),
        INTERNAL_ERROR,
        "the model request failed",
        id="error-result",
    ),
    pytest.param(
        [],
        result("success", "end_turn", True, "API Error: 500 overloaded"),
        INTERNAL_ERROR,
        "API Error: 500 overloaded",
        id="is-error-success",
    ),
    pytest.param(
        [assistant([{"type": "text", "text": "Please run /login"}], None, error="authentication_failed")],
        result("success", "stop_sequence", True, "Please run /login"),
        -32000,
        f"{LOGIN_HINT} (Please run /login)",
        id="authentication",
    ),
]


@pytest.mark.parametrize(("before", "ending", "code", "message"), ERROR_ENDINGS)
def test_v2_error_result_ends_idle_with_an_error(
    before: list[dict[str, Any]], ending: dict[str, Any], code: int, message: str, new_driver: NewDriver
) -> None:
    d = new_driver(2)
    ticket, inserted = d.prompt("first")
    assert [a.ticket for a in answers(inserted)] == [ticket]
    ended = d.frames(state_changed("running"), *before, ending)

    [idle] = state_updates(ended)
    assert (idle.state, idle.stop_reason) == ("idle", "error")
    assert idle.error is not None and (idle.error.code, idle.error.message) == (code, message)
    assert answers(ended) == []  # inserted: the prompt never gets an error answer


@pytest.mark.parametrize(("before", "ending", "code", "message"), ERROR_ENDINGS)
def test_v1_error_result_is_a_json_rpc_error_answer(
    before: list[dict[str, Any]], ending: dict[str, Any], code: int, message: str, new_driver: NewDriver
) -> None:
    d = new_driver(1)
    ticket, _ = d.prompt("first")
    ended = d.frames(state_changed("running"), *before, ending)
    [fail] = answers(ended)
    assert isinstance(fail, Fail) and fail.ticket == ticket
    error = rpc_error(fail.failure)
    assert (error.code, error.message) == (code, message)


STOP_REASONS = [
    pytest.param(max_output_tokens(), "max_tokens", id="max_output_tokens"),
    pytest.param([result(stop_reason="max_tokens")], "max_tokens", id="max_tokens"),
    pytest.param([result(stop_reason="model_context_window_exceeded")], "max_tokens", id="context-window"),
    pytest.param([result(stop_reason="refusal")], "refusal", id="refusal"),
    pytest.param(
        [result("error_max_turns", None, True, None, ["max turns"])], "max_turn_requests", id="max-turns"
    ),
    pytest.param([result(stop_reason="stop_sequence")], "end_turn", id="stop-sequence"),
]


@pytest.mark.parametrize(("frames", "stop_reason"), STOP_REASONS)
@pytest.mark.parametrize("version", [1, 2])
def test_stop_reasons(
    frames: list[dict[str, Any]], stop_reason: str, version: int, new_driver: NewDriver
) -> None:
    d = new_driver(version)
    ticket, _ = d.prompt("Write a long answer.")
    ended = d.frames(state_changed("running"), text("This answer is cut off"), *frames)
    if version == 2:
        [idle] = state_updates(ended)
        assert (idle.state, idle.stop_reason, idle.error) == ("idle", stop_reason, None)
        assert answers(ended) == []
    else:
        assert answers(ended) == [Reply(ticket, {"stopReason": stop_reason, "usage": ACP_USAGE})]


def test_a_turn_error_does_not_leak_into_the_next_turn(new_driver: NewDriver) -> None:
    d = new_driver(1)
    d.prompt("first")
    d.frames(state_changed("running"), *max_output_tokens())
    ticket, _ = d.prompt("second")
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]


# --- a stop the client asked for, and Claude Code's follow-up turn (issue 29) --------------------

STOPPED_MONITOR = TaskSpec("monitor", "mon09", description="tick watcher")
STOPPED_AGENT = TaskSpec("agent", "agent09", tool_use_id="toolu_stopped_agent", description="helper")


def stop_monitor(d: CoreDriver) -> list[Effect]:
    return d.handle(ev.CancelToolCall(ROOT, str(STOPPED_MONITOR.tool_use_id)))


def stop_agent(d: CoreDriver) -> list[Effect]:
    return d.handle(ev.CancelChild(STOPPED_AGENT.task_id))


@pytest.mark.parametrize(
    ("work", "stop"), [(STOPPED_MONITOR, stop_monitor), (STOPPED_AGENT, stop_agent)], ids=["monitor", "agent"]
)
def test_stopped_work_without_a_process_is_removed_with_the_running_of_its_follow_up(
    work: TaskSpec, stop: Callable[[CoreDriver], list[Effect]], new_driver: NewDriver
) -> None:
    """CLI 2.1.332 starts a turn about a stopped Monitor or background subagent (a stopped shell
    it does not): the snapshot that removes the item says ``running``, rather than ``idle`` with
    an empty list and ``running`` 60-95 ms later."""
    d = new_driver(2)
    d.prompt("Start it.")
    d.frames(state_changed("running"), work.launch(), tasks_changed([work.level_entry()]), work.started())
    d.frames(work.hand_off(), text("Started."), result(), state_changed("idle"))
    assert [s for s, _ in states(stop(d))] == []
    ended = d.frames(work.updated("killed"), work.notification("stopped"), tasks_changed([]))
    removal = next(u for u in state_updates(ended) if u.background == [])
    assert removal.state == "running"
    after = d.frames(
        state_changed("running"), text("It was stopped."), follow_up_result(), state_changed("idle")
    )
    assert states(after) == [("idle", "end_turn")]
    check_transcript(d, d.effects, "v2")
