"""The agent's process life: nothing outlives it, a crashed Claude Code is replaced, a vanished
output file is survived. Raw stdio (``StdioAgent``) because these tests kill processes and
delete files under the agent; the real bundled CLI runs against the scripted model."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.processes import processes_with, survivors
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

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


def check_schema(agent: StdioAgent) -> None:
    violations = validate_transcript(agent.lines, agent.sent, 2)
    assert not violations, "\n".join(violations)


def test_sigkill_of_the_agent_takes_claude_and_its_shells_along(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    wait_update(agent, "terminal_output_chunk")
    assert any("line-" in cmd or "sleep" in cmd for cmd in processes_with(marker(live)).values())
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


def test_a_crash_during_a_turn_ends_it_with_an_error(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    agent._allow = False
    prompt(agent, 2, session_id, "[scenario:permission] Touch a file.")
    question = agent.next_message(lambda m: m.get("method") == "session/request_permission", timeout=30)
    os.kill(claude_pid(live), signal.SIGKILL)
    withdrawn = agent.next_message(lambda m: m.get("method") == "$/cancel_request", timeout=30)
    assert withdrawn["params"]["requestId"] == question["id"]
    idle = wait_update(agent, "state_update", state="idle")
    assert idle["stopReason"] == "error" and "Claude Code" in idle["error"]["message"]
    agent.send({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    prompt(agent, 3, session_id, "[scenario:text] Still there?")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert agent.close() == 0
    check_schema(agent)


def test_a_vanished_output_file_is_survived(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    terminal = wait_update(agent, "terminal_update")
    wait_update(agent, "terminal_output_chunk")
    outputs = list(Path(live.env["CLAUDE_CODE_TMPDIR"]).rglob(f"{terminal['terminalId']}.output"))
    assert outputs, "the shell's output file"
    outputs[0].unlink()
    agent.request(3, "terminal/cancel", {"sessionId": session_id, "terminalId": terminal["terminalId"]})
    assert agent.response(3)["result"] == {}
    exited = wait_update(agent, "terminal_update", terminalId=terminal["terminalId"], capabilities=None)
    assert "exitStatus" in exited
    prompt(agent, 4, session_id, "[scenario:text] And now?")
    wait_update(agent, "state_update", state="idle", stopReason="end_turn")
    assert agent.close() == 0
    check_schema(agent)


def test_closing_stdin_stops_everything(live: LiveModel, workdir: Path) -> None:
    agent, session_id = start(live, workdir)
    prompt(agent, 2, session_id, "[scenario:bg_long] Run a long job.")
    wait_update(agent, "terminal_output_chunk")
    assert agent.close(timeout=30) == 0
    assert not survivors(marker(live), grace=5)
    check_schema(agent)
