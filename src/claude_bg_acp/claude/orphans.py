"""Processes that Claude Code started and left behind: adopted, stopped and reaped (Linux).

When a process dies, the kernel hands its children to the nearest ancestor that declared itself
a child subreaper, else to init. The agent declares itself one when it starts
(``become_subreaper``), so the background shell of a Claude Code that crashed, or that the
agent stopped, becomes the agent's child instead of running on unnoticed under init.

Every Claude Code runs with ``OWNER_ENV`` set to its runner's own token, and what it starts
inherits it: a child of ours that carries the token is an orphan of that Claude Code.
``stop_left_by`` stops them, process group by process group (SIGTERM, then SIGKILL after a
grace), collects each exit status (an adopted process is our child: its status is ours to take,
and it stays a zombie until we do), and says how the task whose output file each one held open
ended.

The exit status of a Claude Code, a child the agent started itself, is asyncio's to take: its
child watcher waits for it, and reports 255 ("Unknown child process") for a child someone else
reaped, which would reach the client as Claude Code's exit code. So the two never meet: the
transport names every Claude Code it starts (``spawned``, until asyncio has its status:
``collected``), and no function here looks at those; Claude Code itself runs in the agent's own
process group (the SDK starts it there), and ``reap_strays``, which collects the zombies that
ended on their own at each SIGCHLD, takes none of that group. Signalling Claude Code goes
through ``send_signal``, which takes no status either (``Popen.send_signal`` does: it polls
first; it serves on every POSIX host). Without ``/proc`` (not Linux) there is nothing to find,
and every other function does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import anyio

from claude_bg_acp.claude.conventions import ExitInfo, task_of_output_file
from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

OWNER_ENV = "CLAUDE_BG_ACP_OWNER"
PR_SET_CHILD_SUBREAPER = 36
STOP_GRACE = 0.2
"""Seconds an orphan has to end after SIGTERM, and again after SIGKILL."""
ROUNDS = 3
"""Times to look again for orphans, since a stopped one may leave orphans of its own."""
POLL = 0.01
"""Seconds between looks at a process that no pidfd can watch."""

_claimed: set[int] = set()
"""Orphans whose exit status a ``stop`` is waiting for: ``reap_strays`` leaves them alone."""
_spawned: set[int] = set()
"""Children the agent started itself (Claude Code), whose exit status asyncio collects."""


def spawned(pid: int) -> None:
    """``pid`` is a child we started: never an orphan, its status asyncio's."""
    _spawned.add(pid)


def collected(pid: int) -> None:
    """asyncio has the exit status of ``pid``: the number may now be another process's."""
    _spawned.discard(pid)


def send_signal(pid: int, signum: signal.Signals) -> None:
    """Signal ``spawned`` child ``pid`` unless it has ended, leaving its exit status where it is.

    A child that ended but was not reaped yet (a zombie) still holds its number: no other
    process can have it, so the signal reaches the child or nothing.
    """
    try:
        if _ended(pid):
            return
        os.kill(pid, signum)
    except (ChildProcessError, ProcessLookupError):
        pass  # collected already


def _ended(pid: int) -> bool:
    """Whether child ``pid`` is a zombie; it stays one (``WNOWAIT``) for asyncio to collect."""
    waitid = getattr(os, "waitid", None)  # not on macOS before Python 3.13
    if waitid is None:
        return False
    return waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def become_subreaper() -> bool:
    """Make orphaned descendants our children (Linux); whether that worked."""
    if not host().linux:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class Orphan:
    pid: int
    pgid: int
    files: tuple[str, ...]
    """The files its descriptors point at."""

    @property
    def leader(self) -> bool:
        return self.pid == self.pgid


def find(owner: str | None) -> list[Orphan]:
    """Our live children that ``owner``'s Claude Code left behind (``None``: every live child)."""
    needle = None if owner is None else f"\0{OWNER_ENV}={owner}\0".encode()
    found: list[Orphan] = []
    for pid, state, pgid in _children():
        if state == "Z" or pid in _spawned:
            continue
        try:
            if needle is not None and needle not in b"\0" + _read(f"/proc/{pid}/environ"):
                continue
            found.append(Orphan(pid, pgid, _files(pid)))
        except OSError:
            continue  # it ended while we looked
    return found


