"""Side by side: claude-bg-acp and the TypeScript adapter, same scenarios, same machine, one run.

Installs ``@agentclientprotocol/claude-agent-acp@0.101.0`` with npm into a scratch directory
(``--ts-dir``, default ``.bench/`` in the checkout, which git ignores; reused when already there)
and runs each scenario against both agents, alternating, so that both see the same load on the
machine. Both run offline against the same scripted model on loopback; the TypeScript adapter
runs the Claude Code CLI it bundles (2.1.318; ours is the SDK's, see ``claude/conventions.py``),
and as root it gets ``IS_SANDBOX=1``, without which it refuses to start sessions. Both are
driven as ACP v2 clients, where both send background output as terminal output.

Scenarios (each is the same function the single-agent benchmark uses):

- ``latency``: one background shell, 1000 [200] lines 10 ms apart, write -> whole line at the
  client (``bench_output.Bench.latency``);
- ``load``: 10 sessions x 20 shells, 2,000 lines/s, 20 [10] s steady: every line in order,
  write -> whole line in the steady phase and over the whole run (from the first shell's start
  to the last one's end), agent CPU and RSS (``bench_load.run_load``);
- ``load-burst``: the same, each session's shells ending together (``bench_load.py --burst``);
- ``startup``: spawn -> ``initialize``, ``session/new``, a prompt -> its first
  ``agent_message_chunk``, then warm prompts (``bench_startup.first_chunk_run``), v1 as editors
  speak it, ``--spawns`` times per agent, after one unmeasured spawn: each agent as on its
  second start (Python's bytecode cached, as after any first run; ``bench_startup.py`` also
  measures the first).

The table gives each figure for each agent and the ratio (other / claude-bg-acp: above 1 means
claude-bg-acp is faster or lighter). ``--baseline main`` adds claude-bg-acp as of a git ref
(exported with ``git archive``, run with this environment's Python), to see a change side by
side with what it changes. The machine is shared; ``--rounds`` repeats the whole comparison,
alternating the agents' order, and the table shows the median per figure.

Usage: ``.venv/bin/python scripts/bench_compare.py [--quick] [--only load] [--rounds 2]
[--baseline main] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_client import OURS, AgentCommand, model_process, percentile
from bench_load import run_load
from bench_output import Bench
from bench_startup import first_chunk_run, with_bytecode_cache
from claude_bg_acp.scripted_model import ScriptedModel, offline_env, serve_in_thread

TS_PACKAGE = "@agentclientprotocol/claude-agent-acp"
TS_VERSION = "0.101.0"
DEFAULT_TS_DIR = Path(__file__).resolve().parent.parent / ".bench" / f"ts-adapter-{TS_VERSION}"

Figures = dict[str, float]
Scenario = Callable[[ScriptedModel, Path, AgentCommand, bool], Figures]


def typescript_adapter(folder: Path) -> AgentCommand:
    """The TypeScript adapter, installed into ``folder`` with npm unless it is there already."""
    entry = folder / "node_modules" / TS_PACKAGE / "dist" / "index.js"
    if not entry.exists():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"installing {TS_PACKAGE}@{TS_VERSION} into {folder}", file=sys.stderr, flush=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                f"{TS_PACKAGE}@{TS_VERSION}",
            ],
            check=True,
            stdout=sys.stderr,
        )
    root_needs = (("IS_SANDBOX", "1"),) if os.geteuid() == 0 else ()
    return AgentCommand(f"TS adapter {TS_VERSION}", ("node", str(entry)), root_needs)


# --- scenarios: each returns named figures, lower is better -------------------------------------


def latency(model: ScriptedModel, root: Path, command: AgentCommand, quick: bool) -> Figures:
    bench = Bench(model, root, quick, command)
    bench.latency()
    found = bench.results["latency"]
    return {
        "single shell, write -> whole line, p50 (ms)": found["p50_ms"],
        "single shell, write -> whole line, p95 (ms)": found["p95_ms"],
        "single shell, line followed by silence -> whole (ms)": found["before_pause_max_ms"],
        "single shell, lines out of order or foreign": found["out_of_order"] + found["foreign_lines"],
    }


def load(model: ScriptedModel, root: Path, command: AgentCommand, quick: bool) -> Figures:
    return _load(root, command, quick, burst=False)


def load_burst(model: ScriptedModel, root: Path, command: AgentCommand, quick: bool) -> Figures:
    """As ``load``, each session's shells ending together (``bench_load.end_times``)."""
    figures = _load(root, command, quick, burst=True)
    return {
        figure.replace("200 shells", "200 shells, burst of endings"): value
        for figure, value in figures.items()
    }


def _load(root: Path, command: AgentCommand, quick: bool, burst: bool) -> Figures:
    # The model in a process of its own, as bench_load.py runs it: ten Claude Codes ask it more
    # at the start and the wind-down than this process could answer without delaying its reading.
    with model_process("text") as base_url:
        seconds = 10.0 if quick else 20.0
        found = run_load(
            base_url, root, command, seconds=seconds, wind_down=2.0 if burst else 4.0, burst=burst
        )
    phases = found["phases"]
    return {
        "200 shells, write -> whole line, p50 (ms)": found["p50_ms"],
        "200 shells, write -> whole line, p95 (ms)": found["p95_ms"],
        "200 shells, whole run, p50 (ms)": found["run_p50_ms"],
        "200 shells, whole run, p95 (ms)": found["run_p95_ms"],
        "200 shells, start, p95 (ms)": phases["start"]["p95_ms"],
        "200 shells, wind-down, p95 (ms)": phases["wind-down"]["p95_ms"],
        "200 shells, lines missing or out of order": found["lines_missing"] + found["out_of_order"],
        "200 shells, agent CPU (% of a core)": 100 * found["cpu_share"],
        "200 shells, agent CPU in the wind-down (% of a core)": 100 * phases["wind-down"]["agent_cpu_share"],
        "200 shells, Claude Code CPU in the wind-down (% of a core)": (
            100 * phases["wind-down"]["claude_cpu_share"]
        ),
        "200 shells, agent RSS peak (MiB)": found["rss_peak_mib"],
        "200 shells, messages per line": found["messages_per_line"],
    }


