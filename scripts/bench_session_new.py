"""What real config options cost at ``session/new``: how long its answer takes, and when the
session's commands arrive.

Spawns the installed ``claude-bg-acp`` N times (its Claude Code CLI offline against the scripted
model on loopback) and, after ``initialize``, opens three sessions one after the other:

- ``first``: the first in a directory: the answer waits for Claude Code to start and say what
  it offers (models, effort levels, commands);
- ``same dir``: a second in the same directory: answered at once with what the first one's
  Claude Code said, while its own starts;
- ``new dir``: one in another directory: waits again.

For each it prints p50/p90/max of request -> answer, and of request -> the session's
``available_commands_update`` (every answer must carry the ``model`` option). The client is the
benchmarks' (``bench_client.BenchAgent``), which stamps every line it reads with
``time.monotonic_ns``.

Usage: ``.venv/bin/python scripts/bench_session_new.py [-n 10]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench_client import BenchAgent, percentile
from claude_bg_acp.acp.client import Message, update_of
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

CASES = ("first", "same dir", "new dir")


def one_run(env: dict[str, str], dirs: tuple[Path, Path]) -> dict[str, tuple[float, float]]:
    """Per case: (request -> answer, request -> commands), in ms."""
    agent = BenchAgent(env, dirs[0], keep_all=True)
    timings: dict[str, tuple[float, float]] = {}
    try:
        agent.initialize_v1()
        for case, cwd in zip(CASES, (dirs[0], dirs[0], dirs[1]), strict=True):
            since = agent.seen
            asked = time.monotonic_ns()
            answer, answered = agent.timed_result(
                agent.ask("session/new", {"cwd": str(cwd), "mcpServers": []}), 30
            )
            if not any(option["id"] == "model" for option in answer["configOptions"]):
                raise RuntimeError(f"{case}: the answer carries no model option: {answer}")
            session_id = answer["sessionId"]

            def listed_commands(message: Message, session_id: str = session_id) -> bool:
                update = update_of(message, "available_commands_update")
                return update is not None and message["params"]["sessionId"] == session_id

            listed = agent.wait_for(listed_commands, 30, "the commands", since)
            timings[case] = ((answered - asked) / 1e6, (agent.received[listed] - asked) / 1e6)
    finally:
        agent.shut_down()
    return timings


def stat(values: list[float]) -> str:
    return f"{percentile(values, 0.5):6.0f} {percentile(values, 0.9):6.0f} {max(values):6.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=10, help="agent processes")
    args = parser.parse_args(argv)
    samples: dict[str, list[tuple[float, float]]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="bench-session-new-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        dirs = (root / "one", root / "two")
        for folder in dirs:
            folder.mkdir()
        env = offline_env(model.base_url, root / "offline")
        for run in range(args.runs):
            for case, timing in one_run(env, dirs).items():
                samples[case].append(timing)
            print(f"\r{run + 1}/{args.runs} agents", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print("session/new   answer ms: p50    p90    max   commands ms: p50    p90    max")
    for case, timings in samples.items():
        cells = [stat(values) for values in ([t[0] for t in timings], [t[1] for t in timings])]
        print(f"{case:<12}{cells[0]:>31}{cells[1]:>35}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
