"""A foreground command's card fills while the command runs, in every kind of client.

The real CLI runs a five-second foreground command (``fg_lines``: ten lines, one every half
second) against the scripted model. Claude Code reports it as a task about two seconds in; from
then on its output file is followed, so the client is shown the lines before the command ends:
Zed in the display terminal its Bash card draws (the file's bytes exactly once, then the exit),
a plain v1 client and a v2 client in the card's content (its result replaces it at the end).
Before, every client saw the card empty until the command's result. What "live" means here is
that output is shown in several pieces, the first of them well before the command's end (at
least a second: the command prints for three more seconds after Claude Code reports it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.driver import PLAIN_CAPABILITIES
from tests.support.plain import PlainView
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, ZedView

pytestmark = pytest.mark.live

COMMAND = "for i in $(seq 1 10); do echo fg-line-$i; sleep 0.5; done"
LINES = "".join(f"fg-line-{i}\n" for i in range(1, 11))
KINDS: dict[str, dict[str, Any]] = {
    "plain-v1": {"client": "v1", "capabilities": PLAIN_CAPABILITIES, "clientInfo": {"name": "acpx"}},
    "zed": {"client": "v1", "capabilities": ZED_CAPABILITIES, "clientInfo": ZED_CLIENT_INFO},
    "v2": {"client": "v2-unstable"},
}
AHEAD = 1.0
"""How long before the command's end its first output must have been shown (seconds)."""


def run_as(kind: str, live: LiveModel, workdir: Path) -> ClientRun:
    steps: list[dict[str, Any]] = [
        {"op": "prompt", "id": "p", "text": "[scenario:fg_lines] Print ten lines slowly."}
    ]
    if KINDS[kind]["client"].startswith("v2"):
        steps.append({"op": "waitIdle"})  # a v2 prompt is answered once it is inserted
    script = {"agent": live.agent(), "cwd": str(workdir), "steps": steps, **KINDS[kind]}
    run = run_client(script, timeout=60)
    assert run.response("p")["result"].get("stopReason", "end_turn") == "end_turn"
    return run


def test_zed_draws_the_lines_as_they_come(live: LiveModel, workdir: Path) -> None:
    view = ZedView.of_run(run_as("zed", live, workdir))
    assert not view.problems(), view.problems()
    (call,) = view.calls(COMMAND)
    (terminal,) = view.drawn(call)
    assert terminal.text == LINES, "the file's bytes, each line once"
    assert terminal.exit == (0, None)
    assert terminal.exited_at is not None
    before_exit = [t for t in terminal.appended_at if t < terminal.exited_at]
    assert len(before_exit) >= 2, f"output in pieces while it ran: {terminal.appended_at}"
    assert before_exit[0] <= terminal.exited_at - AHEAD, (before_exit, terminal.exited_at)


def test_a_plain_client_sees_the_lines_as_they_come(live: LiveModel, workdir: Path) -> None:
    view = PlainView.of_run(run_as("plain-v1", live, workdir))
    assert not view.problems, view.problems
    card = view.call(COMMAND)
    assert card.status == "completed"
    growing = [s for s in card.shown if s.status == "in_progress" and s.text.startswith("fg-line-1\n")]
    assert len({s.text for s in growing}) >= 2, [s.text for s in card.shown]
    (done,) = [s for s in card.shown if s.status == "completed"]
    assert growing[0].t <= done.t - AHEAD
    assert LINES.startswith(growing[-1].text), "the lines in order, none twice"


def test_a_v2_client_sees_the_lines_as_they_come(live: LiveModel, workdir: Path) -> None:
    run = run_as("v2", live, workdir)
    call_id = next(
        u["toolCallId"]
        for u in run.updates()
        if u["sessionUpdate"] == "tool_call_update" and (u.get("rawInput") or {}).get("command") == COMMAND
    )
    texts: list[tuple[float, str]] = []
    completed_at = None
    for line, t in zip(run.agent_lines, run.agent_line_times, strict=True):
        update = (line.get("params") or {}).get("update") or {}
        if line.get("method") != "session/update" or update.get("toolCallId") != call_id:
            continue
        if update.get("status") == "completed":
            completed_at = t / 1000
        elif completed_at is None:
            shown = "".join(
                item["content"]["text"] for item in update.get("content") or [] if "content" in item
            )
            if shown.startswith("fg-line-1\n"):
                texts.append((t / 1000, shown))
    assert completed_at is not None
    assert len({text for _, text in texts}) >= 2, texts
    assert texts[0][0] <= completed_at - AHEAD
    assert LINES.startswith(texts[-1][1])
