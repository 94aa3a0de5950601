"""The foreground lifecycle through ``SessionCore``: prompts, turns, cancel, and the v2 state.

Frames are built by hand in the shape of the recorded real-CLI frames under
``fixtures/sdk_events`` and parsed by the SDK's own ``parse_message``, as the replay does: they
stand in where the real CLI cannot be made to produce the exact interleaving a test needs (a
prompt arriving mid-turn at a chosen moment, a permission question of a subagent while the
parent turn runs, an error result). The recorded scenarios themselves are covered by
``test_replay``. Every test runs twice: against a Claude Code whose results name the user
messages they end (``user_message_uuids``, echoing the uuid of our ``Query``) and against one
whose results do not, where only ``origin`` tells a follow-up turn from a prompt's.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import pytest
from claude_agent_sdk._internal.message_parser import parse_message

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, REQUEST_CANCELLED
from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.acp.updates import StateUpdate, UserMessage
from claude_bg_acp.bridge.effects import (
    AskPermission,
    Decide,
    Effect,
    Fail,
    Interrupt,
    Notify,
    Query,
    Reply,
    WithdrawPermission,
)
from claude_bg_acp.bridge.session import ALLOW_ONCE, SessionCore
from claude_bg_acp.bridge.turns import FOLLOW_UP_WAIT, Version

ROOT = "session-turns"
CLI_SESSION = "00000000-0000-4000-8000-5e5510000000"
OUTPUT_DIR = f"/tmp/claude-bg-acp/tmp/claude-0/-tmp-claude-bg-acp-work/{CLI_SESSION}/tasks"
RESULT_USAGE = {
    "input_tokens": 24,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 88,
}
ACP_USAGE = {
    "totalTokens": 112,
    "inputTokens": 24,
    "outputTokens": 88,
    "cachedReadTokens": 0,
    "cachedWriteTokens": 0,
}
TASK_NOTIFICATION_ORIGIN = {"kind": "task-notification", "producer": "session-task", "runId": "run01"}


# --- frames shaped like the recorded ones ----------------------------------------------------

_uuids = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuids):012d}"


def _system(subtype: str, **fields: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, **fields, "uuid": _uuid(), "session_id": CLI_SESSION}


def state_changed(state: str) -> dict[str, Any]:
    return _system("session_state_changed", state=state)


def assistant(content: list[dict[str, Any]], parent: str | None = None, **extra: Any) -> dict[str, Any]:
    message = {
        "id": f"msg_{_uuid()[-12:]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "stop_sequence": None,
        "content": content,
        "stop_reason": None,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
        "context_management": None,
    }
    return {
        "type": "assistant",
        "message": message,
        "parent_tool_use_id": parent,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": "1970-01-01T00:00:00.000Z",
        **extra,
    }


def text(words: str, parent: str | None = None) -> dict[str, Any]:
    return assistant([{"type": "text", "text": words}], parent)


def tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return assistant([{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}])


def tool_result(tool_use_id: str, content: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": False}
            ],
        },
        "parent_tool_use_id": None,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": "1970-01-01T00:00:00.000Z",
    }


def agent_launch(tool_use_id: str, description: str = "background helper") -> dict[str, Any]:
    return tool_use(
        tool_use_id,
        "Agent",
        {
            "description": description,
            "prompt": "Do the small job and report.",
            "subagent_type": "general-purpose",
            "run_in_background": True,
        },
    )


def agent_launched(tool_use_id: str, task_id: str) -> dict[str, Any]:
    return tool_result(
        tool_use_id,
        f"Async agent launched successfully.\nagentId: {task_id}\n"
        f"The agent is working in the background.\noutput_file: {OUTPUT_DIR}/{task_id}.output",
    )


def shell_launch(tool_use_id: str, command: str) -> dict[str, Any]:
    return tool_use(
        tool_use_id, "Bash", {"command": command, "description": "background job", "run_in_background": True}
    )


def shell_launched(tool_use_id: str, task_id: str) -> dict[str, Any]:
    return tool_result(
        tool_use_id,
        f"Command running in background with ID: {task_id}. Output is being written to: "
        f"{OUTPUT_DIR}/{task_id}.output. You will be notified when it completes.",
    )


def level_entry(task_id: str, run_id: str, kind: str, description: str) -> dict[str, Any]:
    entry = {"task_id": task_id, "run_id": run_id, "task_type": kind, "description": description}
    if kind == "local_agent":
        entry["subagent_type"] = "general-purpose"
    return entry


def tasks_changed(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return _system("background_tasks_changed", tasks=entries)


def task_started(task_id: str, run_id: str, kind: str, tool_use_id: str, description: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "run_id": run_id,
        "tool_use_id": tool_use_id,
        "description": description,
        "is_backgrounded": True,
        "task_type": kind,
    }
    if kind == "local_agent":
        fields.update(subagent_type="general-purpose", spawn_depth=1, prompt="Do the small job and report.")
    return _system("task_started", **fields)


def task_updated(task_id: str, run_id: str, status: str) -> dict[str, Any]:
    return _system("task_updated", task_id=task_id, run_id=run_id, patch={"status": status, "end_time": 0})


def task_notification(task_id: str, run_id: str, tool_use_id: str, status: str) -> dict[str, Any]:
    return _system(
        "task_notification",
        task_id=task_id,
        run_id=run_id,
        tool_use_id=tool_use_id,
        status=status,
        output_file=f"{OUTPUT_DIR}/{task_id}.output",
        summary=f"{task_id} {status}",
    )


def result(
    subtype: str = "success",
    stop_reason: str | None = "end_turn",
    is_error: bool = False,
    result_text: str | None = "Done.",
    errors: list[str] | None = None,
    origin: dict[str, Any] | None = None,
    terminal_reason: str = "completed",
) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": is_error,
        "num_turns": 1,
        "session_id": CLI_SESSION,
        "stop_reason": stop_reason,
        "total_cost_usd": 0.002,
        "usage": dict(RESULT_USAGE),
        "permission_denials": [],
        "terminal_reason": terminal_reason,
        "uuid": _uuid(),
    }
    if result_text is not None:
        frame["result"] = result_text
    if errors is not None:
        frame["errors"] = errors
    if origin is not None:
        frame["origin"] = origin
    return frame


def interrupted_result() -> dict[str, Any]:
    """What the CLI sends when an interrupt ends a turn (as recorded in ``agent_interrupt``)."""
    return result(
        "error_during_execution",
        stop_reason="tool_use",
        is_error=True,
        result_text=None,
        errors=["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"],
        terminal_reason="aborted_streaming",
    )


def follow_up_result(words: str = "BG_DONE_ACK") -> dict[str, Any]:
    return result(result_text=words, origin=TASK_NOTIFICATION_ORIGIN)


# --- driving one session ----------------------------------------------------------------------


class Driver:
    """One ``SessionCore`` with a clock: frames through ``parse_message``, requests as the agent.

    With ``echo_uuids`` (current Claude Code), a result that has no ``origin`` and names no user
    messages gets ``user_message_uuids`` naming the oldest user message written to Claude Code
    whose result has not come yet, as Claude Code echoes the uuid ``Query`` sent; without it
    (older Claude Code), results name none and the origin alone tells a follow-up turn.
    """

    ECHO_UUIDS = True

    def __init__(
        self, version: Version, expose_subagents: bool | None = None, echo_uuids: bool | None = None
    ) -> None:
        self.core = SessionCore(ROOT, version, "/tmp/claude-bg-acp/work", expose_subagents=expose_subagents)
        self.now = 0.0
        self.echo_uuids = self.ECHO_UUIDS if echo_uuids is None else echo_uuids
        self.sent: deque[str | None] = deque()
        """The uuids of the user messages written to Claude Code (``Query``), oldest first."""
        self._tickets = itertools.count(1)

    def feed(self, frame: dict[str, Any], dt: float = 0.01) -> list[Effect]:
        self.now += dt
        if frame.get("type") == "result" and "origin" not in frame and "user_message_uuids" not in frame:
            covered = self.sent.popleft() if self.sent else None
            if self.echo_uuids and covered is not None:
                frame = {**frame, "user_message_uuids": [covered]}
        message = parse_message(frame)
        assert message is not None
        return self._sent(self.core.sdk_message(message, self.now))

    def _sent(self, effects: list[Effect]) -> list[Effect]:
        self.sent.extend(e.uuid for e in effects if isinstance(e, Query))
        return effects

    def feed_all(self, *frames: dict[str, Any]) -> list[Effect]:
        effects: list[Effect] = []
        for frame in frames:
            effects += self.feed(frame)
        return effects

    def prompt(self, words: str) -> tuple[int, list[Effect]]:
        ticket = next(self._tickets)
        self.now += 0.01
        content = [ContentBlock.model_validate({"type": "text", "text": words})]
        return ticket, self._sent(self.core.prompt(ticket, content, self.now))

    def cancel(self) -> list[Effect]:
        self.now += 0.01
        return self._sent(self.core.cancel(self.now))

    def tick(self, to: float) -> list[Effect]:
        self.now = to
        return self._sent(self.core.tick(self.now))


@pytest.fixture(autouse=True, params=[True, False], ids=["uuids", "origin"])
def cli_echoes_uuids(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test runs against Claude Code that echoes user message uuids and one that does not."""
    echo = bool(request.param)
    monkeypatch.setattr(Driver, "ECHO_UUIDS", echo)
    return echo


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


