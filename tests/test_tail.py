"""The tailer against real files in temporary directories, with a real watchfiles watcher.

Tests wait for events (with a timeout), never sleep to synchronise. A ``Screen`` applies events
the way an editor's terminal would, so each test states what the editor ends up showing.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import watchfiles

from claude_bg_acp.claude.conventions import KILLED_SIGNAL
from claude_bg_acp.tail import (
    Chunk,
    ExitInfo,
    Final,
    OutputTailer,
    Reset,
    Snapshot,
    TailerOptions,
    TailEvent,
    Vanished,
)

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def open_tailer(options: TailerOptions | None = None) -> AsyncIterator[OutputTailer]:
    """A running tailer, closed on exit (as the session host runs one)."""
    tailer = OutputTailer(options)
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
async def tailer() -> AsyncIterator[OutputTailer]:
    async with open_tailer() as running:
        yield running


class Screen:
    """What an editor shows per key after applying the events it received."""

    def __init__(self) -> None:
        self.shown: dict[str, bytearray] = {}
        self.events: list[TailEvent] = []

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


async def next_event(tailer: OutputTailer, timeout: float = TIMEOUT) -> TailEvent:
    with anyio.fail_after(timeout):
        return await tailer.receive()


async def show_until(tailer: OutputTailer, screen: Screen, key: str, expected: bytes) -> None:
    """Apply events until ``key`` shows at least as many bytes as ``expected``; compare."""
    with anyio.fail_after(TIMEOUT):
        while len(screen.of(key)) < len(expected):
            screen.apply(await tailer.receive())
    assert screen.of(key) == expected


async def receive_until(tailer: OutputTailer, screen: Screen, kind: type) -> TailEvent:
    with anyio.fail_after(TIMEOUT):
        while True:
            event = await tailer.receive()
            screen.apply(event)
            if isinstance(event, kind):
                return event


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
        await show_until(tailer, screen, "t", expected[:-1])  # the last \n may be a closing line
    final = await finish(tailer, "t")
    assert screen.of("t") + final.remaining == expected
    assert final.exit is None
    assert len(screen.kinds("t")) > 1


async def test_chunks_respect_the_size_budget_and_split_sequences(tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    data = (b"\xe2\x82\xac \x1b[1;31mbold\x1b[0m \xff\xfe" * 5000)[:100_003]
    path.write_bytes(data)
    async with open_tailer(TailerOptions(chunk_size=1000)) as tailer:
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


async def test_replacement_resets(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"old content")
    await show_until(tailer, screen, "t", b"old content")
    other = tmp_path / "t.tmp"
    other.write_bytes(b"replacement, longer than the old content")
    os.replace(other, path)
    await receive_until(tailer, screen, Reset)
    await show_until(tailer, screen, "t", b"replacement, longer than the old content")


async def test_deleted_file_is_reported_and_nothing_breaks(tailer: OutputTailer, tmp_path: Path) -> None:
    gone, kept = tmp_path / "gone.output", tmp_path / "kept.output"
    tailer.follow("gone", gone)
    tailer.follow("kept", kept)
    screen = Screen()
    append(gone, b"bytes before the delete")
    await show_until(tailer, screen, "gone", b"bytes before the delete")
    gone.unlink()
    assert isinstance(await receive_until(tailer, screen, Vanished), Vanished)
    append(kept, b"still relayed")
    await show_until(tailer, screen, "kept", b"still relayed")
    append(gone, b"again")  # a new file at the same path
    await receive_until(tailer, screen, Reset)
    await show_until(tailer, screen, "gone", b"again")
    final = await finish(tailer, "gone")
    assert final.exit is None


@pytest.mark.parametrize(
    ("closing", "exit_info"),
    [
        (b"\n[exited with code 3]\n", ExitInfo(exit_code=3, signal=None)),
        (b"\n[killed]\n", ExitInfo(exit_code=None, signal=KILLED_SIGNAL)),
    ],
)
async def test_closing_line_is_stripped_and_parsed(
    tailer: OutputTailer, tmp_path: Path, closing: bytes, exit_info: ExitInfo
) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"out\n")
    await show_until(tailer, screen, "t", b"out")
    append(path, closing)
    final = await finish(tailer, "t")
    assert screen.of("t") + final.remaining == b"out\n"
    assert final.exit == exit_info
    assert not final.snapshot


async def test_line_like_a_closing_line_followed_by_output_is_output(
    tailer: OutputTailer, tmp_path: Path
) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"a\n[exited with code 0]\n")
    await show_until(tailer, screen, "t", b"a")
    append(path, b"more")
    await show_until(tailer, screen, "t", b"a\n[exited with code 0]\nmore")
    final = await finish(tailer, "t")
    assert final.remaining == b""
    assert final.exit is None


async def test_two_hundred_files_in_one_directory(tailer: OutputTailer, tmp_path: Path) -> None:
    paths = {f"task{i}": tmp_path / f"task{i}.output" for i in range(200)}
    for key, path in paths.items():
        tailer.follow(key, path)
    for key, path in paths.items():
        append(path, key.encode() + b" says hi")
    screen = Screen()
    with anyio.fail_after(TIMEOUT):
        while any(screen.of(key) != key.encode() + b" says hi" for key in paths):
            screen.apply(await tailer.receive())
    assert tailer.watched_dirs == {str(tmp_path)}


async def test_slow_consumer_gets_a_snapshot_then_chunks(tmp_path: Path) -> None:
    options = TailerOptions(backlog_limit=256 * 1024, snapshot_size=16 * 1024)
    path = tmp_path / "t.output"
    async with open_tailer(options) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"early\n")
        await show_until(tailer, screen, "t", b"early")
        # The consumer does not take anything while 1 MiB is written.
        data = bytes(range(256)) * 4096 + b"end"
        append(path, data)
        event = await next_event(tailer)
        assert isinstance(event, Snapshot)
        assert event.data == data[-16 * 1024 :]
        append(path, b" and on")
        assert await next_event(tailer) == Chunk("t", b" and on")


async def test_finish_right_after_the_last_write_loses_nothing(tailer: OutputTailer, tmp_path: Path) -> None:
    path = tmp_path / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"line one\n")
    await show_until(tailer, screen, "t", b"line one")
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


async def test_finish_far_behind_returns_a_snapshot(tmp_path: Path) -> None:
    options = TailerOptions(backlog_limit=64 * 1024, snapshot_size=4096)
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
    assert await next_event(tailer) == Chunk("kept", b"hello")
    with pytest.raises(KeyError):
        await finish(tailer, "dropped")


async def test_first_write_after_a_quiet_spell(tmp_path: Path) -> None:
    options = TailerOptions(idle_after=0.1, idle_step_ms=5)
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
    assert [event async for event in tailer] == []


async def test_watched_directory_deleted_and_made_again(tailer: OutputTailer, tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    path = folder / "t.output"
    tailer.follow("t", path)
    screen = Screen()
    append(path, b"before")
    await show_until(tailer, screen, "t", b"before")
    path.unlink()
    folder.rmdir()
    await receive_until(tailer, screen, Vanished)
    folder.mkdir()
    append(path, b"after")
    await receive_until(tailer, screen, Reset)
    await show_until(tailer, screen, "t", b"after")
    append(path, b" and more")  # arrives only if the folder is watched again
    await show_until(tailer, screen, "t", b"after and more")


async def test_a_failing_watcher_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failures: list[tuple[Any, ...]] = []

    def flaky_awatch(*args: Any, **kwargs: Any) -> Any:
        if not failures:
            failures.append(args)
            raise PermissionError("simulated")
        return watchfiles.awatch(*args, **kwargs)

    monkeypatch.setattr("claude_bg_acp.tail.awatch", flaky_awatch)
    path = tmp_path / "t.output"
    async with open_tailer(TailerOptions(retry_interval=0.05)) as tailer:
        tailer.follow("t", path)
        screen = Screen()
        append(path, b"one")
        await show_until(tailer, screen, "t", b"one")
        append(path, b" two")  # arrives with the rescan after the retry, at the latest
        await show_until(tailer, screen, "t", b"one two")
        append(path, b" three")  # needs the watcher started on retry
        await show_until(tailer, screen, "t", b"one two three")
    assert failures
