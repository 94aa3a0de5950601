"""Commands show what they did, end to end: the real CLI, the scripted model, and a client that
declares exactly Zed's capabilities (its transcript read by Zed's rules, ``ZedView``), with the
tests' MCP server (``tests/support/mcp_probe.py``) given as the editor gives it. Every message
is validated against the v1 schema.

``/compact`` is a tool call while it runs, ending with the tokens before and after; ``/mcp``
lists each server with its state, and ``/mcp reconnect <server>`` restarts it (the probe counts
its starts); each command's output shows once.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.conftest import LiveModel
from tests.live.test_live_zed import as_zed
from tests.support.zed import Message, ZedView

pytestmark = pytest.mark.live

PROBE = Path(__file__).parents[1] / "support" / "mcp_probe.py"


def said(view: ZedView) -> list[str]:
    """What the agent says in the thread, message by message, as Zed shows it."""
    return [m.text for m in view.thread().entries if isinstance(m, Message) and m.role == "assistant"]


def test_compact_shows_a_card_with_the_tokens_before_and_after(live: LiveModel, workdir: Path) -> None:
    run, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:text] Hello."},
            {"op": "prompt", "id": "compact", "text": "/compact"},
        ],
    )
    assert run.response("compact")["result"]["stopReason"] == "end_turn"
    (card,) = view.calls("Compact conversation")
    assert card.status == "completed"
    (text,) = [c["content"]["text"] for c in card.content if c["type"] == "content"]
    found = re.fullmatch(r"Compacted the conversation: ([\d,]+) tokens before, ([\d,]+) after\.", text)
    assert found, text
    updates = [u for u in run.raw_updates() if u.get("toolCallId") == card.tool_call_id]
    assert updates[0]["status"] == "in_progress", "shown while it runs"
    assert said(view) == ["Hello from the scripted model."], "nothing else is said"


def test_mcp_lists_the_servers_and_reconnects_one(live: LiveModel, workdir: Path, tmp_path: Path) -> None:
    starts = tmp_path / "probe-starts"
    probe = {"name": "probe", "command": sys.executable, "args": [str(PROBE), str(starts)], "env": []}
    run, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "text": "/mcp"},
            {"op": "prompt", "text": "/mcp reconnect probe"},
            {"op": "prompt", "text": "/mcp disable nowhere"},
            {"op": "prompt", "text": "/mcp disable probe"},
            {"op": "prompt", "text": "/mcp enable probe"},
        ],
        session={"mcpServers": [probe]},
    )
    assert run.error is None, run.error
    chunks = [u["content"]["text"] for u in run.raw_updates() if u["sessionUpdate"] == "agent_message_chunk"]
    listed, reconnected, refused, disabled, enabled = chunks
    assert said(view) == ["".join(chunks)], "Zed shows each once"
    # The server may still be starting at the session's first prompt.
    assert listed in ("MCP servers (1):\n- probe: connected, 1 tool", "MCP servers (1):\n- probe: pending")
    assert reconnected == "Reconnected probe.\n\nMCP servers (1):\n- probe: connected, 1 tool"
    assert refused.startswith("Could not disable nowhere: ") and refused.endswith(
        "- probe: connected, 1 tool"
    )
    assert disabled == "Disabled probe.\n\nMCP servers (1):\n- probe: disabled"
    assert enabled == "Enabled probe.\n\nMCP servers (1):\n- probe: connected, 1 tool"
    assert len(starts.read_text().splitlines()) == 3, "the reconnect and the enable started it again"
    assert "Use `/mcp` in the terminal" not in str(run.raw_updates()), "Claude Code's own answer is left out"
    assert not live.model.messages_requests(), "no model request"
