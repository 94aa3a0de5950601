"""Claude Code's stderr reaches the log (INFO) with credentials blanked out.

The real CLI does not print its key, so the end-to-end case runs the agent with a stand-in CLI
(``--cli-path``, a shell script that prints what a careless tool might, then fails); everything
else about the agent is real. A fake key: nothing leaves the machine.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from claude_bg_acp.claude.options import stderr_logger
from tests.support.stdio_agent import StdioAgent

API_KEY = "fake-api-key-0123456789"
AUTH_TOKEN = "fake-auth-token-9876543210"
SHAPED_KEY = "sk-ant-api03-Le4ked_Key-x9"
LEAKY_CLI = f"""#!/bin/sh
echo "using key $ANTHROPIC_API_KEY and token $ANTHROPIC_AUTH_TOKEN" >&2
echo "a key from a config file: {SHAPED_KEY}, and nothing else" >&2
exit 1
"""


def test_credentials_are_redacted_from_a_logged_line(caplog: pytest.LogCaptureFixture) -> None:
    logged = stderr_logger({"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_AUTH_TOKEN": f" {AUTH_TOKEN}\n"})
    with caplog.at_level(logging.INFO):
        logged(f"key={API_KEY} token={AUTH_TOKEN} shaped={SHAPED_KEY} end\n")
        logged("an ordinary line")
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "claude: key=[redacted] token=[redacted] shaped=[redacted] end",
        "claude: an ordinary line",
    ]


def test_no_secret_is_redacted_when_none_is_set(caplog: pytest.LogCaptureFixture) -> None:
    logged = stderr_logger({"ANTHROPIC_API_KEY": ""})
    with caplog.at_level(logging.INFO):
        logged("plain text stays plain")
    assert [record.getMessage() for record in caplog.records] == ["claude: plain text stays plain"]


def test_the_agent_never_logs_a_credential_claude_code_prints(
    offline: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    cli = tmp_path / "leaky-claude"
    cli.write_text(LEAKY_CLI)
    cli.chmod(0o700)
    env = {**offline, "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_AUTH_TOKEN": AUTH_TOKEN}
    agent = StdioAgent(env=env, args=["--log-level", "INFO", "--cli-path", str(cli)])
    agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    # It exits before the answer: session/new fails, and its stderr was logged.
    error = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["error"]
    assert error["code"] == -32603 and error["message"].startswith("Claude Code could not start"), error
    assert agent.close() == 0
    logged = agent.stderr
    assert "claude: using key [redacted] and token [redacted]" in logged
    assert "a key from a config file: [redacted], and nothing else" in logged
    for secret in (API_KEY, AUTH_TOKEN, SHAPED_KEY):
        assert secret not in logged
