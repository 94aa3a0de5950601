"""Startup benchmark: how soon a freshly spawned ``claude-bg-acp`` answers, and says its first word.

Spawns the installed console script (``claude-bg-acp`` next to ``sys.executable``) N times for
each protocol version (v1 and v2, alternating) and does what an editor opening a thread does:
``initialize``, ``session/new`` and a prompt, each sent as soon as the previous one is answered.
The scripted model (scenario ``text``) answers at once. Then a few more prompts in the same
session, and EOF on stdin. Measured on one monotonic clock, the client stamping each line as it
reads it:

- process start -> ``initialize`` response: from just before ``Popen`` (the request is written
  right after it, so it waits in the pipe while Python starts);
- ``session/new`` request -> response;
- process start -> the first ``agent_message_chunk`` of the first prompt (cold: it includes
  Claude Code's start and the SDK's handshake, whatever of them did not overlap the requests);
- a later prompt's request -> its first ``agent_message_chunk`` (warm);
- stdin closed -> process exited.

Claude Code runs offline against the scripted model on loopback (``offline_env``), so nothing
leaves the machine and no key is needed. Prints p50/p90/max in ms. Targets: ``initialize`` <=
300 ms, cold first chunk <= 1,000 ms, warm first chunk p50 <= 100 ms. ``bench_compare.py`` runs
the same measurement against the TypeScript adapter (:func:`first_chunk_run`).

Two bytecode situations are measured, because Python startup depends on them:

- ``no-pyc``: the environment as it is. With ``PYTHONDONTWRITEBYTECODE=1`` and a virtualenv
  installed without compiled bytecode (``uv sync`` does not compile by default), every spawn
  compiles pydantic, anyio and the agent from source.
- ``pyc``: a bytecode cache as any normal install has after its first run (pip compiles at
  install time; otherwise Python writes ``__pycache__`` on first import). To leave the shared
  virtualenv untouched, the cache goes to a temporary ``PYTHONPYCACHEPREFIX``, filled by one
  unmeasured spawn.

Usage: ``.venv/bin/python scripts/bench_startup.py [-n 10] [--warm 5] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_client import AGENT, OURS, AgentCommand, BenchAgent, percentile
from claude_bg_acp.acp.client import update_of
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

TARGET_INITIALIZE_MS = 300.0
TARGET_COLD_MS = 1000.0
TARGET_WARM_MS = 100.0
INITIALIZE: dict[int, dict[str, Any]] = {
    1: {
        "protocolVersion": 1,
        "clientInfo": {"name": "bench-startup", "version": "0"},
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
    },
    2: {"protocolVersion": 2, "info": {"name": "bench-startup", "version": "0"}, "capabilities": {}},
}


@dataclass
class Sample:
    """One spawn, in ms."""

    version: int
    initialize_ms: float
    new_session_ms: float
    cold_first_chunk_ms: float
    warm_first_chunk_ms: list[float]
    exit_ms: float


def with_bytecode_cache(env: dict[str, str], cache: Path) -> dict[str, str]:
    """``env`` for Python as after its first run: bytecode written to, and read from, ``cache``."""
    cached = {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**cached, "PYTHONPYCACHEPREFIX": str(cache)}


def first_chunk_run(
    command: AgentCommand, env: dict[str, str], cwd: Path, version: int = 1, warm_prompts: int = 5
) -> Sample:
    """Spawn, then ``initialize``, ``session/new`` and a prompt back to back (each sent as soon as
    the previous one is answered, as an editor opening a thread does), until the first
    ``agent_message_chunk``; then ``warm_prompts`` more prompts in the same session, each timed
    from the request to its first chunk. The model answers at once (scenario ``text``)."""
    start = time.monotonic_ns()
    agent = BenchAgent(env, cwd, command=command, keep_all=True)

    def prompt_to_first_chunk(session_id: str, n: int) -> tuple[int, int]:
        since = agent.seen
        request = agent.prompt(session_id, f"[scenario:text] Hello {n}.")
        sent = time.monotonic_ns()
        chunk = agent.wait_for(lambda m: bool(update_of(m, "agent_message_chunk")), 60, "a chunk", since)
        if version == 1:
            agent.result(request, 60)
        else:  # a v2 prompt is answered at insertion, long before the turn ends
            agent.wait_for(
                lambda m: (update_of(m, "state_update") or {}).get("state") == "idle", 60, "idle", chunk
            )
        return sent, agent.received[chunk]

    try:
        _, initialized = agent.timed_result(agent.ask("initialize", INITIALIZE[version]))
        request = agent.ask("session/new", {"cwd": str(cwd), "mcpServers": []})
        asked = time.monotonic_ns()
        result, created = agent.timed_result(request)
        session_id = str(result["sessionId"])
        _, cold = prompt_to_first_chunk(session_id, 0)
        warm = [
            (first - sent) / 1e6
            for sent, first in (prompt_to_first_chunk(session_id, n) for n in range(1, warm_prompts + 1))
        ]
        closed = time.monotonic_ns()
        agent.close(30)
        exited = time.monotonic_ns()
    finally:
        agent.shut_down()
    return Sample(
        version=version,
        initialize_ms=(initialized - start) / 1e6,
        new_session_ms=(created - asked) / 1e6,
        cold_first_chunk_ms=(cold - start) / 1e6,
        warm_first_chunk_ms=warm,
        exit_ms=(exited - closed) / 1e6,
    )


def stats(values: list[float]) -> str:
    return f"{percentile(values, 0.5):7.0f}  {percentile(values, 0.9):7.0f}  {max(values):7.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=10, help="spawns per protocol version")
    parser.add_argument("--warm", type=int, default=5, help="prompts timed after the first, per spawn")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    parser.add_argument(
        "--bytecode",
        choices=["both", "pyc", "no-pyc"],
        default="both",
        help="which bytecode situation(s) to measure (see the module doc)",
    )
    args = parser.parse_args(argv)
    if not AGENT.exists():
        parser.error(f"{AGENT} is not installed; run `uv sync --frozen` first")
    results: dict[str, list[Sample]] = {}
    modes = ["no-pyc", "pyc"] if args.bytecode == "both" else [args.bytecode]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        for mode in modes:
            env = offline_env(model.base_url, root / "offline")
            if mode == "pyc":
                env = with_bytecode_cache(env, root / "pycache")
                first_chunk_run(OURS, env, cwd, 2, warm_prompts=0)  # fills the cache; not measured
            else:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
                env.pop("PYTHONPYCACHEPREFIX", None)
            samples = results[mode] = []
            for run in range(args.runs):
                for version in (1, 2) if run % 2 == 0 else (2, 1):
                    samples.append(first_chunk_run(OURS, env, cwd, version, args.warm))
                print(f"\r{mode}: {len(samples)}/{2 * args.runs} spawns", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
    print(
        f"claude-bg-acp startup, {args.runs} spawns per version and mode, {args.warm} warm prompts each, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (ms)"
    )
    print(f"{'measure':<56}  {'p50':>7}  {'p90':>7}  {'max':>7}")
    for mode, samples in results.items():
        for version in (1, 2):
            mine = [s for s in samples if s.version == version]
            rows = [
                ("process start -> initialize response", [s.initialize_ms for s in mine]),
                ("session/new request -> response", [s.new_session_ms for s in mine]),
                ("process start -> first agent_message_chunk", [s.cold_first_chunk_ms for s in mine]),
                (
                    "warm prompt -> first agent_message_chunk",
                    [w for s in mine for w in s.warm_first_chunk_ms],
                ),
                ("stdin closed -> process exited", [s.exit_ms for s in mine]),
            ]
            for what, values in rows:
                if values:
                    print(f"{f'[{mode}] v{version}: {what}':<56}  {stats(values)}")
    for mode, samples in results.items():
        checks = [
            ("initialize", [s.initialize_ms for s in samples], TARGET_INITIALIZE_MS),
            ("cold first chunk", [s.cold_first_chunk_ms for s in samples], TARGET_COLD_MS),
            ("warm first chunk", [w for s in samples for w in s.warm_first_chunk_ms], TARGET_WARM_MS),
        ]
        verdicts = [
            f"{what} p50 {percentile(values, 0.5):.0f} <= {target:.0f}: "
            f"{'met' if percentile(values, 0.5) <= target else 'MISSED'}"
            for what, values, target in checks
            if values
        ]
        print(f"[{mode}] " + "; ".join(verdicts))
    if args.json:
        dump = {mode: [s.__dict__ for s in samples] for mode, samples in results.items()}
        args.json.write_text(json.dumps(dump, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
