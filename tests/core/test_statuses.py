"""Statuses never go back, failed work says failed, and ids the model repeats lose nothing.

Hand-built frames (``tests.support.frames``, in the recorded shapes) through ``CoreDriver``:
the real CLI fires a wakeup no sooner than 60 s after it is scheduled, a workflow or Monitor
does not start a second run on request, and the real model never repeats a tool use id, so
these orders cannot be recorded. The background rules checker runs on every transcript.
"""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect
from claude_bg_acp.core.errors import Refusal, Refused
from tests.support.driver import CoreDriver, as_jsonrpc, check_transcript
from tests.support.frames import (
    TaskSpec,
    interrupted_result,
    result,
    state_changed,
    tasks_changed,
    text,
    tool_result,
    tool_use,
)
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript

ROOT = "root"


def statuses(d: CoreDriver, effects: list[Effect], call_id: str) -> list[str]:
    return [u["status"] for u in d.updates_of(effects) if u.get("toolCallId") == call_id and "status" in u]


def clean(d: CoreDriver, version: int = 2) -> None:
    """Every message validates against the schema, and the background rules hold."""
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, version)
    check_updates(d.notified(d.effects), version)


# --- a wakeup: pending from its first announcement, completed when it fires -------------------


def test_a_wakeup_is_pending_from_its_first_announcement_and_completed_when_it_fires() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("wake me")
    d.frames(
        state_changed("running"),
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 60, "reason": "check CI"}),
        tool_result("toolu_wake", "Scheduled a wakeup in 60 seconds."),
        result(),
        state_changed("idle"),
    )
    assert statuses(d, d.effects, "toolu_wake") == ["pending", "pending"]
    d.advance(60.0)
    # Claude Code starts a turn by itself when the wakeup fires: the call is done right then,
    # and the snapshot that removes it already says running.
    fired = d.frame(state_changed("running"))
    assert statuses(d, fired, "toolu_wake") == ["completed"]
    snapshot = d.updates_of(fired, "state_update")[-1]
    assert snapshot["state"] == "running" and snapshot["background"] == []
    ended = d.frames(
        text("CI is green."), result(origin={"kind": "task-notification", "subkind": "scheduled-trigger"})
    )
    assert statuses(d, ended, "toolu_wake") == []  # not completed a second time, nor another wakeup
    clean(d)


def test_a_turn_before_the_wakeup_is_due_does_not_fire_it() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "later"}),
        tool_result("toolu_wake", "Scheduled a wakeup in 600 seconds."),
        result(),
        state_changed("idle"),
    )
    d.advance(30.0)
    early = d.frames(state_changed("running"), text("Something else."), result(), state_changed("idle"))
    assert statuses(d, early, "toolu_wake") == []
    clean(d)


# --- a new run is new work -------------------------------------------------------------------


def test_a_new_run_of_a_finished_task_is_a_new_tool_call() -> None:
    """A workflow with no launching tool call of its own ends; its next run is shown anew."""
    d = CoreDriver(2, session_id=ROOT)
    flow = TaskSpec("nobody", "wf01", task_type="local_workflow", description="nightly")
    d.frames(flow.started(), tasks_changed([flow.level_entry()]))
    d.frames(flow.notification("completed"), tasks_changed([]))
    assert statuses(d, d.effects, "task-wf01") == ["in_progress", "completed"]
    d.frames(flow.started(run_id="run02"), tasks_changed([flow.level_entry(run_id="run02")]))
    assert statuses(d, d.effects, "task-wf01") == ["in_progress", "completed"]  # never reopened
    assert statuses(d, d.effects, "task-wf01-2") == ["in_progress"]
    clean(d)


# --- failed work says failed ------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_an_error_that_ends_the_turn_fails_its_unfinished_tool_calls(version: int) -> None:
    d = CoreDriver(version, session_id=ROOT)
    d.prompt("go")
    shell = TaskSpec("shell", "bash01")
    d.frames(state_changed("running"), shell.launch(), shell.started(), tasks_changed([shell.level_entry()]))
    d.frames(shell.hand_off(), tool_use("toolu_read", "Read", {"file_path": "/tmp/x"}))
    d.frame(result("error_during_execution", stop_reason=None, result_text=None, errors=["API Error: 500"]))
    assert statuses(d, d.effects, "toolu_read")[-1] == "failed"
    if version == 2:  # the listed terminal is left alone
        assert not [
            u for u in d.updates_of(d.effects) if u.get("terminalId") == "bash01" and "exitStatus" in u
        ]
    clean(d, version)


def test_tool_calls_left_running_when_claude_code_dies_fail() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("go")
    d.frames(state_changed("running"), tool_use("toolu_read", "Read", {"file_path": "/tmp/x"}))
    died = d.handle(ev.ClaudeDied("Claude Code exited", fatal=False))
    assert statuses(d, died, "toolu_read") == ["failed"]
    assert [u["stopReason"] for u in d.updates_of(died, "state_update")] == ["error"]
    clean(d)


