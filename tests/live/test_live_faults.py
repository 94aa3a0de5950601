"""A session's failure is its own (issue 19): the installed agent, the real CLI against the
scripted model, raw stdio.

- A session one of whose tasks raised fails alone: what it started is stopped, the agent and its
  other sessions go on, and the next request that names it is told why. The real parts cannot
  be made to raise on demand (the agent checks what clients send), so a test-only hook makes
  the agent's own code raise (``tests.support.fault_hook``).
- A Claude Code the system will not start (its command line too long, no file descriptors left)
  fails ``session/new`` with why, for the first session in a directory and a later one alike.
- Closing sessions never takes a Claude Code's exit status from asyncio, whose watcher would
  then report a made-up 255; the hook makes that watcher late, as a loaded machine does.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support import fault_hook
from tests.support.processes import processes_with
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

pytestmark = pytest.mark.live

V2_INIT = {"protocolVersion": 2, "info": {"name": "faults-test", "version": "1"}}
CLAUDE = "_bundled/claude"
"""In the command line of every Claude Code."""


def open_agent(env: dict[str, str]) -> StdioAgent:
    agent = StdioAgent(env=env, allow=True)
    assert "result" in agent.call(0, "initialize", V2_INIT)
    return agent


def new_session(
    agent: StdioAgent, request_id: int, cwd: Path, servers: list[Any] | None = None
) -> dict[str, Any]:
    return agent.call(request_id, "session/new", {"cwd": str(cwd), "mcpServers": servers or []}, timeout=60)


def prompt(agent: StdioAgent, request_id: int, session_id: str, text: str) -> dict[str, Any]:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    return agent.call(request_id, "session/prompt", params, timeout=60)


def update(agent: StdioAgent, session_id: str, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The next update of ``session_id`` that matches."""

    def wanted(message: dict[str, Any]) -> bool:
        params = message.get("params", {})
        return (
            message.get("method") == "session/update"
            and params["sessionId"] == session_id
            and match(params["update"])
        )

    found: dict[str, Any] = agent.next_message(wanted, timeout=60)["params"]["update"]
    return found


def idle(agent: StdioAgent, session_id: str) -> dict[str, Any]:
    return update(agent, session_id, lambda u: u.get("state") == "idle")


def claudes(live: LiveModel) -> list[int]:
    return [pid for pid, cmd in processes_with(marker(live)).items() if CLAUDE in cmd]


def running(live: LiveModel, fragment: str) -> bool:
    return any(fragment in cmd for cmd in processes_with(marker(live)).values())


def marker(live: LiveModel) -> str:
    return "CLAUDE_CODE_TMPDIR=" + live.env["CLAUDE_CODE_TMPDIR"]


def failed(agent: StdioAgent, session_id: str, timeout: float = 30) -> None:
    """Wait until the agent logged that the session failed (once it stopped what it started)."""
    deadline = time.monotonic() + timeout
    while f"session {session_id} failed" not in agent.stderr:
        assert time.monotonic() < deadline, f"session {session_id} did not fail:\n{agent.stderr}"
        time.sleep(0.05)  # polling the log of another process: there is no event to await


def healthy_and_closes(agent: StdioAgent, session_id: str, request_id: int) -> None:
    """The other session still runs a turn, and the agent exits cleanly having said only valid things."""
    assert "messageId" in prompt(agent, request_id, session_id, "[scenario:text] Still there?")["result"]
    assert idle(agent, session_id)["stopReason"] == "end_turn"
    assert agent.close() == 0, agent.stderr
    violations = validate_transcript(agent.lines, agent.sent, 2)
    assert not violations, "\n".join(violations)


def told_it_failed(agent: StdioAgent, request_id: int, session_id: str, why: str) -> None:
    error = prompt(agent, request_id, session_id, "[scenario:text] Anyone?")["error"]
    assert error["code"] == -32603 and f"Session {session_id} failed" in error["message"], error
    assert why in error["message"], error


SLEEPER = "sleep 4242"
"""The doomed session's background shell, once it has printed the fault's mark."""


