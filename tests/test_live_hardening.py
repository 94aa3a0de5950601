"""What a client or a command's own output cannot trick the agent into, end to end: the real
bundled CLI against the scripted model, driven over raw stdio (``StdioAgent``) so that a test can
send what no well-behaved client would (two answers to one question). Every line is validated
against the official schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LiveModel
from tests.test_live_lifecycle import check_schema, prompt, start, wait_update

pytestmark = pytest.mark.live


def answer(request_id: int, option: str) -> bytes:
    outcome = {"outcome": "selected", "optionId": option}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}}).encode() + b"\n"


def test_the_first_answer_to_a_permission_request_decides(live: LiveModel, workdir: Path) -> None:
    """ "Reject" then "allow", in one write: the command is rejected, not run."""
    agent, session_id = start(live, workdir)
    agent.allow = False
    prompt(agent, 2, session_id, "[scenario:permission] Touch a file.")
    question = agent.next_message(lambda m: m.get("method") == "session/request_permission", timeout=30)
    agent.send_raw(answer(question["id"], "reject_once") + answer(question["id"], "allow_once"))
    wait_update(agent, "state_update", state="idle")
    assert not (workdir / "perm-test.txt").exists()
    assert agent.close() == 0
    assert "second response to request id" in agent.stderr
    check_schema(agent)
