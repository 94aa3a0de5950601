"""What a Claude Code leaves running when it exits or crashes: found and stopped, on every host.

On Linux the agent adopts those processes (``orphans``: a child subreaper and ``/proc``). Where
that is not there (``platform``: macOS and other POSIX systems, and Linux in the portable mode)
the agent relies only on how Claude Code starts commands, as seen on the bundled CLI: every
shell, foreground or background, is a child of Claude Code that leads a session and a process
group of its own (``setsid``), with its task's output file (``<session>/tasks/<task id>.output``
below the tasks root) as its stdout and stderr, which the commands it starts inherit. So once
Claude Code is gone, whatever still holds one of the session's output files open is what it
left running. ``lsof`` (part of macOS) names those processes and their process groups; each
group is stopped as a whole (SIGTERM, then SIGKILL after a grace), the agent's own group never
(a process in it, which Claude Code started without a group of its own, is stopped alone).

Such a process is not the agent's child, so its exit status is not the agent's to collect: a
group has ended once nothing of it is left but zombies (``ps``), and a task's end is the signal
after which the group holding its file had ended.

============================  ==============================================================
host                          what a Claude Code left running is stopped by
============================  ==============================================================
``linux``                     ``orphans.stop_left_by``: adopted, by the owner token
``posix``                     the process groups holding the session's output files
``windows``                   nothing: a task is stopped through Claude Code (``stop_task``)
============================  ==============================================================

What the portable way cannot see: a process that left its shell's process group and closed the
output file (a daemon that detached itself), and a shell whose output file was deleted.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass

import anyio

from claude_bg_acp.claude import orphans
from claude_bg_acp.claude.conventions import OUTPUT_SUFFIX, ExitInfo
from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

POLL = 0.02
"""Seconds between looks at whether the stopped groups have ended."""
TOOL_BOUND = 5.0
"""Seconds ``lsof`` may take (it can hang on a network file system that does not answer)."""
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
"""Where macOS keeps ``lsof`` and ``ps``, should an editor start the agent with a short PATH."""


async def stop_left_by(
    owner: str | None, tasks_root: str | None, session_id: str | None, grace: float = orphans.STOP_GRACE
) -> dict[str, ExitInfo]:
    """Stop what ``owner``'s Claude Code (of session ``session_id``) left running; how each
    task's process ended, by task id. ``None`` for all three: whatever the agent can still find."""
    if host().linux:
        return await orphans.stop_left_by(owner, tasks_root, grace)
    if not host().posix or tasks_root is None or session_id is None:
        return {}
    holders = await _holders(_output_files(os.path.join(tasks_root, session_id, "tasks")))
    if not holders:
        return {}
    log.warning("stopping %d processes Claude Code left behind", len({holder.pid for holder in holders}))
    ended = await stop({holder.target for holder in holders}, grace)
    ends: dict[str, ExitInfo] = {}
    for holder in sorted(holders, key=lambda h: not h.leader):
        exit_info = ended.get(holder.target)
        if exit_info is not None:
            ends.setdefault(holder.task_id, exit_info)
    return ends


@dataclass(frozen=True)
class Target:
    """A process group, or a single process (one in the agent's own group)."""

    id: int
    group: bool

    def signal(self, signum: int) -> None:
        with contextlib.suppress(OSError):
            (os.killpg if self.group else os.kill)(self.id, signum)

    def exists(self) -> bool:
        """Whether some process of it is there, a zombie perhaps."""
        try:
            (os.killpg if self.group else os.kill)(self.id, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass  # there, but not ours to signal
        return True


@dataclass(frozen=True)
class Holder:
    """A process that holds a task's output file open."""

    pid: int
    pgid: int
    task_id: str

    @property
    def leader(self) -> bool:
        return self.pid == self.pgid

    @property
    def target(self) -> Target:
        return Target(self.pid, False) if self.pgid == os.getpgrp() else Target(self.pgid, True)


def _output_files(folder: str) -> list[str]:
    """The session's output files (a subagent's link to its transcript is none)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    paths = (os.path.join(folder, name) for name in names if name.endswith(OUTPUT_SUFFIX))
    return [path for path in paths if os.path.isfile(path) and not os.path.islink(path)]


async def _holders(files: list[str]) -> list[Holder]:
    """Who, other than the agent, holds one of ``files`` open (``lsof``'s output for programs)."""
    lsof = _tool("lsof")
    if not files or lsof is None:
        return []
    with anyio.move_on_after(TOOL_BOUND) as bound:
        done = await anyio.run_process(
            [lsof, "-w", "-n", "-P", "-F", "pgn", "--", *files], check=False, stderr=subprocess.DEVNULL
        )
    if bound.cancelled_caught:
        log.warning(
            "lsof did not answer within %.0f s: what Claude Code left running is not stopped", TOOL_BOUND
        )
        return []
    return [h for h in parse_lsof(done.stdout.decode(errors="replace")) if h.pid != os.getpid()]


def parse_lsof(output: str) -> list[Holder]:
    """``p<pid>``, ``g<pgid>``, then ``n<name>`` for each file: one holder per process and file."""
    holders: list[Holder] = []
    pid = pgid = 0
    for line in output.splitlines():
        field, value = line[:1], line[1:]
        if field == "p":
            pid, pgid = int(value), 0
        elif field == "g":
            pgid = int(value)
        elif field == "n" and pid and value.endswith(OUTPUT_SUFFIX):
            task_id = os.path.basename(value).removesuffix(OUTPUT_SUFFIX)
            holders.append(Holder(pid, pgid or pid, task_id))
    return holders


async def stop(targets: set[Target], grace: float) -> dict[Target, ExitInfo]:
    """SIGTERM each target, SIGKILL those left after ``grace``; the signal after which each had
    ended (one that outlived both is left out)."""
    ended: dict[Target, ExitInfo] = {}
    left = set(targets)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for target in left:
            target.signal(signum)
        with anyio.move_on_after(grace):
            while left:
                await anyio.sleep(POLL)
                gone = left - await _running(left)
                ended |= dict.fromkeys(gone, ExitInfo(None, signum.name))
                left -= gone
        if not left:
            break
    return ended


async def _running(targets: set[Target]) -> set[Target]:
    """Those of ``targets`` with a process that is not a zombie."""
    there = {target for target in targets if target.exists()}
    ps = _tool("ps")
    if not there or ps is None:
        return there
    # A zombie still takes signals; it waits for its parent (init, now) to collect it, which
    # some container inits never do.
    done = await anyio.run_process([ps, "-A", "-o", "pid=", "-o", "pgid=", "-o", "stat="], check=False)
    running: set[Target] = set()
    for line in done.stdout.decode(errors="replace").split("\n"):
        fields = line.split()
        if len(fields) == 3 and fields[0].isdigit() and fields[1].isdigit() and fields[2][:1] != "Z":
            running |= {Target(int(fields[0]), False), Target(int(fields[1]), True)}
    return there & running


@functools.cache
def _tool(name: str) -> str | None:
    found = shutil.which(name) or shutil.which(name, path=SYSTEM_PATH)
    if found is None:
        log.warning("no %s on this system: what a crashed Claude Code left running is not stopped", name)
    return found