def test_a_session_whose_task_raised_fails_alone(live: LiveModel, workdir: Path) -> None:
    agent = open_agent(fault_hook.env(live.env, "output"))
    healthy = new_session(agent, 1, workdir)["result"]["sessionId"]
    doomed = new_session(agent, 2, workdir)["result"]["sessionId"]
    command = f"echo {fault_hook.FAULT_MARK.decode()}; exec {SLEEPER}"
    prompt(agent, 3, doomed, f"[scenario:bg_from_prompt] Go. <command>{command}</command>")
    terminal = update(agent, doomed, lambda u: u["sessionUpdate"] == "terminal_update")["terminalId"]
    # Its relay raises on the mark: the client is told the end (the shell's terminal ended,
    # nothing runs), its Claude Code and its shell are stopped, the rest goes on.
    update(agent, doomed, lambda u: u.get("terminalId") == terminal and "exitStatus" in u)
    update(agent, doomed, lambda u: u.get("state") == "idle" and u["background"] == [])
    failed(agent, doomed)
    assert len(claudes(live)) == 1 and not running(live, SLEEPER)
    told_it_failed(agent, 4, doomed, "RuntimeError('injected fault')")
    assert agent.call(5, "session/close", {"sessionId": doomed})["result"] == {}
    assert agent.call(6, "session/close", {"sessionId": doomed})["error"]["code"] == -32002
    # Its conversation is stored: it can be resumed, with a Claude Code of its own again.
    assert "result" in agent.call(7, "session/resume", {"sessionId": doomed, "cwd": str(workdir)}, 60)
    assert "messageId" in prompt(agent, 8, doomed, "[scenario:text] Back?")["result"]
    assert idle(agent, doomed)["stopReason"] == "end_turn"
    healthy_and_closes(agent, healthy, 9)


def test_a_restart_that_raised_fails_that_session_alone(
    live: LiveModel, workdir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    agent = open_agent(fault_hook.env(live.env, "restart"))
    healthy = new_session(agent, 1, workdir)["result"]["sessionId"]
    doomed = new_session(agent, 2, elsewhere)["result"]["sessionId"]
    prompt(agent, 3, doomed, "[scenario:text] Remember this.")
    assert idle(agent, doomed)["stopReason"] == "end_turn"
    (crashing,) = [pid for pid in claudes(live) if os.readlink(f"/proc/{pid}/cwd") == str(elsewhere)]
    os.kill(crashing, signal.SIGKILL)  # the restart resumes the stored conversation, and raises
    failed(agent, doomed)
    assert len(claudes(live)) == 1
    told_it_failed(agent, 4, doomed, "KeyError('name')")
    healthy_and_closes(agent, healthy, 5)


def many_variables(count: int) -> list[dict[str, str]]:
    return [{"name": f"VARIABLE_{i}", "value": "x" * 16} for i in range(count)]


def test_a_command_line_too_long_for_the_system_fails_session_new(
    live: LiveModel, workdir: Path, tmp_path: Path
) -> None:
    """20,000 variables for an MCP server: Claude Code's command line passes the E2BIG limit."""
    agent = open_agent(live.env)
    server = {
        "type": "stdio",
        "name": "big",
        "command": "/bin/true",
        "args": [],
        "env": many_variables(20_000),
    }
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = new_session(agent, 1, elsewhere, [server])
    healthy = new_session(agent, 2, workdir)["result"]["sessionId"]
    later = new_session(agent, 3, workdir, [server])  # answered with what the first one's said
    for refused in (first, later):
        error = refused["error"]
        assert error["code"] == -32603 and error["message"].startswith("Claude Code could not start"), error
        assert "(E2BIG)" in error["message"]
    assert len(claudes(live)) == 1
    healthy_and_closes(agent, healthy, 4)


FILES = 28
"""File descriptors the agent may have: a few sessions' worth."""
EMFILE = "Claude Code could not start: too many open files (EMFILE): raise the limit with ulimit -n"


def test_no_file_descriptors_left_fails_session_new(live: LiveModel, tmp_path: Path) -> None:
    """With few file descriptors (``ulimit -n``), sessions open until Claude Code cannot start."""
    agent = open_agent(live.env)
    resource.prlimit(agent.proc.pid, resource.RLIMIT_NOFILE, (FILES, FILES))
    opened: list[str] = []
    for request_id in range(1, 40):
        cwd = tmp_path / f"work-{request_id}"
        cwd.mkdir()
        answer = new_session(agent, request_id, cwd)
        if "error" in answer:
            break
        opened.append(answer["result"]["sessionId"])
    assert answer["error"] == {"code": -32603, "message": EMFILE}
    assert opened and len(claudes(live)) == len(opened)
    healthy_and_closes(agent, opened[0], 100)


def test_closing_sessions_leaves_every_exit_status_to_asyncio(live: LiveModel, tmp_path: Path) -> None:
    """Claude Code exits as its session closes; asyncio's watcher comes late. A signal sent
    through ``Popen.send_signal`` first polled the child and took its status, and the watcher
    then made up 255 ("Unknown child process")."""
    agent = open_agent(fault_hook.env(live.env, "late-watcher"))
    for request_id in range(1, 5):
        cwd = tmp_path / f"work-{request_id}"
        cwd.mkdir()
        session_id = new_session(agent, request_id, cwd)["result"]["sessionId"]
        prompt(agent, 10 + request_id, session_id, "[scenario:text] Hello.")
        assert idle(agent, session_id)["stopReason"] == "end_turn"
    assert agent.close() == 0
    assert "Unknown child process" not in agent.stderr
    assert not validate_transcript(agent.lines, agent.sent, 2)