def run_turn(d: Driver, words: str = "Hello.") -> list[Effect]:
    """The CLI's side of a plain user turn, from ``running`` to its result."""
    return d.feed_all(state_changed("running"), text(words), result())


# --- insertion ----------------------------------------------------------------------------------


def test_v2_prompt_is_answered_with_its_message_id_at_insertion() -> None:
    d = Driver(2)
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


def test_v2_message_ids_are_distinct_for_identical_prompts() -> None:
    d = Driver(2)
    first, inserted = d.prompt("Same words.")
    run_turn(d)
    second, again = d.prompt("Same words.")
    [one], [two] = user_messages(inserted), user_messages(again)
    assert one.message_id != two.message_id
    assert answers(again) == [Reply(second, {"messageId": two.message_id})]
    assert first != second


@pytest.mark.parametrize("version", [1, 2])
def test_prompts_during_a_turn_wait_and_are_inserted_after_an_idle_boundary_in_order(
    version: Version,
) -> None:
    d = Driver(version)
    first, _ = d.prompt("first")
    d.feed_all(state_changed("running"), text("working on the first"))

    second, held2 = d.prompt("second")
    third, held3 = d.prompt("third")
    for held in (held2, held3):
        assert answers(held) == [] and queries(held) == [] and user_messages(held) == []
        assert states(held) == []  # still the same running interval

    ended = d.feed(result())
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
    late = d.feed(state_changed("idle"))
    assert states(late) == [] and answers(late) == [] and queries(late) == []

    ended2 = d.feed_all(state_changed("running"), text("working on the second"), result())
    assert queries(ended2) == ["third"]
    if version == 2:
        assert states(ended2) == [("idle", "end_turn"), ("running", None)]
        assert [a.ticket for a in answers(ended2)] == [third]
    else:
        assert answers(ended2) == [Reply(second, {"stopReason": "end_turn", "usage": ACP_USAGE})]

    ended3 = d.feed(result())
    assert queries(ended3) == []
    if version == 2:
        assert states(ended3) == [("idle", "end_turn")]
        assert answers(ended3) == []
    else:
        assert answers(ended3) == [Reply(third, {"stopReason": "end_turn", "usage": ACP_USAGE})]


