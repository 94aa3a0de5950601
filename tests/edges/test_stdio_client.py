"""The package's ACP client (``claude_bg_acp.acp.client``, which the stdio tests, the demo and the
benchmarks drive the agent with): a line on the agent's stdout that is not JSON fails whoever
waits past it, at once and naming the line, instead of a wait running into its timeout.

The agent never writes such a line, so a one-line Python program stands in for it here.
"""

from __future__ import annotations

import json
import sys

import pytest

from claude_bg_acp.acp.client import AgentError, AgentProcess

NOTIFICATION = {"jsonrpc": "2.0", "method": "session/update", "params": {}}


def test_a_line_that_is_not_json_fails_the_wait_that_reaches_it() -> None:
    written = json.dumps(NOTIFICATION) + "\nTraceback (most recent call last):"
    program = f"import sys; print({written!r}, flush=True); sys.stdin.read()"
    client = AgentProcess([sys.executable, "-c", program], own_group=False)
    try:
        assert client.next_message(timeout=10) == NOTIFICATION
        with pytest.raises(AgentError, match=r"not JSON: 'Traceback \(most recent call last\):"):
            client.next_message(timeout=10)
        assert client.messages[-1] == {"unparsable": "Traceback (most recent call last):\n"}
    finally:
        assert client.close(10) == 0
