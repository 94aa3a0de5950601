"""Claude Code told to stop when the agent is gone, where Linux's parent-death signal is not.

On Linux every Claude Code is started with a parent-death signal (``options.tied_to_us``), so a
SIGKILLed agent, which runs no cleanup, takes it along. Elsewhere on POSIX (``platform``) the
agent starts one small watcher process, in a session of its own, whose stdin is a pipe that only
the agent writes to. The runner tells it each Claude Code it starts (``+pid``) and each one it
has reaped (``-pid``). However the agent goes, the pipe closes with it: the watcher sends SIGTERM
to the Claude Codes still listed (on SIGTERM Claude Code stops its own tasks), SIGKILL to those
left after ``GRACE``, and exits. When the agent ends as it should, nothing is listed any more and
the watcher simply exits.

On Windows nothing is done: a Claude Code whose agent died sees its input close, and exits once
its tasks have ended.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys

from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

GRACE = 1.0
"""Seconds a Claude Code has after SIGTERM, once the agent is gone, to stop its tasks and exit."""

WATCHER = f"""
import os, signal, sys, time
live = set()
for line in sys.stdin:
    (live.add if line[0] == "+" else live.discard)(int(line[1:]))

def send(signum):
    for pid in list(live):
        try:
            os.kill(pid, signum)
        except OSError:
            live.discard(pid)

send(signal.SIGTERM)
deadline = time.monotonic() + {GRACE}
while live and time.monotonic() < deadline:
    time.sleep(0.05)
    send(0)
send(signal.SIGKILL)
"""
"""The watcher's program (``python -c``): standard library only, nothing of the agent's."""

_watcher: subprocess.Popen[bytes] | None = None


def tie(pid: int) -> None:
    """Claude Code ``pid`` is to be stopped if the agent goes without stopping it."""
    _tell(f"+{pid}\n")


def untie(pid: int) -> None:
    """Claude Code ``pid`` has ended and was reaped: its pid may be someone else's now."""
    _tell(f"-{pid}\n")


def close() -> None:
    """The agent ends as it should: the watcher stops what is still listed (nothing, normally)
    and exits; waits for it a little."""
    global _watcher
    watcher, _watcher = _watcher, None
    if watcher is None:
        return
    assert watcher.stdin is not None
    with contextlib.suppress(OSError):
        watcher.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        watcher.wait(2 * GRACE + 1)


def _tell(line: str) -> None:
    if host().linux or not host().posix:
        return
    watcher = _start()
    if watcher is None or watcher.stdin is None:
        return
    try:
        watcher.stdin.write(line.encode())
        watcher.stdin.flush()
    except OSError:
        log.warning("the lifeline watcher is gone: a killed agent may leave Claude Code running")


def _start() -> subprocess.Popen[bytes] | None:
    global _watcher
    if _watcher is None:
        try:
            _watcher = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,  # a signal to the agent's group is not one to the watcher
            )
        except OSError:
            log.warning("no lifeline watcher: a killed agent may leave Claude Code running", exc_info=True)
    return _watcher