# --- cancel ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_cancel_answers_waiting_prompts_and_interrupts_the_turn(version: Version) -> None:
    d = Driver(version)
    first, _ = d.prompt("first")
    d.feed_all(state_changed("running"), text("working"))
    second, _ = d.prompt("second")
    third, _ = d.prompt("third")

    cancelled = d.cancel()
    assert [e for e in cancelled if isinstance(e, Interrupt)] == [Interrupt()]
    if version == 2:
        refusals = [e for e in cancelled if isinstance(e, Fail)]
        assert [f.ticket for f in refusals] == [second, third]
        assert {f.error.code for f in refusals} == {REQUEST_CANCELLED}
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

    ended = d.feed_all(*_interrupt_frames())
    if version == 2:
        assert states(ended) == [("idle", "cancelled"), ("running", None)]
        [idle] = [u for u in state_updates(ended) if u.state == "idle"]
        assert idle.error is None
        [message] = user_messages(ended)
        assert answers(ended) == [Reply(fourth, {"messageId": message.message_id})]
    else:
        assert answers(ended) == [Reply(first, {"stopReason": "cancelled", "usage": ACP_USAGE})]
    assert queries(ended) == ["fourth"]


def _interrupt_frames() -> list[dict[str, Any]]:
    # As recorded in agent_interrupt: the interrupt marker, then an error_during_execution result.
    marker = {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        "parent_tool_use_id": None,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": "1970-01-01T00:00:00.000Z",
    }
    return [marker, interrupted_result()]


