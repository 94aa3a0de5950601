"""How long can a reader see part of ONE small write()? What grace the closing-line rule needs.

Claude Code appends its closing line (``\\n[exited with code N]\\n``, 22 bytes and more) to a
task's output file with one ``write()``. A reader that catches that write half done sees the
first part of the line and, if it released it as output, would show it. On Linux a write into
the page cache copies page by page and the file grows after each page, so a write that
straddles a page boundary can be seen in part, for as long as the writer takes between the two
pages: microseconds, unless it is descheduled right there.

Method: a writer process appends filler so that the next closing line straddles a page boundary
(10 bytes before it), then the closing line, again and again. A reader process spins on
``fstat`` and records each time the size is strictly inside a closing line, and for how long it
stays there. Both run on the machine as it is (other load included, which is what makes the
writer lose its CPU). The fraction of all closing lines that straddle a boundary in real use is
about 21 / 4096 (the line's length after its newline over the page size); this benchmark makes
every one of them straddle.

Prints the number of partial sightings and the longest, and how many lasted longer than 1, 2,
5, 10, 50 and 100 ms. The grace given to a withheld possible start of a closing line must
outlast what is seen here (``closing_line.PREFIX_GRACE``); the short grace for a lone newline
(``LINE_GRACE``) need not, because a newline released too early leaves the rest of the line
still recognised as a closing line (see ``closing_line.py``).

Usage: ``.venv/bin/python scripts/bench_grace.py [-n 20000] [--dir DIR]`` (the files go to a temp
directory on the file system of ``--dir``; Claude Code's are under ``$CLAUDE_CODE_TMPDIR`` or
``/tmp``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from multiprocessing.sharedctypes import Synchronized

from claude_bg_acp.output.closing_line import LINE_GRACE, PREFIX_GRACE

CLOSING = b"\n[exited with code 0]\n"
PAGE = 4096
THRESHOLDS_MS = (1, 2, 5, 10, 50, 100)


def write(path: str, count: int, before: Synchronized[int], done: Synchronized[int]) -> None:
    """Append ``count`` straddling closing lines; publish the size before each."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    size = 0
    try:
        for _ in range(count):
            fill = (PAGE - size % PAGE - 10) % PAGE
            os.write(fd, b"x" * fill)
            size += fill
            before.value = size
            time.sleep(0.0001)  # let the reader see the size before the line
            os.write(fd, CLOSING)
            size += len(CLOSING)
            time.sleep(0.0001)
            before.value = -1
    finally:
        done.value = 1
        os.close(fd)


def read(path: str, before: Synchronized[int], done: Synchronized[int], out: Synchronized[int]) -> None:
    """Spin on fstat; write the partial sightings (ns) to a file named after ``path``."""
    fd = os.open(path, os.O_RDONLY)
    windows: list[int] = []
    seen_for, first, longest = -2, 0, 0
    while not done.value:
        start = before.value
        if start < 0:
            continue
        size = os.fstat(fd).st_size
        if start < size < start + len(CLOSING):
            now = time.monotonic_ns()
            if seen_for != start:
                if seen_for >= 0:
                    windows.append(longest)
                seen_for, first, longest = start, now, 0
            else:
                longest = max(longest, now - first)
    if seen_for >= 0:
        windows.append(longest)
    with open(path + ".windows", "w") as report:
        report.write("\n".join(map(str, windows)))
    out.value = len(windows)
    os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--count", type=int, default=20000, help="closing lines to write")
    parser.add_argument("--dir", help="where the file goes (default: the temp directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-grace-", dir=args.dir) as tmp:
        path = os.path.join(tmp, "task.output")
        open(path, "wb").close()
        before = multiprocessing.Value("q", -1, lock=False)
        done = multiprocessing.Value("q", 0, lock=False)
        seen = multiprocessing.Value("q", 0, lock=False)
        reader = multiprocessing.Process(target=read, args=(path, before, done, seen))
        writer = multiprocessing.Process(target=write, args=(path, args.count, before, done))
        load = os.getloadavg()[0]
        reader.start()
        writer.start()
        writer.join()
        reader.join()
        with open(path + ".windows") as report:
            windows = [int(line) / 1e6 for line in report.read().split()]
    longest = max(windows, default=0.0)
    over = ", ".join(f"> {ms} ms: {sum(w > ms for w in windows)}" for ms in THRESHOLDS_MS)
    print(
        f"{args.count} closing lines straddling a page boundary, {os.cpu_count()} CPUs, "
        f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(f"seen half written: {len(windows)} times; longest {longest:.3f} ms; {over}")
    print(f"graces: lone newline {LINE_GRACE * 1000:.0f} ms, longer prefix {PREFIX_GRACE * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
