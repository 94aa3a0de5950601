"""The agent process over stdio, driven by the official ACP client, with Claude Code played by
the replaying stand-in CLI (``tests/support/replay_cli.py``, given as ``--cli-path``) from the
project's recorded fixtures: no model, deterministic, fast. Schema checks and the dropped-
notification check come with ``run_client``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import ClientRun, run_client
from tests.support.driver import FIXTURES, load_frames
from tests.support.stdio_agent import AGENT

REPLAY_CLI = Path(__file__).parents[1] / "support" / "replay_cli.py"


def recorded_prompt(scenario: str) -> str:
    """The text the recording's first prompt sent (the stand-in insists on it)."""
    first = next(f for f in load_frames(scenario) if f["dir"] == "out" and f["msg"].get("type") == "user")
    return str(first["msg"]["message"]["content"])


def replay_run(
    scenario: str, client: str, workdir: Path, tmp_path: Path, steps: list[dict[str, Any]]
) -> ClientRun:
    report = tmp_path / "unexpected.jsonl"
    env = {
        "CLAUDE_BG_ACP_REPLAY_FIXTURE": str(FIXTURES / "sdk_events" / f"{scenario}.jsonl"),
        "CLAUDE_BG_ACP_REPLAY_SPEED": "0",
        "CLAUDE_BG_ACP_REPLAY_ROOT": str(tmp_path / "replay-root"),
        # Where the recorded output files are, as Claude Code's own variable says to the agent.
        "CLAUDE_CODE_TMPDIR": str(tmp_path / "replay-root" / "tmp"),
        "CLAUDE_BG_ACP_REPLAY_REPORT": str(report),
    }
    agent = {"argv": [AGENT, "--cli-path", str(REPLAY_CLI)], "env": env}
    script = {"agent": agent, "client": client, "cwd": str(workdir), "steps": steps}
    run = run_client(script, timeout=30)
    unexpected = report.read_text().splitlines() if report.exists() else []
    assert unexpected == [], f"the agent sent Claude Code what the recording does not have: {unexpected}"
    return run


@pytest.mark.parametrize("client", ["v1", "v1-unstable"])
def test_v1_text_and_tool_calls(client: str, workdir: Path, tmp_path: Path) -> None:
    run = replay_run(
        "fg_bash",
        client,
        workdir,
        tmp_path,
        [{"op": "prompt", "id": "p", "text": recorded_prompt("fg_bash")}],
    )
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    calls = [u for u in run.raw_updates() if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert calls[0]["sessionUpdate"] == "tool_call" and calls[-1]["status"] == "completed"
    assert run.agent_text()


@pytest.mark.parametrize("client", ["v2", "v2-unstable"])
def test_v2_lifecycle_of_a_text_turn(client: str, workdir: Path, tmp_path: Path) -> None:
    run = replay_run(
        "text",
        client,
        workdir,
        tmp_path,
        [{"op": "prompt", "id": "p", "text": recorded_prompt("text")}, {"op": "waitIdle"}],
    )
    message_id = run.response("p")["result"]["messageId"]
    kinds = [(u["sessionUpdate"], u.get("state")) for u in run.raw_updates()]
    # The session's commands come right after its answer, before the turn.
    assert kinds[:2] == [("available_commands_update", None), ("state_update", "running")]
    assert ("user_message", None) in kinds and ("agent_message_chunk", None) in kinds
    assert kinds[-1] == ("state_update", "idle")
    assert run.raw_updates()[-1]["stopReason"] == "end_turn"
    assert any(u.get("messageId") == message_id for u in run.raw_updates())


def test_v2_background_shell_from_a_recording(workdir: Path, tmp_path: Path) -> None:
    run = replay_run(
        "bg_completed",
        "v2-unstable",
        workdir,
        tmp_path,
        [
            {"op": "prompt", "text": recorded_prompt("bg_completed")},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
            {"op": "waitBackground", "empty": True},
        ],
    )
    (terminal_id,) = run.terminal_ids
    assert run.terminal_info(terminal_id)["exitStatus"] == {"exitCode": 0, "signal": None}


def test_the_stand_in_reports_what_the_recording_does_not_have(workdir: Path, tmp_path: Path) -> None:
    """The harness itself: a prompt other than the recorded one fails the test."""
    with pytest.raises(AssertionError, match=r"does not have.*user message.*Something else"):
        replay_run(
            "text", "v2", workdir, tmp_path, [{"op": "prompt", "text": "Something else"}, {"op": "waitIdle"}]
        )
