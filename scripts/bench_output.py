"""End-to-end output benchmark: real CLI, real output files, a client reading the agent's stdout.

Every phase starts the installed ``claude-bg-acp`` (the console script next to
``sys.executable``) as a subprocess with the bundled Claude Code CLI, pointed at the scripted
model on loopback (``offline_env``; no network, no API key). The client is :class:`AgentProcess`
below: one thread reads the agent's stdout line by line as fast as it comes, parses every
line, answers permission requests, and hands each ``terminal_output_chunk`` to the phase.

The background shells run a command the benchmark chooses (scenario ``bg_from_prompt``: every
``<command>...</command>`` in the prompt becomes a background Bash call). The command is
``cat FIFO``: the benchmark writes into the FIFO, ``cat`` copies into Claude Code's output file,
the agent tails that file and relays it. So the benchmark knows exactly when each byte was
written, and both ends use one clock (``CLOCK_MONOTONIC``).

Phases (each with a fresh agent; sizes with ``--quick`` in brackets):

a. latency (``--only latency``): 1000 [200] lines 10 ms apart, each stamped just before its
   ``write()`` into the FIFO and ending in ``;\n``; a line counts as received when the stdout
   line of the ``terminal_output_chunk`` carrying its ``;`` was read. (The newline is measured
   apart: the agent holds a trailing newline back until more output comes, since it could begin
   Claude Code's closing line.) Then lines written after 4 s of silence, when the tailer has
   slowed to its idle step.
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

Usage: ``.venv/bin/python scripts/bench_output.py [--quick] [--json PATH]``. Needs the bundled
CLI (``uv sync --frozen``); takes about 2.5 minutes (``--quick``: about 1). ``bench_turns.py`` imports
:class:`AgentProcess` from here.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import errno
import hashlib
import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from claude_bg_acp.scripted_model import ScriptedModel, offline_env, serve_in_thread

AGENT = Path(sys.executable).parent / "claude-bg-acp"
MIB = 1 << 20
JsonObject = dict[str, Any]
ChunkHook = Callable[[int, str, bytes], None]


# --- the client ---------------------------------------------------------------------------------


class AgentError(RuntimeError):
    pass


@dataclass
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    message: JsonObject | None = None
    received_ns: int = 0


@dataclass
class TerminalView:
    """What the client knows of one terminal."""

    fields: JsonObject = field(default_factory=dict)
    chunks: int = 0
    bytes: int = 0
    snapshots: int = 0

    @property
    def exited(self) -> bool:
        return "exitStatus" in self.fields


class AgentProcess:
    """``claude-bg-acp`` as a subprocess, and a minimal JSON-RPC client on its stdio.

    One reader thread takes every stdout line (time-stamped with ``time.monotonic_ns()`` right
    after it was read), answers ``session/request_permission`` with the first allow option, and
    keeps the latest ``state_update``, ``background`` list and terminal fields. ``on_chunk``
    (called on the reader thread) gets ``(received_ns, terminal_id, bytes)`` of every
    ``terminal_output_chunk``; ``on_line`` gets ``(received_ns, message)`` of every line.
    """

    def __init__(
        self, env: dict[str, str], cwd: Path, args: list[str] | None = None, stderr: IO[bytes] | None = None
    ) -> None:
        self.started_ns = time.monotonic_ns()
        self.proc = subprocess.Popen(
            [str(AGENT), *(args or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            bufsize=MIB,
            start_new_session=True,  # its own process group, so that cleanup reaches the CLI too
        )
        self.on_chunk: ChunkHook | None = None
        self.on_line: Callable[[int, JsonObject], None] | None = None
        self.state: JsonObject | None = None
        self.background: list[JsonObject] | None = None
        self.terminals: dict[str, TerminalView] = {}
        self.updates: list[tuple[int, JsonObject]] = []
        self.keep_updates = False
        self.permission_requests = 0
        self.stdout_bytes = 0
        self.closed = threading.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="agent-stdout", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- requests ------------------------------------------------------------------------------

    def send(self, message: JsonObject) -> None:
        data = (json.dumps(message) + "\n").encode()
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def start_request(self, method: str, params: JsonObject) -> _Pending:
        request_id = next(self._ids)
        pending = self._pending[request_id] = _Pending()
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return pending

    def finish_request(self, pending: _Pending, timeout: float = 60.0) -> Any:
        if not pending.done.wait(timeout):
            raise AgentError(f"no answer within {timeout} s")
        message = pending.message
        if message is None:
            raise AgentError("the agent exited before answering")
        if "error" in message:
            raise AgentError(f"error answer: {message['error']}")
        return message.get("result")

    def request(self, method: str, params: JsonObject, timeout: float = 60.0) -> Any:
        return self.finish_request(self.start_request(method, params), timeout)

    def initialize_v2(self) -> Any:
        return self.request(
            "initialize",
            {
                "protocolVersion": 2,
                "info": {"name": "bench", "version": "0"},
                "capabilities": {},
            },
        )

    def initialize_v1(self) -> Any:
        return self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "bench", "version": "0"},
                "clientCapabilities": {},
            },
        )

    def new_session(self, cwd: Path) -> str:
        result = self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    def prompt(self, session_id: str, text: str) -> _Pending:
        return self.start_request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    # -- waiting -------------------------------------------------------------------------------

    def wait_until(self, what: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError(f"timed out after {timeout:.0f} s waiting for {what}")
                if self.closed.is_set():
                    raise AgentError(f"the agent exited while waiting for {what}")
                self._changed.wait(min(left, 0.5))

    def wait_idle(self, timeout: float = 60.0) -> None:
        self.wait_until("idle", lambda: (self.state or {}).get("state") == "idle", timeout)

    def wait_terminals(self, count: int, timeout: float = 60.0) -> list[str]:
        self.wait_until(f"{count} terminals", lambda: len(self.terminals) >= count, timeout)
        return list(self.terminals)

    def wait_exit(self, terminal_id: str, timeout: float = 120.0) -> JsonObject:
        self.wait_until(f"exit of {terminal_id}", lambda: self.terminals[terminal_id].exited, timeout)
        return dict(self.terminals[terminal_id].fields["exitStatus"])

    # -- shutting down -------------------------------------------------------------------------

    def stop(self, grace: float = 20.0) -> None:
        """Close stdin (the agent then closes its sessions), then signal its group if need be."""
        with contextlib.suppress(OSError), self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(5)
        self._signal_group(signal.SIGKILL)  # whatever of its group outlived it
        self._reader.join(10)

    def _signal_group(self, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    # -- the reader ----------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                received = time.monotonic_ns()
                self.stdout_bytes += len(raw)
                message = json.loads(raw)
                self._dispatch(received, message)
                with self._changed:
                    self._changed.notify_all()
        finally:
            self.closed.set()
            for pending in self._pending.values():
                pending.done.set()
            with self._changed:
                self._changed.notify_all()

    def _dispatch(self, received: int, message: JsonObject) -> None:
        if self.on_line is not None:
            self.on_line(received, message)
        method = message.get("method")
        if method is None:
            pending = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if pending is not None:
                pending.message, pending.received_ns = message, received
                pending.done.set()
        elif method == "session/update":
            self._on_update(received, message["params"]["update"])
        elif method == "session/request_permission" and "id" in message:
            self.permission_requests += 1
            options = message["params"].get("options", [])
            allow = next((o for o in options if str(o.get("kind", "")).startswith("allow")), None)
            outcome = (
                {"outcome": "selected", "optionId": allow["optionId"]} if allow else {"outcome": "cancelled"}
            )
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
        elif "id" in message:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )

    def _on_update(self, received: int, update: JsonObject) -> None:
        kind = update.get("sessionUpdate")
        if self.keep_updates:
            self.updates.append((received, update))
        if kind == "terminal_output_chunk":
            terminal_id = update["terminalId"]
            data = base64.b64decode(update["data"])
            view = self.terminals.setdefault(terminal_id, TerminalView())
            view.chunks += 1
            view.bytes += len(data)
            if self.on_chunk is not None:
                self.on_chunk(received, terminal_id, data)
        elif kind == "terminal_update":
            view = self.terminals.setdefault(update["terminalId"], TerminalView())
            if "output" in update:
                view.snapshots += 1
                if self.on_chunk is not None:  # a snapshot replaces; phases count it as a break
                    self.on_chunk(received, update["terminalId"], b"")
            view.fields.update({k: v for k, v in update.items() if k != "output"})
        elif kind == "state_update":
            self.state = update
            if "background" in update:
                self.background = update["background"]


# --- measuring helpers --------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def vm_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid: int) -> int:
    """utime + stime of one process, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


