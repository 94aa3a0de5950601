"""session/new's ``mcpServers`` and ``additionalDirectories`` reach Claude Code (real CLI,
scripted model): the model's request lists the editor's MCP tool and the extra directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import LiveModel
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

pytestmark = pytest.mark.live

PROBE = Path(__file__).parents[1] / "support" / "mcp_probe.py"


def test_editor_mcp_servers_and_directories_reach_claude(
    live: LiveModel, workdir: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra-root"
    extra.mkdir()
    agent = StdioAgent(env=live.env)
    agent.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "setup-test", "version": "1"}})
    mcp = [{"type": "stdio", "name": "probe", "command": sys.executable, "args": [str(PROBE)], "env": []}]
    new = {"cwd": str(workdir), "mcpServers": mcp, "additionalDirectories": [str(extra)]}
    session_id = agent.call(1, "session/new", new)["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "[scenario:text] hi"}]}
    agent.request(2, "session/prompt", prompt)
    agent.next_message(lambda m: m.get("params", {}).get("update", {}).get("state") == "idle", timeout=60)
    request = json.dumps(live.model.messages_requests()[-1].body)
    assert "mcp__probe__probe_echo" in request, "the editor's MCP server is connected"
    assert "failed to connect" not in request
    assert str(extra) in request, "the additional directory is one of Claude Code's roots"
    assert agent.close() == 0
    assert not validate_transcript(agent.lines, agent.sent, 2)


def test_relative_additional_directories_are_refused(offline: dict[str, str], workdir: Path) -> None:
    agent = StdioAgent(env=offline)
    agent.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "setup-test", "version": "1"}})
    reply = agent.call(
        1, "session/new", {"cwd": str(workdir), "mcpServers": [], "additionalDirectories": ["rel"]}
    )
    assert reply["error"]["code"] == -32602 and "additionalDirectories" in reply["error"]["message"]
    assert agent.close() == 0


def test_a_second_initialize_renegotiates_for_the_sessions_that_follow(
    live: LiveModel, workdir: Path
) -> None:
    """Sessions that exist keep the form they were created with; new ones take the new one."""
    agent = StdioAgent(env=live.env)
    v1 = agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert v1["result"]["protocolVersion"] == 1
    old = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]
    assert "modes" in old  # the v1 form
    v2 = agent.call(2, "initialize", {"protocolVersion": 2, "info": {"name": "setup-test", "version": "1"}})
    assert v2["result"]["protocolVersion"] == 2
    new = agent.call(3, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]
    assert "modes" not in new
    hello = [{"type": "text", "text": "[scenario:text] hi"}]
    # v1 answers a prompt when its turn ends; v2 as soon as the prompt is in the conversation.
    old_answer = agent.call(4, "session/prompt", {"sessionId": old["sessionId"], "prompt": hello}, 60)
    assert old_answer["result"]["stopReason"] == "end_turn"
    new_answer = agent.call(5, "session/prompt", {"sessionId": new["sessionId"], "prompt": hello}, 60)
    assert set(new_answer["result"]) == {"messageId"}
    assert agent.close() == 0
