"""The tailer against real files in temporary directories, with both real watchers (inotify
and watchfiles).

Tests wait for events (with a timeout), never sleep to synchronise. A ``Screen`` applies events
the way an editor's terminal would, so each test states what the editor ends up showing.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import watchfiles

from claude_bg_acp.claude.conventions import KILLED_SIGNAL, ExitInfo
from claude_bg_acp.output import watch
from claude_bg_acp.output.tail import (
    BUSY_TICK,
    TICK,
    Chunk,
    Final,
    Grid,
    OutputTailer,
    Reset,
    Snapshot,
    TailerOptions,
    TailEvent,
)
from claude_bg_acp.output.watch import WatchOptions

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["inotify", "watchfiles"])
def watching(request: pytest.FixtureRequest) -> WatchOptions:
    return WatchOptions(backend=request.param)


@asynccontextmanager
async def open_tailer(options: TailerOptions, root: Path | None = None) -> AsyncIterator[OutputTailer]:
    """A running tailer, closed on exit (as the session host runs one)."""
    tailer = OutputTailer(options, root=None if root is None else str(root))
    async with anyio.create_task_group() as tg:
        await tg.start(tailer.run)
        try:
            yield tailer
        finally:
            tailer.close()


@dataclass
class Finished:
    """What ``drain`` handed out after the task ended, gathered."""

    remaining: bytes
    exit: ExitInfo | None
    snapshot: bool
    """The rest replaces what was shown (the consumer was far behind, or the file restarted)."""


async def finish(tailer: OutputTailer, key: str, trailer_timeout: float = 0.0) -> Finished:
    parts: list[bytes] = []
    snapshot = False
    async for event in tailer.drain(key, trailer_timeout=trailer_timeout):
        if isinstance(event, (Snapshot, Reset)):
            parts.clear()
            snapshot = True
        if isinstance(event, (Chunk, Snapshot)):
            parts.append(event.data)
        if isinstance(event, Final):
            return Finished(b"".join(parts) + event.remaining, event.exit, snapshot)
    raise AssertionError("drain ended without a Final")


@pytest.fixture
async def tailer(watching: WatchOptions, tmp_path: Path) -> AsyncIterator[OutputTailer]:
    async with open_tailer(TailerOptions(watch=watching), tmp_path) as running:
        yield running


class Screen:
    """What an editor shows per key after applying the events it received."""

    def __init__(self) -> None:
        self.shown: dict[str, bytearray] = {}
        self.events: list[TailEvent] = []

    def apply_all(self, batch: list[TailEvent]) -> None:
        assert len({event.key for event in batch}) == len(batch), "two events of one key in a batch"
        for event in batch:
            self.apply(event)

    def apply(self, event: TailEvent) -> None:
        self.events.append(event)
        shown = self.shown.setdefault(event.key, bytearray())
        if isinstance(event, Chunk):
            shown += event.data
        elif isinstance(event, (Snapshot, Reset)):
            shown[:] = event.data if isinstance(event, Snapshot) else b""

    def of(self, key: str) -> bytes:
        return bytes(self.shown.get(key, b""))

    def kinds(self, key: str) -> list[type]:
        return [type(event) for event in self.events if event.key == key]


async def next_batch(tailer: OutputTailer, timeout: float = TIMEOUT) -> list[TailEvent]:
    with anyio.fail_after(timeout):
        return await tailer.receive()


async def show_until(tailer: OutputTailer, screen: Screen, key: str, expected: bytes) -> None:
    """Apply events until ``key`` shows at least as many bytes as ``expected``; compare."""
    with anyio.fail_after(TIMEOUT):
        while len(screen.of(key)) < len(expected):
            screen.apply_all(await tailer.receive())
    assert screen.of(key) == expected


async def receive_until(tailer: OutputTailer, screen: Screen, kind: type) -> TailEvent:
    with anyio.fail_after(TIMEOUT):
        while True:
            batch = await tailer.receive()
            screen.apply_all(batch)
            found = [event for event in batch if isinstance(event, kind)]
            if found:
                return found[0]


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


async def test_file_and_directories_created_after_follow(tailer: OutputTailer, tmp_path: Path) -> None:
    folder = tmp_path / "later" / "tasks"
    path = folder / "t1.output"
    tailer.follow("t1", path)
    screen = Screen()
    folder.mkdir(parents=True)
    append(path, b"first")
    await show_until(tailer, screen, "t1", b"first")
    append(path, b" second")  # only arrives if the watcher moved down to the new folder
    await show_until(tailer, screen, "t1", b"first second")
    assert tailer.watched_dirs == {str(folder)}


async def test_many_small_writes_arrive_byte_exact(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    path.touch()
    tailer.follow("t", path)
    pieces = [b"plain ", b"\xff", b"\xc3", b"\xa9 ", b"\x1b[", b"31", b"m", b"red\x1b[0m", b"\r\n"]
    expected = b"".join(pieces) * 40

    async def write() -> None:
        for _ in range(40):
            for piece in pieces:
                append(path, piece)
                await anyio.sleep(0.0005)  # pacing the writer, not synchronising

    screen = Screen()
    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        await show_until(tailer, screen, "t", expected)  # the last newline too, once quiet
    final = await finish(tailer, "t")
    assert final.remaining == b""
    assert final.exit is None
    assert len(screen.kinds("t")) > 1


async def test_a_quiet_shells_last_line_arrives_whole_in_one_chunk(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"listening on :3000\n")  # and then nothing, for as long as the server runs
    await show_until(tailer, screen, "t", b"listening on :3000\n")
    assert screen.events == [Chunk("t", b"listening on :3000\n")]
    append(path, b"GET /\n")
    await show_until(tailer, screen, "t", b"listening on :3000\nGET /\n")
    assert screen.events[1:] == [Chunk("t", b"GET /\n")]
    append(path, b"\n[exited with code 0]\n")
    final = await finish(tailer, "t", trailer_timeout=TIMEOUT)
    assert final.remaining == b""
    assert final.exit == ExitInfo(exit_code=0, signal=None)


async def test_a_possible_start_of_a_closing_line_is_released_after_its_grace(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"progress\n[k")  # could be Claude Code's "\n[killed]\n", half written
    await show_until(tailer, screen, "t", b"progress\n[k")
    append(path, b"illed by nobody]\n[exited with code 0]\n")  # a whole closing line, last
    await show_until(tailer, screen, "t", b"progress\n[killed by nobody]")
    final = await finish(tailer, "t")
    assert screen.of("t") + final.remaining == b"progress\n[killed by nobody]"
    assert final.exit == ExitInfo(exit_code=0, signal=None)


@pytest.mark.parametrize("split", range(1, len(b"\n[exited with code 17]\n")))
async def test_every_split_of_the_closing_line_stays_hidden(
    tailer: OutputTailer, tmp_path: Path, split: int
) -> None:
    """Claude Code writes its closing line in one write(); a reader may still catch it half
    written. Whatever part shows, the line never reaches the screen and is parsed."""
    closing = b"\n[exited with code 17]\n"
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"out")
    await show_until(tailer, screen, "t", b"out")
    append(path, closing[:split])
    append(path, closing[split:])  # within the grace, but for scheduling (see below)
    final = await finish(tailer, "t")
    shown = screen.of("t") + final.remaining
    # A lone newline is released after only LINE_GRACE; if this test was descheduled that long
    # between the two writes, the editor shows that newline, and never the rest.
    assert shown == b"out" or (split == 1 and shown == b"out\n")
    assert final.exit == ExitInfo(exit_code=17, signal=None)


async def test_chunks_respect_the_size_budget_and_split_sequences(
    watching: WatchOptions, tmp_path: Path
) -> None:
    path = tmp_path / "t.output"
    data = (b"\xe2\x82\xac \x1b[1;31mbold\x1b[0m \xff\xfe" * 5000)[:100_003]
    path.write_bytes(data)
    async with open_tailer(TailerOptions(chunk_size=1000, watch=watching)) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        await show_until(tailer, screen, "t", data)
    chunks = [e for e in screen.events if isinstance(e, Chunk)]
    assert all(0 < len(chunk.data) <= 1000 for chunk in chunks)
    assert len(chunks) >= 100


async def test_truncation_resets(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"a long first line")
    await show_until(tailer, screen, "t", b"a long first line")
    path.write_bytes(b"new")
    await receive_until(tailer, screen, Reset)
    await show_until(tailer, screen, "t", b"new")


async def test_a_replaced_path_does_not_change_what_is_read(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    with path.open("ab", buffering=0) as shell:  # the shell keeps writing to the file it opened
        tailer.follow("t", path)
        screen = Screen()
        shell.write(b"old content")
        await show_until(tailer, screen, "t", b"old content")
        other = tmp_path / "t.tmp"
        other.write_bytes(b"a replacement that is not the shell's output")
        os.replace(other, path)
        shell.write(b", still the shell")
        await show_until(tailer, screen, "t", b"old content, still the shell")
    final = await finish(tailer, "t")
    assert final.remaining == b""
    assert Reset not in screen.kinds("t")


async def test_a_deleted_file_is_read_to_its_end_and_nothing_breaks(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    gone, kept = tmp_path / "gone.output", tmp_path / "kept.output"
    with gone.open("ab", buffering=0) as shell:
        tailer.follow("gone", gone)
        tailer.follow("kept", kept)
        screen = Screen()
        shell.write(b"bytes before the delete")
        await show_until(tailer, screen, "gone", b"bytes before the delete")
        gone.unlink()
        shell.write(b", and after")  # the shell does not know
        append(kept, b"still relayed")
        await show_until(tailer, screen, "kept", b"still relayed")
        append(gone, b"a new file at the path")  # not the shell's output
        await show_until(tailer, screen, "gone", b"bytes before the delete, and after")
    final = await finish(tailer, "gone")
    assert final.remaining == b""
    assert final.exit is None


async def test_a_symbolic_link_put_in_place_of_the_output_reaches_nothing(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    """Issue 8, defect 3: the tailer read the target of a link put at the output's path."""
    secret = tmp_path.parent / f"{tmp_path.name}-secret.txt"  # outside the task directory
    secret.write_bytes(b"root:x:0:0:SECRET\n")
    path = tmp_path / "t.output"
    with path.open("ab", buffering=0) as shell:
        tailer.follow("t", path)
        screen = Screen()
        shell.write(b"before\n")
        await show_until(tailer, screen, "t", b"before\n")
        path.unlink()
        path.symlink_to(secret)
        shell.write(b"after\n")
        await show_until(tailer, screen, "t", b"before\nafter\n")
    final = await finish(tailer, "t", trailer_timeout=0.2)
    assert screen.of("t") + final.remaining == b"before\nafter\n"
    assert b"SECRET" not in b"".join(e.data for e in screen.events if isinstance(e, (Chunk, Snapshot)))


