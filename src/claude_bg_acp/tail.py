"""Follow Claude Code's task output files and hand their bytes to one consumer.

How it works:

- The file is the queue. Each followed file (a key and a path) keeps an open descriptor, the
  offset read so far and a :class:`~claude_bg_acp.closing_line.TrailerGate`; no output is buffered in
  memory, so memory stays bounded whatever the output size and however slow the consumer is.
- One watchfiles ``awatch`` watches the parent directories of all followed files (not
  recursively). A directory that does not exist yet is stood in for by its nearest existing
  ancestor until it appears. A change only marks its key ready. A supervisor restarts the watcher
  whenever the set of directories changes, starting the new watcher before stopping the old one,
  and marks every key ready after each start, so a write made while no watcher ran is still read.
- The consumer pulls. :meth:`OutputTailer.receive` takes the next ready key, stats its path
  (replaced or truncated: :class:`Reset`; deleted: drained, then :class:`Vanished`) and reads at
  most ``chunk_size`` bytes from the offset. Bytes that arrive while the consumer is busy go out
  together; nothing waits on a timer. A key with more to read goes to the back of the line, so
  one chatty file cannot starve the others.
- Backlog = bytes in the file that the consumer has not been handed yet (file size minus offset),
  checked each time the consumer takes the key (:func:`plan_read`). Past ``backlog_limit`` the
  next event is a :class:`Snapshot` of the file's last ``snapshot_size`` bytes, read from the
  file, and chunks go on from its end.
- Idle cost: watchfiles' Rust loop wakes every ``step_ms`` to look for changes. After
  ``idle_after`` seconds without a change the watcher restarts with ``idle_step_ms``, and the first
  change brings ``step_ms`` back, so the first write after a quiet spell arrives within about two
  idle steps and the ones after it within a few milliseconds.

Use it inside a task group, with one task taking the events::

    async with anyio.create_task_group() as tg:
        tailer = OutputTailer()
        await tg.start(tailer.run)
        tailer.follow("task-1", output_file)
        async for event in tailer:  # Chunk | Snapshot | Reset | Vanished, in file order per key
            relay(event)
            ...
            async for rest in tailer.drain("task-1", trailer_timeout=1.0):  # once it ended
                relay(rest)  # ... and a Final last
        ...
        tailer.close()  # ends the iteration and run()

The watcher and its supervisor run in ``run()``; every read happens in ``receive()`` and
``drain()``, in the caller's task. ``drain`` reads the bytes that ``receive`` has not handed out,
so it follows every event received before it: call it from the task that relays the events,
after relaying what that task took.

Not handled: a file truncated and rewritten past the old offset between two looks is taken for
growth (only a smaller size or a new inode tells a restart); and a symlinked output file (the
CLI links subagent transcripts) is read through the link, but writes to its target are only
seen when something changes in the link's own directory.
"""

from __future__ import annotations

import enum
import logging
import os
import stat
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel
from watchfiles import awatch
from watchfiles.main import FileChange

from claude_bg_acp.closing_line import MAX_TRAILER, ExitInfo, TrailerGate

