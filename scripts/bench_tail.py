"""Benchmark the output tailer with real files and a real writer process.

Measures, at the tailer level (no ACP, no JSON):

- latency: a writer process appends small lines at fixed intervals, each stamped with
  ``time.monotonic_ns()`` taken just before its ``write``; the consumer notes when the line
  arrives whole (its newline included). Also measured for lines written after a quiet spell.
- throughput: relay a large file that is already on disk, hashing every delivered byte and
  comparing with the file's hash.
- memory: relay a 1 GiB file while a writer process is still producing it; VmRSS from
  ``/proc/self/status`` is sampled every 50 ms (baseline taken before the relay starts).
- idle CPU: 200 followed files that do not change, ``resource.getrusage`` over 10 s, with the
  default watcher (inotify on Linux) and with the watchfiles fallback (its idle step on, off).

The throughput and memory runs raise ``backlog_limit`` so that every byte is relayed (the
default would, correctly, jump to a snapshot when the writer outruns the consumer).

Usage: ``python scripts/bench_tail.py [--quick] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

from claude_bg_acp.output.closing_line import MAX_TRAILER
from claude_bg_acp.output.tail import Chunk, Final, OutputTailer, Snapshot, TailerOptions
from claude_bg_acp.output.watch import WatchOptions

RELAY_ALL = TailerOptions(backlog_limit=1 << 50)

LINE_WRITER = r"""
import os, sys, time
path, count, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
for seq in range(count):
    time.sleep(interval)
    stamp = time.monotonic_ns()
    os.write(fd, b"%08d %020d\n" % (seq, stamp))
"""

BULK_WRITER = r"""
import hashlib, os, sys
path, total, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seed = os.urandom(block)
digest = hashlib.sha256()
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
written = 0
while written < total:
    data = written.to_bytes(8, "little") + seed[8:]
    os.write(fd, data)
    digest.update(data)
    written += len(data)
