"""Claude Code, and all it started, told to stop when the agent is gone, however it went.

On Linux every Claude Code is started with a parent-death signal (``options.tied_to_us``), so a
SIGKILLed agent, which runs no cleanup, takes it along; on SIGTERM Claude Code stops its own
tasks. Elsewhere on POSIX (``platform``) nothing tells Claude Code. And on either, a process a
task started that left the task's process group and session (``setsid``) and closed every
descriptor is no task of Claude Code's any more: its stop does not reach it.

So on every POSIX host the agent starts one small watcher process, in a session of its own,
whose stdin is a pipe that only the agent writes to. The runner tells it each Claude Code it
starts (``+pid``) and each one it has reaped (``-pid``). However the agent goes, the pipe closes
with it: the watcher sends SIGTERM to the Claude Codes still listed and, on Linux, to every
process that carries this agent's mark (``MARK``) in its environment, as everything a Claude
Code starts does (its runner's ``owner`` token begins with it), then SIGKILL to those left
after ``GRACE``, and exits. When the agent ends as it should, it has stopped all of that already:
the watcher finds nothing and simply exits. A process that dropped the variable from its
environment (``env -i``) is not found.

On Windows nothing is done: a Claude Code whose agent died sees its input close, and exits once
its tasks have ended.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import uuid

from claude_bg_acp.claude.orphans import OWNER_ENV
from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

GRACE = 1.0
"""Seconds a Claude Code has after SIGTERM, once the agent is gone, to stop its tasks and exit."""

MARK = uuid.uuid4().hex
"""This agent's mark: the start of every owner token it gives."""

WATCHER = f"""
import os, signal, sys, time
needle = b"\\0" + sys.argv[1].encode() if len(sys.argv) > 1 else None
live = set()
for line in sys.stdin:
    (live.add if line[0] == "+" else live.discard)(int(line[1:]))

def marked():
    found = set()
    for name in os.listdir("/proc") if needle and os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as environ:
                if needle in b"\\0" + environ.read():
                    found.add(int(name))
        except OSError:
            pass
    return found

def send(signum):
    for pid in list(live):
        try:
            os.kill(pid, signum)
        except OSError:
            live.discard(pid)

live |= marked()
send(signal.SIGTERM)
deadline = time.monotonic() + {GRACE}
while live and time.monotonic() < deadline:
    time.sleep(0.05)
    send(0)
live |= marked()
send(signal.SIGKILL)
"""
"""The watcher's program (``python -c``): standard library only, nothing of the agent's. Its
argument, on Linux only (``/proc``), is the variable, up to the agent's part of the token, that
marks a process of this agent's."""

_watcher: subprocess.Popen[bytes] | None = None


def owner() -> str:
    """A new owner token for a runner: what its Claude Code and everything that starts carry in
    ``OWNER_ENV``, beginning with this agent's ``MARK``."""
    return f"{MARK}-{uuid.uuid4().hex}"


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
    if not host().posix:
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
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    WATCHER,
                    *([f"{OWNER_ENV}={MARK}-"] if host().linux else []),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,  # a signal to the agent's group is not one to the watcher
            )
        except OSError:
            log.warning("no lifeline watcher: a killed agent may leave Claude Code running", exc_info=True)
    return _watcher