def startup(spawns: int) -> Scenario:
    def run(model: ScriptedModel, root: Path, command: AgentCommand, quick: bool) -> Figures:
        cwd = root / "work"
        cwd.mkdir(exist_ok=True)
        # Each agent as on its second start: Python's bytecode cached (see bench_startup.py), and
        # both agents' files in the page cache.
        env = with_bytecode_cache(offline_env(model.base_url, root / "offline"), root / "pycache")
        first_chunk_run(command, env, cwd, 1, warm_prompts=0)
        samples = [first_chunk_run(command, env, cwd, 1, warm_prompts=5) for _ in range(spawns)]
        warm = [w for s in samples for w in s.warm_first_chunk_ms]
        return {
            "spawn -> initialize answer, p50 (ms)": percentile([s.initialize_ms for s in samples], 0.5),
            "session/new -> answer, p50 (ms)": percentile([s.new_session_ms for s in samples], 0.5),
            "spawn -> first agent_message_chunk, p50 (ms)": percentile(
                [s.cold_first_chunk_ms for s in samples], 0.5
            ),
            "warm prompt -> first agent_message_chunk, p50 (ms)": percentile(warm, 0.5),
        }

    return run


# --- running and reporting -----------------------------------------------------------------------


def compare(
    scenarios: dict[str, Scenario], agents: list[AgentCommand], rounds: int, quick: bool
) -> dict[str, dict[str, list[float]]]:
    """``{agent name: {figure: [value per round]}}``; agents alternate within each scenario."""
    found: dict[str, dict[str, list[float]]] = {agent.name: {} for agent in agents}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp, serve_in_thread("text") as model:
        for round_no in range(rounds):
            for name, scenario in scenarios.items():
                order = agents if round_no % 2 == 0 else agents[::-1]
                for agent in order:
                    began = time.monotonic()
                    print(
                        f"... round {round_no + 1}: {name} on {agent.name}",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                    folder = Path(tmp) / f"{round_no}-{name}-{agent.name.split()[0]}"
                    folder.mkdir()
                    figures = scenario(model, folder, agent, quick)
                    shutil.rmtree(folder, ignore_errors=True)
                    for figure, value in figures.items():
                        found[agent.name].setdefault(figure, []).append(value)
                    print(f" done in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    return found


def baseline(ref: str, folder: Path) -> AgentCommand:
    """claude-bg-acp as of git ``ref`` (exported into ``folder``), run by this environment."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    run = "import sys; sys.argv[0] = 'claude-bg-acp'; from claude_bg_acp.cli import main; main()"
    return AgentCommand(
        f"claude-bg-acp@{ref}", (sys.executable, "-c", run), (("PYTHONPATH", str(folder / "src")),)
    )


def print_table(found: dict[str, dict[str, list[float]]], ours: str) -> None:
    others = [name for name in found if name != ours]
    header = ("figure (median of rounds)", ours, *others, *(f"{name.split()[0]} / ours" for name in others))
    rows = [header]
    for figure, values in found[ours].items():
        mine = statistics.median(values)
        theirs = [statistics.median(found[name].get(figure, [float("nan")])) for name in others]
        ratios = [f"{other / mine:.1f}x" if mine > 0 and "order" not in figure else "" for other in theirs]
        rows.append((figure, f"{mine:.1f}", *(f"{other:.1f}" for other in theirs), *ratios))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer lines, shorter load")
    parser.add_argument(
        "--only", action="append", choices=["latency", "load", "load-burst", "startup"], help="repeatable"
    )
    parser.add_argument("--rounds", type=int, default=1, help="repeat the whole comparison")
    parser.add_argument("--spawns", type=int, default=5, help="spawns per agent in the startup scenario")
    parser.add_argument(
        "--ts-dir", type=Path, default=DEFAULT_TS_DIR, help="where the TS adapter is installed"
    )
    parser.add_argument("--json", type=Path, help="also write every figure of every round here")
    parser.add_argument(
        "--baseline", metavar="REF", help="also run claude-bg-acp as of this git ref (e.g. main)"
    )
    args = parser.parse_args(argv)
    agents = [OURS, typescript_adapter(args.ts_dir)]
    everything: dict[str, Scenario] = {
        "latency": latency,
        "load": load,
        "load-burst": load_burst,
        "startup": startup(args.spawns),
    }
    scenarios = {name: everything[name] for name in args.only or everything}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as exported:
        if args.baseline:
            agents.append(baseline(args.baseline, Path(exported)))
        found = compare(scenarios, agents, args.rounds, args.quick)
    print(
        f"{' vs '.join(agent.name for agent in agents)}: {args.rounds} round(s), {os.cpu_count()} CPUs, "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print_table(found, OURS.name)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
