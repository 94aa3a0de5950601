"""End-to-end output benchmark: real CLI, real output files, a client reading the agent's stdout.

Every phase starts the installed ``claude-bg-acp`` (the console script next to
``sys.executable``) as a subprocess with the bundled Claude Code CLI, pointed at the scripted
model on loopback (``offline_env``; no network, no API key). The client is :class:`BenchAgent`
(``bench_client.py``): one thread reads the agent's stdout line by line as fast as it comes, parses every
line, answers permission requests, and hands each ``terminal_output_chunk`` to the phase.

The background shells run a command the benchmark chooses (scenario ``bg_from_prompt``: every
``<command>...</command>`` in the prompt becomes a background Bash call). The command is
``cat FIFO``: the benchmark writes into the FIFO, ``cat`` copies into Claude Code's output file,
the agent tails that file and relays it. So the benchmark knows exactly when each byte was
written, and both ends use one clock (``CLOCK_MONOTONIC``).

Phases (each with a fresh agent; sizes with ``--quick`` in brackets):

a. latency (``--only latency``): 1000 [200] lines 10 ms apart, each stamped just before its
   ``write()`` into the FIFO; a line counts as received when the stdout line of the
   ``terminal_output_chunk`` that completes it (its newline included) was read. Then lines
   written after 4 s of silence each: how soon the line before each pause is whole (a quiet
   server's last line), and how soon the first line after it arrives (the tailer has slowed to
   its idle step by then).
b. throughput and memory (``--only throughput``): 1 GiB [256 MiB] written into the FIFO as fast
   as ``cat`` takes it, with ``--output-backlog 4096`` so that every byte must be relayed, and
   the FIFO kept open until the client has every byte (so all of it is relayed live). The client
   hashes what it receives and compares with the writer's hash. MB/s = bytes / (first write ->
   last byte received). VmRSS of the agent (``/proc/PID/status``) is sampled every 20 ms.
   Then the same burst with the default ``--output-backlog`` (32 MiB) and the FIFO closed right
   after writing (snapshots instead of every byte, by design), and a 30 MiB burst from a shell
   that exits at once (the unread rest goes out when the task ends), both with RSS.
c. paced (``--only paced``): 256 MiB written at ``--paced-mbps`` (default 32 MB/s): exactness,
   RSS and the agent's CPU share while it keeps up.
d. idle CPU (``--only idle``): one session with nothing in the background, then 200 [50]
   background shells that sleep; ``utime + stime`` of the agent process (``/proc/PID/stat``)
   over 10 s [5 s] each, after a 5 s settle period.
e. chatty (``--only chatty``): one shell printing 2,000 numbered lines a second for 10 s [5 s],
   after 2,000 lines that fill a plain v1 client's window (so each of its updates resends all
   64 KiB of it): the agent's CPU share, bytes on its stdout, updates, and write -> whole line.

``--client plain-v1`` makes the client a plain ACP v1 client (exactly acpx's capabilities:
``fs`` and ``terminal``, no extension): a background shell is then its Bash tool call, whose
content the agent replaces with the shell's latest output (at most 64 KiB) as lines arrive. A
line counts as received when the first update whose content holds it whole was read. Only the
latency and chatty phases apply (the burst phases measure every byte relayed, which this form
does not relay by design).

Usage: ``.venv/bin/python scripts/bench_output.py [--quick] [--portable] [--client {v2,plain-v1}]
[--json PATH]`` (``--portable``: the agent in the portable mode, as it runs on macOS). Needs
the bundled CLI (``uv sync --frozen``); takes about 2.5 minutes (``--quick``: about 1).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench_client import (
    AGENT,
    MIB,
    OURS,
    PLAIN_V1,
    PORTABLE,
    AgentCommand,
    BenchAgent,
    JsonObject,
    LineArrivals,
    RssSampler,
    children,
    cpu_ticks,
    latencies_ms,
    numbered_line,
    open_fifo_for_writing,
    percentile,
)
from claude_bg_acp.acp.client import AgentError
from claude_bg_acp.scripted_model import ScriptedModel, offline_env, serve_in_thread


def block_pattern(index: int, seed: bytes) -> bytes:
    """Block ``index`` of the burst: every byte value occurs, and no two blocks are equal."""
    return index.to_bytes(8, "little") + seed[8:]


@dataclass
class Row:
    what: str
    value: str
    target: str = ""
    typescript: str = ""


@dataclass
class Bench:
    model: ScriptedModel
    root: Path
    quick: bool
    command: AgentCommand = OURS
    client: str = "v2"
    """``v2``, or ``plain-v1`` (see the module docstring)."""
    results: JsonObject = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    _runs: Iterator[int] = field(default_factory=itertools.count)

    @contextlib.contextmanager
    def agent(self, *args: str) -> Iterator[tuple[BenchAgent, str, Path]]:
        """A fresh agent with a v2 session in a fresh working directory."""
        run = next(self._runs)
        folder = self.root / f"run{run}"
        workdir = folder / "work"
        workdir.mkdir(parents=True)
        env = offline_env(self.model.base_url, folder / "offline")
        with (folder / "agent.stderr").open("wb") as stderr:
            agent = BenchAgent(env, workdir, list(args), stderr, self.command)
            try:
                if self.client == "plain-v1":
                    agent.initialize_v1(PLAIN_V1)
                else:
                    agent.initialize_v2()
                session_id = agent.new_session(workdir)
                yield agent, session_id, workdir
            finally:
                agent.shut_down()
                shutil.rmtree(folder / "offline" / "tmp", ignore_errors=True)  # the big files

    def start_cat(self, agent: BenchAgent, session_id: str, workdir: Path, name: str) -> tuple[str, int]:
        """Start ``cat FIFO`` as a background shell and wait for the prompt's turn to end; return
        the shell's terminal id (or tool call id) and the FIFO's fd."""
        fifo = workdir / name
        os.mkfifo(fifo, 0o600)
        prompt = agent.prompt(
            session_id, f"[scenario:bg_from_prompt] Relay this. <command>cat {name}</command>"
        )
        (shell,) = agent.wait_shells(1)
        fd = open_fifo_for_writing(fifo)
        agent.wait_turn(prompt)
        return shell, fd

    # -- a. latency ----------------------------------------------------------------------------

    def latency(self) -> None:
        count, quiet_count, interval, quiet_gap = (200, 3, 0.01, 4.0) if self.quick else (1000, 8, 0.01, 4.0)
        written: dict[tuple[int, int], int] = {}
        lines = LineArrivals()
        with self.agent() as (agent, session_id, workdir):
            agent.on_chunk = lines
            terminal_id, fd = self.start_cat(agent, session_id, workdir, "latency.fifo")
            seq = 0

            def write_line() -> None:
                nonlocal seq
                line = numbered_line(0, seq)
                written[(0, seq)] = time.monotonic_ns()
                os.write(fd, line)
                seq += 1

            warmup = 20
            for _ in range(warmup):
                write_line()
                time.sleep(interval)
            busy_from = seq
            next_at = time.monotonic()
            for _ in range(count):
                next_at += interval
                write_line()
                time.sleep(max(0.0, next_at - time.monotonic()))
            busy_to = seq
            for _ in range(quiet_count):
                time.sleep(quiet_gap)
                write_line()
            with contextlib.suppress(AgentError):  # else the last line is whole only at the exit
                agent.wait_until(lambda: len(lines.arrived) >= seq, quiet_gap, "every line")
            os.close(fd)
            exit_status = agent.wait_shell_end(terminal_id)
            updates = agent.updates_of(terminal_id)
        if len(lines.arrived) < seq:
            raise AgentError(f"{seq - len(lines.arrived)} of {seq} lines never arrived")

        def ms(seqs: range) -> list[float]:
            return [(lines.arrived[(0, s)] - written[(0, s)]) / 1e6 for s in seqs]

        busy = ms(range(busy_from, busy_to))
        quiet = ms(range(busy_to, seq))
        before_pause = ms(range(busy_to - 1, seq))  # each followed by seconds of silence
        self.results["latency"] = {
            "lines": count,
            "interval_ms": interval * 1000,
            "p50_ms": percentile(busy, 0.5),
            "p90_ms": percentile(busy, 0.9),
            "p95_ms": percentile(busy, 0.95),
            "p99_ms": percentile(busy, 0.99),
            "max_ms": max(busy),
            "quiet_lines": quiet_count,
            "quiet_gap_s": quiet_gap,
            "quiet_p50_ms": percentile(quiet, 0.5),
            "quiet_max_ms": max(quiet),
            "before_pause_max_ms": max(before_pause),
            "out_of_order": lines.out_of_order,
            "foreign_lines": lines.foreign,
            "chunks": updates,
            "exit_status": exit_status,
            "client": self.client,
        }
        self.rows += [
            Row(
                "every line once, in order, nothing else",
                "yes"
                if not (lines.out_of_order or lines.foreign)
                else f"NO: {lines.out_of_order} out of order, {lines.foreign} other lines",
            ),
            Row(
                f"write -> whole line at the client, p50 ({count} lines {interval * 1000:.0f} ms apart)",
                f"{percentile(busy, 0.5):.2f} ms",
                "<= 5 ms",
                "275 ms",
            ),
            Row("write -> whole line, p90", f"{percentile(busy, 0.9):.2f} ms", "", "474 ms"),
            Row("write -> whole line, p95", f"{percentile(busy, 0.95):.2f} ms", "<= 25 ms", ""),
            Row(
                "write -> whole line, p99 / max",
                f"{percentile(busy, 0.99):.2f} / {max(busy):.2f} ms",
                "",
                "max 604 ms",
            ),
            Row(
                f"a line followed by {quiet_gap:.0f} s of silence, whole after (max of {len(before_pause)})",
                f"{max(before_pause):.2f} ms",
                "",
                "",
            ),
            Row(
                f"first line after {quiet_gap:.0f} s of silence, p50 / max ({quiet_count} lines)",
                f"{percentile(quiet, 0.5):.2f} / {max(quiet):.2f} ms",
                "",
                "",
            ),
        ]

    # -- b. throughput and memory --------------------------------------------------------------

    def burst(
        self, total: int, backlog_mib: int | None, *, paced_mbps: float | None = None, hold_open: bool = False
    ) -> JsonObject:
        """Write ``total`` bytes into ``cat``'s FIFO; return what the client got and when.

        ``hold_open``: close the FIFO (which ends the shell) only once the client has every
        byte, so that all of it is relayed live; else close it right after writing.
        """
        block = MIB
        seed = os.urandom(block)
        expected = hashlib.sha256()
        for index in range(total // block):
            expected.update(block_pattern(index, seed))
        got = hashlib.sha256()
        marks: dict[str, int] = {"first": 0, "last": 0, "bytes": 0, "snapshots": 0, "largest": 0}

        def on_chunk(received: int, _terminal: str, data: bytes, replaces: bool) -> None:
            if replaces:
                marks["snapshots"] += 1
                return
            got.update(data)
            marks["bytes"] += len(data)
            marks["largest"] = max(marks["largest"], len(data))
            marks["first"] = marks["first"] or received
            marks["last"] = received

        args = ["--output-backlog", str(backlog_mib)] if backlog_mib is not None else []
        with self.agent(*args) as (agent, session_id, workdir):
            agent.on_chunk = on_chunk
            terminal_id, fd = self.start_cat(agent, session_id, workdir, "burst.fifo")
            time.sleep(0.5)
            sampler = RssSampler(agent.pid)
            cpu_before = cpu_ticks(agent.pid)
            client_before = time.process_time()
            start = time.monotonic_ns()
            next_at = time.monotonic()
            for index in range(total // block):
                data = memoryview(block_pattern(index, seed))
                while data:
                    data = data[os.write(fd, data) :]
                if paced_mbps:
                    next_at += block / (paced_mbps * 1e6)
                    time.sleep(max(0.0, next_at - time.monotonic()))
            written_at = time.monotonic_ns()
            if hold_open:
                agent.wait_until(lambda: marks["bytes"] >= total, 600, "every byte")
            os.close(fd)
            exit_status = agent.wait_exit(terminal_id, timeout=600)
            growth = sampler.stop()
            cpu = (cpu_ticks(agent.pid) - cpu_before) / os.sysconf("SC_CLK_TCK")
            client_cpu = time.process_time() - client_before
            view = agent.terminals[terminal_id]
        relay_s = (marks["last"] - start) / 1e9
        return {
            "bytes_written": total,
            "bytes_received": marks["bytes"],
            "chunks": view.chunks,
            "largest_chunk": marks["largest"],
            "snapshots": marks["snapshots"],
            "exact": got.digest() == expected.digest() and marks["bytes"] == total,
            "write_s": (written_at - start) / 1e9,
            "relay_s": relay_s,
            "mb_per_s": marks["bytes"] / relay_s / 1e6 if relay_s > 0 else 0.0,
            "rss_baseline_mib": sampler.baseline / 1024,
            "rss_peak_mib": sampler.peak / 1024,
            "rss_growth_mib": growth,
            "agent_cpu_s": cpu,
            "client_cpu_s": client_cpu,
            "exit_status": exit_status,
            "backlog_mib": backlog_mib,
            "paced_mbps": paced_mbps,
            "hold_open": hold_open,
        }

    def throughput(self) -> None:
        total = (256 if self.quick else 1024) * MIB
        size = f"{total // MIB} MiB"
        live = self.results["burst_live"] = self.burst(total, 4096, hold_open=True)
        self.rows += [
            Row(
                f"relay throughput, {size} burst, every byte (--output-backlog 4096)",
                f"{live['mb_per_s']:.0f} MB/s ({'byte-exact' if live['exact'] else 'NOT EXACT'})",
                ">= 100 MB/s",
                "last 1 MiB of 3 MB",
            ),
            Row(
                f"  agent RSS growth while relaying those {size}",
                f"{live['rss_growth_mib']:.1f} MiB (peak {live['rss_peak_mib']:.0f} MiB)",
                "<= 30 MB",
                "~100 MiB node process",
            ),
            Row(
                "  agent CPU for that burst",
                f"{live['agent_cpu_s']:.1f} s ({live['bytes_written'] / live['agent_cpu_s'] / 1e6:.0f} MB"
                " per CPU second)",
                "",
                "",
            ),
        ]
        default = self.results["burst_default_backlog"] = self.burst(total, None)
        self.rows += [
            Row(
                f"{size} burst, default --output-backlog (32 MiB): relayed",
                f"{default['bytes_received'] / MIB:.0f} MiB + {default['snapshots']} snapshot(s)",
                "",
                "",
            ),
            Row("  agent RSS growth", f"{default['rss_growth_mib']:.1f} MiB", "", ""),
        ]
        # A shell that writes a lot and exits at once: the rest of its file (up to the backlog
        # limit) goes out when the task ends.
        short = 30 * MIB
        ended = self.results["burst_ends_early"] = self.burst(short, None)
        self.rows += [
            Row(
                f"{short // MIB} MiB written by a shell that exits at once (default backlog)",
                f"{ended['mb_per_s']:.0f} MB/s ({'byte-exact' if ended['exact'] else 'NOT EXACT'})",
                "",
                "",
            ),
            Row(
                "  largest single terminal_output_chunk / agent RSS growth",
                f"{ended['largest_chunk'] / MIB:.1f} MiB / {ended['rss_growth_mib']:.1f} MiB",
                "",
                "",
            ),
        ]

    def paced(self, mbps: float) -> None:
        total = 256 * MIB
        paced = self.results["paced"] = self.burst(total, None, paced_mbps=mbps)
        self.rows += [
            Row(
                f"{total // MIB} MiB written at {mbps:.0f} MB/s: relayed exactly / agent RSS growth",
                f"{'yes' if paced['exact'] else 'NO'} / {paced['rss_growth_mib']:.1f} MiB",
                "",
                "",
            ),
            Row(
                "  agent CPU meanwhile",
                f"{paced['agent_cpu_s']:.1f} s ({100 * paced['agent_cpu_s'] / paced['write_s']:.0f} % of"
                " a core)",
                "",
                "",
            ),
        ]

    # -- e. chatty ------------------------------------------------------------------------------

    def chatty(self) -> None:
        rate, seconds, prefill = (2000, 5.0 if self.quick else 10.0, 2000)
        written: dict[tuple[int, int], int] = {}
        lines = LineArrivals()
        ticks = os.sysconf("SC_CLK_TCK")
        with self.agent() as (agent, session_id, workdir):
            agent.on_chunk = lines
            shell, fd = self.start_cat(agent, session_id, workdir, "chatty.fifo")
            # Fill the window first: a plain v1 client's every update then carries all of it.
            os.write(fd, b"".join(numbered_line(1, seq) for seq in range(prefill)))
            agent.wait_until(lambda: (1, prefill - 1) in lines.arrived, 60, "the window filled")
            time.sleep(0.5)
            updates_before, bytes_before = agent.updates_of(shell), agent.bytes_read
            cpu_before = cpu_ticks(agent.pid)
            started = time.monotonic()
            next_at = started
            for seq in range(int(rate * seconds)):
                next_at += 1 / rate
                written[(0, seq)] = time.monotonic_ns()
                os.write(fd, numbered_line(0, seq))
                time.sleep(max(0.0, next_at - time.monotonic()))
            last = (0, len(written) - 1)
            with contextlib.suppress(AgentError):
                agent.wait_until(lambda: last in lines.arrived, 30, "the last line")
            elapsed = time.monotonic() - started
            cpu = (cpu_ticks(agent.pid) - cpu_before) / ticks
            updates = agent.updates_of(shell) - updates_before
            stdout_bytes = agent.bytes_read - bytes_before
            os.close(fd)
            agent.wait_shell_end(shell)
        busy = latencies_ms(written, lines.arrived)
        missing = len(written) - len(busy)
        self.results["chatty"] = {
            "client": self.client,
            "lines_per_s": rate,
            "seconds": elapsed,
            "lines": len(written),
            "lines_missing": missing,
            "agent_cpu_s": cpu,
            "updates": updates,
            "stdout_bytes": stdout_bytes,
            "p50_ms": percentile(busy, 0.5) if busy else None,
            "p95_ms": percentile(busy, 0.95) if busy else None,
        }
        self.rows += [
            Row(
                f"one shell at {rate:,} lines/s for {seconds:.0f} s ({self.client}): agent CPU",
                f"{cpu:.1f} s ({100 * cpu / elapsed:.0f} % of a core)",
                "",
                "",
            ),
            Row(
                "  updates carrying its output / bytes on stdout",
                f"{updates:,} ({updates / elapsed:.0f}/s) / {stdout_bytes / MIB:.0f} MiB "
                f"({stdout_bytes / elapsed / MIB:.1f} MiB/s)",
                "",
                "",
            ),
            Row(
                "  write -> whole line at the client, p50 / p95",
                f"{percentile(busy, 0.5):.2f} / {percentile(busy, 0.95):.2f} ms"
                + (f", {missing} lines never shown whole" if missing else ""),
                "",
                "",
            ),
        ]

    # -- d. idle CPU ---------------------------------------------------------------------------

    def idle(self) -> None:
        shells, seconds, settle = (50, 5.0, 5.0) if self.quick else (200, 10.0, 5.0)
        # Distinct commands; sleep long enough for the phase, short enough not to linger.
        commands = "".join(f"<command>sleep {120 + i / 1000:.3f}</command>" for i in range(shells))
        ticks = os.sysconf("SC_CLK_TCK")
        with self.agent() as (agent, session_id, _workdir):
            # First the same session with nothing in the background, for comparison.
            agent.result(agent.prompt(session_id, "[scenario:bg_from_prompt] Nothing yet."), 60)
            agent.wait_idle()
            time.sleep(settle)
            before = cpu_ticks(agent.pid)
            time.sleep(seconds)
            baseline = (cpu_ticks(agent.pid) - before) / ticks
            launched = time.monotonic()
            agent.prompt(session_id, f"Start these. {commands}")
            agent.wait_until(lambda: len(agent.background or []) >= shells, 180, f"{shells} listed shells")
            listed_s = time.monotonic() - launched
            agent.wait_idle()
            time.sleep(settle)
            cli = children(agent.pid)
            before = cpu_ticks(agent.pid)
            cli_before = sum(cpu_ticks(pid) for pid in cli)
            stdout_before = agent.bytes_read
            time.sleep(seconds)
            used = (cpu_ticks(agent.pid) - before) / ticks
            cli_used = (sum(cpu_ticks(pid) for pid in cli) - cli_before) / ticks
            quiet_bytes = agent.bytes_read - stdout_before
            listed = len(agent.background or [])
        self.results["idle"] = {
            "shells": shells,
            "listed": listed,
            "seconds": seconds,
            "settle_s": settle,
            "agent_cpu_s": used,
            "agent_cpu_nothing_running_s": baseline,
            "cli_cpu_s": cli_used,
            "stdout_bytes": quiet_bytes,
            "seconds_to_list_all": listed_s,
        }
        self.rows += [
            Row(
                f"idle CPU of the agent, {listed} sleeping background shells, {seconds:.0f} s",
                f"{used:.2f} s ({100 * used / seconds:.1f} % of a core)",
                "about 0",
                "",
            ),
            Row(
                f"  same session before, nothing in the background, {seconds:.0f} s",
                f"{baseline:.2f} s ({100 * baseline / seconds:.1f} % of a core)",
                "",
                "",
            ),
            Row(
                "  (for scale) Claude Code CLI process meanwhile",
                f"{cli_used:.2f} s ({100 * cli_used / seconds:.1f} % of a core)",
                "",
                "",
            ),
            Row(f"  time from prompt to all {shells} shells listed", f"{listed_s:.1f} s", "", ""),
        ]


def print_table(rows: list[Row]) -> None:
    headers = Row("measure", "measured", "target", "TS adapter 0.101.0")
    table = [headers, *rows]
    widths = [max(len(getattr(r, name)) for r in table) for name in ("what", "value", "target")]
    for row in table:
        print(
            f"{row.what:<{widths[0]}}  {row.value:<{widths[1]}}  {row.target:<{widths[2]}}  "
            f"{row.typescript}".rstrip()
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter runs")
    parser.add_argument(
        "--paced-mbps", type=float, default=32.0, help="write rate of the paced run (default 32 MB/s)"
    )
    parser.add_argument(
        "--only",
        choices=["latency", "throughput", "paced", "idle", "chatty"],
        action="append",
        help="run only these phases (repeatable)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--dir", type=Path, help="where to put the runs' files (default: a temp dir)")
    parser.add_argument("--portable", action="store_true", help="the agent in the portable mode, as on macOS")
    parser.add_argument(
        "--client",
        choices=["v2", "plain-v1"],
        default="v2",
        help="the client: v2 (terminals), or a plain v1 client (a shell is a tool call)",
    )
    args = parser.parse_args(argv)
    if not AGENT.exists():
        parser.error(f"{AGENT} is not installed; run `uv sync --frozen` first")
    every = ["latency", "throughput", "paced", "idle"] if args.client == "v2" else ["latency", "chatty"]
    phases = args.only or every
    if args.client == "plain-v1" and not set(phases) <= {"latency", "chatty"}:
        parser.error("a plain v1 client takes only the latency and chatty phases")
    root = Path(tempfile.mkdtemp(prefix="bench-output-", dir=args.dir))
    agent = PORTABLE if args.portable else OURS
    print(
        f"{agent.name} output benchmark: {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}, files in {root}",
        flush=True,
    )
    try:
        with serve_in_thread(scenario="text") as model:
            bench = Bench(model, root, args.quick, agent, args.client)
            for phase in phases:
                began = time.monotonic()
                print(f"... {phase}", end="", flush=True)
                if phase == "paced":
                    bench.paced(args.paced_mbps)
                else:
                    getattr(bench, phase)()
                print(f" done in {time.monotonic() - began:.0f} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print()
    print_table(bench.rows)
    if args.json:
        args.json.write_text(json.dumps(bench.results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
