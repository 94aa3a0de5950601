"""Find processes by a marker in their environment, to prove that none outlives the agent.

Every process the agent starts (Claude Code, and the shells Claude Code starts) inherits the
agent's environment, so a unique value in it (the test's ``CLAUDE_CODE_TMPDIR``) names them all,
whatever process group or session they moved to.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def processes_with(marker: str) -> dict[int, str]:
    """Live processes whose environment contains ``marker``: pid -> command line."""
    needle = marker.encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (waiting for a parent, or for an init that never reaps) has
    ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def survivors(marker: str, grace: float = 5.0) -> dict[int, str]:
    """What still runs after ``grace`` seconds; those are killed so they leak no further."""
    deadline = time.monotonic() + grace
    found = processes_with(marker)
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = processes_with(marker)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found
