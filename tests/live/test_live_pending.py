"""End to end: a tool call is ``pending`` until it runs, with the real bundled Claude Code CLI, the
scripted local model, our agent over stdio and the official ACP client (v1 and v2).

A call Claude Code asks about (``[scenario:permission]``, a ``touch``) is answered only after
three seconds, longer than ``START_GRACE``: nothing the client reads before its answer shows it
``in_progress``; it goes ``in_progress`` after the allow. A call Claude Code runs without asking
(``[scenario:fg_sleep]``, ``sleep 3``) goes ``in_progress`` while it runs, then ``completed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.core.tool_uses import START_GRACE
from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client

pytestmark = pytest.mark.live

ANSWER_DELAY_MS = 3000


def run(live: LiveModel, workdir: Path, client: str, scenario: str, **script: Any) -> ClientRun:
    steps: list[dict[str, object]] = [{"op": "prompt", "id": "p", "text": f"[scenario:{scenario}] Go."}]
    if client == "v2":
        steps.append({"op": "waitIdle", "match": {"stopReason": "end_turn"}})
    return run_client(
        {"agent": live.agent(), "client": client, "cwd": str(workdir), "steps": steps, **script}
    )


def statuses(run: ClientRun, call_id: str) -> list[tuple[float, str]]:
    """The call's statuses as the client read them, each with when (ms)."""
    return [
        (t, line["params"]["update"]["status"])
        for line, t in zip(run.agent_lines, run.agent_line_times, strict=False)
        if isinstance(line, dict)
        and line.get("method") == "session/update"
        and line["params"]["update"].get("toolCallId") == call_id
        and "status" in line["params"]["update"]
    ]


def calls(run: ClientRun) -> set[str]:
    kinds = ("tool_call", "tool_call_update")
    return {u["toolCallId"] for u in run.raw_updates() if u["sessionUpdate"] in kinds}


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_a_call_asked_about_stays_pending_until_it_is_allowed(
    live: LiveModel, workdir: Path, client: str
) -> None:
    answer = {"delayMs": ANSWER_DELAY_MS, "then": "allow_once"}
    done = run(live, workdir, client, "permission", permission=answer)
    (request,) = done.permission_requests
    assert request["answeredAt"] - request["t"] >= ANSWER_DELAY_MS > START_GRACE * 1000
    (call,) = calls(done)
    before = [status for t, status in statuses(done, call) if t < request["answeredAt"]]
    after = [status for t, status in statuses(done, call) if t >= request["answeredAt"]]
    assert before and set(before) == {"pending"}, "pending while the question waits, past the grace"
    assert after == ["in_progress", "completed"]
    assert (workdir / "perm-test.txt").exists()


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_a_call_asked_nothing_runs_and_completes(live: LiveModel, workdir: Path, client: str) -> None:
    done = run(live, workdir, client, "fg_sleep")
    assert not done.permission_requests
    (call,) = calls(done)
    shown = [status for _, status in statuses(done, call)]
    (given, *_) = [u for u in done.raw_updates() if u.get("toolCallId") == call and "rawInput" in u]
    assert given["status"] == "pending", "its input is known: not running yet"
    assert shown[0] == "pending" and shown[-1] == "completed"
    assert "in_progress" in shown, "shown running while it sleeps"
    assert shown.index("in_progress") > max(i for i, s in enumerate(shown) if s == "pending")
