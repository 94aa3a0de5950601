"""When Claude Code goes (a crash, or the close stopping it): the core side, through ``CoreDriver``.

Hand-built frames (``tests.support.frames``, in the recorded shapes) stand in for the real CLI:
a crash cannot be placed between two chosen frames with the real one. The frames a Claude Code
sends when it takes over after a crash (an empty turn of its own: ``running``, a result of no
turns with a task-notification origin, ``idle``) are those observed with the bundled CLI. The
live side of the same faults is ``test_live_lifecycle``.
"""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.claude.conventions import ExitInfo, ShellEnd
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Fail, FinishTail
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import (
    TaskSpec,
    follow_up_origin,
    result,
    state_changed,
    tasks_changed,
    text,
    tool_use,
)
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript

ROOT = "root"
SHELL = TaskSpec("shell", "bash01")
SIGTERM = ExitInfo(None, "SIGTERM")


def exits(d: CoreDriver, effects: list[Effect]) -> list[dict[str, Any]]:
    return [u["exitStatus"] for u in d.updates_of(effects) if "exitStatus" in u]


def states(d: CoreDriver, effects: list[Effect]) -> list[tuple[str, str | None]]:
    return [(u["state"], u.get("stopReason")) for u in d.updates_of(effects, "state_update")]


def lists(d: CoreDriver, effects: list[Effect]) -> list[list[dict[str, Any]]]:
    return [u["background"] for u in d.updates_of(effects, "state_update")]


def with_a_running_shell() -> CoreDriver:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("run it")
    d.frames(
        state_changed("running"),
        SHELL.launch(),
        tasks_changed([SHELL.level_entry()]),
        SHELL.started(),
        SHELL.hand_off(),
        result(),
        state_changed("idle"),
    )
    d.output(SHELL.task_id, b"tick 1\n")
    return d


def check(d: CoreDriver) -> None:
    """Every update is valid and the background rules hold over the whole run."""
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, 2)
    check_updates(d.notified(d.effects), 2)


def test_a_shell_a_crashed_claude_code_left_running_reports_how_the_agent_stopped_it() -> None:
    d = with_a_running_shell()
    died = d.handle(ev.ClaudeDied("Claude Code failed", False, {SHELL.task_id: SIGTERM}), 1.0)
    # Its file is read to the end first: it stays listed, and no exit is told yet.
    assert FinishTail(SHELL.task_id, ShellEnd("killed")) in died
    assert exits(d, died) == []
    assert all(lst == [{"type": "terminal", "terminalId": SHELL.task_id}] for lst in lists(d, died))
    drained = d.drained(SHELL.task_id, b"tick 2\n")
    assert exits(d, drained) == [{"exitCode": None, "signal": "SIGTERM"}]
    assert lists(d, drained)[-1] == []
    assert {
        "sessionUpdate": "terminal_output_chunk",
        "terminalId": SHELL.task_id,
        "data": "dGljayAyCg==",
    } in d.updates_of(drained)
    check(d)


def test_a_shell_nobody_stopped_ends_unknown_when_claude_code_dies() -> None:
    d = with_a_running_shell()
    died = d.handle(ev.ClaudeDied("Claude Code failed", False), 1.0)
    assert exits(d, died) == [{}]
    assert lists(d, died)[-1] == []
    check(d)


def test_the_end_a_new_claude_code_repeats_is_not_told_twice() -> None:
    d = with_a_running_shell()
    d.handle(ev.ClaudeDied("Claude Code failed", False, {SHELL.task_id: SIGTERM}), 1.0)
    d.drained(SHELL.task_id)
    repeated = d.frames(SHELL.updated("killed"), SHELL.notification("stopped"))
    assert exits(d, repeated) == []
    check(d)


def test_an_empty_turn_of_the_claude_code_that_took_over_is_not_shown() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("hello")
    d.frames(state_changed("running"), text("Hello."), result(), state_changed("idle"))
    assert states(d, d.handle(ev.ClaudeDied("Claude Code failed", False), 1.0)) == []
    # What the bundled CLI sends when it resumes a conversation whose task the crash cut short.
    empty_turn = result(result_text="", origin=follow_up_origin())
    empty_turn["num_turns"] = 0
    taken_over = d.frames(state_changed("running"), empty_turn, state_changed("idle"))
    assert states(d, taken_over) == []
    check(d)


def test_a_claude_code_that_took_over_and_works_is_shown_running() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.handle(ev.ClaudeDied("Claude Code failed", False))
    working = d.frames(state_changed("running"), text("Looking at the task that ended."))
    assert states(d, working) == [("running", None)]
    ended = d.frames(result(origin=follow_up_origin()), state_changed("idle"))
    assert states(d, ended) == [("idle", "end_turn")]
    check(d)


def test_a_prompt_after_the_crash_runs_as_usual() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.handle(ev.ClaudeDied("Claude Code failed", False))
    _, effects = d.prompt("still there?")
    assert states(d, effects) == [("running", None)]
    assert states(d, d.frames(state_changed("running"), text("Yes."), result(), state_changed("idle"))) == [
        ("idle", "end_turn")
    ]


def test_the_close_reads_a_shell_the_agent_stopped_to_its_end() -> None:
    d = with_a_running_shell()
    closing = d.handle(ev.Close(), 1.0)
    assert exits(d, closing) == []
    timed_out = d.handle(ev.CloseTimedOut({SHELL.task_id: SIGTERM}), 0.3)
    assert FinishTail(SHELL.task_id, ShellEnd("killed")) in timed_out and exits(d, timed_out) == []
    assert not d.core.settled
    drained = d.drained(SHELL.task_id)
    assert exits(d, drained) == [{"exitCode": None, "signal": "SIGTERM"}]
    assert d.core.settled
    assert states(d, d.effects)[-1] == ("idle", None) and lists(d, d.effects)[-1] == []
    check(d)