async def stop_left_by(
    owner: str | None, tasks_root: str | None, grace: float = STOP_GRACE
) -> dict[str, ExitInfo]:
    """Stop what ``owner``'s Claude Code left running; how each task's process ended, by task id.

    A task is known by the output file (below ``tasks_root``) its processes hold open; its end
    is that of the process group leader among them, else of the first one to end.
    """
    root = os.path.realpath(tasks_root) if tasks_root is not None else None
    ends: dict[str, ExitInfo] = {}
    for _ in range(ROUNDS):
        found = find(owner)
        if not found:
            break
        log.warning("stopping %d processes Claude Code left behind", len(found))
        ended = await stop(found, grace)
        for orphan in sorted(found, key=lambda o: not o.leader):
            exit_info = ended.get(orphan.pid)
            if exit_info is None or root is None:
                continue
            for path in orphan.files:
                task_id = task_of_output_file(root, path)
                if task_id is not None:
                    ends.setdefault(task_id, exit_info)
    reap_strays()
    return ends


async def stop(orphans: Sequence[Orphan], grace: float) -> dict[int, ExitInfo | None]:
    """SIGTERM each orphan's process group, SIGKILL them after ``grace``; how each orphan ended
    (None: its status was not ours to take). One that survives both is left out."""
    pids = {orphan.pid for orphan in orphans}
    # Claimed before the first await: from here on only we may reap them.
    _claimed.update(pids)
    try:
        _signal(orphans, signal.SIGTERM)
        ended = await _collect(pids, grace)
        _signal(orphans, signal.SIGKILL)  # what ignored SIGTERM, leaders and the rest of each group
        ended |= await _collect(pids - ended.keys(), grace)
        return ended
    finally:
        _claimed.difference_update(pids)


def reap_strays() -> None:
    """Take the exit status of orphans that ended on their own, so no zombie stays behind."""
    own = os.getpgrp()
    for pid, state, pgid in _children():
        if state == "Z" and pgid != own and pid not in _claimed and pid not in _spawned:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


# --- processes ------------------------------------------------------------------------------------


def _children() -> Iterator[tuple[int, str, int]]:
    """(pid, state, process group) of each child of ours."""
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for name in entries:
        if not name.isdigit():
            continue
        try:
            stat = _read(f"/proc/{name}/stat").decode(errors="replace")
        except OSError:
            continue
        # The command name in parentheses may hold anything; the fields after it do not.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me:
            yield int(name), fields[0], int(fields[2])


def _files(pid: int) -> tuple[str, ...]:
    folder = f"/proc/{pid}/fd"
    paths: list[str] = []
    for fd in os.listdir(folder):
        with contextlib.suppress(OSError):
            target = os.readlink(f"{folder}/{fd}")
            if target.startswith("/"):
                paths.append(target.removesuffix(" (deleted)"))
    return tuple(paths)


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _signal(orphans: Sequence[Orphan], signum: signal.Signals) -> None:
    own = os.getpgrp()
    for pgid in {orphan.pgid for orphan in orphans if orphan.pgid not in (0, 1, own)}:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signum)
    # One sharing our group (started by Claude Code without a group of its own) alone.
    for orphan in orphans:
        if orphan.pgid in (0, 1, own):
            with contextlib.suppress(OSError):
                os.kill(orphan.pid, signum)


async def _collect(pids: set[int], timeout: float) -> dict[int, ExitInfo | None]:
    ended: dict[int, ExitInfo | None] = {}
    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as tg:
            for pid in pids:
                tg.start_soon(_wait, pid, ended)
    return ended


async def _wait(pid: int, ended: dict[int, ExitInfo | None]) -> None:
    try:
        watch: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        watch = None
    try:
        while True:
            try:
                reaped, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                ended[pid] = None
                return
            if reaped:
                ended[pid] = _exit_of(status)
                return
            if watch is not None:
                await anyio.wait_readable(watch)
            else:
                await anyio.sleep(POLL)
    finally:
        if watch is not None:
            os.close(watch)


def _exit_of(status: int) -> ExitInfo:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return ExitInfo(code, None)
    try:
        return ExitInfo(None, signal.Signals(-code).name)
    except ValueError:
        return ExitInfo(None, f"SIG{-code}")
