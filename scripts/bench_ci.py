"""CI benchmark: the whole ``.ci/run`` on a fresh clone, as CI runs it.

Method. Each round clones the repository (``git clone`` of its committed ``HEAD``: nothing
uncommitted, no ``.venv`` or ``node_modules``; the machine's uv and npm caches stay warm, as on
CI) into a temporary folder and runs its ``.ci/run`` there. The wall time is taken around the
run, its CPU (user and system, of every process it waited for) from ``wait4``'s resource usage.
Each pass's own time is the one its pytest summary line prints: the main pass's first, then
those of the passes printed after it (``=== name ===``). A round that fails is reported with its
exit status and the tail of its output; the script exits 1 then.

Nothing else should run meanwhile: the run is bound by the CPU of the machine's cores.

Usage: ``.venv/bin/python scripts/bench_ci.py [--rounds 2] [--repo .] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUMMARY = re.compile(r"^=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")
PASSED = re.compile(r"(\d+) passed")
BESIDE = re.compile(r"^=== (?P<name>\w+) ===$")


@dataclass
class Round:
    commit: str
    status: int
    wall: float
    cpu: float
    passed: int | None = None
    passes: dict[str, float] = field(default_factory=dict)
    """Seconds by pass (``main`` and those printed after it), as their summaries say."""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--json", type=Path, help="write the rounds here")
    args = parser.parse_args()
    rounds = [measure(args.repo) for _ in range(args.rounds)]
    print(table(rounds))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rounds], indent=2))
    return 0 if all(r.status == 0 for r in rounds) else 1


def measure(repo: Path) -> Round:
    with tempfile.TemporaryDirectory(prefix="bench-ci-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
        commit = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        log = Path(scratch) / "ci.log"
        began = time.monotonic()
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(clone / ".ci" / "run")], cwd=clone, stdout=out, stderr=subprocess.STDOUT
            )
            _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - began
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4 already
        text = log.read_text(errors="replace")
    measured = Round(commit, process.returncode, wall, usage.ru_utime + usage.ru_stime)
    read_passes(text, measured)
    if measured.status != 0:
        print(f"round on {commit} failed ({measured.status}):\n{text[-4000:]}", file=sys.stderr)
    return measured


def read_passes(text: str, measured: Round) -> None:
    """Each pass's seconds from its pytest summary; the main pass's count of tests passed."""
    name = "main"
    for line in text.splitlines():
        if beside := BESIDE.match(line):
            name = beside["name"]
        elif (summary := SUMMARY.match(line)) and name not in measured.passes:
            measured.passes[name] = float(summary["seconds"])
            if name == "main" and (passed := PASSED.search(summary["counts"])):
                measured.passed = int(passed.group(1))


def table(rounds: list[Round]) -> str:
    names = sorted({name for r in rounds for name in r.passes} - {"main"})
    head = ["commit", "status", "passed", "wall", "CPU (user + sys)", "main pass", *names]
    rows = [
        [
            r.commit,
            str(r.status),
            f"{r.passed:,}" if r.passed is not None else "?",
            minutes(r.wall),
            minutes(r.cpu),
            *(f"{r.passes[n]:.0f} s" if n in r.passes else "-" for n in ["main", *names]),
        ]
        for r in rounds
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s"


if __name__ == "__main__":
    sys.exit(main())
