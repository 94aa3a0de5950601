"""Startup benchmark: how soon a freshly spawned ``claude-bg-acp`` answers an editor.

Spawns the installed console script (``claude-bg-acp`` next to ``sys.executable``) N times for
each protocol version (v1 and v2 ``initialize`` requests, alternating), and measures on one
monotonic clock:

- process start -> ``initialize`` response: from just before ``Popen`` (the request is written
  right after it, so it waits in the pipe while Python starts) to the moment the response line
  is read from the agent's stdout;
- ``session/new`` request -> response, sent as soon as ``initialize`` was answered (the first
  session pays for whatever of the Claude Agent SDK import the background pre-warm has not
  finished yet), and process start -> ``session/new`` response.

Each agent then gets EOF on stdin and must exit; its Claude Code CLI runs offline against the
scripted model on loopback (``offline_env``), so nothing leaves the machine and no key is
needed. Prints p50/p90/max in ms. Target: ``initialize`` <= 300 ms.

Two bytecode situations are measured, because Python startup depends on them:

- ``no-pyc``: the environment as it is. With ``PYTHONDONTWRITEBYTECODE=1`` and a virtualenv
  installed without compiled bytecode (``uv sync`` does not compile by default), every spawn
  compiles pydantic, anyio and the agent from source.
- ``pyc``: a bytecode cache as any normal install has after its first run (pip compiles at
  install time; otherwise Python writes ``__pycache__`` on first import). To leave the shared
  virtualenv untouched, the cache goes to a temporary ``PYTHONPYCACHEPREFIX``, filled by one
  unmeasured spawn.

Usage: ``.venv/bin/python scripts/bench_startup.py [-n 20] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_bg_acp.scripted_model import offline_env, serve_in_thread

AGENT = Path(sys.executable).parent / "claude-bg-acp"
TARGET_INITIALIZE_MS = 300.0
INITIALIZE: dict[int, dict[str, Any]] = {
    1: {
        "protocolVersion": 1,
        "clientInfo": {"name": "bench-startup", "version": "0"},
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
    },
    2: {"protocolVersion": 2, "info": {"name": "bench-startup", "version": "0"}, "capabilities": {}},
}


class LineReader:
    """Reads whole lines from a pipe with a deadline (no thread, no blocking forever)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def line(self, timeout: float) -> tuple[dict[str, Any], int]:
        """The next line as JSON and the ``monotonic_ns`` at which it was complete."""
        deadline = time.monotonic() + timeout
        while (end := self._buffer.find(b"\n")) == -1:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                raise TimeoutError(f"no line from the agent within {timeout} s")
            data = os.read(self._fd, 65536)
            if not data:
                raise EOFError("the agent closed stdout")
            self._buffer += data
        received = time.monotonic_ns()
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return json.loads(line), received


@dataclass
class Sample:
    version: int
    initialize_ms: float
    new_session_ms: float
    start_to_session_ms: float
    exit_ms: float


def spawn(env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """The agent, in a process group of its own (so that whatever it leaves can be killed)."""
    return subprocess.Popen(
        [str(AGENT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


def one_run(version: int, env: dict[str, str], cwd: Path) -> Sample:
    start = time.monotonic_ns()
    proc = spawn(env, cwd)
    assert proc.stdin is not None and proc.stdout is not None
    reader = LineReader(proc.stdout.fileno())

    def call(request_id: int, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
        assert proc.stdin is not None
        sent = time.monotonic_ns()
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
            + b"\n"
        )
        proc.stdin.flush()
        while True:
            message, received = reader.line(30)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return message["result"], sent, received

    try:
        answer, _, initialized = call(0, "initialize", INITIALIZE[version])
        if answer.get("protocolVersion") != version:
            raise RuntimeError(f"asked for v{version}, got {answer.get('protocolVersion')}")
        _, asked, created = call(1, "session/new", {"cwd": str(cwd), "mcpServers": []})
        proc.stdin.close()
        closed = time.monotonic_ns()
        proc.wait(30)
        exited = time.monotonic_ns()
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything of its group that outlived it
    return Sample(
        version=version,
        initialize_ms=(initialized - start) / 1e6,
        new_session_ms=(created - asked) / 1e6,
        start_to_session_ms=(created - start) / 1e6,
        exit_ms=(exited - closed) / 1e6,
    )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def stats(values: list[float]) -> str:
    return f"{percentile(values, 0.5):7.0f}  {percentile(values, 0.9):7.0f}  {max(values):7.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=20, help="spawns per protocol version")
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
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
                one_run(2, env, cwd)  # fills the cache; not measured
            else:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
                env.pop("PYTHONPYCACHEPREFIX", None)
            samples = results[mode] = []
            for run in range(args.runs):
                for version in (1, 2) if run % 2 == 0 else (2, 1):
                    samples.append(one_run(version, env, cwd))
                print(f"\r{mode}: {len(samples)}/{2 * args.runs} spawns", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
    print(
        f"claude-bg-acp startup, {args.runs} spawns per version and mode, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} (ms)"
    )
    print(f"{'measure':<52}  {'p50':>7}  {'p90':>7}  {'max':>7}")
    for mode, samples in results.items():
        for version in (1, 2):
            mine = [s.initialize_ms for s in samples if s.version == version]
            print(f"{f'[{mode}] v{version}: process start -> initialize response':<52}  {stats(mine)}")
        print(
            f"{f'[{mode}] session/new request -> response (1st session)':<52}  "
            f"{stats([s.new_session_ms for s in samples])}"
        )
        print(
            f"{f'[{mode}] process start -> session/new response':<52}  "
            f"{stats([s.start_to_session_ms for s in samples])}"
        )
        print(f"{f'[{mode}] stdin closed -> process exited':<52}  {stats([s.exit_ms for s in samples])}")
    for mode, samples in results.items():
        p50 = percentile([s.initialize_ms for s in samples], 0.5)
        verdict = "met" if p50 <= TARGET_INITIALIZE_MS else "MISSED"
        print(
            f"[{mode}] target initialize <= {TARGET_INITIALIZE_MS:.0f} ms (p50, both versions): "
            f"{p50:.0f} ms, {verdict}"
        )
    print("TypeScript adapter 0.101.0: spawn -> initialize response p50 740 ms")
    if args.json:
        dump = {mode: [s.__dict__ for s in samples] for mode, samples in results.items()}
        args.json.write_text(json.dumps(dump, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