@pytest.mark.parametrize("version", [1, 2])
def test_an_interrupt_that_yields_no_result_still_ends_the_cancelled_turn(version: Version) -> None:
    d = Driver(version)
    ticket, _ = d.prompt("first")
    d.feed_all(state_changed("running"), text("working"))
    assert Interrupt() in d.cancel()

    ended = d.feed(state_changed("idle"))
    if version == 2:
        assert states(ended) == [("idle", "cancelled")]
    else:
        assert answers(ended) == [Reply(ticket, {"stopReason": "cancelled"})]


def test_v2_cancel_while_idle_sends_nothing_to_claude_code() -> None:
    d = Driver(2)
    d.prompt("first")
    run_turn(d)
    assert d.cancel() == []


def test_v2_cancel_withdraws_the_open_foreground_question() -> None:
    d = Driver(2)
    d.prompt("first")
    d.feed_all(state_changed("running"), tool_use("toolu_fg", "Bash", {"command": "touch x"}))
    asked = d.core.permission_requested(50, "Bash", {"command": "touch x"}, "toolu_fg", None, d.now)
    assert states(asked) == [("requires_action", None)]

    cancelled = d.cancel()
    assert WithdrawPermission(50) in cancelled
    [decision] = [e for e in cancelled if isinstance(e, Decide)]
    assert (decision.ticket, decision.allow, decision.interrupt) == (50, False, True)
    assert Interrupt() in cancelled
    # Still cancelling: no longer blocked on the user, the turn's end is still to come.
    assert states(cancelled) == [("running", None)]
    assert states(d.feed_all(*_interrupt_frames())) == [("idle", "cancelled")]


# --- follow-up turns -------------------------------------------------------------------------------


@pytest.mark.parametrize("says_running", [True, False], ids=["running-first", "output-first"])
def test_a_follow_up_turn_is_running_then_idle_with_no_prompt(says_running: bool) -> None:
    d = Driver(2)
    effects: list[Effect] = []
    if says_running:
        effects += d.feed(state_changed("running"))
    effects += d.feed(text("BG_DONE_ACK: saw the background task notification."))
    effects += d.feed(follow_up_result())
    effects += d.feed(state_changed("idle"))

    assert states(effects) == [("running", None), ("idle", "end_turn")]
    assert answers(effects) == [] and queries(effects) == [] and user_messages(effects) == []


def test_v1_follow_up_result_answers_no_prompt() -> None:
    d = Driver(1)
    ticket, _ = d.prompt("first")
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]
    follow = d.feed_all(
        state_changed("running"), text("BG_DONE_ACK"), follow_up_result(), state_changed("idle")
    )
    assert answers(follow) == []


def test_a_prompt_during_a_follow_up_turn_waits_for_its_idle() -> None:
    d = Driver(2)
    d.feed_all(state_changed("running"), text("BG_DONE_ACK"))
    ticket, held = d.prompt("while the follow-up runs")
    assert answers(held) == [] and queries(held) == []

    ended = d.feed(follow_up_result())
    assert states(ended) == [("idle", "end_turn"), ("running", None)]
    assert [a.ticket for a in answers(ended)] == [ticket]
    assert queries(ended) == ["while the follow-up runs"]


