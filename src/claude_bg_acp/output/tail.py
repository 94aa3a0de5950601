"""Follow Claude Code's task output files and hand their bytes to one consumer, in batches.

How it works:

- The file is the queue. Each followed file (a key and a path) keeps an open descriptor, the
  offset read so far and a :class:`~claude_bg_acp.output.closing_line.TrailerGate`; at most one read's
  worth of output waits in memory (``chunk_size``), so memory stays bounded whatever the output
  size and however slow the consumer is.
- Only the task's own output is read. The file is opened once, under the rules of
  :mod:`~claude_bg_acp.output.task_output` (below ``root``, Claude Code's task directory, reached
  without following a symbolic link, and only if it is a regular file); then the descriptor is
  read to the end, whatever later happens to the path: the shell keeps writing to the file it
  opened, so a file deleted or replaced at the path changes nothing (Claude Code's closing line,
  appended by path, is then missing, and the exit comes from the task's own event). A path that
  is a symbolic link (Claude Code links a subagent's transcript there), or anything else that
  is not the task's output, is refused once, logged, and never read. A file that shrank was
  truncated: :class:`Reset`, and reading starts again at 0.
- A :class:`~claude_bg_acp.output.watch.Watcher` (inotify on Linux, else watchfiles) watches the
  parent directories of all followed files; a directory that does not exist yet is stood in for
  by its nearest existing ancestor until it appears. A change only marks its key ready.
- Looks are timed. A key is looked at ``LINE_GRACE`` (a few ms) after its change was reported,
  so that a line and the newline ending it are read together; the changes reported meanwhile
  are read by the same look. Looks fall on a grid of ``TICK`` seconds (``BUSY_TICK`` while
  hundreds of files are being written, :class:`Grid`), so that the looks due about the same
  time, in every session, go together in one wake-up; while a look is that close, the watcher
  holds changes until the tick collects them (one wake-up per tick, however many writes).
  Nothing runs while nothing changes.
- A look reads at most ``chunk_size`` bytes and feeds them to the gate. A withheld tail that is
  not a whole closing line (the newline ending a shell's latest line, mostly) goes out once no
  change was reported for the gate's grace; the output before it waits with it, at most
  ``LINE_GRACE`` after it was read, so that a line goes out whole, in one chunk. What is proven
  output goes out at once otherwise.
- The consumer pulls batches. :meth:`OutputTailer.receive` waits until some key is ready, then
  looks at each once: one event per key per batch, so the output of many files written while
  the consumer was busy goes out together. A key with more to read is looked at again in the
  next batch, at once, so one chatty file cannot starve the others.
- Backlog = bytes in the file that the consumer has not been handed yet (file size minus offset),
  checked at each read (:func:`plan_read`). Past ``backlog_limit`` the next event is a
  :class:`Snapshot` of the file's last ``snapshot_size`` bytes, and chunks go on from its end.

Use it inside a task group, with one task taking the events::

    async with anyio.create_task_group() as tg:
        tailer = OutputTailer(root="/tmp/claude-0")
        await tg.start(tailer.run)
        tailer.follow("task-1", output_file)
        async for batch in tailer:  # Chunk | Snapshot | Reset, in file order per key
            relay(batch)
            ...
            async for rest in tailer.drain("task-1", trailer_timeout=1.0):  # once it ended
                relay(rest)  # ... and a Final last
        ...
        tailer.close()  # ends the iteration and run()

The watcher runs in ``run()``; every read happens in ``receive()`` and ``drain()``, in the
caller's task. ``drain`` reads the bytes that ``receive`` has not handed out, so it follows every
event received before it: call it from the task that relays the events, after relaying what that
task took.

A replay reads the file of a task that ended by the same rules (:func:`recalled`): piece by
piece, what a live client that had been handed none of it would be sent.

Not handled: a file truncated and rewritten past the old offset between two looks is taken for
growth (only a smaller size tells a restart).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel

from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.output.closing_line import LINE_GRACE, MAX_TRAILER, TrailerGate
from claude_bg_acp.output.task_output import NotOutput, latest, open_output, read_at
from claude_bg_acp.output.watch import WatchOptions, make_watcher

__all__ = [
    "Chunk",
    "Final",
    "OutputTailer",
    "Reset",
    "Snapshot",
    "TailEvent",
    "TailerOptions",
    "recalled",
]

log = logging.getLogger(__name__)

TIMER_SLACK = 1e-6
"""Seconds by which an event-loop timer may fire early (its clock's resolution, at most)."""
TICK = 0.001
"""Looks happen on a grid of this many seconds, so that the looks due about the same time (in
every session) go together, in one wake-up of the event loop."""
BUSY_TICK = 0.004
"""The grid while the agent is busy (see :class:`Grid`)."""
BUSY_LOOKS = 50
"""Looks in one ``BUSY_WINDOW`` (in all sessions) above which the agent is busy."""
BUSY_WINDOW = 0.1


def _now() -> float:
    return asyncio.get_running_loop().time()


class Grid:
    """The times looks fall on, shared by the tailers of one agent.

    A look costs about the same whatever it finds, and lines written 100 ms apart to each of
    hundreds of files leave nothing to combine within a file. What can be combined is the
    wake-ups: while more than ``BUSY_LOOKS`` looks were made in the last ``BUSY_WINDOW``, the
    grid is ``BUSY_TICK`` rather than ``TICK``, so a line waits up to 3 ms more and each wake-up
    serves four times as many files (a quarter less CPU at 2,000 lines a second). One shell,
    even a chatty one, never makes the agent busy.
    """

    def __init__(self) -> None:
        self._window_start = -math.inf
        self._looks = 0
        self.step = TICK

    def looked(self, now: float, looks: int) -> None:
        """``looks`` looks were made at ``now``."""
        if now - self._window_start >= BUSY_WINDOW:
            quiet_since = self._window_start + BUSY_WINDOW
            busy = self._looks > BUSY_LOOKS and now - quiet_since < BUSY_WINDOW
            self.step = BUSY_TICK if busy else TICK
            self._window_start, self._looks = now, 0
        self._looks += looks


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
    """The file was truncated: drop what was delivered; output restarts at byte 0."""

    key: str


@dataclass(frozen=True, slots=True)
class Final:
    """The last event of :meth:`OutputTailer.drain`: the output held back until the end (append
    it), and how the task ended (``None`` when the file has no closing line)."""

    key: str
    remaining: bytes
    exit: ExitInfo | None


TailEvent: TypeAlias = Chunk | Snapshot | Reset


@dataclass(frozen=True, slots=True)
class TailerOptions:
    """Tuning; the defaults aim at a few milliseconds of latency and no idle cost.

    - ``chunk_size``: most bytes in one :class:`Chunk` (a read never asks for more).
    - ``backlog_limit``: how far (bytes) the consumer may fall behind the file before it gets a
      :class:`Snapshot` instead; also the most ``drain`` reads into memory.
    - ``snapshot_size``: bytes in a :class:`Snapshot` (the file's last ones).
    - ``watch``: how directories are watched (:class:`~claude_bg_acp.output.watch.WatchOptions`).
    """

    chunk_size: int = 64 * 1024
    backlog_limit: int = 4 * 1024 * 1024
    snapshot_size: int = 256 * 1024
    watch: WatchOptions = field(default_factory=WatchOptions)

    def __post_init__(self) -> None:
        if self.chunk_size <= MAX_TRAILER:
            raise ValueError(f"chunk_size must exceed {MAX_TRAILER} bytes")
        if not 0 < self.snapshot_size <= self.backlog_limit:
            raise ValueError("snapshot_size must be positive and at most backlog_limit")


@dataclass(eq=False)
class _Followed:
    key: str
    path: str
    fd: int | None = None
    refused: bool = False
    offset: int = 0
    gate: TrailerGate = field(default_factory=TrailerGate)
    changed_at: float = 0.0  # when a change was last reported (or following began)
    pending: bytes = b""  # output read, held back a little to go out with the tail after it
    unsent_since: float = 0.0  # when ``pending`` was first read
    due: float | None = None  # when the next look is due
    changed: anyio.Event | None = None  # set on each change, for drain() to wait on

    def restart(self) -> None:
        self.offset = 0
        self.gate = TrailerGate()
        self.pending = b""

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _nearest_dir(path: str) -> str:
    """``path`` if it is a directory, else its nearest existing ancestor."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


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


def _read(followed: _Followed, size: int, options: TailerOptions) -> Chunk | Snapshot | None:
    """Read what is new into the gate (a snapshot when too far behind)."""
    plan = plan_read(
        size,
        followed.offset,
        chunk_size=options.chunk_size - followed.gate.withheld - len(followed.pending),
        backlog_limit=options.backlog_limit,
        snapshot_size=options.snapshot_size,
    )
    if plan is None or followed.fd is None:
        return None
    data = read_at(followed.fd, plan.length, plan.start)
    if plan.snapshot:
        followed.gate = TrailerGate(at_start=plan.start == 0)
        followed.offset = plan.start + len(data)
        return Snapshot(followed.key, followed.gate.feed(data))
    followed.offset += len(data)
    out = followed.gate.feed(data)
    return Chunk(followed.key, out) if out else None


def recalled(fd: int, key: str, options: TailerOptions | None = None) -> Iterator[Chunk | Snapshot | Final]:
    """The open file of a task that ended, as a replay shows it: all of it, read as
    :meth:`OutputTailer.drain` reads what a consumer was not handed yet (chunks of at most
    ``chunk_size`` bytes; past ``backlog_limit``, a snapshot of the last ``snapshot_size``, as a
    live client that fell that far behind is sent), up to the size it has when asked. The read
    that reaches that end comes in the ``Final`` (its bytes before what the closing-line rule
    held back), so a short file is one piece; a snapshot that reaches it comes before it."""
    options = options or TailerOptions()
    followed = _Followed(key, "", fd)
    end = os.fstat(fd).st_size
    while True:
        read_from = followed.offset
        event = _read(followed, end, options)
        if read_from < followed.offset < end:
            if event is not None:
                yield event
            continue
        # The end, or a file that shrank since (what is left of it is not read).
        if isinstance(event, Snapshot):
            yield event
            event = None
        rest, exit_info = followed.gate.close()
        yield Final(key, (event.data if event is not None else b"") + rest, exit_info)
        return


class OutputTailer:
    """Follows many output files and hands their bytes to one consumer; see the module doc.

    ``root``: the directory every followed file must lie below (``None``: anywhere; see
    :mod:`~claude_bg_acp.output.task_output`);
    ``grid``: the times looks fall on, shared with the agent's other tailers.
    """

    def __init__(
        self, options: TailerOptions | None = None, *, root: str | None = None, grid: Grid | None = None
    ) -> None:
        self._options = options or TailerOptions()
        self._root = root
        self._grid = grid or Grid()
        self._follows: dict[str, _Followed] = {}
        self._by_path: dict[str, set[str]] = {}
        self._ready: deque[str] = deque()
        self._ready_set: set[str] = set()
        self._due: list[tuple[float, int, str]] = []  # (when, order, key), a heap
        self._due_order = itertools.count()
        self._tick: asyncio.TimerHandle | None = None
        self._closed = False
        self._watched: frozenset[str] = frozenset()
        self._standing_in = False  # an ancestor is watched in place of a missing directory
        self._consumer_wake: anyio.Event | None = None
        self._watcher = make_watcher(self._on_change, self._on_rescan, self._options.watch)

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
        self._follows[key] = followed = _Followed(key, full)
        self._by_path.setdefault(full, set()).add(key)
        self._update_watch()
        self._changed(followed)  # the file may already hold output, its last write under way

    def forget(self, key: str) -> None:
        """Stop following ``key`` without reading further; unknown keys are ignored."""
        followed = self._drop(key)
        if followed is not None:
            followed.close()

    async def drain(
        self, key: str, *, trailer_timeout: float = 0.0, confirms: Callable[[ExitInfo], bool] | None = None
    ) -> AsyncIterator[TailEvent | Final]:
        """Read the file to its end now and stop following it: the rest as events, then ``Final``.

        The rest comes in chunks of at most ``chunk_size`` bytes (a snapshot when more than
        ``backlog_limit`` are unread), so memory stays flat however much a task wrote just
        before it ended; ``Final.remaining`` is only what the closing-line rule held back. With
        ``trailer_timeout`` > 0, first wait up to that many seconds for the CLI's closing line to
        appear. ``confirms``: whether a closing line is the one the task's end had Claude Code
        write (a command may print one of its own); one that is not is output, and the wait goes
        on for the real one. Raises ``KeyError`` for a key that is not followed.
        """
        followed = self._follows[key]
        if followed.fd is None and not followed.refused:
            self._open(followed)
        if trailer_timeout > 0 and followed.fd is not None:
            await self._await_closing_line(followed, trailer_timeout, confirms)
            if self._follows.get(key) is not followed:
                raise KeyError(key)
        self._drop(key)
        try:
            while (event := self._drain_step(followed)) is not None:
                yield event
            rest, exit_info = followed.gate.close(confirms)
            yield Final(key, followed.pending + rest, exit_info)
        finally:
            followed.close()

    # -- consuming ---------------------------------------------------------------------------

    async def receive(self) -> list[TailEvent]:
        """The events of every key that is ready (at least one); raises ``anyio.EndOfStream``
        once closed."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            batch = self._collect(_now())
            if batch:
                return batch
            if self._closed:
                raise anyio.EndOfStream
            if self._consumer_wake is None or self._consumer_wake.is_set():
                self._consumer_wake = anyio.Event()  # shared, should two tasks wait at once
            await self._consumer_wake.wait()

    def __aiter__(self) -> OutputTailer:
        return self

    async def __anext__(self) -> list[TailEvent]:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    # -- lifecycle ---------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch directories until :meth:`close`; meant for ``task_group.start``."""
        try:
            await self._watcher.run(task_status=task_status)
        finally:
            self.close()

    def close(self) -> None:
        """Stop watching, end the event stream and release every file."""
        self._closed = True
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        self._due.clear()
        self._watcher.close()
        for followed in self._follows.values():
            followed.close()
        self._follows.clear()
        self._by_path.clear()
        self._ready.clear()
        self._ready_set.clear()
        self._wake_consumer()

    @property
    def watched_dirs(self) -> frozenset[str]:
        """The directories being watched (for tests and diagnostics)."""
        return self._watched

    # -- reading (all synchronous: no await between a look at a file and what it decides) ----

    def _collect(self, now: float) -> list[TailEvent]:
        """One look at each key that is ready."""
        batch: list[TailEvent] = []
        looks = len(self._ready)
        for _ in range(looks):  # keys marked again meanwhile wait for the next batch
            key = self._ready.popleft()
            self._ready_set.discard(key)
            followed = self._follows.get(key)
            if followed is None:
                continue
            try:
                event = self._look(followed, now)
            except OSError:
                log.warning("cannot read output file %s", followed.path, exc_info=True)
                continue
            if event is not None:
                batch.append(event)
        self._grid.looked(now, looks)
        return batch

    def _look(self, followed: _Followed, now: float) -> TailEvent | None:
        """Read what is new (up to ``chunk_size``) and hand out what may go now."""
        if followed.fd is None and (followed.refused or not self._open(followed)):
            return None
        assert followed.fd is not None
        size = os.fstat(followed.fd).st_size
        if size < followed.offset:
            followed.restart()
            self._mark_ready(followed.key)
            return Reset(followed.key)
        event = _read(followed, size, self._options)
        if followed.offset < size:
            self._mark_ready(followed.key)  # more to read: at once, in the next batch
            return self._with_pending(followed, event)
        grace = followed.gate.grace()
        if grace is None:
            return self._with_pending(followed, event)
        release_at = followed.changed_at + grace
        if isinstance(event, Snapshot):
            self._look_at(followed, release_at)  # its tail goes out later, as a chunk
            return event
        if event is not None:
            if not followed.pending:
                followed.unsent_since = now
            followed.pending += event.data
        if now >= release_at - TIMER_SLACK:
            followed.pending += followed.gate.release()
            return self._with_pending(followed, None)
        # The tail must wait, and what is before it waits with it, a little, to go out whole.
        if not followed.pending:
            self._look_at(followed, release_at)
            return None
        send_by = followed.unsent_since + LINE_GRACE
        if now >= send_by - TIMER_SLACK:
            self._look_at(followed, release_at)
            return self._with_pending(followed, None)
        self._look_at(followed, min(release_at, send_by))
        return None

    @staticmethod
    def _with_pending(followed: _Followed, event: Chunk | Snapshot | None) -> Chunk | Snapshot | None:
        """``event`` with the output held back before it (a snapshot replaces that too)."""
        if isinstance(event, Snapshot) or not followed.pending:
            followed.pending = b""
            return event
        data = followed.pending + event.data if event is not None else followed.pending
        followed.pending = b""
        return Chunk(followed.key, data)

    def _look_at(self, followed: _Followed, when: float) -> None:
        """Have a look at ``followed`` at the first tick from ``when``, unless one is due before."""
        step = self._grid.step
        when = math.ceil(when / step - TIMER_SLACK) * step
        if followed.due is not None and followed.due <= when:
            return
        followed.due = when
        heapq.heappush(self._due, (when, next(self._due_order), followed.key))
        self._arm(when)

    def _arm(self, when: float) -> None:
        """Tick at ``when`` unless a tick comes before. Changes wait for a tick that is at most one
        step of the grid away; before a later one, they wake the loop as they come."""
        tick = self._tick
        if tick is not None:
            if tick.when() <= when:
                return
            tick.cancel()
        self._tick = asyncio.get_running_loop().call_at(when, self._on_tick)
        self._watcher.hold(when <= _now() + self._grid.step + TIMER_SLACK)

    def _on_tick(self) -> None:
        """Collect the changes that came since the last tick, and mark the keys now due."""
        self._tick = None
        self._watcher.collect()
        now = _now()
        due = self._due
        while due and due[0][0] <= now + TIMER_SLACK:
            when, _, key = heapq.heappop(due)
            followed = self._follows.get(key)
            if followed is not None and followed.due == when:
                followed.due = None
                self._mark_ready(key)
        if due:
            self._arm(due[0][0])
        elif self._tick is None:
            self._watcher.hold(False)

    def _open(self, followed: _Followed) -> bool:
        try:
            followed.fd = open_output(followed.path, self._root)
        except (FileNotFoundError, NotADirectoryError):
            return False  # not there yet: its creation is a change
        except NotOutput as exc:
            followed.refused = True
            log.warning("not reading %s for %s: %s", followed.path, followed.key, exc.strerror)
            return False
        return True

    def _drain_step(self, followed: _Followed) -> TailEvent | None:
        """The next piece of a file being drained; None at its end."""
        try:
            while followed.fd is not None:
                size = os.fstat(followed.fd).st_size
                if size < followed.offset:
                    followed.restart()
                    return Reset(followed.key)
                if followed.offset >= size:
                    return None
                event = self._with_pending(followed, _read(followed, size, self._options))
                if event is not None:
                    return event
        except OSError:
            log.warning("cannot read output file %s", followed.path, exc_info=True)
        return None

    async def _await_closing_line(
        self, followed: _Followed, timeout: float, confirms: Callable[[ExitInfo], bool] | None
    ) -> None:
        with anyio.move_on_after(timeout):
            while not self._has_closing_line(followed, confirms):
                followed.changed = anyio.Event()
                await followed.changed.wait()

    @staticmethod
    def _has_closing_line(followed: _Followed, confirms: Callable[[ExitInfo], bool] | None) -> bool:
        if followed.fd is None:
            return False
        try:
            tail, whole = latest(followed.fd, MAX_TRAILER)
        except OSError:
            return False
        gate = TrailerGate(at_start=whole)
        gate.feed(tail)
        return gate.close(confirms)[1] is not None

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
        self._update_watch()
        return followed

    def _mark_ready(self, key: str) -> None:
        if key not in self._ready_set:
            self._ready_set.add(key)
            self._ready.append(key)
        self._wake_consumer()

    def _wake_consumer(self) -> None:
        if self._consumer_wake is not None:
            self._consumer_wake.set()

    # -- watching ----------------------------------------------------------------------------

    def _update_watch(self) -> None:
        if self._closed:
            return
        parents = {os.path.dirname(f.path) for f in self._follows.values()}
        dirs = frozenset(_nearest_dir(parent) for parent in parents)
        self._standing_in = not dirs <= parents
        if dirs != self._watched:
            self._watched = dirs
            self._watcher.watch(dirs)

    def _on_change(self, path: str) -> None:
        keys = self._by_path.get(path)
        if keys is not None:
            for key in keys:
                self._changed(self._follows[key])
        elif self._standing_in or path in self._watched:
            # A missing directory may have appeared, or a watched one gone: look again.
            self._on_rescan()

    def _changed(self, followed: _Followed) -> None:
        followed.changed_at = now = _now()
        self._look_at(followed, now + LINE_GRACE)
        if followed.changed is not None:
            followed.changed.set()

    def _on_rescan(self) -> None:
        """Changes may have been missed: look at every file."""
        self._update_watch()
        for key, followed in self._follows.items():
            self._mark_ready(key)
            if followed.changed is not None:
                followed.changed.set()