@pytest.mark.parametrize("kind", ["transcript link", "fifo", "outside the task directory", "link on the way"])
async def test_what_is_not_a_tasks_own_output_is_never_read(
    watching: WatchOptions, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "claude-0"
    tasks = root / "cwd" / "session" / "tasks"
    tasks.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data").write_bytes(b"SECRET\n")
    path = tasks / "t.output"
    if kind == "transcript link":  # Claude Code links a subagent's transcript this way
        path.symlink_to(elsewhere / "data")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link on the way":  # a directory of the task directory's that leads out
        (root / "cwd" / "linked").symlink_to(elsewhere, target_is_directory=True)
        (elsewhere / "t.output").write_bytes(b"SECRET\n")
        path = root / "cwd" / "linked" / "t.output"
    else:
        (elsewhere / "t.output").write_bytes(b"SECRET\n")
        path = elsewhere / "t.output"
    async with open_tailer(TailerOptions(watch=watching), root) as tailer:
        tailer.follow("t", path)
        tailer.follow("ok", tasks / "ok.output")
        append(tasks / "ok.output", b"fine\n")
        screen = Screen()
        await show_until(tailer, screen, "ok", b"fine\n")
        final = await finish(tailer, "t", trailer_timeout=0.1)
    assert screen.kinds("t") == []
    assert final == Finished(b"", None, snapshot=False)
    assert f"not reading {path}" in caplog.text


async def test_two_hundred_files_in_one_directory_come_in_batches(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    paths = {f"task{i}": tmp_path / f"task{i}.output" for i in range(200)}
    for key, path in paths.items():
        tailer.follow(key, path)
    for key, path in paths.items():
        append(path, key.encode() + b" says hi\n")
    screen = Screen()
    batches = 0
    with anyio.fail_after(TIMEOUT):
        while any(screen.of(key) != key.encode() + b" says hi\n" for key in paths):
            screen.apply_all(await tailer.receive())
            batches += 1
    assert batches < 200
    assert tailer.watched_dirs == {str(tmp_path)}


async def test_slow_consumer_gets_a_snapshot_then_chunks(watching: WatchOptions, tmp_path: Path) -> None:
    options = TailerOptions(backlog_limit=256 * 1024, snapshot_size=16 * 1024, watch=watching)
    path = tmp_path / "t.output"
    async with open_tailer(options) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"early\n")
        await show_until(tailer, screen, "t", b"early\n")
        # The consumer does not take anything while 1 MiB is written.
        data = bytes(range(256)) * 4096 + b"end"
        append(path, data)
        assert await next_batch(tailer) == [Snapshot("t", data[-16 * 1024 :])]
        append(path, b" and on")
        assert await next_batch(tailer) == [Chunk("t", b" and on")]


async def test_finish_right_after_the_last_write_loses_nothing(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"line one\n")
    await show_until(tailer, screen, "t", b"line one\n")
    append(path, b"line two\n" * 1000 + b"last words\n\n[killed]\n")
    final = await finish(tailer, "t")  # no await between the write and the finish
    assert screen.of("t") + final.remaining == b"line one\n" + b"line two\n" * 1000 + b"last words\n"
    assert final.exit == ExitInfo(exit_code=None, signal=KILLED_SIGNAL)


async def test_finish_can_wait_for_the_closing_line(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    append(path, b"done\n")

    async def close_later() -> None:
        await anyio.sleep(0.05)  # the CLI writes its closing line a little after the end
        append(path, b"\n[exited with code 0]\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(close_later)
        final = await finish(tailer, "t", trailer_timeout=TIMEOUT)
    assert final.remaining == b"done\n"
    assert final.exit == ExitInfo(exit_code=0, signal=None)


async def test_finish_far_behind_returns_a_snapshot(watching: WatchOptions, tmp_path: Path) -> None:
    options = TailerOptions(backlog_limit=64 * 1024, snapshot_size=4096, watch=watching)
    path = tmp_path / "t.output"
    closing = b"\n[exited with code 1]\n"
    path.write_bytes(b"x" * 200_000 + closing)
    async with open_tailer(options) as tailer:
        tailer.follow("t", path)
        final = await finish(tailer, "t")
    assert final.snapshot
    assert final.remaining == b"x" * (4096 - len(closing))
    assert final.exit == ExitInfo(exit_code=1, signal=None)


async def test_forgotten_key_gets_no_more_events(tailer: OutputTailer, tmp_path: Path) -> None:
    dropped, kept = tmp_path / "dropped.output", tmp_path / "kept.output"
    tailer.follow("dropped", dropped)
    tailer.follow("kept", kept)
    tailer.forget("dropped")
    append(dropped, b"nobody listens")
    append(kept, b"hello")
    assert await next_batch(tailer) == [Chunk("kept", b"hello")]
    with pytest.raises(KeyError):
        await finish(tailer, "dropped")


async def test_first_write_after_a_quiet_spell(watching: WatchOptions, tmp_path: Path) -> None:
    options = TailerOptions(watch=WatchOptions(backend=watching.backend, idle_after=0.1, idle_step_ms=5))
    path = tmp_path / "t.output"
    async with open_tailer(options) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        for round_ in range(3):
            await anyio.sleep(0.3)  # let the watcher go quiet; this is the precondition
            append(path, b"%d," % round_)
            await show_until(tailer, screen, "t", b"0,1,2,"[: 2 * (round_ + 1)])


async def test_close_ends_the_event_stream(tmp_path: Path) -> None:
    tailer = OutputTailer()
    async with anyio.create_task_group() as tg:
        await tg.start(tailer.run)
        tailer.follow("t", tmp_path / "t.output")
        tailer.close()
    with pytest.raises(anyio.EndOfStream):
        await tailer.receive()
    assert [batch async for batch in tailer] == []


async def test_watched_directory_deleted_and_made_again(tailer: OutputTailer, tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    first, second = folder / "t.output", folder / "u.output"
    tailer.follow("t", first)
    tailer.follow("u", second)
    screen = Screen()
    append(first, b"before")
    await show_until(tailer, screen, "t", b"before")
    first.unlink()
    folder.rmdir()
    with anyio.fail_after(TIMEOUT):
        while tailer.watched_dirs != {str(tmp_path)}:  # the parent stands in for the folder
            await anyio.sleep(0.01)
    folder.mkdir()
    append(second, b"after")
    await show_until(tailer, screen, "u", b"after")
    append(second, b" and more")  # arrives only if the folder is watched again
    await show_until(tailer, screen, "u", b"after and more")


async def test_a_failing_watchfiles_watcher_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[tuple[Any, ...]] = []

    def flaky_awatch(*args: Any, **kwargs: Any) -> Any:
        if not failures:
            failures.append(args)
            raise PermissionError("simulated")
        return original(*args, **kwargs)

    original = watchfiles.awatch
    monkeypatch.setattr("watchfiles.awatch", flaky_awatch)
    path = tmp_path / "t.output"
    watch = WatchOptions(backend="watchfiles", retry_interval=0.05)
    async with open_tailer(TailerOptions(watch=watch)) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"one")
        await show_until(tailer, screen, "t", b"one")
        append(path, b" two")  # arrives with the rescan after the retry, at the latest
        await show_until(tailer, screen, "t", b"one two")
        append(path, b" three")  # needs the watcher started on retry
        await show_until(tailer, screen, "t", b"one two three")
    assert failures


# --- when the kernel's inotify resources are used up ------------------------------------------------
# The user's inotify watches and instances are shared with every other program; using them up
# here would starve the rest of the machine, so a stand-in libc refuses them (hand-written: the
# real limits cannot be reached safely from a test).


class RefusingLibc:
    """The real libc's inotify calls, refusing ``inotify_add_watch`` ``refusals`` times."""

    def __init__(self, real: Any, refusals: int) -> None:
        self._real = real
        self.refusals = refusals
        self.inotify_init1 = real.inotify_init1
        self.inotify_rm_watch = real.inotify_rm_watch
        self.given_back = anyio.Event()  # the last refusal is over

    def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
        if self.refusals > 0:
            self.refusals -= 1
            if not self.refusals:
                self.given_back.set()
            ctypes.set_errno(errno.ENOSPC)
            return -1
        result: int = self._real.inotify_add_watch(fd, path, mask)
        return result


async def test_directories_the_kernel_will_not_watch_are_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = watch._libc()
    libc = RefusingLibc(real, refusals=30)  # the first few looks find no watch left either
    monkeypatch.setattr(watch, "_libc", lambda: libc)
    path = tmp_path / "task" / "t.output"
    path.parent.mkdir()
    async with open_tailer(TailerOptions(watch=WatchOptions(backend="inotify", poll_ms=5))) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"one\n")
        await show_until(tailer, screen, "t", b"one\n")
        assert libc.refusals > 0  # seen by polling, with the directory still refused
        with anyio.fail_after(TIMEOUT):  # the watches come back: the directory is watched again
            await libc.given_back.wait()
        append(path, b"two\n")
        await show_until(tailer, screen, "t", b"one\ntwo\n")
    assert screen.kinds("t") == [Chunk, Chunk]


async def test_without_an_inotify_descriptor_output_files_are_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoDescriptor:
        def inotify_init1(self, flags: int) -> int:
            ctypes.set_errno(errno.EMFILE)
            return -1

    monkeypatch.setattr(watch, "_libc", NoDescriptor)
    polled: list[bool] = []

    def recording_awatch(*args: Any, **kwargs: Any) -> Any:
        polled.append(kwargs["force_polling"])
        return original(*args, **kwargs)

    original = watchfiles.awatch
    monkeypatch.setattr("watchfiles.awatch", recording_awatch)
    path = tmp_path / "t.output"
    async with open_tailer(TailerOptions(watch=WatchOptions(poll_ms=5))) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"polled\n")
        await show_until(tailer, screen, "t", b"polled\n")
    assert polled and all(polled)


# --- the grid looks fall on -----------------------------------------------------------------------


def looks_at_rate(grid: Grid, per_second: float, seconds: float, start: float = 0.0) -> float:
    """One look every 1/per_second s from ``start``; returns when the last one was."""
    now = start
    for _ in range(int(per_second * seconds)):
        grid.looked(now, 1)
        now += 1 / per_second
    return now


def test_the_grid_is_fine_for_one_chatty_shell() -> None:
    grid = Grid()
    looks_at_rate(grid, per_second=100, seconds=2)  # a line every 10 ms (bench_output's latency run)
    assert grid.step == TICK


def test_the_grid_coarsens_while_hundreds_of_files_are_written_and_comes_back() -> None:
    grid = Grid()
    end = looks_at_rate(grid, per_second=2000, seconds=1)  # 200 shells, a line every 100 ms each
    assert grid.step == BUSY_TICK
    end = looks_at_rate(grid, per_second=100, seconds=0.3, start=end)  # most of them stopped
    assert grid.step == TICK
    end = looks_at_rate(grid, per_second=2000, seconds=0.3, start=end)
    assert grid.step == BUSY_TICK
    grid.looked(end + 5.0, 1)  # a line after seconds of silence: the busy past does not count
    assert grid.step == TICK
