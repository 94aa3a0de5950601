"""Turn-end benchmark: how long after Claude Code's ``result`` frame the client hears the turn ended.

Method. The agent runs the REAL bundled Claude Code CLI (offline, against the scripted model's
``text`` scenario: a plain answer, nothing spawned), but through ``--cli-path`` pointing at a
small pass-through wrapper that this script writes to a temp dir. The wrapper starts the real
CLI with the same arguments and inherited stdin/stderr, copies the CLI's stdout to the agent
unchanged, and, for every line whose JSON ``type`` is ``result``, appends to a log the
``time.monotonic_ns()`` taken right before the chunk holding that line is written into the
agent's pipe (so the stamp cannot come after the agent's reaction, even if the wrapper is
descheduled; the interval then includes the ``write`` call, microseconds). The client
(``BenchAgent`` from ``bench_client.py``) stamps each line it reads from the agent's stdout
with the same clock (``CLOCK_MONOTONIC`` is system-wide). For prompt k:

- v1: latency = arrival of the ``session/prompt`` response (``{stopReason}``) - k-th result;
- v2: latency = arrival of the first ``state_update`` with ``state: idle`` after the k-th result
  (a v2 prompt is answered at insertion, so idle is what marks the end of the turn).

The wrapper adds one pipe hop before the agent can read the frame (a few microseconds), which
delays the CLI's output but is not part of the measured interval. Prompts run one after
another in one session per version. Target: within 5 ms.

Usage: ``.venv/bin/python scripts/bench_turns.py [-n 30] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_client import BenchAgent, percentile
from claude_bg_acp.acp.client import AgentError
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

TARGET_MS = 5.0

WRAPPER = r"""
import json, os, signal, subprocess, sys, time

REAL, LOG = {real!r}, {log!r}
child = subprocess.Popen([REAL, *sys.argv[1:]], stdout=subprocess.PIPE)
for signum in (signal.SIGTERM, signal.SIGINT):
    signal.signal(signum, lambda n, _f: child.send_signal(n))
log = open(LOG, "a", buffering=1)
source = child.stdout.fileno()
pending = b""
while True:
    try:
        data = os.read(source, 1 << 20)
    except InterruptedError:
        continue
    if not data:
        break
    pending += data
    *lines, pending = pending.split(b"\n")
    results = []
    for line in lines:
        if b'"result"' in line:
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if frame.get("type") == "result":
                results.append(frame.get("subtype"))
    stamp = time.monotonic_ns()
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
    for subtype in results:
        log.write(f"{{stamp}} {{subtype}}\n")
sys.exit(child.wait())
"""


def bundled_cli() -> Path:
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        raise SystemExit("claude_agent_sdk is not installed; run `uv sync --frozen`")
    cli = Path(spec.origin).parent / "_bundled" / "claude"
    if not cli.exists():
        raise SystemExit(f"the bundled CLI is missing at {cli}")
    return cli


def write_wrapper(folder: Path, log: Path) -> Path:
    wrapper = folder / "claude-wrapper"
    wrapper.write_text(f"#!{sys.executable}\n" + WRAPPER.format(real=str(bundled_cli()), log=str(log)))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def result_times(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[0]) for line in log.read_text().splitlines() if line.strip()]


def idle_since(idles: list[int], moment: int) -> Callable[[], bool]:
    return lambda: max(idles, default=0) >= moment


def measure(version: int, prompts: int, model_url: str, root: Path) -> list[float]:
    folder = root / f"v{version}"
    workdir = folder / "work"
    workdir.mkdir(parents=True)
    log = folder / "results.log"
    wrapper = write_wrapper(folder, log)
    env = offline_env(model_url, folder / "offline")
    latencies: list[float] = []
    with (folder / "agent.stderr").open("wb") as stderr:
        agent = BenchAgent(env, workdir, ["--cli-path", str(wrapper)], stderr)
        idles: list[int] = []

        def on_line(received: int, message: dict[str, Any]) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                idles.append(received)

        agent.on_line = on_line
        try:
            agent.initialize_v1() if version == 1 else agent.initialize_v2()
            session_id = agent.new_session(workdir)
            for index in range(prompts):
                prompt = agent.prompt(session_id, f"[scenario:text] Say hello ({index}).")
                result, answered = agent.timed_result(prompt)
                if version == 1 and result.get("stopReason") != "end_turn":
                    raise AgentError(f"unexpected v1 answer {result}")
                deadline = time.monotonic() + 30
                while len(result_times(log)) <= index:
                    if time.monotonic() > deadline:
                        raise AgentError("no result frame was logged by the CLI wrapper")
                    time.sleep(0.005)
                result_at = result_times(log)[index]
                if version == 2:
                    agent.wait_until(idle_since(idles, result_at), 30, "idle after the result")
                    answered = min(t for t in idles if t >= result_at)
                latencies.append((answered - result_at) / 1e6)
                time.sleep(0.05)
        finally:
            agent.shut_down()
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--prompts", type=int, default=30, help="prompts per protocol version")
    parser.add_argument("--json", type=Path, help="also write every latency here")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-turns-"))
    try:
        with serve_in_thread("text") as model:
            results = {f"v{v}": measure(v, args.prompts, model.base_url, root) for v in (1, 2)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"claude-bg-acp turn end, {args.prompts} prompts per version, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'Claude Code result frame -> client hears the end':<52}  {'p50':>7}  {'p90':>7}  {'max':>7}")
    labels = {"v1": "v1: session/prompt response {stopReason}", "v2": "v2: state_update idle"}
    for key, values in results.items():
        print(
            f"{labels[key]:<52}  {percentile(values, 0.5):5.2f}ms  {percentile(values, 0.9):5.2f}ms  "
            f"{max(values):5.2f}ms"
        )
    v1 = results["v1"]
    within = sum(1 for value in v1 if value <= TARGET_MS)
    print(
        f"target: v1 response within {TARGET_MS:.0f} ms of the result: {within} of {len(v1)} prompts "
        f"(p50 {percentile(v1, 0.5):.2f} ms, max {max(v1):.2f} ms)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
