"""Change notifications for a set of directories: which paths in them changed.

How it works:

- The owner says which directories to watch (:meth:`Watcher.watch`, any time, not recursive) and
  gets two calls back on the event loop: ``on_change(path)`` for a path inside a watched
  directory that was written, created, deleted or moved (or for a watched directory that went
  away), and ``on_rescan()`` when changes may have been missed (a watcher (re)started, the
  kernel's queue overflowed), so the owner looks at everything again.
- On Linux (``platform.host().linux``), :class:`InotifyWatcher` asks the kernel itself
  (``inotify``, through ``ctypes``): one descriptor per watcher, read by the event loop when it
  becomes readable, so a write is seen within a loop iteration and nothing runs while nothing
  changes. Adding and removing directories takes effect at once, so a change made after
  :meth:`Watcher.watch` returns is never missed. Each watched directory's parent is watched too,
  for its subdirectories only: the kernel reports a directory's own removal only once nothing
  holds it, and an open file in it does.
  While the owner looks on a timer anyway, it holds the watcher: changes then wait in the
  kernel until the owner collects them, so a busy file costs one wake-up per timer tick rather
  than one per write.
  The user's inotify watches are shared with every other program (an IDE can use most of
  them): a directory the kernel refuses to watch (``ENOSPC``) is looked at every ``poll_ms``
  instead (a rescan), and watching it is tried again each time. Without an inotify descriptor
  at all (the user's instances used up), watchfiles polls.
- Elsewhere (macOS, Windows, and Linux in the portable mode), :class:`WatchfilesWatcher` runs
  watchfiles' ``awatch`` (a Rust thread that asks the system's own notifications, FSEvents on
  macOS, and looks every ``step_ms``, slowing to ``idle_step_ms`` after ``idle_after`` seconds
  without a change). A new set of directories restarts it, the new watcher before the old one
  stops; a watcher that fails to start is retried after ``retry_interval`` seconds.

Both are used the same way, inside a task group::

    watcher = make_watcher(on_change, on_rescan)
    await tg.start(watcher.run)   # returns once watching works; run() ends at close()
    watcher.watch(frozenset({"/tmp/a", "/tmp/b"}))
    ...
    watcher.close()
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

import anyio
import anyio.abc

from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

OnChange = Callable[[str], None]
OnRescan = Callable[[], None]
Backend = Literal["auto", "inotify", "watchfiles"]


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """Tuning of the watchfiles fallback (inotify needs none).

    - ``step_ms``, ``debounce_ms``: watchfiles' ``step`` and ``debounce`` while active; a change
      waits at most ``debounce_ms`` (plus a step) before it is reported.
    - ``idle_after``: seconds without a change before the watcher slows to ``idle_step_ms``
      (``None``: never), so an idle watcher costs almost nothing.
    - ``retry_interval``: seconds before a watcher that failed to start is tried again.
    - ``poll_ms``: how often what the kernel will not watch is looked at instead (both
      backends); ``force_polling``: watchfiles polls rather than asking the kernel.
    """

    backend: Backend = "auto"
    step_ms: int = 1
    debounce_ms: int = 2
    idle_after: float | None = 3.0
    idle_step_ms: int = 10
    retry_interval: float = 1.0
    poll_ms: int = 20
    force_polling: bool = False

    def __post_init__(self) -> None:
        if self.step_ms < 1 or self.idle_step_ms < 1 or self.debounce_ms < 1:
            raise ValueError("step_ms, idle_step_ms and debounce_ms must be at least 1")


class Watcher(Protocol):
    def watch(self, dirs: frozenset[str]) -> None:
        """Watch exactly these directories from now on."""

    def hold(self, held: bool) -> None:
        """Held: report changes only when :meth:`collect` asks, not as they come (the owner
        looks on a timer then, and wants no wake-up per change); else as they come."""

    def collect(self) -> None:
        """Report the changes that came since the last report, now."""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Deliver changes until :meth:`close`; meant for ``task_group.start``."""

    def close(self) -> None: ...


def make_watcher(on_change: OnChange, on_rescan: OnRescan, options: WatchOptions | None = None) -> Watcher:
    """inotify on Linux (``options.backend`` may ask for either), else watchfiles."""
    options = options or WatchOptions()
    if options.backend == "inotify" or (options.backend == "auto" and host().linux):
        try:
            return InotifyWatcher(on_change, on_rescan, options.poll_ms / 1000)
        except OSError as exc:
            if options.backend == "inotify":
                raise
            # watchfiles would ask the same kernel for the same thing: it has to poll.
            log.warning(
                "no inotify descriptor (%s; see /proc/sys/fs/inotify/max_user_instances): output "
                "files are polled every %d ms",
                exc.strerror,
                options.poll_ms,
            )
            options = replace(options, force_polling=True)
    return WatchfilesWatcher(on_change, on_rescan, options)


