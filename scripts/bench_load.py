"""Load benchmark: many background shells printing at once, timed line by line at the client.

One agent, ``--sessions`` v2 sessions (default 10), each starting ``--shells`` background shells
(default 20) with one prompt (scenario ``bg_from_prompt``), so 200 shells in all, each running
``cat FIFO``. The benchmark then writes numbered lines into the FIFOs at ``--rate`` lines per
second in all (default 2,000: a line every 100 ms per shell, the shells evenly staggered) for
``--seconds`` (default 20, after 2 s of warm-up), stamping each just before its ``write()``. The
client (``bench_client.BenchAgent``) stamps each line of the agent's stdout as it reads it and
counts a line as arrived when it is whole (its newline included) in the terminal's output.

Printed: whether every line arrived, in order; write -> whole line p50/p95/p99/max over the
measured lines; the agent process's CPU (``utime + stime`` from ``/proc``, its children such as
Claude Code not included) as a share of one core over the measured window; its peak RSS; and
messages per line. Targets (issue 14): every line in order, p50 <= 10 ms, p95 <= 50 ms, CPU <=
30 % of a core, RSS <= 200 MiB.

``bench_compare.py`` runs the same scenario against the TypeScript adapter; here only
``claude-bg-acp`` runs. Usage: ``.venv/bin/python scripts/bench_load.py [--portable] [--json PATH]``
(``--portable``: the agent in the portable mode, as it runs on macOS).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_client import (
    OURS,
    PORTABLE,
    AgentCommand,
    BenchAgent,
    LineArrivals,
    RssSampler,
    cpu_ticks,
    latencies_ms,
    numbered_line,
    open_fifo_for_writing,
    percentile,
)
from claude_bg_acp.acp.client import AgentError
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

TARGETS = {"p50_ms": 10.0, "p95_ms": 50.0, "cpu_share": 0.30, "rss_mib": 200.0}


def run_load(
    base_url: str,
    root: Path,
    command: AgentCommand = OURS,
    *,
    sessions: int = 10,
    shells: int = 20,
    rate: float = 2000.0,
    seconds: float = 20.0,
    warmup: float = 2.0,
    profile: Path | None = None,
) -> dict[str, Any]:
    """Run the scenario once against ``command``; the figures as a dict. With ``profile``,
    ``py-spy`` (on ``PATH``) records the agent during the measured window into that file."""
    total = sessions * shells
    folder = Path(tempfile.mkdtemp(prefix="load-", dir=root))
    env = offline_env(base_url, folder / "offline")
    lines = LineArrivals()
    written: dict[tuple[int, int], int] = {}
    fds: list[int] = []
    with (folder / "agent.stderr").open("wb") as stderr:
        agent = BenchAgent(env, folder, stderr=stderr, command=command)
        try:
            agent.on_chunk = lines
            agent.initialize_v2()
            launched = time.monotonic()
            for session in range(sessions):
                workdir = folder / f"s{session}"
                workdir.mkdir()
                session_id = agent.new_session(workdir)
                names = [f"shell{session * shells + i}.fifo" for i in range(shells)]
                for name in names:
                    os.mkfifo(workdir / name, 0o600)
                commands = "".join(f"<command>cat {name}</command>" for name in names)
                agent.prompt(session_id, f"[scenario:bg_from_prompt] Start these. {commands}")
            agent.wait_terminals(total, timeout=300)
            fds = [
                open_fifo_for_writing(folder / f"s{shell // shells}" / f"shell{shell}.fifo", timeout=300)
                for shell in range(total)
            ]
            started_s = time.monotonic() - launched
            time.sleep(2.0)  # let the turns end
            rss = RssSampler(agent.pid, interval=0.1)
            start = time.monotonic()
            measured_from = start + warmup
            cpu_from = messages_from = 0
            spy: subprocess.Popen[bytes] | None = None
            end = measured_from + seconds
            k = 0
            while (at := start + k / rate) < end:
                time.sleep(max(0.0, at - time.monotonic()))
                if not cpu_from and at >= measured_from:
                    cpu_from, messages_from = cpu_ticks(agent.pid), agent.lines_read
                    if profile is not None:
                        record = f"py-spy record -r 250 -f raw --nonblocking -d {int(seconds)}".split()
                        spy = subprocess.Popen(
                            [*record, "-p", str(agent.pid), "-o", str(profile)], stdout=subprocess.DEVNULL
                        )
                shell, seq = k % total, k // total
                written[(shell, seq)] = time.monotonic_ns()
                os.write(fds[shell], numbered_line(shell, seq))
                k += 1
            cpu = (cpu_ticks(agent.pid) - cpu_from) / os.sysconf("SC_CLK_TCK")
            if spy is not None:
                spy.wait(60)
            messages = agent.lines_read - messages_from
            with contextlib.suppress(AgentError):
                agent.wait_until(lambda: len(lines.arrived) >= len(written), 30, "every line")
            rss_peak_mib = max(rss.peak, rss.baseline) / 1024
            rss.stop()
        finally:
            for fd in fds:
                os.close(fd)
            agent.shut_down()
            shutil.rmtree(folder, ignore_errors=True)
    measured = {key: at for key, at in written.items() if at >= measured_from * 1e9}
    latencies = latencies_ms(measured, lines.arrived)
    missing = len(written) - sum(key in lines.arrived for key in written)
    return {
        "agent": command.name,
        "shells": total,
        "sessions": sessions,
        "rate": rate,
        "seconds": seconds,
        "lines_written": len(written),
        "lines_missing": missing,
        "out_of_order": lines.out_of_order,
        "foreign_lines": lines.foreign,
        "p50_ms": percentile(latencies, 0.5) if latencies else None,
        "p95_ms": percentile(latencies, 0.95) if latencies else None,
        "p99_ms": percentile(latencies, 0.99) if latencies else None,
        "max_ms": max(latencies) if latencies else None,
        "cpu_share": cpu / seconds,
        "rss_peak_mib": rss_peak_mib,
        "messages_per_line": messages / max(1, len(measured)),
        "seconds_to_start_all": started_s,
    }


def rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """``(measure, value)`` rows for a table."""

    def ms(key: str) -> str:
        value = result[key]
        return "-" if value is None else f"{value:.1f} ms"

    complete = result["lines_missing"] == 0 and result["out_of_order"] == 0
    return [
        (
            "every line, in order",
            "yes"
            if complete
            else f"NO: {result['lines_missing']} missing, {result['out_of_order']} out of order",
        ),
        ("write -> whole line, p50", ms("p50_ms")),
        ("write -> whole line, p95", ms("p95_ms")),
        ("write -> whole line, p99 / max", f"{ms('p99_ms')} / {ms('max_ms')}"),
        ("agent CPU, share of one core", f"{100 * result['cpu_share']:.0f} %"),
        ("agent RSS, peak", f"{result['rss_peak_mib']:.0f} MiB"),
        ("messages on stdout per line", f"{result['messages_per_line']:.2f}"),
        ("prompts -> every shell started", f"{result['seconds_to_start_all']:.1f} s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--shells", type=int, default=20, help="background shells per session")
    parser.add_argument("--rate", type=float, default=2000.0, help="lines per second, all shells together")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds (after 2 s warm-up)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--profile", type=Path, help="py-spy (on PATH) records the agent into this file")
    parser.add_argument("--portable", action="store_true", help="the agent in the portable mode, as on macOS")
    args = parser.parse_args(argv)
    agent = PORTABLE if args.portable else OURS
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp, serve_in_thread("text") as model:
        result = run_load(
            model.base_url,
            Path(tmp),
            agent,
            sessions=args.sessions,
            shells=args.shells,
            rate=args.rate,
            seconds=args.seconds,
            profile=args.profile,
        )
    print(
        f"{agent.name} load: {result['shells']} shells in {args.sessions} sessions, {args.rate:.0f} lines/s "
        f"for {args.seconds:.0f} s, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    for what, value in rows(result):
        print(f"{what:<36}  {value}")
    print(
        f"targets: in order, p50 <= {TARGETS['p50_ms']:.0f} ms, p95 <= {TARGETS['p95_ms']:.0f} ms, "
        f"CPU <= {100 * TARGETS['cpu_share']:.0f} %, RSS <= {TARGETS['rss_mib']:.0f} MiB"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
