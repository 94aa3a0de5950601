"""Load benchmark: many background shells printing at once, timed line by line at the client,
from the first shell's start to the last one's end.

One agent, ``--sessions`` v2 sessions (default 10), each starting ``--shells`` background shells
(default 20) with one prompt (scenario ``bg_from_prompt``), so 200 shells in all, each running
``cat FIFO``. Numbered lines go into the FIFOs at ``--rate`` lines per second in all (default
2,000: a line every 100 ms per shell, the shells evenly staggered), each stamped just before its
``write()``; a shell gets its first line as soon as its ``cat`` reads (the sessions are still
being started, their shells announced), and its last one when it ends. The client
(``bench_client.BenchAgent``) stamps each line of the agent's stdout as it reads it and counts a
line as arrived when it is whole (its newline included) in the terminal's output. The run has
three phases, by when a line was written:

- start: from the first prompt until every shell prints and 2 s more (the prompts' turns end);
- steady: every shell prints; measured ``--seconds`` (default 20) after 2 s more of warm-up,
  the figure this benchmark gave before it measured the other two;
- wind-down: the shells end one after another over ``--wind-down`` seconds (default 4), each
  when its FIFO closes, while the others still print; Claude Code reports each end, and runs a
  follow-up turn for the notifications. With ``--burst`` they end as shells started by one
  message do, at about the same time: each session's shells together, the sessions one after
  another over ``--wind-down`` seconds (default 2 then), so that 200 endings, their
  notifications and 10 follow-up turns come at once while the last sessions' shells print.

Printed: whether every line arrived, in order; write -> whole line p50/p95 over the whole run
and per phase (p99 and max too for the whole run and the steady phase); in each phase the CPU of
the agent process and of the Claude Code processes (``utime + stime`` from ``/proc``; Claude
Code's own children, the shells, not included) as shares of one core; the agent's peak RSS; and
messages per line in the steady phase. Targets (issues 14 and 24): every line in order, p50 <=
10 ms and p95 <= 50 ms (steady, and p95 over the whole run), CPU <= 30 %, RSS <= 200 MiB.

The scripted model runs in a process of its own, so that serving ten Claude Codes never delays
the client's reading (in this process). ``bench_compare.py`` runs the same scenario against the
TypeScript adapter; here only ``claude-bg-acp`` runs. ``--profile PREFIX``: ``py-spy`` (on
``PATH``) records the agent in each phase into ``PREFIX.<phase>.txt``; ``--claude-nice N``:
this benchmark gives the agent's Claude Code processes the nice value N as they appear (what
the run would be if Claude Code ran at a lower CPU priority than the agent). Usage:
``.venv/bin/python scripts/bench_load.py [--portable] [--burst] [--json PATH] [--profile PREFIX]
[--claude-nice N]`` (``--portable``: the agent in the portable mode, as it runs on macOS).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_client import (
    OURS,
    PORTABLE,
    AgentCommand,
    BenchAgent,
    LineArrivals,
    RssSampler,
    children,
    cpu_ticks,
    latencies_ms,
    model_process,
    numbered_line,
    percentile,
)
from claude_bg_acp.acp.client import AgentError
from claude_bg_acp.scripted_model import offline_env

TARGETS = {"p50_ms": 10.0, "p95_ms": 50.0, "run_p95_ms": 50.0, "cpu_share": 0.30, "rss_mib": 200.0}
PHASES = {"start": (0, 1), "steady": (2, 3), "wind-down": (3, 4)}
"""Each phase's first and last reading of the clock (``Clock.marks``): from the first prompt,
when every shell printed ``SETTLE`` s, the steady phase's start (after its warm-up), the
wind-down's start, the end."""
SETTLE = 2.0
"""Seconds after every shell prints that still belong to the start (the prompts' turns end)."""
START_TIMEOUT = 300.0