# --- inotify ------------------------------------------------------------------------------------

# From <sys/inotify.h>.
IN_MODIFY = 0x00000002
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # os has neither on Windows, which has no inotify
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
SUBDIRECTORY_EVENTS = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR
DIRECTORY_EVENTS = SUBDIRECTORY_EVENTS | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
READ_SIZE = 16 * 1024  # some hundred events; more wait for the next read
# The kernel hands out whole events: a read that left room for the largest one emptied the queue
# (what comes after it wakes the loop again, or waits for the next collect while held).
MAYBE_MORE = READ_SIZE - (_EVENT.size + 256)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
        getattr(libc, name).restype = ctypes.c_int
    return libc


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


class InotifyWatcher:
    """Directory watches on one inotify descriptor, read by the event loop; see the module doc."""

    def __init__(self, on_change: OnChange, on_rescan: OnRescan, poll_interval: float = 0.02) -> None:
        self._libc = _libc()
        self._fd = _check(self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        self._on_change = on_change
        self._on_rescan = on_rescan
        self._watched: frozenset[str] = frozenset()  # as asked
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory (asked, or a parent)
        self._wds: dict[str, tuple[int, int]] = {}  # directory -> watch descriptor, mask
        self._paths: dict[tuple[int, bytes], str] = {}  # the path an event names, decoded once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = False
        self._held = False
        self._closed = False
        self._stop: anyio.Event | None = None
        self._poll_interval = poll_interval
        self._unwatchable: set[str] = set()  # refused by the kernel (no watches left): polled
        self._polling: asyncio.TimerHandle | None = None

    def watch(self, dirs: frozenset[str]) -> None:
        if self._closed:
            return
        self._watched = dirs
        self._paths.clear()
        masks = {os.path.dirname(d): SUBDIRECTORY_EVENTS for d in dirs}
        masks.update(dict.fromkeys(dirs, DIRECTORY_EVENTS))
        self._unwatchable &= masks.keys()
        for gone in self._wds.keys() - masks.keys():
            wd, _mask = self._wds.pop(gone)
            self._dirs.pop(wd, None)
            self._libc.inotify_rm_watch(self._fd, wd)  # fails harmlessly if the kernel dropped it
        for directory, mask in masks.items():
            if self._wds.get(directory, (0, 0))[1] == mask:
                continue
            try:
                wd = _check(self._libc.inotify_add_watch(self._fd, os.fsencode(directory), mask))
            except OSError as exc:
                self._refused(directory, directory in dirs, exc)
                continue
            self._unwatchable.discard(directory)
            self._wds[directory] = (wd, mask)
            self._dirs[wd] = directory
        self._poll_if_needed()

    def _refused(self, directory: str, asked: bool, exc: OSError) -> None:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            # Gone (or never a directory) since the owner looked: let it look again.
            log.debug("cannot watch %s: %s", directory, exc)
            if self._loop is not None and asked:
                self._loop.call_soon(self._on_rescan)
            return
        if directory not in self._unwatchable:
            log.warning(
                "cannot watch %s (%s; see /proc/sys/fs/inotify/max_user_watches): polled every %d ms",
                directory,
                exc.strerror,
                round(self._poll_interval * 1000),
            )
        self._unwatchable.add(directory)

    def _poll_if_needed(self) -> None:
        if self._unwatchable and self._polling is None and self._loop is not None and not self._closed:
            self._polling = self._loop.call_later(self._poll_interval, self._poll)

    def _poll(self) -> None:
        """Look at everything again, and try again to watch what the kernel refused."""
        self._polling = None
        self.watch(self._watched)
        self._on_rescan()

    def hold(self, held: bool) -> None:
        if held != self._held and self._loop is not None and not self._closed:
            self._held = held
            if held:
                self._loop.remove_reader(self._fd)
            else:
                self._loop.add_reader(self._fd, self.collect)

    def collect(self) -> None:
        while self._read():
            pass

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        if self._closed:
            task_status.started()
            return
        self._loop = asyncio.get_running_loop()
        self._stop = anyio.Event()
        self._loop.add_reader(self._fd, self.collect)
        self._running = True
        self._poll_if_needed()
        try:
            task_status.started()
            await self._stop.wait()
        finally:
            if self._polling is not None:
                self._polling.cancel()
            self._loop.remove_reader(self._fd)
            os.close(self._fd)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        elif not self._running:
            os.close(self._fd)

    def _read(self) -> bool:
        """Report one read's worth of events; True if more may be waiting."""
        try:
            data = os.read(self._fd, READ_SIZE)
        except BlockingIOError:
            return False
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size
            name = data[offset : offset + length].rstrip(b"\0")
            offset += length
            if mask & IN_Q_OVERFLOW:
                self._on_rescan()
                continue
            directory = self._dirs.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:  # the directory itself went away: the kernel dropped the watch
                del self._dirs[wd]
                self._wds.pop(directory, None)
            path = self._paths.get((wd, name))
            if path is None:
                path = self._paths[wd, name] = (
                    os.path.join(directory, os.fsdecode(name)) if name else directory
                )
            if path in self._watched or (directory in self._watched and name):
                self._on_change(path)
        return len(data) > MAYBE_MORE


# --- watchfiles ---------------------------------------------------------------------------------

_WatchSpec = tuple[frozenset[str], int]  # directories, step in ms


class WatchfilesWatcher:
    """watchfiles' ``awatch`` under a supervisor that restarts it; see the module doc."""

    def __init__(self, on_change: OnChange, on_rescan: OnRescan, options: WatchOptions) -> None:
        self._on_change = on_change
        self._on_rescan = on_rescan
        self._options = options
        self._wanted: frozenset[str] = frozenset()
        self._quiet = False
        self._closed = False
        self._active: _WatchSpec | None = None
        self._watcher_stop: anyio.Event | None = None
        self._retry_at = 0.0
        self._wake: anyio.Event | None = None

    def watch(self, dirs: frozenset[str]) -> None:
        if dirs != self._wanted:
            self._wanted = dirs
            self._poke()

    def hold(self, held: bool) -> None:
        """Nothing to hold: the watcher batches changes itself (see the module doc)."""

    def collect(self) -> None:
        """Changes come in the watcher's own batches (see the module doc)."""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                task_status.started()
                await self._supervise(tg)
        finally:
            self.close()

    def close(self) -> None:
        self._closed = True
        if self._watcher_stop is not None:
            self._watcher_stop.set()
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _spec(self) -> _WatchSpec | None:
        if not self._wanted:
            return None
        return self._wanted, self._options.idle_step_ms if self._quiet else self._options.step_ms

    async def _supervise(self, tg: anyio.abc.TaskGroup) -> None:
        while not self._closed:
            wake = self._wake = anyio.Event()
            wanted = self._spec()
            if wanted == self._active:
                await wake.wait()
                continue
            delay = self._retry_at - anyio.current_time()
            if delay > 0:  # the last watcher failed; this is the only timer
                with anyio.move_on_after(delay):
                    await wake.wait()
                continue
            await self._replace(tg, wanted)

    async def _replace(self, tg: anyio.abc.TaskGroup, wanted: _WatchSpec | None) -> None:
        old, self._watcher_stop = self._watcher_stop, None
        self._active = wanted
        if wanted is not None:
            stop = anyio.Event()
            self._watcher_stop = stop
            await tg.start(self._watch, wanted, stop)
        if old is not None:
            old.set()  # only now, so that some watcher covers the old directories throughout
        self._on_rescan()

    async def _watch(
        self,
        spec: _WatchSpec,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        from watchfiles import awatch

        dirs, step = spec
        idle_after = self._options.idle_after
        fast = step != self._options.idle_step_ms or idle_after is None
        # awatch yields an empty set after this many ms without a change: time to slow down.
        quiet_ms = int(idle_after * 1000) if fast and idle_after is not None else 0
        # awatch builds its Rust watcher synchronously in its first __anext__, before this task
        # first suspends, and start() resumes the supervisor only after that: so when the owner
        # rescans, this watcher already records changes.
        task_status.started()
        try:
            async for changes in awatch(
                *sorted(dirs),
                watch_filter=None,
                force_polling=self._options.force_polling,
                poll_delay_ms=self._options.poll_ms,
                debounce=self._options.debounce_ms,
                step=step,
                stop_event=stop,
                rust_timeout=quiet_ms,
                yield_on_timeout=True,
                recursive=False,
            ):
                if not changes:
                    if stop is self._watcher_stop:
                        self._set_quiet(True)
                    continue
                self._set_quiet(False)
                for _change, path in changes:
                    self._on_change(path)
        except Exception:  # a failing watcher must not take the agent down: retry slowly
            log.warning("watching %s failed", sorted(dirs), exc_info=True)
            if stop is self._watcher_stop:
                self._active = self._watcher_stop = None
                self._retry_at = anyio.current_time() + self._options.retry_interval
                self._poke()

    def _set_quiet(self, quiet: bool) -> None:
        if quiet != self._quiet and self._options.idle_after is not None:
            self._quiet = quiet
            self._poke()