class RssSampler:
    """Samples a process's VmRSS on a thread; ``baseline`` is the first sample."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.baseline = vm_rss_kib(pid)
        self.peak = self.baseline
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak = max(self.peak, vm_rss_kib(self.pid))

    def stop(self) -> float:
        """Peak growth over the baseline, in MiB."""
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, vm_rss_kib(self.pid))
        return (self.peak - self.baseline) / 1024


def open_fifo_for_writing(path: Path, timeout: float = 60.0) -> int:
    """Open ``path`` for writing once its reader (the background ``cat``) has opened it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
            continue
        os.set_blocking(fd, True)
        return fd


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
    results: JsonObject = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    _runs: Iterator[int] = field(default_factory=itertools.count)

    @contextlib.contextmanager
    def agent(self, *args: str) -> Iterator[tuple[AgentProcess, str, Path]]:
        """A fresh agent with a v2 session in a fresh working directory."""
        run = next(self._runs)
        folder = self.root / f"run{run}"
        workdir = folder / "work"
        workdir.mkdir(parents=True)
        env = offline_env(self.model.base_url, folder / "offline")
        with (folder / "agent.stderr").open("wb") as stderr:
            agent = AgentProcess(env, workdir, list(args), stderr)
            try:
                agent.initialize_v2()
                session_id = agent.new_session(workdir)
                yield agent, session_id, workdir
            finally:
                agent.stop()
                shutil.rmtree(folder / "offline" / "tmp", ignore_errors=True)  # the big files

    def start_cat(self, agent: AgentProcess, session_id: str, workdir: Path, name: str) -> tuple[str, int]:
        """Start ``cat FIFO`` as a background shell; return its terminal id and the FIFO's fd."""
        fifo = workdir / name
        os.mkfifo(fifo, 0o600)
        agent.prompt(session_id, f"[scenario:bg_from_prompt] Relay this. <command>cat {name}</command>")
        (terminal_id,) = agent.wait_terminals(1)
        return terminal_id, open_fifo_for_writing(fifo)

    # -- a. latency ----------------------------------------------------------------------------

    def latency(self) -> None:
        count, quiet_count, interval, quiet_gap = (200, 3, 0.01, 4.0) if self.quick else (1000, 8, 0.01, 4.0)
        written: dict[int, int] = {}
        arrived: dict[int, int] = {}
        newline_at: dict[int, int] = {}
        buffer = bytearray()
        last = [-1]

        def on_chunk(received: int, _terminal: str, data: bytes) -> None:
            # Each line is "SEQ xxx...;\n": ";" is its last byte of content, "\n" its end.
            buffer.extend(data)
            while True:
                semi, newline = buffer.find(b";"), buffer.find(b"\n")
                if newline != -1 and (semi == -1 or newline < semi):
                    newline_at.setdefault(last[0], received)
                    del buffer[: newline + 1]
                elif semi != -1:
                    last[0] = int(buffer[:semi].split()[0])
                    arrived[last[0]] = received
                    del buffer[: semi + 1]
                else:
                    return

        with self.agent() as (agent, session_id, workdir):
            agent.on_chunk = on_chunk
            terminal_id, fd = self.start_cat(agent, session_id, workdir, "latency.fifo")
            agent.wait_idle()
            seq = 0

            def write_line(pad: int = 40) -> None:
                nonlocal seq
                line = f"{seq:08d} ".encode() + b"x" * pad + b";\n"
                written[seq] = time.monotonic_ns()
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
            os.close(fd)
            exit_status = agent.wait_exit(terminal_id)
            view = agent.terminals[terminal_id]
        missing = [s for s in written if s not in arrived]
        if missing:
            raise AgentError(f"{len(missing)} lines never arrived (first: {missing[0]})")
        busy = [(arrived[s] - written[s]) / 1e6 for s in range(busy_from, busy_to)]
        quiet = [(arrived[s] - written[s]) / 1e6 for s in range(busy_to, seq)]
        # The newline that ends a line written just before a pause (held by the trailer gate).
        held = [(newline_at[s] - written[s]) / 1e9 for s in range(busy_to - 1, seq - 1)]
        self.results["latency"] = {
            "lines": count,
            "interval_ms": interval * 1000,
            "p50_ms": percentile(busy, 0.5),
            "p90_ms": percentile(busy, 0.9),
            "p99_ms": percentile(busy, 0.99),
            "max_ms": max(busy),
            "quiet_lines": quiet_count,
            "quiet_gap_s": quiet_gap,
            "quiet_p50_ms": percentile(quiet, 0.5),
            "quiet_max_ms": max(quiet),
            "newline_before_pause_s": held,
            "chunks": view.chunks,
            "exit_status": exit_status,
        }
        self.rows += [
            Row(
                f"write -> terminal_output_chunk, p50 ({count} lines {interval * 1000:.0f} ms apart)",
                f"{percentile(busy, 0.5):.2f} ms",
                "<= 5 ms",
                "275 ms",
            ),
            Row("write -> terminal_output_chunk, p90", f"{percentile(busy, 0.9):.2f} ms", "", "474 ms"),
            Row("write -> terminal_output_chunk, p99", f"{percentile(busy, 0.99):.2f} ms", "<= 25 ms", ""),
            Row("write -> terminal_output_chunk, max", f"{max(busy):.2f} ms", "", "604 ms"),
            Row(
                f"first line after {quiet_gap:.0f} s of silence, p50 / max ({quiet_count} lines)",
                f"{percentile(quiet, 0.5):.2f} / {max(quiet):.2f} ms",
                "",
                "",
            ),
            Row(
                "  the newline ending the line before each pause arrives after",
                f"{min(held):.2f} to {max(held):.2f} s",
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

        def on_chunk(received: int, _terminal: str, data: bytes) -> None:
            if not data:
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
            agent.wait_idle()
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
                agent.wait_until("every byte", lambda: marks["bytes"] >= total, timeout=600)
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

    # -- d. idle CPU ---------------------------------------------------------------------------

    def idle(self) -> None:
        shells, seconds, settle = (50, 5.0, 5.0) if self.quick else (200, 10.0, 5.0)
        # Distinct commands; sleep long enough for the phase, short enough not to linger.
        commands = "".join(f"<command>sleep {120 + i / 1000:.3f}</command>" for i in range(shells))
        ticks = os.sysconf("SC_CLK_TCK")
        with self.agent() as (agent, session_id, _workdir):
            # First the same session with nothing in the background, for comparison.
            agent.finish_request(agent.prompt(session_id, "[scenario:bg_from_prompt] Nothing yet."))
            agent.wait_idle()
            time.sleep(settle)
            before = cpu_ticks(agent.pid)
            time.sleep(seconds)
            baseline = (cpu_ticks(agent.pid) - before) / ticks
            launched = time.monotonic()
            agent.prompt(session_id, f"Start these. {commands}")
            agent.wait_until(
                f"{shells} listed shells", lambda: len(agent.background or []) >= shells, timeout=180
            )
            listed_s = time.monotonic() - launched
            agent.wait_idle()
            time.sleep(settle)
            cli = children(agent.pid)
            before = cpu_ticks(agent.pid)
            cli_before = sum(cpu_ticks(pid) for pid in cli)
            stdout_before = agent.stdout_bytes
            time.sleep(seconds)
            used = (cpu_ticks(agent.pid) - before) / ticks
            cli_used = (sum(cpu_ticks(pid) for pid in cli) - cli_before) / ticks
            quiet_bytes = agent.stdout_bytes - stdout_before
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
        choices=["latency", "throughput", "paced", "idle"],
        action="append",
        help="run only these phases (repeatable)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--dir", type=Path, help="where to put the runs' files (default: a temp dir)")
    args = parser.parse_args(argv)
    if not AGENT.exists():
        parser.error(f"{AGENT} is not installed; run `uv sync --frozen` first")
    phases = args.only or ["latency", "throughput", "paced", "idle"]
    root = Path(tempfile.mkdtemp(prefix="bench-output-", dir=args.dir))
    print(f"claude-bg-acp output benchmark: {os.cpu_count()} CPUs, files in {root}", flush=True)
    try:
        with serve_in_thread(scenario="text") as model:
            bench = Bench(model, root, args.quick)
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
    print()
    print_table(bench.rows)
    if args.json:
        args.json.write_text(json.dumps(bench.results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
