"""Reopening a stored session fast (issue 31): Claude Code starts at once when the
conversation's transcript is where Claude Code keeps those of the client's folder (one look,
``conventions.transcript_file``, ``store_files.holds_something``), and decoding a transcript
and replaying it spare Python's cycle collector (``store.transcript_entries``,
``store.spared_by_collector``)."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path
from unittest import mock

import pytest

from claude_bg_acp.claude import conventions, store, store_files
from claude_bg_acp.claude.sdk_private import resolve_session_file
from claude_bg_acp.session import replay
from tests.conftest import LiveModel, run_live
from tests.support.driver import CWD, RECORDED_SESSION, load_frames, store_recorded
from tests.support.stdio_agent import StdioAgent

SESSION = "3f0a1c52-9d7e-4b8a-a1c2-0123456789ab"


@pytest.mark.parametrize("name", ["work", "my project.v2", "with_under-score", "é-accent"])
def test_the_transcript_is_looked_for_where_claude_code_keeps_it(tmp_path: Path, name: str) -> None:
    """Where the SDK's own reader finds it (the SDK mirrors Claude Code's layout), for a folder
    named through a link too."""
    folder = tmp_path / "real" / name
    folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with mock.patch.dict(os.environ, {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}):
        found = conventions.transcript_file(SESSION, str(folder))
        assert found is not None
        Path(found).parent.mkdir(parents=True)
        Path(found).write_text('{"type":"user"}\n')
        for named in (folder, tmp_path / "link" / name):
            assert conventions.transcript_file(SESSION, str(named)) == str(
                resolve_session_file(SESSION, str(named))
            )


def test_a_long_folder_name_or_an_id_that_is_no_uuid_is_not_looked_for(tmp_path: Path) -> None:
    assert conventions.transcript_file(SESSION, "/" + "x" * 250) is None
    assert conventions.transcript_file("../../etc/passwd", str(tmp_path)) is None


def test_only_a_regular_file_with_something_in_it_holds_a_conversation(tmp_path: Path) -> None:
    full, empty, fifo, link = (tmp_path / name for name in ("full", "empty", "fifo", "link"))
    full.write_text("x")
    empty.write_text("")
    os.mkfifo(fifo)
    link.symlink_to(full)
    assert [store_files.holds_something(str(p)) for p in (full, empty, fifo, link, tmp_path / "no")] == [
        True,
        False,
        False,
        False,
        False,
    ]


@pytest.mark.parametrize("enabled", [True, False])
def test_decoding_a_transcript_leaves_the_collector_as_it_was(enabled: bool) -> None:
    seen: list[bool] = []

    def decoded(line: bytes) -> dict[str, str]:
        seen.append(gc.isenabled())
        return {}

    content = b'{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}\n'
    with mock.patch.object(store, "_decoded", side_effect=decoded):
        (gc.enable if enabled else gc.disable)()
        try:
            store.transcript_entries(content)
            after = gc.isenabled()
        finally:
            gc.enable()
    assert seen == [False] and after is enabled


def test_the_collector_stays_paused_while_any_thread_decodes() -> None:
    """Two transcripts decoded at once (the store's threads): the collector is back on only
    once both are done."""
    inside, release = threading.Event(), threading.Event()
    states: list[bool] = []

    def slow(line: bytes) -> dict[str, str]:
        inside.set()
        release.wait(10)
        return {}

    with mock.patch.object(store, "_decoded", side_effect=slow):
        other = threading.Thread(target=store.transcript_entries, args=(b"{}\n",))
        other.start()
        inside.wait(10)
        with mock.patch.object(store, "_decoded", return_value={}):
            store.transcript_entries(b"{}\n")
        states.append(gc.isenabled())
        release.set()
        other.join(10)
    states.append(gc.isenabled())
    assert states == [False, True]


def test_a_replay_leaves_its_transcript_out_of_the_collectors_passes_until_it_is_over(
    tmp_path: Path,
) -> None:
    """Frozen while the conversation is read in parts (two replays at once: until both are
    over); nothing stays frozen after."""
    with mock.patch.dict(os.environ, store_recorded(load_frames("conversation"), tmp_path)):
        first, second = (replay._parts(RECORDED_SESSION, CWD, 1) for _ in range(2))
        next(first)
        assert gc.get_freeze_count() > 0
        next(second)
        first.close()
        assert gc.get_freeze_count() > 0, "the other replay goes on"
        list(second)
    assert gc.get_freeze_count() == 0


@pytest.mark.live
def test_a_load_whose_claude_code_cannot_start_is_answered_as_an_error(
    live: LiveModel, workdir: Path
) -> None:
    """The transcript is in the folder's project, so Claude Code starts at once, before the
    store is looked at; its command line passes the system's limit (E2BIG): the load fails with
    why, and a load of the same session without that server then opens it."""
    session_id = run_live(
        live, workdir, "v1", [{"op": "prompt", "text": "[scenario:text] Hello?"}]
    ).session_id()
    assert conventions.transcript_file(session_id, str(workdir)) is not None
    variables = [{"name": f"VARIABLE_{i}", "value": "x" * 16} for i in range(20_000)]
    server = {"type": "stdio", "name": "big", "command": "/bin/true", "args": [], "env": variables}
    agent = StdioAgent(env=live.env, allow=True)
    try:
        agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        params = {"sessionId": session_id, "cwd": str(workdir), "mcpServers": [server]}
        error = agent.call(1, "session/load", params, timeout=60)["error"]
        assert error["code"] == -32603 and "Claude Code could not start" in error["message"], error
        assert "(E2BIG)" in error["message"]
        loaded = agent.call(2, "session/load", {**params, "mcpServers": []}, timeout=60)
        assert "modes" in loaded["result"]
    finally:
        assert agent.close() == 0