def test_the_closing_line_tells_more_than_the_stop() -> None:
    d = with_a_running_shell()
    d.handle(ev.Close(), 1.0)
    d.handle(ev.CloseTimedOut({SHELL.task_id: SIGTERM}), 0.3)
    drained = d.drained(SHELL.task_id, exit_info=ExitInfo(3, None))
    assert exits(d, drained) == [{"exitCode": 3, "signal": None}]


def test_no_follow_up_turn_is_expected_once_the_session_closes() -> None:
    d = with_a_running_shell()
    d.frames(SHELL.updated("completed"), SHELL.notification("completed"))
    d.handle(ev.Close(), 0.1)
    drained = d.drained(SHELL.task_id, exit_info=ExitInfo(0, None))
    assert exits(d, drained) == [{"exitCode": 0, "signal": None}]
    assert ("running", None) not in states(d, drained)
    assert states(d, d.effects)[-1][0] == "idle"
    check(d)


def test_the_tool_calls_of_a_turn_a_crash_cut_short_end_with_it() -> None:
    """They failed with the turn (issue 11: failed work says failed, not cancelled)."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("wait")
    d.frames(state_changed("running"), tool_use("toolu_wait", "Bash", {"command": "sleep 100"}))
    died = d.handle(ev.ClaudeDied("Claude Code failed", False), 1.0)
    ends = [(u["toolCallId"], u["status"]) for u in d.updates_of(died, "tool_call_update")]
    assert ends == [("toolu_wait", "failed")]
    assert states(d, died) == [("idle", "error")]
    check(d)


MONITOR = TaskSpec("monitor", "mon01")


def test_a_v1_tool_call_whose_work_started_before_its_result_ends_when_claude_code_goes() -> None:
    """The Monitor's task is known before its tool result (so the core reports the work through
    the call); Claude Code dies before the result comes. A v1 client, which does not follow the
    work, still sees the call end: ``failed``, as every call a crash leaves without a result."""
    d = CoreDriver(1, session_id=ROOT)
    d.prompt("watch it")
    d.frames(
        state_changed("running"), MONITOR.launch(), tasks_changed([MONITOR.level_entry()]), MONITOR.started()
    )
    assert [u for u in d.updates() if u.get("status") in ("completed", "failed")] == []
    d.handle(ev.ClaudeDied("Claude Code failed", False), 1.0)
    ends = [u["status"] for u in d.updates() if u.get("toolCallId") == MONITOR.tool_use_id and "status" in u]
    assert ends[-1] == "failed" and ends.count("failed") == 1
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, 1)


# --- children when Claude Code goes (issue 22) --------------------------------------------------

AGENT = TaskSpec("agent", "agent01")


def delegating(d: CoreDriver) -> int:
    """A prompt whose turn launches a background subagent, which runs; its ticket."""
    ticket, _ = d.prompt("delegate")
    launch = [AGENT.launch(), tasks_changed([AGENT.level_entry()]), AGENT.started(), AGENT.hand_off()]
    d.frames(state_changed("running"), *launch)
    return ticket


def with_a_working_child(version: int, capabilities: dict[str, Any] | None = None) -> CoreDriver:
    """A background subagent runs; the turn that launched it is over (a v1 answer is held)."""
    d = CoreDriver(version, capabilities, session_id=ROOT)
    delegating(d)
    d.frames(result(), state_changed("idle"))
    return d


@pytest.mark.parametrize("fatal", [True, False], ids=["gone", "taken-over"])
def test_a_working_child_ends_idle_before_the_list_drops_it_when_claude_code_dies(fatal: bool) -> None:
    """Its work ended with the Claude Code that ran it: ``idle`` with the error, then the root's
    list without it (never ``unknown``, never dropped first)."""
    d = with_a_working_child(2)
    died = d.handle(ev.ClaudeDied("Claude Code failed", fatal), 1.0)
    own = d.updates_of(died, "state_update", AGENT.task_id)
    assert [(u["state"], u.get("stopReason"), u.get("error", {}).get("message")) for u in own] == [
        ("idle", "error", "Claude Code failed")
    ]
    mirrors = [u["state"] for u in d.updates_of(died, "subagent_update")]
    assert [m["state"] for m in mirrors] == ["idle"]
    assert lists(d, died)[-1] == []
    check(d)


def test_a_v1_client_sees_its_child_end_with_the_error_when_claude_code_dies() -> None:
    d = with_a_working_child(1, {"subagents": {}})
    died = d.handle(ev.ClaudeDied("Claude Code failed", True), 1.0)
    (mirror,) = [u["state"] for u in d.updates_of(died, "subagent_update")]
    assert mirror["state"] == "idle" and mirror["stopReason"] == "error"
    assert mirror["error"]["message"] == "Claude Code failed"
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, 1)
    check_updates(d.notified(d.effects), 1)


@pytest.mark.parametrize("fatal", [True, False], ids=["gone", "taken-over"])
def test_a_v1_prompt_whose_subagent_runs_is_answered_when_claude_code_dies(fatal: bool) -> None:
    """The turn had no result yet: it ends with the error, and nothing holds its answer (its
    subagents went with Claude Code), also when Claude Code is gone for good."""
    d = CoreDriver(1, {"subagents": {}}, session_id=ROOT)
    ticket = delegating(d)
    died = d.handle(ev.ClaudeDied("Claude Code failed", fatal), 1.0)
    assert [e.ticket for e in died if isinstance(e, Fail)] == [ticket]