def test_a_cancelled_turn_cancels_its_tool_calls() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("go")
    d.frames(state_changed("running"), tool_use("toolu_read", "Read", {"file_path": "/tmp/x"}))
    d.cancel()
    d.frame(interrupted_result())
    assert statuses(d, d.effects, "toolu_read")[-1] == "cancelled"
    clean(d)


# --- ids the model repeats ------------------------------------------------------------------------


def test_a_tool_use_id_the_model_repeats_in_a_new_message_is_a_new_tool_call() -> None:
    d = CoreDriver(1, session_id=ROOT)
    d.prompt("go")
    d.frames(tool_use("toolu_same", "Bash", {"command": "echo one"}), tool_result("toolu_same", "one"))
    again = d.frames(
        tool_use("toolu_same", "Bash", {"command": "echo two"}), tool_result("toolu_same", "two")
    )
    calls = [u for u in d.updates_of(again) if u.get("toolCallId", "").startswith("toolu_same")]
    assert [u["sessionUpdate"] for u in calls] == ["tool_call", "tool_call_update"]
    assert {u["toolCallId"] for u in calls} == {"toolu_same~1"}
    assert calls[0]["rawInput"] == {"command": "echo two"} and calls[-1]["status"] == "completed"
    assert statuses(d, d.effects, "toolu_same") == ["pending", "completed"]  # the first stays final
    clean(d, 1)


def test_an_assistant_message_claude_code_replays_is_not_shown_twice() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("go")
    message = tool_use("toolu_once", "Read", {"file_path": "/tmp/x"})
    d.frames(message, tool_result("toolu_once", "x"))
    assert d.updates_of(d.frame(message)) == []
    clean(d)


@pytest.mark.parametrize("client", ["v1-plain", "v1-terminal-meta", "air", "v2"])
def test_a_result_that_handed_work_off_said_again_changes_nothing(client: str) -> None:
    """An SDK event delivered twice: a Monitor's result, after its work began. (Every client
    used to be told the hand-off again: a v1 client's call completed twice.)"""
    d = CoreDriver.for_client(client, session_id=ROOT)
    monitor = TaskSpec("monitor", "mon01", description="ticks")
    call = monitor.tool_use_id
    assert call is not None
    d.prompt("go")
    d.frames(state_changed("running"), monitor.launch(), monitor.started(), monitor.hand_off())
    shown = statuses(d, d.effects, call)
    assert d.updates_of(d.frame(monitor.hand_off())) == []
    d.frames(monitor.notification("completed"), tasks_changed([]))
    assert statuses(d, d.effects, call)[: len(shown)] == shown
    check_transcript(d, d.effects, client)


# --- prompt content we do not take -------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, "prompt[1]: audio"),
        ({"type": "video", "uri": "file:///x.mp4"}, "prompt[1]: content blocks of type 'video'"),
        ({"type": "image", "mimeType": "image/png"}, "prompt[1]: an image block needs its base64 data"),
    ],
)
def test_prompt_content_we_do_not_take_is_refused_naming_the_block(block: dict[str, Any], named: str) -> None:
    d = CoreDriver(2, session_id=ROOT)
    with pytest.raises(Refused) as refused:
        d.prompt([{"type": "text", "text": "listen"}, block])
    assert refused.value.kind is Refusal.INVALID and named in str(refused.value)
    assert d.effects == []  # nothing reached Claude Code, nothing was inserted


def test_closing_the_session_cancels_the_tool_calls_still_running() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("go")
    d.frames(state_changed("running"), tool_use("toolu_read", "Read", {"file_path": "/tmp/x"}))
    closed = d.handle(ev.Close())
    assert statuses(d, closed, "toolu_read") == ["cancelled"]
    assert [u["stopReason"] for u in d.updates_of(closed, "state_update")] == ["cancelled"]
    clean(d)


# --- statuses never go back to pending (issue 22) ----------------------------------------------

WORKFLOW = TaskSpec("workflow", "wf01")


@pytest.mark.parametrize("order", ["pending-later", "pending-first"])
def test_work_that_ran_never_goes_back_to_pending(order: str) -> None:
    """Claude Code may say ``pending`` after ``running`` (or before the launching call's result,
    when the call already runs): the tool call stays ``in_progress`` or ``paused``."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("run the workflow")
    d.frames(WORKFLOW.launch(), WORKFLOW.started())
    if order == "pending-first":
        d.frame(WORKFLOW.updated("pending"))
    d.frames(WORKFLOW.hand_off(), tasks_changed([WORKFLOW.level_entry()]), result(), state_changed("idle"))
    d.frames(WORKFLOW.updated("paused"), WORKFLOW.updated("pending"), WORKFLOW.updated("running"))
    d.frame(WORKFLOW.updated("pending"))
    seen = statuses(d, d.effects, WORKFLOW.tool_use_id or "")
    assert "pending" not in seen[seen.index("in_progress") :], seen
    assert seen[-4:] == ["paused", "in_progress", "in_progress", "in_progress"], seen
    clean(d)
