"""A third-party client from npm, acpx (0.1.15 and 0.19.1, pinned in ``tests/acpx``), drives the
installed agent, and what it prints is what its user reads.

acpx is a plain v1 client (it declares ``fs`` and ``terminal``, nothing of Zed's or AIR's) that
prints a tool call once its status is final, and closes the agent as soon as the prompt is
answered (``tests.support.acpx``). So its user sees a background shell only if the shell ends
inside the turn: the prompt here starts one (scenario ``bg_in_turn``) and the model holds its
answer back for a few seconds, as a model waiting on its work would. What acpx prints must then
be the shell's tool call, final, with every line the shell printed, how it ended, and nothing of
Claude Code's closing line; before this agent kept background shells' tool calls open, acpx
printed the hand-off's "Command running in background" and never the output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LiveModel
from tests.support.acpx import VERSIONS, ensure_acpx, node_for, run_acpx, tool_blocks
from tests.support.stdio_agent import AGENT

pytestmark = pytest.mark.live

STEPS = 6


def command(exit_code: int) -> str:
    return f"for i in $(seq 1 {STEPS}); do echo step-$i; sleep 0.2; done; exit {exit_code}"


@pytest.mark.parametrize(("version", "exit_code"), [("0.1.15", 0), ("0.19.1", 3)])
def test_acpx_prints_the_background_shell_with_every_line_and_its_end(
    version: str, exit_code: int, live: LiveModel, workdir: Path
) -> None:
    assert version in VERSIONS
    ensure_acpx()
    node = node_for(version)
    if node is None:
        pytest.skip(f"acpx {version} needs a newer Node.js, and npm has no Node.js build for this system")
    shell = command(exit_code)
    run = run_acpx(
        version,
        node,
        [AGENT],
        live.env,
        workdir,
        f"[scenario:bg_in_turn] Run this and wait for it. <command>{shell}</command>",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout
    ended = [block for block in tool_blocks(printed) if block.title == shell]
    status = "completed" if exit_code == 0 else "failed"
    assert [block.status for block in ended] == [status], printed
    lines = [f"step-{i}" for i in range(1, STEPS + 1)]
    said = [] if exit_code == 0 else ["", f"Exited with code {exit_code}."]
    assert ended[0].output == lines + said, printed
    assert printed.index(f"[tool] {shell} ({status})") < printed.index("[done] end_turn")
    assert "Command running in background" not in printed
    assert "[exited with code" not in printed


def test_acpx_closing_the_agent_stops_a_shell_without_calling_it_a_crash(
    live: LiveModel, workdir: Path
) -> None:
    """acpx closes the agent once the prompt is answered: a shell that outlives the turn is
    stopped by that close, and what acpx prints says so (the signal stays in ``rawOutput``)."""
    ensure_acpx()
    version = VERSIONS[-1]
    node = node_for(version)
    if node is None:
        pytest.skip(f"acpx {version} needs a newer Node.js, and npm has no Node.js build for this system")
    shell = "echo started; sleep 30"
    run = run_acpx(
        version,
        node,
        [AGENT],
        live.env,
        workdir,
        f"[scenario:bg_from_prompt] Start this. <command>{shell}</command>",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    ended = [block for block in tool_blocks(run.stdout) if block.title == shell and block.status == "failed"]
    assert ended and ended[-1].output[-1] == "Stopped when the session closed.", run.stdout
    assert "Ended by signal" not in run.stdout
