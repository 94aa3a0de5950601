"""Shutdown benchmark: how soon the agent is gone once the editor goes, background work running.

For each way out, N runs. A run spawns the installed ``claude-bg-acp`` (ACP v2), opens a
session whose prompt (the scripted model's ``bg_long``) starts a background shell that prints a
line every 0.2 s, waits for the turn's end and the shell's output, then ends the connection and
measures, on one monotonic clock, from that moment to the process's exit:

- ``stdin``: the editor closes the agent's stdin;
- ``SIGTERM``: the editor sends SIGTERM instead;
- ``stdin, Claude Code hung``: Claude Code is SIGSTOPped first, so it confirms no stop and never
  exits by itself: what is left is the agent's own bound.

Every run also checks what the editor got: the terminal's ``exitStatus`` and a last
``state_update`` that lists nothing; and that no process of the run outlived the agent. The CLI
runs offline against the scripted model on loopback; nothing leaves the machine. Target: within
1 s (the TypeScript adapter exits in about 0.04 s).

Usage: ``.venv/bin/python scripts/bench_shutdown.py [-n 10] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_client import AGENT, BenchAgent, percentile
from bench_startup import stats
from claude_bg_acp.acp.client import AgentExited, update_of
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

TARGET_MS = 1000.0
WAYS = ["stdin", "SIGTERM", "stdin, Claude Code hung"]


def claude_of(agent_pid: int) -> int:
    """The agent's Claude Code: its child running the bundled CLI."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parent = int(stat[stat.rindex(")") + 2 :].split()[1])
                if parent == agent_pid and b"claude" in (entry / "cmdline").read_bytes():
                    return int(entry.name)
    raise RuntimeError("the agent runs no Claude Code")


def survivors(marker: bytes) -> int:
    """Processes of the run still alive (their environment holds the run's marker); killed."""
    left = 0
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
                left += 1
    return left


def one_run(way: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    agent = BenchAgent(env, cwd, keep_all=True)
    try:
        agent.initialize_v2()
        session_id = agent.new_session(cwd)
        agent.prompt(session_id, "[scenario:bg_long] Run a long job.")
        agent.next_message(lambda m: (update_of(m) or {}).get("stopReason") == "end_turn", 60)
        agent.next_message(lambda m: bool(update_of(m, "terminal_output_chunk")), 60)
        if way == "stdin, Claude Code hung":
            os.kill(claude_of(agent.pid), signal.SIGSTOP)
        started = time.monotonic_ns()
        if way == "SIGTERM":
            agent.proc.send_signal(signal.SIGTERM)
            agent.proc.wait(60)
        else:
            agent.close(60)
        exited = time.monotonic_ns()
        with contextlib.suppress(AgentExited):  # until everything the agent wrote has been read
            agent.wait_until(lambda: False, 60, "the end of the agent's stdout")
    finally:
        if agent.proc.poll() is None:  # what outlived an agent that exited is counted below
            agent.stop()
    updates = [update for update in map(update_of, agent.messages) if update is not None]
    exit_told = any(
        "exitStatus" in u and (u["exitStatus"].get("signal") or u["exitStatus"].get("exitCode") is not None)
        for u in updates
    )
    last = updates[-1] if updates else {}
    final = last.get("sessionUpdate") == "state_update" and last.get("background") == []
    return {
        "way": way,
        "exit_ms": (exited - started) / 1e6,
        "final_updates": exit_told and final,
        "survivors": survivors(("CLAUDE_CODE_TMPDIR=" + env["CLAUDE_CODE_TMPDIR"]).encode()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=10, help="runs per way out")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args(argv)
    if not AGENT.exists():
        parser.error(f"{AGENT} is not installed; run `uv sync --frozen` first")
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-shutdown-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        for run in range(args.runs):
            for way in WAYS:
                samples.append(
                    one_run(way, offline_env(model.base_url, root / f"run-{run}-{len(samples)}"), cwd)
                )
            print(f"\r{len(samples)}/{len(WAYS) * args.runs} runs", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    print(
        f"claude-bg-acp shutdown with a background shell running, {args.runs} runs per way, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (ms)"
    )
    print(f"{'way out -> process exited':<40}  {'p50':>7}  {'p90':>7}  {'max':>7}  final updates  survivors")
    for way in WAYS:
        mine = [s for s in samples if s["way"] == way]
        told = sum(s["final_updates"] for s in mine)
        left = sum(s["survivors"] for s in mine)
        print(f"{way:<40}  {stats([s['exit_ms'] for s in mine])}  {told:>6}/{len(mine):<6}  {left:>9}")
    p50 = percentile([s["exit_ms"] for s in samples], 0.5)
    worst = max(s["exit_ms"] for s in samples)
    verdict = "met" if worst <= TARGET_MS else "MISSED"
    print(f"target <= {TARGET_MS:.0f} ms (every run): p50 {p50:.0f} ms, max {worst:.0f} ms, {verdict}")
    if args.json:
        args.json.write_text(json.dumps(samples, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
