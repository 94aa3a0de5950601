"""The agent's process life and its faults: nothing outlives it, a crashed Claude Code is
replaced and what it left running is stopped (and its end told), every way out (stdin closed,
stdout broken, SIGTERM, SIGINT) sends the same final updates, and tampered output files or a
deleted working directory are survived. Raw stdio (``StdioAgent``) because these tests kill
processes and delete files under the agent; the real bundled CLI runs against the scripted
model. Each fault is bounded in time, and the ``live`` fixture checks the whole process tree
afterwards."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.claude import lifeline
from tests.conftest import LiveModel
from tests.support.processes import processes_with, survivors
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent
from tests.support.views import option_held

pytestmark = pytest.mark.live

V2_INIT = {"protocolVersion": 2, "info": {"name": "lifecycle-test", "version": "1"}}


def update_of(message: dict[str, Any]) -> dict[str, Any]:
    update: dict[str, Any] = message.get("params", {}).get("update", {})
    return update


def start(live: LiveModel, workdir: Path) -> tuple[StdioAgent, str]:
    agent = StdioAgent(env=live.env, allow=True)
    agent.call(0, "initialize", V2_INIT)
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    return agent, session_id


def prompt(agent: StdioAgent, request_id: int, session_id: str, text: str) -> None:
    agent.request(
        request_id, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def wait_update(agent: StdioAgent, kind: str, **fields: Any) -> dict[str, Any]:
    def matches(message: dict[str, Any]) -> bool:
        update = update_of(message)
        return update.get("sessionUpdate") == kind and all(
            k in update and update[k] == v for k, v in fields.items()
        )

    return update_of(agent.next_message(matches, timeout=30))


def marker(live: LiveModel) -> str:
    return "CLAUDE_CODE_TMPDIR=" + live.env["CLAUDE_CODE_TMPDIR"]


def claude_pid(live: LiveModel) -> int:
    (pid,) = [pid for pid, cmd in processes_with(marker(live)).items() if "_bundled/claude" in cmd]
    return pid


def wait_for_new_claude(live: LiveModel, old: int, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [pid for pid, cmd in processes_with(marker(live)).items() if "_bundled/claude" in cmd]
        if pids and old not in pids:
            return pids[0]
        time.sleep(0.05)  # polling another process's table: there is no event to await
    raise AssertionError("no new Claude Code was started")


LONG_JOB = "seq 1 300"
"""In the command line of bg_long's shell."""
FOREGROUND_WAIT = "echo waiting-"
"""In the command line of fg_long's shell."""


def running(live: LiveModel, fragment: str) -> list[int]:
    return [pid for pid, cmd in processes_with(marker(live)).items() if fragment in cmd]


