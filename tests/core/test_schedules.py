"""Scheduled work (ScheduleWakeup, CronCreate) as pending, listed tool calls.

Hand-built frames stand in for the real CLI here: a wakeup fires at least 60 s after it is
scheduled and Claude Code 2.1.332 offers CronCreate only as a deferred tool, so neither can be
recorded in a test's time. The frames come from ``tests.support.frames``, in the shapes of the
recorded fixtures, and go through ``CoreDriver``."""

from __future__ import annotations

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import result, tool_result, tool_use
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript

SESSION_ID = "s"


def schema_ok(effects: list[Effect]) -> None:
    agent_lines, client_lines = as_jsonrpc(effects)
    assert not validate_transcript(agent_lines, client_lines, 2)


def test_a_wakeup_is_pending_and_listed_until_it_fires() -> None:
    d = CoreDriver(2, session_id=SESSION_ID)
    scheduled = d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "check CI"}),
        tool_result("toolu_wake", "Scheduled a wakeup in 600 seconds."),
        result(),
    )
    schema_ok(scheduled)
    seen = d.updates_of(scheduled)
    pending_at = next(i for i, u in enumerate(seen) if u.get("status") == "pending")
    listed_at = next(i for i, u in enumerate(seen) if u.get("background"))
    assert pending_at < listed_at
    assert seen[listed_at]["background"] == [{"type": "tool_call", "toolCallId": "toolu_wake"}]
    assert seen[-1]["state"] == "idle" and seen[-1]["background"] == [
        {"type": "tool_call", "toolCallId": "toolu_wake"}
    ]
    fired = d.frame(result(origin={"kind": "task-notification", "subkind": "scheduled-trigger"}))
    schema_ok(fired)
    after = d.updates_of(fired)
    assert after[0] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "toolu_wake",
        "status": "completed",
        "capabilities": None,
    }
    snapshots = [u for u in after if u["sessionUpdate"] == "state_update"]
    assert snapshots and all(u["background"] == [] for u in snapshots)


def test_stopping_the_loop_cancels_pending_wakeups() -> None:
    d = CoreDriver(2, session_id=SESSION_ID)
    d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "loop"}),
        tool_result("toolu_wake", "Scheduled."),
    )
    stopped = d.updates_of(
        d.frames(
            tool_use("toolu_stop", "ScheduleWakeup", {"stop": True}),
            tool_result("toolu_stop", "ok"),
        )
    )
    cancel = next(u for u in stopped if u.get("toolCallId") == "toolu_wake")
    assert cancel["status"] == "cancelled"
    assert next(u for u in stopped if u["sessionUpdate"] == "state_update")["background"] == []


def test_a_cron_job_is_pending_until_deleted_and_a_durable_one_is_not_listed() -> None:
    d = CoreDriver(2, session_id=SESSION_ID)
    created = d.updates_of(
        d.frames(
            tool_use("toolu_cron", "CronCreate", {"cron": "*/5 * * * *", "prompt": "check"}),
            tool_result("toolu_cron", "Created cron job job-42."),
            tool_use("toolu_durable", "CronCreate", {"cron": "0 9 * * *", "prompt": "x", "durable": True}),
            tool_result("toolu_durable", "Created cron job job-43."),
        )
    )
    lists = [u["background"] for u in created if u["sessionUpdate"] == "state_update"]
    assert lists[-1] == [{"type": "tool_call", "toolCallId": "toolu_cron"}]
    deleted = d.updates_of(
        d.frames(
            tool_use("toolu_del", "CronDelete", {"id": "job-42"}),
            tool_result("toolu_del", "Deleted."),
        )
    )
    assert {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "toolu_cron",
        "status": "cancelled",
        "capabilities": None,
    } in deleted


def test_closing_the_session_cancels_scheduled_work() -> None:
    d = CoreDriver(2, session_id=SESSION_ID)
    d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "later"}),
        tool_result("toolu_wake", "Scheduled."),
    )
    d.handle(ev.Close())
    closed = d.updates_of(d.handle(ev.CloseTimedOut(), 1.0))
    assert {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "toolu_wake",
        "status": "cancelled",
        "capabilities": None,
    } in closed


def test_a_scheduled_calls_final_status_clears_its_capabilities() -> None:
    """Whatever the client was told of the call's ``cancel`` (a client that re-attaches is told
    each listed call as it is now), its final status clears it (issue 22)."""
    d = CoreDriver(2, session_id=SESSION_ID)
    d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "check CI"}),
        tool_result("toolu_wake", "Scheduled a wakeup in 600 seconds."),
        result(),
    )
    d.resync()
    fired = d.frame(result(origin={"kind": "task-notification", "subkind": "scheduled-trigger"}))
    (final,) = [u for u in d.updates_of(fired) if u.get("toolCallId") == "toolu_wake"]
    assert final["status"] == "completed" and final["capabilities"] is None
    check_updates(d.notified(d.effects), 2)
    schema_ok(d.effects)