@dataclass
class Meter:
    """The phases' boundaries as the run reaches them, and the CPU seconds of the agent and of
    its Claude Code processes at each."""

    agent_pid: int
    marks: list[tuple[float, float, float]] = field(default_factory=list)
    """``(monotonic, agent CPU seconds, Claude Code CPU seconds)``."""
    _claude: dict[int, float] = field(default_factory=dict)
    """The latest reading of each Claude Code process (one that ended keeps its last)."""

    def mark(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        for pid in children(self.agent_pid):
            with contextlib.suppress(OSError, ValueError, IndexError):
                self._claude[pid] = cpu_ticks(pid) / tick
        self.marks.append((time.monotonic(), cpu_ticks(self.agent_pid) / tick, sum(self._claude.values())))

    def phase_of(self, at_ns: int) -> str | None:
        """The phase of a line written at ``at_ns`` (None: in the steady phase's warm-up)."""
        at = at_ns / 1e9
        start_ended, steady, winding = (self.marks[index][0] for index in (1, 2, 3))
        if at < start_ended:
            return "start"
        if at < steady:
            return None
        return "steady" if at < winding else "wind-down"

    def shares(self, phase: str) -> tuple[float, float, float]:
        """The phase's seconds, and the agent's and Claude Code's CPU as shares of one core."""
        first, last = PHASES[phase]
        (t0, a0, c0), (t1, a1, c1) = self.marks[first], self.marks[last]
        span = max(t1 - t0, 1e-9)
        return t1 - t0, (a1 - a0) / span, (c1 - c0) / span


class Spy:
    """``py-spy`` (on ``PATH``) on the agent, one recording per phase (``PREFIX.<phase>.txt``)."""

    def __init__(self, prefix: Path | None, pid: int) -> None:
        self._prefix = prefix
        self._pid = pid
        self._running: subprocess.Popen[bytes] | None = None

    def phase(self, name: str | None) -> None:
        """Stop the recording under way (py-spy writes it out on SIGINT); record ``name``."""
        if self._running is not None:
            self._running.send_signal(signal.SIGINT)
            self._running.wait(60)
            self._running = None
        if name is not None and self._prefix is not None:
            record = ["py-spy", "record", "-r", "250", "-f", "raw", "--nonblocking"]
            output = f"{self._prefix}.{name}.txt"
            self._running = subprocess.Popen(
                [*record, "-p", str(self._pid), "-o", output], stdout=subprocess.DEVNULL
            )


class Renicer(threading.Thread):
    """Gives each Claude Code process of the agent (and each of its threads) the nice value
    ``nice`` as soon as it appears: what the run would be if Claude Code ran at a lower CPU
    priority than the agent (what it starts inherits the value)."""

    def __init__(self, agent_pid: int, nice: int) -> None:
        super().__init__(name="renicer", daemon=True)
        self._agent_pid = agent_pid
        self._nice = nice
        self._done = threading.Event()

    def run(self) -> None:
        done: set[int] = set()
        while not self._done.wait(0.01):
            for pid in set(children(self._agent_pid)) - done:
                with contextlib.suppress(OSError):
                    for task in os.listdir(f"/proc/{pid}/task"):
                        os.setpriority(os.PRIO_PROCESS, int(task), self._nice)
                    done.add(pid)

    def stop(self) -> None:
        self._done.set()
        self.join()


class Launcher(threading.Thread):
    """Starts the sessions and their shells, a session after the other, as a client would."""

    def __init__(self, agent: BenchAgent, folder: Path, sessions: int, shells: int) -> None:
        super().__init__(name="launcher", daemon=True)
        self._agent = agent
        self._folder = folder
        self._sessions = sessions
        self._shells = shells
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            for session in range(self._sessions):
                workdir = self._folder / f"s{session}"
                workdir.mkdir()
                session_id = self._agent.new_session(workdir)
                names = [f"shell{session * self._shells + i}.fifo" for i in range(self._shells)]
                for name in names:
                    os.mkfifo(workdir / name, 0o600)
                commands = "".join(f"<command>cat {name}</command>" for name in names)
                self._agent.prompt(session_id, f"[scenario:bg_from_prompt] Start these. {commands}")
        except Exception as exc:  # for the writer, which stops
            self.error = exc


def fifo_for_writing(path: Path) -> int | None:
    """``path`` opened for writing if its reader (the background ``cat``) has opened it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ENOENT):
            return None
        raise
    os.set_blocking(fd, True)
    return fd


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
    wind_down: float = 4.0,
    burst: bool = False,
    profile: Path | None = None,
    claude_nice: int | None = None,
) -> dict[str, Any]:
    """Run the scenario once against ``command``; the figures as a dict. ``burst``: each
    session's shells end together (``end_times``). With ``profile``, ``py-spy`` records the
    agent in each phase; with ``claude_nice``, Claude Code runs at that nice value
    (``Renicer``)."""
    total = sessions * shells
    folder = Path(tempfile.mkdtemp(prefix="load-", dir=root))
    env = offline_env(base_url, folder / "offline")
    lines = LineArrivals()
    written: dict[tuple[int, int], int] = {}
    fds: dict[int, int] = {}
    with (folder / "agent.stderr").open("wb") as stderr:
        agent = BenchAgent(env, folder, stderr=stderr, command=command)
        try:
            agent.on_chunk = lines
            agent.initialize_v2()
            meter, spy = Meter(agent.pid), Spy(profile, agent.pid)
            renicer = Renicer(agent.pid, claude_nice) if claude_nice is not None else None
            if renicer is not None:
                renicer.start()
            launched = time.monotonic()
            meter.mark()
            spy.phase("start")
            launcher = Launcher(agent, folder, sessions, shells)
            launcher.start()
            rss = RssSampler(agent.pid, interval=0.1)
            marks: list[tuple[float, str | None]] = []
            """The phase boundaries to come, once every shell prints."""
            ends: dict[int, float] = {}
            """When each shell ends, once every shell prints."""
            seqs = [0] * total
            steady_messages = [0, 0]
            k = -1
            while not ends or fds:
                k += 1
                time.sleep(max(0.0, launched + k / rate - time.monotonic()))
                shell, now = k % total, time.monotonic()
                if not ends:
                    if launcher.error is not None:
                        raise AgentError(f"starting the shells failed: {launcher.error}")
                    if now - launched > START_TIMEOUT:
                        raise AgentError(f"{len(fds)} of {total} shells printing after {START_TIMEOUT:.0f} s")
                    if shell not in fds:
                        fd = fifo_for_writing(folder / f"s{shell // shells}" / f"shell{shell}.fifo")
                        if fd is None:
                            continue
                        fds[shell] = fd
                    if len(fds) == total:  # every shell prints
                        steady = now + SETTLE + warmup
                        marks = [(now + SETTLE, None), (steady, "steady"), (steady + seconds, "wind-down")]
                        ends = end_times(steady + seconds, sessions, shells, wind_down, burst)
                while marks and now >= marks[0][0]:
                    name = marks.pop(0)[1]
                    meter.mark()
                    spy.phase(name)
                    if name is not None:
                        steady_messages[name == "wind-down"] = agent.lines_read
                if shell not in fds:
                    continue
                if ends and now >= ends[shell]:
                    os.close(fds.pop(shell))  # the shell ends
                    continue
                written[(shell, seqs[shell])] = time.monotonic_ns()
                os.write(fds[shell], numbered_line(shell, seqs[shell]))
                seqs[shell] += 1
            with contextlib.suppress(AgentError):
                agent.wait_until(lambda: len(lines.arrived) >= len(written), 30, "every line")
            meter.mark()
            spy.phase(None)
            rss_peak_mib = max(rss.peak, rss.baseline) / 1024
            rss.stop()
            if renicer is not None:
                renicer.stop()
        finally:
            for fd in fds.values():
                os.close(fd)
            agent.shut_down()
            shutil.rmtree(folder, ignore_errors=True)
    return _figures(command, meter, lines, written, steady_messages) | {
        "shells": total,
        "sessions": sessions,
        "rate": rate,
        "seconds": seconds,
        "rss_peak_mib": rss_peak_mib,
    }


def end_times(start: float, sessions: int, shells: int, spread: float, burst: bool) -> dict[int, float]:
    """When each shell ends, from ``start`` over ``spread`` seconds: one after another, or
    (``burst``) each session's shells at one moment, the sessions one after another."""
    if burst:
        return {s: start + (s // shells + 1) * spread / sessions for s in range(sessions * shells)}
    return {s: start + (s + 1) * spread / (sessions * shells) for s in range(sessions * shells)}


def _figures(
    command: AgentCommand,
    meter: Meter,
    lines: LineArrivals,
    written: dict[tuple[int, int], int],
    steady_messages: list[int],
) -> dict[str, Any]:
    by_phase: dict[str, dict[tuple[int, int], int]] = {name: {} for name in PHASES}
    for key, at in written.items():
        name = meter.phase_of(at)
        if name is not None:
            by_phase[name][key] = at
    whole = latencies_ms(written, lines.arrived)
    steady = latencies_ms(by_phase["steady"], lines.arrived)
    phases = {}
    for name, phase_lines in by_phase.items():
        found = latencies_ms(phase_lines, lines.arrived)
        span, agent_cpu, claude_cpu = meter.shares(name)
        phases[name] = {
            "seconds": span,
            "lines": len(phase_lines),
            "p50_ms": _percentile(found, 0.5),
            "p95_ms": _percentile(found, 0.95),
            "agent_cpu_share": agent_cpu,
            "claude_cpu_share": claude_cpu,
        }
    return {
        "agent": command.name,
        "lines_written": len(written),
        "lines_missing": len(written) - sum(key in lines.arrived for key in written),
        "out_of_order": lines.out_of_order,
        "foreign_lines": lines.foreign,
        "p50_ms": _percentile(steady, 0.5),
        "p95_ms": _percentile(steady, 0.95),
        "p99_ms": _percentile(steady, 0.99),
        "max_ms": max(steady, default=None),
        "cpu_share": phases["steady"]["agent_cpu_share"],
        "messages_per_line": (steady_messages[1] - steady_messages[0]) / max(1, len(steady)),
        "seconds_to_start_all": meter.marks[1][0] - SETTLE - meter.marks[0][0],
        "run_p50_ms": _percentile(whole, 0.5),
        "run_p95_ms": _percentile(whole, 0.95),
        "run_p99_ms": _percentile(whole, 0.99),
        "run_max_ms": max(whole, default=None),
        "phases": phases,
    }


def _percentile(values: list[float], fraction: float) -> float | None:
    return percentile(values, fraction) if values else None


def rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """``(measure, value)`` rows for a table."""

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} ms"

    complete = result["lines_missing"] == 0 and result["out_of_order"] == 0
    table = [
        (
            "every line, in order",
            "yes"
            if complete
            else f"NO: {result['lines_missing']} missing, {result['out_of_order']} out of order",
        ),
        (
            "whole run, write -> whole line, p50 / p95",
            f"{ms(result['run_p50_ms'])} / {ms(result['run_p95_ms'])}",
        ),
        ("  p99 / max", f"{ms(result['run_p99_ms'])} / {ms(result['run_max_ms'])}"),
    ]
    for name, phase in result["phases"].items():
        table += [
            (
                f"{name} ({phase['seconds']:.1f} s, {phase['lines']} lines), p50 / p95",
                f"{ms(phase['p50_ms'])} / {ms(phase['p95_ms'])}",
            ),
            (
                "  CPU: agent / Claude Code processes",
                f"{100 * phase['agent_cpu_share']:.0f} % / {100 * phase['claude_cpu_share']:.0f} % of a core",
            ),
        ]
    return [
        *table,
        ("steady, p99 / max", f"{ms(result['p99_ms'])} / {ms(result['max_ms'])}"),
        ("agent RSS, peak", f"{result['rss_peak_mib']:.0f} MiB"),
        ("messages on stdout per line (steady)", f"{result['messages_per_line']:.2f}"),
        ("first prompt -> every shell printing", f"{result['seconds_to_start_all']:.1f} s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--shells", type=int, default=20, help="background shells per session")
    parser.add_argument("--rate", type=float, default=2000.0, help="lines per second, all shells together")
    parser.add_argument("--seconds", type=float, default=20.0, help="steady seconds (after 2 s warm-up)")
    parser.add_argument(
        "--wind-down", type=float, help="seconds over which the shells end (default 4, 2 with --burst)"
    )
    parser.add_argument("--burst", action="store_true", help="each session's shells end together")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--profile", type=Path, help="py-spy (on PATH) records the agent: PREFIX.<phase>.txt")
    parser.add_argument("--portable", action="store_true", help="the agent in the portable mode, as on macOS")
    parser.add_argument(
        "--claude-nice", type=int, metavar="N", help="run Claude Code at nice N (set by this benchmark)"
    )
    args = parser.parse_args(argv)
    agent = PORTABLE if args.portable else OURS
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp, model_process("text") as base_url:
        result = run_load(
            base_url,
            Path(tmp),
            agent,
            sessions=args.sessions,
            shells=args.shells,
            rate=args.rate,
            seconds=args.seconds,
            wind_down=args.wind_down or (2.0 if args.burst else 4.0),
            burst=args.burst,
            profile=args.profile,
            claude_nice=args.claude_nice,
        )
    niced = f"Claude Code at nice {args.claude_nice}, " if args.claude_nice is not None else ""
    niced += "each session's shells ending together, " if args.burst else ""
    print(
        f"{agent.name} load: {result['shells']} shells in {args.sessions} sessions, {args.rate:.0f} lines/s, "
        f"{args.seconds:.0f} s steady, {os.cpu_count()} CPUs, {niced}"
        f"load average {before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for what, value in rows(result):
        print(f"{what:<48}  {value}")
    print(
        f"targets: in order, steady p50 <= {TARGETS['p50_ms']:.0f} ms, p95 <= {TARGETS['p95_ms']:.0f} ms, "
        f"whole run p95 <= {TARGETS['run_p95_ms']:.0f} ms, agent CPU <= {100 * TARGETS['cpu_share']:.0f} %, "
        f"RSS <= {TARGETS['rss_mib']:.0f} MiB"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
