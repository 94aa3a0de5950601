"""The store's file rules in the agent's process: a blocked read is bounded and starves nothing
else, what is no regular file is not opened, and a summary file too large is not loaded.
(Over the wire, with FIFOs and links in a real store: ``test_stdio_store``.)"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import anyio
import anyio.to_thread
import pytest

from claude_bg_acp.claude import store_files, summaries


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def stuck() -> Iterator[threading.Event]:
    """What a blocked ``open`` would be: work that returns only when the test lets it."""
    release = threading.Event()
    yield release
    release.set()


@pytest.mark.anyio
async def test_blocked_work_is_bounded_and_holds_no_common_worker_thread(stuck: threading.Event) -> None:
    for _ in range(store_files.THREADS):
        with pytest.raises(store_files.StoreTimeout):
            await store_files.run(lambda: stuck.wait(60), bound=0.2)
    # Every thread of the store's is held: its next piece of work waits its bound, and fails.
    with pytest.raises(store_files.StoreTimeout):
        await store_files.run(lambda: True, bound=0.2)
    # The event loop's own worker threads are free, and they are not what keeps the store busy.
    assert await anyio.to_thread.run_sync(lambda: True)
    assert all(t.daemon for t in threading.enumerate() if t.name == "claude-bg-acp store")
    stuck.set()
    with anyio.fail_after(10):
        while True:  # the released threads give their places back
            try:
                assert await store_files.run(lambda: 42, bound=0.2) == 42
                break
            except store_files.StoreTimeout:
                continue


def test_what_is_no_regular_file_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")
    for path in (fifo, link, tmp_path):
        assert not store_files.regular(str(path))
        with pytest.raises(store_files.NotRegular):
            store_files.open_regular(str(path))  # the FIFO: at once, not blocked


def test_a_summary_file_too_large_is_not_loaded_and_is_made_anew(tmp_path: Path) -> None:
    kept = tmp_path / "session-summaries.json"
    kept.write_bytes(b'{"format": 1, "summaries": {' + b" " * summaries.MAX_FILE + b"}}")
    with (
        mock.patch.object(summaries, "file", return_value=str(kept)),
        mock.patch.object(summaries, "_kept", OrderedDict()),
        mock.patch.object(summaries, "_seen", {}),
        mock.patch.object(summaries, "_changed", False),
    ):
        summaries.refresh()
        summaries.put("/t.jsonl", (1, 2), summaries.Summary(True, "/w", "A \ud800 title"))
        summaries.save()
        assert kept.stat().st_size < 200
        summaries._kept.clear()
        summaries._seen.clear()
        summaries.refresh()
        assert summaries.get("/t.jsonl", (1, 2)) == summaries.Summary(True, "/w", "A \ud800 title")
