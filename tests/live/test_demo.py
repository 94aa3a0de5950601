"""``claude-bg-acp demo`` end to end: it runs green with Node.js absent from ``PATH``, ends by
itself, and leaves no process behind.

The command is the development environment's, or the one ``CLAUDE_BG_ACP_COMMAND`` names: CI
runs this test again with the command installed from the built wheel into a fresh environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.no_node import path_without_node
from tests.support.processes import survivors
from tests.support.stdio_agent import AGENT

COMMAND = os.environ.get("CLAUDE_BG_ACP_COMMAND", AGENT)
WITHIN = 60.0


def test_help_lists_the_demo() -> None:
    shown = subprocess.run([COMMAND, "--help"], capture_output=True, text=True, check=True, timeout=60).stdout
    assert "demo" in shown.split("commands:")[1]


@pytest.mark.live
def test_the_demo_shows_background_work_offline_without_node(tmp_path: Path) -> None:
    marker = f"CLAUDE_BG_ACP_DEMO_RUN={tmp_path}"
    path = path_without_node(os.environ["PATH"], tmp_path / "path")
    assert shutil.which("node", path=path) is None
    env = {**os.environ, "PATH": path, "CLAUDE_BG_ACP_DEMO_RUN": str(tmp_path)}
    env.pop("ANTHROPIC_API_KEY", None)
    try:
        done = subprocess.run(
            [COMMAND, "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WITHIN
        )
    finally:
        left = survivors(marker)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert not left, f"processes outlived the demo: {left}"
    shown = done.stdout
    # Scene 1: the shell's numbered lines live, the list, the stop and the exit status.
    ticks = [int(line.split("tick ")[1].split()[0]) for line in shown.splitlines() if "│ tick " in line]
    assert ticks[:5] == [1, 2, 3, 4, 5]
    assert "background: [terminal " in shown and "terminal/cancel → {}" in shown, shown
    assert 'exited: {"exitCode": null, "signal": "SIGKILL"}' in shown
    assert "background: []" in shown.split("terminal/cancel")[-1]
    # Scene 2: the v1 answer comes after the subagent's report.
    scene = shown.split("2. A held v1 prompt")[1]
    assert scene.index("subagent one finished its work") < scene.index("session/prompt → end_turn")
    assert shown.count("exited with 0") == 2 and "Done:" in shown