@pytest.mark.parametrize("version", [1, 2])
def test_a_prompt_taken_into_a_follow_up_turn_settles_at_that_turns_result(version: Version) -> None:
    # Only a Claude Code that echoes uuids says which prompts a follow-up turn covered.
    d = Driver(version, echo_uuids=True)
    # Claude Code starts a follow-up turn but says nothing yet: the prompt is inserted at once...
    ticket, inserted = d.prompt("while the follow-up starts")
    [uuid] = [e.uuid for e in inserted if isinstance(e, Query)]
    assert uuid is not None
    # ...and Claude Code takes it into that turn, whose result then covers it.
    effects = d.feed_all(text("BG_DONE_ACK, and about your question..."))
    effects += d.feed({**follow_up_result(), "user_message_uuids": [uuid]})
    if version == 2:
        assert states(effects) == [("idle", "end_turn")]
        assert answers(effects) == []
    else:
        assert answers(effects) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]


def test_a_follow_up_result_naming_no_prompt_leaves_the_inserted_prompt_running(
    cli_echoes_uuids: bool,
) -> None:
    d = Driver(1)
    ticket, _ = d.prompt("first")
    d.feed(text("BG_DONE_ACK"))  # a follow-up turn Claude Code started before reading the prompt
    follow = d.feed(
        {**follow_up_result(), "user_message_uuids": []} if cli_echoes_uuids else follow_up_result()
    )
    assert answers(follow) == []
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]


def _finished_subagent_while_idle(d: Driver) -> list[Effect]:
    """A v2 turn launches a subagent and ends; the subagent then completes while idle."""
    _with_running_subagent(d)
    d.feed(text("The subagent is working in the background."))
    assert states(d.feed(result()))[-1] == ("idle", "end_turn")
    return d.feed_all(
        task_updated("agent01", "run01", "completed"),
        task_notification("agent01", "run01", "toolu_agent", "completed"),
        tasks_changed([]),
    )


def test_the_snapshot_that_removes_finished_work_already_says_running() -> None:
    d = Driver(2)
    ended = _finished_subagent_while_idle(d)
    updates = state_updates(ended)
    assert [(u.state, u.background) for u in updates][-1] == ("running", [])

    follow = d.feed_all(text("BG_DONE_ACK"), follow_up_result())
    assert states(follow) == [("idle", "end_turn")]


def test_a_long_follow_up_turn_without_a_running_state_stays_running() -> None:
    d = Driver(2)
    _finished_subagent_while_idle(d)
    started = d.now
    d.feed(text("Summarising what the helper found..."))  # the follow-up turn's first output

    assert states(d.tick(started + FOLLOW_UP_WAIT + 0.5)) == []  # still the same turn
    assert states(d.feed(follow_up_result())) == [("idle", "end_turn")]


# --- permission questions ----------------------------------------------------------------------------


def test_requires_action_while_a_foreground_question_is_open() -> None:
    d = Driver(2)
    d.prompt("Create a file.")
    d.feed_all(state_changed("running"), tool_use("toolu_fg", "Bash", {"command": "touch x"}))

    asked = d.core.permission_requested(50, "Bash", {"command": "touch x"}, "toolu_fg", None, d.now)
    assert next(e for e in asked if isinstance(e, AskPermission)).params["sessionId"] == ROOT
    assert states(asked) == [("requires_action", None)]

    answered = d.core.permission_answered(50, ALLOW_ONCE, d.now)
    assert Decide(50, True) in answered
    assert states(answered) == [("running", None)]
    assert states(run_turn(d)) == [("idle", "end_turn")]


def test_requires_action_lasts_until_the_last_foreground_question_is_answered() -> None:
    d = Driver(2)
    d.prompt("Create two files.")
    d.feed(state_changed("running"))
    assert states(d.core.permission_requested(50, "Bash", {"command": "touch a"}, "t-a", None, d.now)) == [
        ("requires_action", None)
    ]
    assert states(d.core.permission_requested(51, "Bash", {"command": "touch b"}, "t-b", None, d.now)) == []
    assert states(d.core.permission_answered(50, ALLOW_ONCE, d.now)) == []
    assert states(d.core.permission_answered(51, None, d.now)) == [("running", None)]


