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
demo's (``claude_bg_acp.demo.client``), which stamps every line it reads with
``time.monotonic``.

Usage: ``.venv/bin/python scripts/bench_session_new.py [-n 10]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from claude_bg_acp.demo.client import Client
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

AGENT = Path(sys.executable).parent / "claude-bg-acp"
CASES = ("first", "same dir", "new dir")
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}


def one_run(env: dict[str, str], dirs: tuple[Path, Path]) -> dict[str, tuple[float, float]]:
    """Per case: (request -> answer, request -> commands), in ms."""
    with open(os.devnull, "wb") as log:
        return _timed(Client([str(AGENT)], env, dirs[0], log, lambda _direction, _message: None), dirs)


def _timed(client: Client, dirs: tuple[Path, Path]) -> dict[str, tuple[float, float]]:
    timings: dict[str, tuple[float, float]] = {}
    try:
        client.call("initialize", INITIALIZE, 30)
        for case, cwd in zip(CASES, (dirs[0], dirs[0], dirs[1]), strict=True):
            since = client.seen
            asked = time.monotonic()
            request_id = client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
            answered = client.wait_for(lambda m, i=request_id: m.get("id") == i, 30, "the answer", since)
            answer: dict[str, Any] = client.messages[answered]["result"]
            if not any(option["id"] == "model" for option in answer["configOptions"]):
                raise RuntimeError(f"{case}: the answer carries no model option: {answer}")
            listed = client.wait_for(
                lambda m, s=answer["sessionId"]: (
                    m.get("params", {}).get("sessionId") == s
                    and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
                ),
                30,
                "the commands",
                since,
            )
            timings[case] = (
                (client.received[answered] - asked) * 1000,
                (client.received[listed] - asked) * 1000,
            )
    finally:
        client.close()
    return timings


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


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
