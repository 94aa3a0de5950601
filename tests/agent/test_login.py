"""Logging Claude Code in and out through the agent: the ``login`` command becomes Claude Code's
``auth login`` with its arguments and exit status, and the protocol's login and logout methods
answer as ACP's terminal auth says (the real CLI logs out of a scratch config dir)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.schema import validate_transcript
from tests.support.stdio_agent import AGENT, StdioAgent

V1 = {
    "protocolVersion": 1,
    "clientCapabilities": {"auth": {"terminal": True}},
    "clientInfo": {"name": "t", "version": "1"},
}
V2 = {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {"auth": {"terminal": {}}}}


def test_login_runs_claude_codes_login_with_its_arguments(tmp_path: Path) -> None:
    """A stand-in CLI: the real login is interactive (a browser, a code to paste)."""
    said = tmp_path / "argv"
    stand_in = tmp_path / "claude"
    stand_in.write_text(f'#!/bin/sh\necho "$@" > {said}\nexit 3\n')
    stand_in.chmod(0o755)
    done = subprocess.run([AGENT, "--cli-path", str(stand_in), "login", "--console"], timeout=60, check=False)
    assert done.returncode == 3, "the login's own exit status is the command's"
    assert said.read_text().split() == ["auth", "login", "--console"]


def test_v2_login_methods_are_run_by_the_client_and_logout_logs_out(offline: dict[str, str]) -> None:
    agent = StdioAgent(env=offline)
    _, console = agent.call(0, "initialize", V2)["result"]["authMethods"]
    login = agent.call(1, "auth/login", {"methodId": console["methodId"]})
    assert login["error"]["code"] == -32602 and "terminal" in login["error"]["message"]
    assert agent.call(2, "auth/logout", {}, timeout=60) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert agent.call(3, "auth/login", {"methodId": "nope"})["error"]["code"] == -32602
    assert agent.close() == 0
    assert not validate_transcript(agent.lines, agent.sent, 2)


def test_v1_advertises_logout_with_its_login_method(offline: dict[str, str]) -> None:
    agent = StdioAgent(env=offline)
    answer = agent.call(0, "initialize", V1)["result"]
    assert answer["agentCapabilities"]["auth"] == {"logout": {}}
    assert agent.call(1, "authenticate", {"methodId": "claude-login"})["result"] == {}
    assert agent.call(3, "authenticate", {"methodId": "console-login"})["result"] == {}
    assert agent.call(2, "logout", {}, timeout=60)["result"] == {}
    assert agent.close() == 0
    assert not validate_transcript(agent.lines, agent.sent, 1)