def _with_running_subagent(d: Driver) -> None:
    d.prompt("Start a background helper.")
    d.feed_all(
        state_changed("running"),
        agent_launch("toolu_agent"),
        tasks_changed([level_entry("agent01", "run01", "local_agent", "background helper")]),
        task_started("agent01", "run01", "local_agent", "toolu_agent", "background helper"),
        agent_launched("toolu_agent", "agent01"),
    )


@pytest.mark.parametrize("parent_turn", ["running", "ended"])
def test_a_subagent_question_does_not_change_the_foreground_state(parent_turn: str) -> None:
    d = Driver(2)
    _with_running_subagent(d)
    expected = "running"
    if parent_turn == "ended":
        d.feed_all(text("The subagent is working in the background."), result())
        expected = "idle"
    assert d.core.foreground.state() == expected

    asked = d.core.permission_requested(60, "Bash", {"command": "touch sub"}, "toolu_sub", "agent01", d.now)
    [ask] = [e for e in asked if isinstance(e, AskPermission)]
    assert ask.params["sessionId"] == "agent01"
    assert states(asked) == []
    answered = d.core.permission_answered(60, ALLOW_ONCE, d.now)
    assert Decide(60, True) in answered
    assert states(answered) == []
    assert d.core.foreground.state() == expected


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
        "Please run /login",
        id="authentication",
    ),
]


@pytest.mark.parametrize(("before", "ending", "code", "message"), ERROR_ENDINGS)
def test_v2_error_result_ends_idle_with_an_error(
    before: list[dict[str, Any]], ending: dict[str, Any], code: int, message: str
) -> None:
    d = Driver(2)
    ticket, inserted = d.prompt("first")
    assert [a.ticket for a in answers(inserted)] == [ticket]
    ended = d.feed_all(state_changed("running"), *before, ending)

    [idle] = state_updates(ended)
    assert (idle.state, idle.stop_reason) == ("idle", "error")
    assert idle.error is not None and (idle.error.code, idle.error.message) == (code, message)
    assert answers(ended) == []  # inserted: the prompt never gets an error answer


@pytest.mark.parametrize(("before", "ending", "code", "message"), ERROR_ENDINGS)
def test_v1_error_result_is_a_json_rpc_error_answer(
    before: list[dict[str, Any]], ending: dict[str, Any], code: int, message: str
) -> None:
    d = Driver(1)
    ticket, _ = d.prompt("first")
    ended = d.feed_all(state_changed("running"), *before, ending)
    [fail] = answers(ended)
    assert isinstance(fail, Fail) and fail.ticket == ticket
    assert (fail.error.code, fail.error.message) == (code, message)


def _max_output_tokens() -> list[dict[str, Any]]:
    # As recorded in max_tokens: a synthetic API-error message, then an is_error "success".
    synthetic = assistant(
        [{"type": "text", "text": "API Error: Claude's response exceeded the 128000 output token maximum."}],
        None,
        error="max_output_tokens",
        is_api_error_message=True,
        api_error="max_output_tokens",
    )
    synthetic["message"]["model"] = "<synthetic>"
    ending = result(
        "success",
        "stop_sequence",
        True,
        "API Error: Claude's response exceeded ...",
        terminal_reason="api_error",
    )
    return [synthetic, ending]


STOP_REASONS = [
    pytest.param(_max_output_tokens(), "max_tokens", id="max_output_tokens"),
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
def test_stop_reasons(frames: list[dict[str, Any]], stop_reason: str, version: Version) -> None:
    d = Driver(version)
    ticket, _ = d.prompt("Write a long answer.")
    ended = d.feed_all(state_changed("running"), text("This answer is cut off"), *frames)
    if version == 2:
        [idle] = state_updates(ended)
        assert (idle.state, idle.stop_reason, idle.error) == ("idle", stop_reason, None)
        assert answers(ended) == []
    else:
        assert answers(ended) == [Reply(ticket, {"stopReason": stop_reason, "usage": ACP_USAGE})]


def test_a_turn_error_does_not_leak_into_the_next_turn() -> None:
    d = Driver(1)
    d.prompt("first")
    d.feed_all(state_changed("running"), *_max_output_tokens())
    ticket, _ = d.prompt("second")
    assert answers(run_turn(d)) == [Reply(ticket, {"stopReason": "end_turn", "usage": ACP_USAGE})]