print(digest.hexdigest())
"""


@dataclass
class Row:
    what: str
    value: str
    note: str = ""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def vm_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def line_latencies(tailer: OutputTailer, path: Path, count: int, interval: float) -> list[float]:
    """Start a line writer; return, per line, ms from just before its write to its arrival."""
    arrivals: list[float] = []
    buffer = bytearray()
    writer = await anyio.open_process(
        [sys.executable, "-c", LINE_WRITER, str(path), str(count), str(interval)]
    )
    with anyio.fail_after(count * (interval + 1) + 30):
        while len(arrivals) < count:
            batch = await tailer.receive()
            now = time.monotonic_ns()
            for event in batch:
                if isinstance(event, Chunk):
                    buffer += event.data
            while (end := buffer.find(b"\n")) != -1:
                stamp = int(buffer[:end].split()[1])
                arrivals.append((now - stamp) / 1e6)
                del buffer[: end + 1]
    await writer.wait()
    return arrivals


@asynccontextmanager
async def open_tailer(options: TailerOptions | None = None) -> AsyncIterator[OutputTailer]:
    """A running tailer, closed on exit."""
    tailer = OutputTailer(options)
    async with anyio.create_task_group() as tg:
        await tg.start(tailer.run)
        try:
            yield tailer
        finally:
            tailer.close()


async def bench_latency(folder: Path, quick: bool) -> list[Row]:
    rows: list[Row] = []
    async with open_tailer() as tailer:
        path = folder / "latency.output"
        tailer.follow("lat", path)
        count = 200 if quick else 1000
        busy = await line_latencies(tailer, path, count, 0.01)
        rows.append(
            Row(
                f"latency, {count} lines 10 ms apart",
                f"p50 {percentile(busy, 0.5):.2f} ms, p99 {percentile(busy, 0.99):.2f} ms, "
                f"max {max(busy):.2f} ms",
                "write() -> Chunk with the whole line",
            )
        )
        quiet_lines = 3 if quick else 8
        quiet = await line_latencies(tailer, path, quiet_lines, 4.0)
        rows.append(
            Row(
                f"latency, first line after 4 s quiet ({quiet_lines} lines)",
                f"p50 {percentile(quiet, 0.5):.2f} ms, max {max(quiet):.2f} ms",
            )
        )
        tailer.forget("lat")
    return rows


def make_file(path: Path, total: int, block: int = 1 << 20) -> str:
    seed = os.urandom(block)
    digest = hashlib.sha256()
    with path.open("wb") as file:
        for offset in range(0, total, block):
            data = offset.to_bytes(8, "little") + seed[8:]
            file.write(data)
            digest.update(data)
    return digest.hexdigest()


async def relay(
    tailer: OutputTailer, key: str, total: int, writer: anyio.abc.Process | None = None
) -> tuple[str, int]:
    """Hash ``key``'s chunks up to the last few bytes, then ``drain`` (after the writer ends).

    The last bytes may be withheld as a possible closing line until the drain.
    """
    digest = hashlib.sha256()
    size = 0
    while size < total - MAX_TRAILER:
        for event in await tailer.receive():
            if isinstance(event, Snapshot):
                raise RuntimeError("unexpected snapshot: the relay fell behind")
            if isinstance(event, Chunk):
                digest.update(event.data)
                size += len(event.data)
    if writer is not None:
        await writer.wait()
    async for drained in tailer.drain(key):
        if isinstance(drained, Snapshot):
            raise RuntimeError("unexpected snapshot: the relay fell behind")
        if isinstance(drained, (Chunk, Final)):
            data = drained.data if isinstance(drained, Chunk) else drained.remaining
            digest.update(data)
            size += len(data)
    return digest.hexdigest(), size


async def bench_throughput(folder: Path, quick: bool) -> list[Row]:
    total = (256 if quick else 1024) << 20
    path = folder / "big.output"
    expected = make_file(path, total)
    async with open_tailer(RELAY_ALL) as tailer:
        start = time.perf_counter()
        tailer.follow("big", path)
        got, size = await relay(tailer, "big", total)
        elapsed = time.perf_counter() - start
    path.unlink()
    exact = "byte-exact" if (got, size) == (expected, total) else "MISMATCH"
    return [
        Row(
            f"throughput, {total >> 20} MiB file on disk",
            f"{total / elapsed / 1e6:.0f} MB/s",
            f"{exact}, consumer hashes (sha256)",
        )
    ]


async def bench_memory(folder: Path, quick: bool) -> list[Row]:
    total = (256 if quick else 1024) << 20
    path = folder / "growing.output"
    path.touch()
    peak = baseline = vm_rss_kib()
    done = False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, vm_rss_kib())
            await anyio.sleep(0.05)

    async with open_tailer(RELAY_ALL) as tailer, anyio.create_task_group() as tg:
        tg.start_soon(sample)
        tailer.follow("grow", path)
        start = time.perf_counter()
        writer = await anyio.open_process(
            [sys.executable, "-c", BULK_WRITER, str(path), str(total), str(64 * 1024)]
        )
        got, size = await relay(tailer, "grow", total, writer)
        elapsed = time.perf_counter() - start
        assert writer.stdout is not None
        expected = (await writer.stdout.receive()).decode().strip()
        done = True
    path.unlink()
    exact = "byte-exact" if (got, size) == (expected, total) else "MISMATCH"
    return [
        Row(
            f"RSS growth relaying {total >> 20} MiB as it is written",
            f"{(peak - baseline) / 1024:.1f} MiB",
            f"baseline {baseline / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB",
        ),
        Row(
            "throughput, live writer (64 KiB writes)",
            f"{total / elapsed / 1e6:.0f} MB/s",
            f"{exact}; bounded by the writer",
        ),
    ]


async def idle_cpu(folder: Path, options: TailerOptions, settle: float, seconds: float) -> float:
    """CPU seconds used over ``seconds`` by a tailer following 200 unchanging files."""
    async with open_tailer(options) as tailer, anyio.create_task_group() as tg:
        pending = set()
        for index in range(200):
            path = folder / f"idle{index}.output"
            path.write_bytes(b"some output\n" * 10 + b"$ ")
            tailer.follow(f"idle{index}", path)
            pending.add(f"idle{index}")
        while pending:  # everything read once: from here on the files do not change
            pending -= {event.key for event in await tailer.receive()}

        async def consume() -> None:
            async for _batch in tailer:
                pass

        tg.start_soon(consume)
        await anyio.sleep(settle)
        before = cpu_seconds()
        await anyio.sleep(seconds)
        used = cpu_seconds() - before
        tg.cancel_scope.cancel()
    return used


async def bench_idle(folder: Path, quick: bool) -> list[Row]:
    seconds = 5.0 if quick else 10.0
    fallback = WatchOptions(backend="watchfiles")
    idle_after = fallback.idle_after or 0.0
    rows: list[Row] = []
    for label, options, settle in (
        ("inotify (the default on Linux)", TailerOptions(), 1.0),
        (
            f"watchfiles fallback, steady (idle step {fallback.idle_step_ms} ms)",
            TailerOptions(watch=fallback),
            idle_after + 1.0,
        ),
        (
            "watchfiles fallback, idle step switched off (1 ms step)",
            TailerOptions(watch=WatchOptions(backend="watchfiles", idle_after=None)),
            1.0,
        ),
    ):
        sub = folder / f"idle-{len(rows)}"
        sub.mkdir()
        used = await idle_cpu(sub, options, settle, seconds)
        rows.append(
            Row(
                f"idle CPU, 200 files, {seconds:.0f} s, {label}",
                f"{used:.3f} s ({100 * used / seconds:.2f} % of a core)",
            )
        )
    return rows


def print_table(rows: list[Row]) -> None:
    width = max(len(row.what) for row in rows)
    value_width = max(len(row.value) for row in rows)
    for row in rows:
        print(f"{row.what:<{width}}  {row.value:<{value_width}}  {row.note}")


async def main(folder: Path, quick: bool) -> None:
    rows: list[Row] = []
    for bench in (bench_latency, bench_throughput, bench_memory, bench_idle):
        rows += await bench(folder, quick)
        print(f"... {bench.__name__} done", file=sys.stderr)
    print_table(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter runs")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"files in {tmp}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
        subprocess.run(["uname", "-sr"], check=False)
        anyio.run(main, Path(tmp), args.quick)
