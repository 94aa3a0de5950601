"""Tests of the client harness itself (tests/client/drive.mjs + tests/support/acp_client.py).

They drive tests/support/echo_agent.py, a hand-written stand-in agent that exists ONLY to test
the harness; none of this tests the product.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import ClientRun, echo_agent_argv, ensure_node_client, run_client
from tests.support.rules import BackgroundRules, Violation

JsonObject = dict[str, Any]


@pytest.fixture(scope="module", autouse=True)
def _node_client() -> None:
    ensure_node_client()


def echo_script(client: str, steps: list[JsonObject], **extra: Any) -> JsonObject:
    env = extra.pop("env", {})
    return {
        "agent": {"argv": echo_agent_argv(), "env": env},
        "client": client,
        "cwd": "/tmp",
        "stepTimeoutMs": 5000,
        "shutdownGraceMs": 2000,
        "steps": steps,
        **extra,
    }


def kinds(run: ClientRun, session: str | None = "main") -> list[str]:
    return [update["sessionUpdate"] for update in run.updates(session=session)]


# -- happy paths ------------------------------------------------------------------------------------


def test_v1_prompt_round_trip() -> None:
    run = run_client(
        echo_script(
            "v1",
            [
                {"op": "prompt", "text": "hello", "id": "p1"},
                {
                    "op": "waitFor",
                    "update": "agent_message_chunk",
                    "match": {"content": {"text": "echo: hello"}},
                },
            ],
        ),
        timeout=20,
    )
    assert run.protocol_version == 1
    assert run.response("p1")["result"] == {"stopReason": "end_turn"}
    assert run.stop_reasons() == ["end_turn"]
    assert run.agent_text() == "echo: hello"
    assert kinds(run) == ["agent_message_chunk"]
    assert run.violations == []
    assert run.dropped_notifications == []
    init = run.client_lines[0]
    assert init["method"] == "initialize" and init["params"]["protocolVersion"] == 1
    assert run.exit_code == 0
    assert "forced" not in run.shutdown
    assert run.shutdown["processGroupSurvivors"] is False


def test_v2_prompt_lifecycle() -> None:
    run = run_client(
        echo_script(
            "v2",
            [
                {"op": "prompt", "text": "hello", "id": "p1"},
                {"op": "waitIdle", "id": "idle", "match": {"stopReason": "end_turn"}},
            ],
        ),
        timeout=20,
    )
    assert run.protocol_version == 2
    message_id = run.response("p1")["result"]["messageId"]
    assert kinds(run) == ["user_message", "state_update", "agent_message_chunk", "state_update"]
    assert run.updates("user_message")[0]["messageId"] == message_id
    assert [u["state"] for u in run.state_updates()] == ["running", "idle"]
    assert run.stop_reasons() == ["end_turn"]
    assert run.background == []
    assert run.response("idle")["background"] == []
    assert run.agent_text() == "echo: hello"
    assert run.raw["sessions"]["main"]["surfacedUpdates"] == 4


def test_v2_background_terminal_and_cancel() -> None:
    run = run_client(
        echo_script(
            "v2-unstable",
            [
                {"op": "prompt", "text": "start a terminal"},
                {"op": "waitIdle", "match": {"background": [{"type": "terminal"}]}},
                {"op": "waitForTerminalBytes", "contains": " 5"},
                {"op": "snapshot", "id": "before"},
                {"op": "cancelTerminal", "id": "cancel"},
                {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
                {"op": "waitBackground", "empty": True},
                {"op": "cancelTerminal", "id": "again", "expectError": -32602, "force": True},
                {"op": "closeSession", "id": "close"},
            ],
        ),
        timeout=20,
    )
    terminal_id = "term_echo_1"
    # Bytes are assembled byte-faithfully across chunks: a split UTF-8 character and 0xff.
    assert run.terminal_bytes(terminal_id) == b"price: \xe2\x82\xac 5\xff\n"
    assert run.terminal_info(terminal_id)["chunks"] == 2
    assert run.terminal_info(terminal_id)["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
    before = run.response("before")["sessions"]["main"]
    assert before["canCancelTerminal"] == {terminal_id: True}
    assert before["background"] == [{"type": "terminal", "terminalId": terminal_id}]
    assert run.response("cancel") | {"t": 0, "sentAt": 0} == {
        "terminalId": terminal_id,
        "canCancel": True,
        "result": {},
        "t": 0,
        "sentAt": 0,
    }
    assert run.response("again")["canCancel"] is False
    assert run.response("again")["error"]["code"] == -32602
    assert run.background_lists() == [[], [{"type": "terminal", "terminalId": terminal_id}], []]
    assert run.background == []
    assert run.response("close")["result"] == {}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("allow_once", "permission: allow"),
        ("allow_always", "permission: always"),
        ("reject_once", "permission: reject"),
        ("reject_always", "permission: reject"),
        ("cancelled", "permission: cancelled"),
        ({"optionId": "always"}, "permission: always"),
    ],
)
def test_v1_permission_policies(policy: Any, expected: str) -> None:
    run = run_client(
        echo_script("v1", [{"op": "prompt", "text": "permission"}], permission=policy), timeout=20
    )
    assert run.agent_text() == expected
    assert len(run.permission_requests) == 1


def test_v2_held_permission_is_answered_by_a_step() -> None:
    run = run_client(
        echo_script(
            "v2",
            [
                {"op": "prompt", "text": "permission"},
                {"op": "waitForPermission", "match": {"title": "Run the echo tool?"}},
                {"op": "answerPermission", "policy": "reject_once"},
                {"op": "waitIdle"},
            ],
            permission="hold",
        ),
        timeout=20,
    )
    assert run.agent_text() == "permission: reject"
    [request] = run.permission_requests
    assert request["forBackgroundWork"] is False
    assert request["answer"] == {"outcome": {"outcome": "selected", "optionId": "reject"}}


def test_v1_held_turn_cancelled() -> None:
    run = run_client(
        echo_script(
            "v1",
            [
                {"op": "prompt", "text": "hold", "await": False, "id": "p1"},
                {"op": "waitFor", "update": "agent_message_chunk"},
                {"op": "cancel"},
                {"op": "waitIdle", "match": {"stopReason": "cancelled"}},
            ],
        ),
        timeout=20,
    )
    assert run.response("p1")["result"] == {"stopReason": "cancelled"}
    assert run.stop_reasons() == ["cancelled"]


def test_two_sessions_are_kept_apart() -> None:
    run = run_client(
        echo_script(
            "v2",
            [
                {"op": "prompt", "text": "one"},
                {"op": "waitIdle"},
                {"op": "newSession", "name": "second"},
                {"op": "prompt", "text": "two"},
                {"op": "waitIdle"},
                {"op": "prompt", "text": "three", "session": "main"},
                {"op": "waitIdle", "session": "main"},
            ],
        ),
        timeout=20,
    )
    assert run.agent_text("main") == "echo: oneecho: three"
    assert run.agent_text("second") == "echo: two"
    assert run.session_id("main") != run.session_id("second")
    assert run.stop_reasons("main") == ["end_turn", "end_turn"]


def test_v1_unstable_surfaces_subagent_updates_and_child_sessions() -> None:
    run = run_client(
        echo_script(
            "v1-unstable",
            [
                {"op": "prompt", "text": "subagent"},
                {
                    "op": "waitFor",
                    "session": "*",
                    "update": "agent_message_chunk",
                    "match": {"content": {"text": "from the child"}},
                },
            ],
            capabilities={"subagents": {}, "_meta": {"terminal_output": True}},
        ),
        timeout=20,
    )
    child = run.session_id() + "_child"
    [subagent] = run.updates("subagent_update")
    assert subagent["sessionId"] == child
    assert run.updates_for_session_id(child, "agent_message_chunk")[0]["content"]["text"] == (
        "from the child"
    )
    sent = run.client_lines[0]["params"]["clientCapabilities"]
    assert sent == {"subagents": {}, "_meta": {"terminal_output": True}}


def test_v1_stable_client_drops_subagent_updates() -> None:
    run = run_client(echo_script("v1", [{"op": "prompt", "text": "subagent"}]), timeout=20, check=False)
    # The message is valid against the (unstable) schema, but the stable client drops it.
    assert run.violations == []
    assert len(run.dropped_notifications) == 1
    assert run.updates("subagent_update") == []
    assert [u["sessionUpdate"] for u in run.raw_updates(run.session_id())].count("subagent_update") == 1
    with pytest.raises(AssertionError, match="the client dropped a notification"):
        run.assert_clean()


# -- violations are reported ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "invalid", "dropped", "violation"),
    [
        ("v2", "bad_state", True, "$.params.update.state: 42"),
        ("v2", "no_message_id", True, "'messageId' is a required property"),
        ("v2", "unknown_state", False, '$.params.update.state: "finished"'),
        ("v2", "unknown_update", False, '$.params.update.sessionUpdate: "bogus_update"'),
        ("v1", "unknown_update", True, '$.params.update.sessionUpdate: "bogus_update"'),
        ("v1", "no_stop_reason", False, "'stopReason' is a required property"),
    ],
)
def test_invalid_agent_messages_are_reported(
    client: str, invalid: str, dropped: bool, violation: str
) -> None:
    script = echo_script(
        client, [{"op": "prompt", "text": "hi"}, {"op": "waitIdle"}], env={"ECHO_AGENT_INVALID": invalid}
    )
    run = run_client(script, timeout=20, check=False)
    assert run.ok, run.error
    assert len(run.violations) == 1, run.violations
    assert violation in run.violations[0]
    assert bool(run.dropped_notifications) is dropped, run.client_stderr
    if dropped:
        assert "Error handling notification" in run.dropped_notifications[0]
    with pytest.raises(AssertionError) as raised:
        run_client(script, timeout=20)
    assert violation in str(raised.value)


def test_unknown_state_is_valid_without_strict_mode() -> None:
    script = echo_script(
        "v2",
        [{"op": "prompt", "text": "hi"}, {"op": "waitIdle"}],
        env={"ECHO_AGENT_INVALID": "unknown_state"},
    )
    run = run_client(script, timeout=20, strict=False)
    assert [u["state"] for u in run.state_updates()] == ["finished", "idle"]


def test_v1_prompt_response_without_stop_reason_reaches_the_client() -> None:
    run = run_client(
        echo_script(
            "v1", [{"op": "prompt", "text": "hi", "id": "p1"}], env={"ECHO_AGENT_INVALID": "no_stop_reason"}
        ),
        timeout=20,
        check=False,
    )
    # The v1 client does not validate responses: only the validator notices.
    assert run.response("p1")["result"] == {}
    assert run.stop_reasons() == [None]


def test_non_json_stdout_is_reported() -> None:
    run = run_client(
        echo_script("v1", [{"op": "prompt", "text": "hi"}], env={"ECHO_AGENT_INVALID": "stdout_noise"}),
        timeout=20,
        check=False,
    )
    assert run.agent_non_json_lines == ["this is not json"]
    assert any("non-JSON line" in problem for problem in run.problems())
    # The official client answers the garbage with a JSON-RPC parse error.
    assert {"code": -32700, "message": "Parse error"} in [line.get("error") for line in run.client_lines]


# -- failures are bounded ---------------------------------------------------------------------------


def test_a_hung_agent_times_out_and_is_killed() -> None:
    hung = [sys.executable, "-c", "import signal, time; time.sleep(60)"]
    run = run_client(
        {"agent": {"argv": hung}, "client": "v1", "stepTimeoutMs": 500, "shutdownGraceMs": 300},
        timeout=20,
        check=False,
    )
    assert not run.ok
    assert run.error is not None and "timed out after 500 ms" in run.error
    assert "initialize" in run.error
    assert run.shutdown["forced"] == "SIGTERM"
    assert run.raw["exitSignal"] == "SIGTERM"


def test_a_step_waits_for_a_file_the_test_makes(tmp_path: Path) -> None:
    """``waitForFile`` goes on once the file exists, whether it was made before the step or
    while it waits (the timer makes it at some point in the run: both must pass), and times out
    for one never made."""
    made, never = tmp_path / "made", tmp_path / "never"
    steps = [{"op": "waitForFile", "path": str(made)}, {"op": "prompt", "id": "after", "text": "hi"}]
    maker = threading.Timer(0.2, made.touch)
    maker.start()
    run = run_client(echo_script("v1", steps), timeout=20)
    maker.join()
    assert run.response("after")["result"]["stopReason"] == "end_turn"
    wait = {"op": "waitForFile", "path": str(never), "timeoutMs": 300}
    missing = run_client(echo_script("v1", [wait]), timeout=20, check=False)
    assert missing.error is not None
    assert f"timed out after 300 ms waiting for the file {never}" in missing.error


def test_the_overall_timeout_bounds_a_run() -> None:
    hung = [sys.executable, "-c", "import time; time.sleep(60)"]
    run = run_client(
        {
            "agent": {"argv": hung},
            "client": "v2",
            "timeoutMs": 700,
            "stepTimeoutMs": 10000,
            "shutdownGraceMs": 200,
        },
        timeout=20,
        check=False,
    )
    assert run.error is not None and "overall timeout of 700 ms" in run.error


def test_an_agent_that_exits_early_is_reported() -> None:
    dies = [sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"]
    run = run_client({"agent": {"argv": dies}, "client": "v2"}, timeout=20, check=False)
    assert not run.ok
    assert run.exit_code == 3
    assert run.error is not None and ("exited" in run.error or "closed" in run.error)
    assert run.agent_stderr == "boom\n"
    with pytest.raises(AssertionError, match="boom"):
        run.assert_clean()


def test_an_agent_that_cannot_start_is_reported() -> None:
    run = run_client(
        {"agent": {"argv": ["/nonexistent/agent-binary"]}, "client": "v1"}, timeout=20, check=False
    )
    assert not run.ok
    assert run.error is not None and "cannot start the agent" in run.error


def test_processes_left_in_the_agent_group_are_noticed() -> None:
    leaves_a_child = [
        sys.executable,
        "-c",
        "import subprocess, sys; subprocess.Popen(['sleep', '30']); sys.stdin.read()",
    ]
    run = run_client({"agent": {"argv": leaves_a_child}, "autoInitialize": False, "steps": []}, timeout=20)
    assert run.shutdown["processGroupSurvivors"] is True
    assert run.exit_code == 0


def test_driver_output_is_complete_for_a_v2_run() -> None:
    run = run_client(echo_script("v2", [{"op": "prompt", "text": "x"}, {"op": "waitIdle"}]), timeout=20)
    for key in (
        "ok",
        "agentLines",
        "clientLines",
        "updates",
        "responses",
        "terminals",
        "background",
        "clientStderr",
        "droppedNotifications",
        "agentStderr",
        "exitCode",
    ):
        assert key in run.raw
    assert len(run.raw["agentLineTimes"]) == len(run.agent_lines)
    assert len(run.raw["clientLineTimes"]) == len(run.client_lines)


def test_the_rules_take_output_sent_before_a_reattachment_was_read() -> None:
    """Output of a known terminal that crosses the client's ``session/resume`` is in flight;
    after the answer, output of a terminal not announced again breaks rule 5."""
    announce = {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "x"}
    output = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "eA=="}
    rules = BackgroundRules()
    rules.see("s", announce)
    rules.forget("s")
    rules.see("s", output)
    rules.attached("s")
    with pytest.raises(Violation, match="rule 5: output of terminal t1 before its terminal_update"):
        rules.see("s", output)


def test_the_rules_catch_a_status_that_goes_back_to_pending() -> None:
    rules = BackgroundRules()
    rules.see("s", {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "x", "status": "pending"})
    rules.see("s", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "paused"})
    rules.see("s", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
    with pytest.raises(Violation, match="rule 10: tool call c1 goes back from in_progress to pending"):
        rules.see("s", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "pending"})


def test_a_live_run_reads_a_permission_requests_tool_call_as_an_update() -> None:
    """A client applies the request's tool call as a ``tool_call_update`` (v2's schema), so one
    that puts a running call back to ``pending`` breaks rule 10 in a live transcript too."""
    running = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "x", "status": "in_progress"}
    call = {"toolCallId": "c1", "title": "x", "status": "pending"}
    lines = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": running}},
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "session/request_permission",
            "params": {"sessionId": "s", "subject": {"type": "tool_call", "toolCall": call}, "options": []},
        },
    ]
    run = ClientRun({"client": "v2", "agentLines": lines, "agentLineTimes": [1.0, 2.0]}, {})
    assert run.broken_rules() == ["rule 10: tool call c1 goes back from in_progress to pending"]
    del call["status"]
    assert run.broken_rules() == []


def test_the_rules_catch_a_tool_call_moved_to_another_session() -> None:
    rules = BackgroundRules()
    rules.see("root", {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "x", "status": "pending"})
    with pytest.raises(Violation, match="rule 15: tool call c1 of root shown in child"):
        rules.see("child", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
    rules.forget("root")  # a client re-attaching forgets it: shown anew, it may be anywhere
    rules.see("child", {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "x", "status": "pending"})


def test_the_rules_catch_a_mirror_that_is_not_the_childs_own_state() -> None:
    """The announcement and the child's first snapshot go out in either order; by the parent's
    next snapshot they must be the same."""
    running = {"state": "running", "background": []}
    rules = BackgroundRules(lists=True)
    rules.see("root", {"sessionUpdate": "subagent_update", "sessionId": "c", "state": {"state": "running"}})
    rules.see("c", {"sessionUpdate": "state_update", **running})
    with pytest.raises(Violation, match="rule 11: root mirrors child c as"):
        rules.see("root", {"sessionUpdate": "state_update", "state": "running", "background": []})
    rules = BackgroundRules(lists=True)
    rules.see("c", {"sessionUpdate": "state_update", **running})
    rules.see("root", {"sessionUpdate": "subagent_update", "sessionId": "c", "state": running})
    rules.see("root", {"sessionUpdate": "state_update", "state": "running", "background": []})
    rules.see("c", {"sessionUpdate": "state_update", "state": "idle", "background": []})
    with pytest.raises(Violation, match="rule 11"):
        rules.finish()