__all__ = [
    "Chunk",
    "ExitInfo",
    "Final",
    "OutputTailer",
    "Reset",
    "Snapshot",
    "TailEvent",
    "TailerOptions",
    "Vanished",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Chunk:
    """The next bytes of the output, exactly as the file holds them; append them."""

    key: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The latest bytes of the output; they replace everything delivered before."""

    key: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Reset:
    """The file was truncated or replaced: drop what was delivered; output restarts at byte 0."""

    key: str


@dataclass(frozen=True, slots=True)
class Vanished:
    """The file was deleted (after everything it held was delivered); still followed."""

    key: str


@dataclass(frozen=True, slots=True)
class Final:
    """The last event of :meth:`OutputTailer.drain`: the output the closing-line rule held back
    until the end (append it), and how the task ended (``None`` when the file has no closing
    line)."""

    key: str
    remaining: bytes
    exit: ExitInfo | None


TailEvent: TypeAlias = Chunk | Snapshot | Reset | Vanished


@dataclass(frozen=True, slots=True)
class TailerOptions:
    """Tuning; the defaults aim at a few milliseconds of latency and near-zero idle CPU.

    - ``chunk_size``: most bytes in one :class:`Chunk` (a read never asks for more).
    - ``backlog_limit``: how far (bytes) the consumer may fall behind the file before it gets a
      :class:`Snapshot` instead; also the most ``finish`` reads into memory.
    - ``snapshot_size``: bytes in a :class:`Snapshot` (the file's last ones).
    - ``step_ms``, ``debounce_ms``: watchfiles' ``step`` and ``debounce`` while active. The
      watcher looks for changes every step and hands over a batch once a step passes without a
      new one, or ``debounce_ms`` after the first: that bounds how long any byte waits.
    - ``idle_after``: seconds without a change before the watcher slows to ``idle_step_ms``
      (``None``: never).
    - ``retry_interval``: seconds before a watcher that failed to start is tried again.
    """

    chunk_size: int = 64 * 1024
    backlog_limit: int = 4 * 1024 * 1024
    snapshot_size: int = 256 * 1024
    step_ms: int = 1
    debounce_ms: int = 2
    idle_after: float | None = 3.0
    idle_step_ms: int = 10
    retry_interval: float = 1.0

    def __post_init__(self) -> None:
        if self.chunk_size <= MAX_TRAILER:
            raise ValueError(f"chunk_size must exceed {MAX_TRAILER} bytes")
        if not 0 < self.snapshot_size <= self.backlog_limit:
            raise ValueError("snapshot_size must be positive and at most backlog_limit")
        if self.step_ms < 1 or self.idle_step_ms < 1 or self.debounce_ms < 1:
            raise ValueError("step_ms, idle_step_ms and debounce_ms must be at least 1")


class _State(enum.Enum):
    ABSENT = enum.auto()  # no file, nothing left to drain
    PRESENT = enum.auto()  # the descriptor reads the file at the path
    GONE = enum.auto()  # the path is gone; the descriptor may still hold unread bytes
    RESTARTED = enum.auto()  # a new file, or the old one truncated: reading starts again at 0


@dataclass(eq=False)
class _Followed:
    key: str
    path: str
    fd: int | None = None
    ident: tuple[int, int] | None = None
    offset: int = 0
    gate: TrailerGate = field(default_factory=TrailerGate)
    seen: bool = False  # a file was opened at least once, so a new one is a restart
    changed: anyio.Event | None = None  # set on each change, for finish() to wait on

    def restart(self) -> None:
        self.offset = 0
        self.gate = TrailerGate()

    def close_fd(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_WatchSpec: TypeAlias = tuple[frozenset[str], int]  # directories, step in ms


def _nearest_dir(path: str) -> str:
    """``path`` if it is a directory, else its nearest existing ancestor."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _file_tail(path: str) -> tuple[bytes, bool]:
    """The last ``MAX_TRAILER`` bytes of the file and whether they start it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - MAX_TRAILER)
        return os.pread(fd, size - start, start), start == 0
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Read ``length`` bytes at ``start``; a snapshot replaces everything delivered before."""

    start: int
    length: int
    snapshot: bool


def plan_read(
    size: int, offset: int, *, chunk_size: int, backlog_limit: int, snapshot_size: int
) -> ReadPlan | None:
    """The next read of a file of ``size`` bytes of which ``offset`` were already read.

    The backlog is ``size - offset``: bytes in the file that the consumer has not been handed
    yet. Past ``backlog_limit`` the reader gives up on relaying them all and jumps to the last
    ``snapshot_size`` bytes. ``None`` means there is nothing new.
    """
    backlog = size - offset
    if backlog <= 0:
        return None
    if backlog > backlog_limit:
        start = max(0, size - snapshot_size)
        return ReadPlan(start=start, length=size - start, snapshot=True)
    return ReadPlan(start=offset, length=min(chunk_size, backlog), snapshot=False)


class OutputTailer:
    """Follows many output files and hands their bytes to one consumer; see the module doc."""

    def __init__(self, options: TailerOptions | None = None) -> None:
        self._options = options or TailerOptions()
        self._follows: dict[str, _Followed] = {}
        self._by_path: dict[str, set[str]] = {}
        self._ready: deque[str] = deque()
        self._ready_set: set[str] = set()
        self._closed = False
        self._quiet = False
        self._active: _WatchSpec | None = None
        self._standing_in = False  # an ancestor is watched in place of a missing directory
        self._watcher_stop: anyio.Event | None = None
        self._retry_at = 0.0
        self._supervisor_wake: anyio.Event | None = None
        self._consumer_wake: anyio.Event | None = None

    # -- following -------------------------------------------------------------------------

    def follow(self, key: str, path: str | os.PathLike[str]) -> None:
        """Start relaying the file at ``path`` (it may not exist yet) as ``key``.

        Following a key again with the same path does nothing; with another path it forgets
        the old one first.
        """
        full = os.path.abspath(os.fspath(path))
        old = self._follows.get(key)
        if old is not None and old.path == full:
            return
        self.forget(key)
        self._follows[key] = _Followed(key, full)
        self._by_path.setdefault(full, set()).add(key)
        self._mark_ready(key)  # the file may already hold output
        self._poke_supervisor()

    def forget(self, key: str) -> None:
        """Stop following ``key`` without reading further; unknown keys are ignored."""
        followed = self._drop(key)
        if followed is not None:
            followed.close_fd()

    async def drain(self, key: str, *, trailer_timeout: float = 0.0) -> AsyncIterator[TailEvent | Final]:
        """Read the file to its end now and stop following it: the rest as events, then ``Final``.

        The rest comes in chunks of at most ``chunk_size`` bytes (a snapshot when more than
        ``backlog_limit`` are unread), so memory stays flat however much a task wrote just
        before it ended; ``Final.remaining`` is only what the closing-line rule held back. With
        ``trailer_timeout`` > 0, first wait up to that many seconds for the CLI's closing line to
        appear. Raises ``KeyError`` for a key that is not followed.
        """
        followed = self._follows[key]
        if trailer_timeout > 0:
            await self._await_closing_line(followed, trailer_timeout)
            if self._follows.get(key) is not followed:
                raise KeyError(key)
        self._drop(key)
        try:
            while (event := self._drain_step(followed)) is not None:
                yield event
            rest, exit_info = followed.gate.close()
            yield Final(key, rest, exit_info)
        finally:
            followed.close_fd()

    # -- consuming ---------------------------------------------------------------------------

    async def receive(self) -> TailEvent:
        """The next event of any followed key; raises ``anyio.EndOfStream`` once closed."""
        await anyio.lowlevel.checkpoint()
        while True:
            event = self._next_event()
            if event is not None:
                return event
            if self._closed:
                raise anyio.EndOfStream
            if self._consumer_wake is None or self._consumer_wake.is_set():
                self._consumer_wake = anyio.Event()  # shared, should two tasks wait at once
            await self._consumer_wake.wait()

    def __aiter__(self) -> OutputTailer:
        return self

    async def __anext__(self) -> TailEvent:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    # -- lifecycle ---------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch directories until :meth:`close`; meant for ``task_group.start``."""
        try:
            async with anyio.create_task_group() as tg:
                task_status.started()
                await self._supervise(tg)
        finally:
            self.close()

    def close(self) -> None:
        """Stop watching, end the event stream and release every file."""
        self._closed = True
        if self._watcher_stop is not None:
            self._watcher_stop.set()
        for followed in self._follows.values():
            followed.close_fd()
        self._follows.clear()
        self._by_path.clear()
        self._ready.clear()
        self._ready_set.clear()
        self._poke_supervisor()
        self._wake_consumer()

    @property
    def watched_dirs(self) -> frozenset[str]:
        """The directories the current watcher covers (for tests and diagnostics)."""
        return self._active[0] if self._active is not None else frozenset()

    # -- reading (all synchronous: no await between a stat and the reads it justifies) -----

    def _next_event(self) -> TailEvent | None:
        while self._ready:
            key = self._ready.popleft()
            if key not in self._ready_set:
                continue  # forgotten while queued
            self._ready_set.discard(key)
            followed = self._follows.get(key)
            if followed is None:
                continue
            try:
                event = self._step(followed)
            except OSError:
                log.warning("cannot read output file %s", followed.path, exc_info=True)
                continue
            if event is not None:
                return event
        return None

    def _step(self, followed: _Followed) -> TailEvent | None:
        state, size = self._sync(followed)
        if state is _State.ABSENT:
            return None
        if state is _State.RESTARTED:
            self._mark_ready(followed.key)
            return Reset(followed.key)
        event = self._read(followed, size)
        if state is _State.GONE:
            if event is None:
                followed.close_fd()
                log.info("output file %s was deleted", followed.path)
                return Vanished(followed.key)
            self._mark_ready(followed.key)  # keep draining until the end, then report
        return event

    def _sync(self, followed: _Followed) -> tuple[_State, int]:
        """Match the descriptor to what the path holds now; return the state and file size."""
        try:
            st: os.stat_result | None = os.stat(followed.path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            if followed.fd is None:
                return _State.ABSENT, 0
            return _State.GONE, os.fstat(followed.fd).st_size
        if followed.fd is not None and (st.st_dev, st.st_ino) == followed.ident:
            if st.st_size < followed.offset:
                followed.restart()
                return _State.RESTARTED, st.st_size
            return _State.PRESENT, st.st_size
        return self._open(followed)

    def _open(self, followed: _Followed) -> tuple[_State, int]:
        try:
            fd = os.open(followed.path, os.O_RDONLY)
        except FileNotFoundError:
            return _State.ABSENT, 0  # gone again already; the next change tells
        info = os.fstat(fd)
        followed.close_fd()
        followed.fd, followed.ident = fd, (info.st_dev, info.st_ino)
        restarted, followed.seen = followed.seen, True
        followed.restart()
        return (_State.RESTARTED if restarted else _State.PRESENT), info.st_size

    def _read(self, followed: _Followed, size: int) -> Chunk | Snapshot | None:
        options = self._options
        plan = plan_read(
            size,
            followed.offset,
            chunk_size=options.chunk_size - followed.gate.withheld,
            backlog_limit=options.backlog_limit,
            snapshot_size=options.snapshot_size,
        )
        if plan is None or followed.fd is None:
            return None
        data = os.pread(followed.fd, plan.length, plan.start)
        if plan.snapshot:
            followed.gate = TrailerGate(at_start=plan.start == 0)
            followed.offset = plan.start + len(data)
            return Snapshot(followed.key, followed.gate.feed(data))
        followed.offset += len(data)
        if data and followed.offset < size:
            self._mark_ready(followed.key)
        out = followed.gate.feed(data)
        return Chunk(followed.key, out) if out else None

    def _drain_step(self, followed: _Followed) -> TailEvent | None:
        """The next piece of a file being drained; None at its end."""
        try:
            state, size = self._sync(followed)
        except OSError:
            log.warning("cannot read output file %s", followed.path, exc_info=True)
            return None
        if state is _State.RESTARTED:
            return Reset(followed.key)
        if state is _State.ABSENT or followed.fd is None or followed.offset >= size:
            return None
        # A read the closing-line rule holds back entirely can only be the last one.
        return self._read(followed, size)

    async def _await_closing_line(self, followed: _Followed, timeout: float) -> None:
        with anyio.move_on_after(timeout):
            while not self._has_closing_line(followed):
                followed.changed = anyio.Event()
                await followed.changed.wait()

    @staticmethod
    def _has_closing_line(followed: _Followed) -> bool:
        try:
            tail, whole = _file_tail(followed.path)
        except OSError:
            return False
        gate = TrailerGate(at_start=whole)
        gate.feed(tail)
        return gate.close()[1] is not None

    # -- bookkeeping -------------------------------------------------------------------------

    def _drop(self, key: str) -> _Followed | None:
        followed = self._follows.pop(key, None)
        if followed is None:
            return None
        keys = self._by_path.get(followed.path)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_path[followed.path]
        self._ready_set.discard(key)
        self._poke_supervisor()
        return followed

    def _mark_ready(self, key: str) -> None:
        if key not in self._ready_set:
            self._ready_set.add(key)
            self._ready.append(key)
        followed = self._follows.get(key)
        if followed is not None and followed.changed is not None:
            followed.changed.set()
        self._wake_consumer()

    def _wake_consumer(self) -> None:
        if self._consumer_wake is not None:
            self._consumer_wake.set()

    def _poke_supervisor(self) -> None:
        if self._supervisor_wake is not None:
            self._supervisor_wake.set()

    # -- watching ----------------------------------------------------------------------------

    def _wanted_watch(self) -> _WatchSpec | None:
        if not self._follows:
            return None
        parents = {os.path.dirname(f.path) for f in self._follows.values()}
        dirs = frozenset(_nearest_dir(parent) for parent in parents)
        self._standing_in = not dirs <= parents
        step = self._options.idle_step_ms if self._quiet else self._options.step_ms
        return dirs, step

    async def _supervise(self, tg: anyio.abc.TaskGroup) -> None:
        while not self._closed:
            wake = self._supervisor_wake = anyio.Event()
            wanted = self._wanted_watch()
            if wanted == self._active:
                await wake.wait()
                continue
            delay = self._retry_at - anyio.current_time()
            if delay > 0:  # the last watcher failed; this is the only timer
                with anyio.move_on_after(delay):
                    await wake.wait()
                continue
            await self._replace_watcher(tg, wanted)

    async def _replace_watcher(self, tg: anyio.abc.TaskGroup, wanted: _WatchSpec | None) -> None:
        old, self._watcher_stop = self._watcher_stop, None
        self._active = wanted
        if wanted is not None:
            stop = anyio.Event()
            self._watcher_stop = stop
            await tg.start(self._watch, wanted, stop)
        if old is not None:
            old.set()  # only now, so that some watcher covers the old directories throughout
        for key in self._follows:
            self._mark_ready(key)

    async def _watch(
        self,
        spec: _WatchSpec,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        dirs, step = spec
        idle_after = self._options.idle_after
        fast = step != self._options.idle_step_ms or idle_after is None
        # awatch yields an empty set after this many ms without a change: time to slow down.
        quiet_ms = int(idle_after * 1000) if fast and idle_after is not None else 0
        # awatch builds its Rust watcher synchronously in its first __anext__, before this task
        # first suspends, and start() resumes the supervisor only after that: so when the
        # supervisor re-reads every file, this watcher already records changes.
        task_status.started()
        try:
            async for changes in awatch(
                *sorted(dirs),
                watch_filter=None,
                debounce=self._options.debounce_ms,
                step=step,
                stop_event=stop,
                rust_timeout=quiet_ms,
                yield_on_timeout=True,
                recursive=False,
            ):
                self._on_changes(changes, stop)
        except Exception:  # a failing watcher must not take the agent down: retry slowly
            log.warning("watching %s failed", sorted(dirs), exc_info=True)
            if stop is self._watcher_stop:
                self._active = self._watcher_stop = None
                self._retry_at = anyio.current_time() + self._options.retry_interval
                self._poke_supervisor()

    def _on_changes(self, changes: set[FileChange], stop: anyio.Event) -> None:
        if not changes:
            if stop is self._watcher_stop:
                self._set_quiet(True)
            return
        self._set_quiet(False)
        unknown = False
        for _change, path in changes:
            keys = self._by_path.get(path)
            if keys is None:
                # A missing directory may have appeared, or a watched one gone: look again.
                unknown = unknown or self._standing_in or path in self.watched_dirs
                continue
            for key in keys:
                self._mark_ready(key)
        if unknown:
            self._poke_supervisor()

    def _set_quiet(self, quiet: bool) -> None:
        if quiet != self._quiet and self._options.idle_after is not None:
            self._quiet = quiet
            self._poke_supervisor()