def wait_running(live: LiveModel, fragment: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not running(live, fragment):
        assert time.monotonic() < deadline, f"{fragment!r} never started"
        time.sleep(0.05)  # polling another process's table: there is no event to await


def check_schema(agent: StdioAgent) -> None:
    violations = validate_transcript(agent.lines, agent.sent, 2)
    assert not violations, "\n".join(violations)


def goes_on_and_closes(agent: StdioAgent, session_id: str, request_id: int) -> None:
    """The session still answers a prompt, and the agent exits cleanly having said only valid things."""
    prompt(agent, request_id, session_id, "[scenario:text] Still there?")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert agent.close() == 0
    check_schema(agent)


def final_updates(agent: StdioAgent, terminal: str) -> None:
    """The terminal's exit, then a final state that lists nothing, came before the agent left."""
    with pytest.raises(EOFError):
        while True:  # until everything the agent wrote has been read
            agent.next_message(timeout=10)
    updates = [update_of(m) for m in agent.lines if m.get("method") == "session/update"]
    exits = [i for i, u in enumerate(updates) if u.get("terminalId") == terminal and "exitStatus" in u]
    assert exits, "no exitStatus for the terminal"
    assert updates[exits[0]]["exitStatus"].get("signal") or updates[exits[0]]["exitStatus"].get("exitCode")
    last = updates[-1]
    assert last["sessionUpdate"] == "state_update" and last["state"] == "idle" and last["background"] == []
    assert exits[0] < len(updates) - 1


@pytest.mark.portable
def test_sigkill_of_the_agent_takes_claude_and_its_shells_along(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    wait_update(agent, "terminal_output_chunk")
    commands = processes_with(marker(live)).values()
    assert any("line-" in cmd or "sleep" in cmd for cmd in commands)
    # The lifeline watches (on Linux for what left Claude Code's reach, elsewhere for all).
    assert any(lifeline.WATCHER in cmd for cmd in commands)
    os.kill(agent.proc.pid, signal.SIGKILL)
    agent.proc.wait(timeout=10)
    assert not survivors(marker(live), grace=10), "Claude Code or its shell outlived a SIGKILLed agent"


def test_a_crashed_claude_is_replaced_and_the_conversation_goes_on(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:text] Remember the word avocado.")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    first = claude_pid(live)
    os.kill(first, signal.SIGKILL)
    wait_for_new_claude(live, first)
    prompt(agent, 3, session_id, "[scenario:text] Which word?")
    assert "result" in agent.response(3, timeout=60)
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert claude_pid(live) != first
    # The new Claude Code resumed the conversation: the model saw the first prompt again.
    last = live.model.messages_requests()[-1].body
    assert "avocado" in str(last["messages"])
    assert agent.close() == 0
    check_schema(agent)


def speed_of(live: LiveModel, words: str) -> object:
    """The speed the model request that answers the prompt ``words`` asked for (None: the usual)."""
    requests = live.model.messages_requests()
    [*_, request] = [r for r in requests if words in json.dumps(r.body["messages"][-1])]
    return request.body.get("speed")


@pytest.mark.parametrize("chosen", [True, None], ids=["chosen", "never-chosen"])
def test_a_crashed_claude_is_replaced_with_the_fast_mode_the_client_chose(
    live: LiveModel, workdir: Path, chosen: bool | None
) -> None:
    """The Claude Code that takes over runs fast when the client chose it, and the option the
    client holds says so; never chosen, fast mode is left to Claude Code (no flag settings)."""
    agent, session_id = start(live, workdir)
    if chosen is not None:
        params = {"sessionId": session_id, "configId": "fast_mode", "type": "boolean", "value": chosen}
        assert "result" in agent.call(2, "session/set_config_option", params)
    prompt(agent, 3, session_id, "[scenario:text] before")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    first = claude_pid(live)
    os.kill(first, signal.SIGKILL)
    second = wait_for_new_claude(live, first)
    prompt(agent, 4, session_id, "[scenario:text] after")
    assert "result" in agent.response(4, timeout=60)
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    speed = "fast" if chosen else None
    assert (speed_of(live, "before"), speed_of(live, "after")) == (speed, speed)
    assert option_held(agent.lines, "fast_mode") is bool(chosen)
    assert ("--settings" in processes_with(marker(live))[second]) is (chosen is not None)
    assert agent.close() == 0
    check_schema(agent)


def host_moves(agent: StdioAgent, session_id: str) -> list[tuple[str, str]]:
    """How the session's host moved through its phases (``session.lifecycle``), as its log
    (DEBUG) says."""
    return re.findall(rf"session\.lifecycle: session {session_id}: (\w+) -> (\w+)", agent.stderr)


def test_the_session_host_follows_its_table_through_a_crash_and_a_close(
    live: LiveModel, workdir: Path
) -> None:
    agent = StdioAgent(env=live.env, args=["--log-level", "DEBUG"])
    agent.call(0, "initialize", V2_INIT)
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    first = claude_pid(live)
    os.kill(first, signal.SIGKILL)
    wait_for_new_claude(live, first)
    prompt(agent, 2, session_id, "[scenario:text] Still there?")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert agent.call(3, "session/close", {"sessionId": session_id}) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {},
    }
    assert agent.close() == 0
    assert host_moves(agent, session_id) == [
        ("STARTING", "SERVING"),
        ("SERVING", "DOWN"),
        ("DOWN", "STARTING"),
        ("STARTING", "SERVING"),
        ("SERVING", "STOPPING"),
        ("STOPPING", "ENDED"),
    ]
    check_schema(agent)


def test_a_crash_during_a_turn_ends_it_with_an_error(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    agent.allow = False
    prompt(agent, 2, session_id, "[scenario:permission] Touch a file.")
    question = agent.next_message(lambda m: m.get("method") == "session/request_permission", timeout=30)
    os.kill(claude_pid(live), signal.SIGKILL)
    withdrawn = agent.next_message(lambda m: m.get("method") == "$/cancel_request", timeout=30)
    assert withdrawn["params"]["requestId"] == question["id"]
    idle = wait_update(agent, "state_update", state="idle")
    assert idle["stopReason"] == "error" and "Claude Code" in idle["error"]["message"]
    agent.send({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    goes_on_and_closes(agent, session_id, 3)


@pytest.mark.portable
def test_a_claude_killed_while_only_background_work_runs_leaves_no_shell_running(
    live: LiveModel, workdir: Path
) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert running(live, LONG_JOB)
    os.kill(claude_pid(live), signal.SIGKILL)
    exited = wait_update(agent, "terminal_update", terminalId=terminal, capabilities=None)
    # The shell was stopped before its end was told, and its end is the signal that stopped it.
    assert not running(live, LONG_JOB)
    assert exited["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
    wait_update(agent, "state_update", state="idle", background=[])
    goes_on_and_closes(agent, session_id, 3)


@pytest.mark.portable
def test_a_claude_killed_mid_turn_ends_the_turn_and_its_command(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:fg_long] Wait a while.")
    wait_running(live, FOREGROUND_WAIT)
    os.kill(claude_pid(live), signal.SIGKILL)
    idle = wait_update(agent, "state_update", state="idle")
    assert idle["stopReason"] == "error"
    assert not running(live, FOREGROUND_WAIT)
    # The turn's tool call failed with it (a crash is no cancel).
    calls = [update_of(m) for m in agent.lines if update_of(m).get("sessionUpdate") == "tool_call_update"]
    assert calls[-1]["status"] == "failed" and calls[-1]["toolCallId"] == calls[0]["toolCallId"]
    goes_on_and_closes(agent, session_id, 3)


@pytest.mark.portable
@pytest.mark.parametrize("fault", ["deleted", "truncated", "replaced"])
def test_an_output_file_tampered_with_is_survived(live: LiveModel, workdir: Path, fault: str) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "terminal_output_chunk")
    (output,) = Path(live.env["CLAUDE_CODE_TMPDIR"]).rglob(f"{terminal}.output")
    if fault == "deleted":
        output.unlink()
    elif fault == "truncated":
        os.truncate(output, 0)
    else:
        stranger = output.with_name("stranger")
        stranger.write_bytes(b"not the shell's output\n")
        stranger.replace(output)
    agent.request(3, "terminal/cancel", {"sessionId": session_id, "terminalId": terminal})
    assert agent.response(3)["result"] == {}
    exited = wait_update(agent, "terminal_update", terminalId=terminal, capabilities=None)
    assert "exitStatus" in exited
    goes_on_and_closes(agent, session_id, 4)


@pytest.mark.parametrize(
    "signum",
    [pytest.param(signal.SIGTERM, marks=pytest.mark.portable), signal.SIGINT, signal.SIGHUP],
    ids=["SIGTERM", "SIGINT", "SIGHUP"],
)
def test_a_stop_signal_sends_the_final_updates_as_closing_stdin_does(
    live: LiveModel, workdir: Path, signum: signal.Signals
) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "terminal_output_chunk")
    agent.proc.send_signal(signum)
    assert agent.proc.wait(timeout=20) == 0
    final_updates(agent, terminal)
    check_schema(agent)


@pytest.mark.portable
def test_closing_stdin_stops_everything_after_the_final_updates(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "terminal_output_chunk")
    assert agent.close(timeout=20) == 0
    assert not survivors(marker(live), grace=5)
    final_updates(agent, terminal)
    check_schema(agent)


@pytest.mark.portable
def test_closing_does_not_wait_for_a_claude_code_that_does_not_answer(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    os.kill(claude_pid(live), signal.SIGSTOP)  # alive, but it confirms no stop and never exits by itself
    # Far more than the agent needs, far less than waiting for Claude Code would take (about 15 s).
    assert agent.close(timeout=5) == 0
    final_updates(agent, terminal)
    check_schema(agent)


def test_a_broken_stdout_ends_the_agent_as_closing_stdin_does(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    wait_update(agent, "terminal_output_chunk")
    agent.hang_up_stdout()  # the shell keeps writing, so the agent's next update finds no reader
    assert agent.proc.wait(timeout=20) == 0
    assert "stdout is gone" in agent.stderr


def test_a_deleted_working_directory_is_survived(live: LiveModel, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, session_id = start(live, project)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")["terminalId"]
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    shutil.rmtree(project)
    # Claude Code goes on; the command it runs there fails, and the turn ends as usual.
    prompt(agent, 3, session_id, "[scenario:fg_bash] Say hello.")
    wait_update(agent, "tool_call_update", status="failed")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    agent.request(4, "terminal/cancel", {"sessionId": session_id, "terminalId": terminal})
    assert agent.response(4)["result"] == {}
    assert "exitStatus" in wait_update(agent, "terminal_update", terminalId=terminal, capabilities=None)
    agent.request(5, "session/close", {"sessionId": session_id})
    assert agent.response(5, timeout=20)["result"] == {}
    assert agent.close() == 0
    check_schema(agent)


def test_an_update_no_encoder_takes_costs_that_update_only(live: LiveModel, workdir: Path) -> None:
    """The model's tool input nests 300 levels: the tool call's update cannot be encoded."""
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:deep_input] Send something deep.")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert "could not perform Notify" in agent.stderr
    goes_on_and_closes(agent, session_id, 3)
