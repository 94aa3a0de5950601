"""A replayed shell's card gets all the output Claude Code retained (issue 29, the RFD's last
rule), streamed: read piece by piece when the replay comes to the shell, under the live
tailer's backlog and closing-line rules.

The conversation is the real recorded one (``conversation``: a background shell that finished,
a thought, a background subagent), written where Claude Code keeps it; its shell's output file
is then made larger than a replay used to read back (256 KiB), or larger than the live tailer's
backlog limit (4 MiB), with characters split across the tailer's chunks and Claude Code's
closing line at its end. The live test has the real CLI's shell write it.
"""

from __future__ import annotations

import base64
import os
import tracemalloc
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.output.closing_line import MAX_TRAILER
from claude_bg_acp.output.tail import Final, OutputTailer, Snapshot, TailerOptions
from claude_bg_acp.presenters.live_output import LEFT_OUT
from claude_bg_acp.presenters.zed import SKIPPED
from claude_bg_acp.session import replay
from tests.conftest import LiveModel
from tests.conftest import run_live as run
from tests.support.driver import (
    CWD,
    RECORDED_SESSION,
    CoreDriver,
    check_transcript,
    load_frames,
    read_whole,
    store_recorded,
)

SHELL = "bash01"
OPTIONS = TailerOptions()
CLOSING = b"\n[exited with code 0]\n"
PAST_RECALL = 600 * 1024
"""More than a replay read back before (its last 256 KiB), less than the backlog limit."""
PAST_BACKLOG = OPTIONS.backlog_limit + 1024 * 1024


def output_of(size: int) -> bytes:
    """About ``size`` bytes of numbered lines of 1-, 2-, 3- and 4-byte characters: the tailer's
    chunk boundaries fall inside characters."""
    line_count = size // 24 + 1
    return b"".join(f"line-{n:07d} \u00e9\u20ac\U0001f600\n".encode() for n in range(line_count))[:size]


def stored(tmp_path: Path, data: bytes) -> tuple[ev.StoredConversation, Path]:
    """The recorded conversation, its shell's output file holding ``data`` then the closing line."""
    env = store_recorded(load_frames("conversation"), tmp_path, rename=True)
    with mock.patch.dict(os.environ, env):
        root = conventions.tasks_root(CWD)
        path = Path(conventions.output_file(root, RECORDED_SESSION, SHELL))
        path.write_bytes(data + CLOSING)
        return read_whole(), path


def pieces_of(conversation: ev.StoredConversation) -> list[ev.OutputRecalled]:
    return list(replay.output_pieces(conversation.outputs[SHELL]))


# --- the file, read as the live tailer reads one ----------------------------------------------


def test_a_file_past_256_kib_is_replayed_whole_in_pieces_of_a_chunk(tmp_path: Path) -> None:
    data = output_of(PAST_RECALL)
    conversation, _ = stored(tmp_path, data)
    pieces = pieces_of(conversation)
    assert b"".join(piece.data for piece in pieces) == data, "byte-exact, the closing line withheld"
    assert not any(piece.replaced for piece in pieces)
    assert [piece.end for piece in pieces] == [False] * (len(pieces) - 1) + [True]
    assert pieces[-1].exit == ExitInfo(0, None)
    assert len(pieces) >= PAST_RECALL // OPTIONS.chunk_size
    assert max(len(piece.data) for piece in pieces) <= OPTIONS.chunk_size + MAX_TRAILER


def test_a_file_past_the_backlog_limit_is_replayed_as_a_live_client_that_fell_behind_gets_it(
    tmp_path: Path,
) -> None:
    """The live tailer, that far behind, sends the file's last ``snapshot_size`` bytes (a
    snapshot, which replaces what the client shows): so does the replay, whatever the size."""
    data = output_of(PAST_BACKLOG)
    conversation, path = stored(tmp_path, data)
    pieces = pieces_of(conversation)
    snapshot, end = pieces
    assert snapshot.replaced and end.end and end.exit == ExitInfo(0, None)
    whole = data + CLOSING
    assert snapshot.data + end.data == whole[-OPTIONS.snapshot_size :].removesuffix(CLOSING)
    assert (snapshot.data, end.data, end.exit) == drained(path)


def drained(path: Path) -> tuple[bytes, bytes, ExitInfo | None]:
    """What the live tailer sends of the whole file, read to its end once the task ended."""

    async def drain() -> tuple[bytes, bytes, ExitInfo | None]:
        tailer = OutputTailer(root=None)
        tailer.follow(SHELL, path)
        events = [event async for event in tailer.drain(SHELL)]
        tailer.close()
        snapshot, final = events
        assert isinstance(snapshot, Snapshot) and isinstance(final, Final)
        return snapshot.data, final.remaining, final.exit

    return anyio.run(drain)


@pytest.mark.parametrize("size", [PAST_RECALL * 4, PAST_BACKLOG * 3])
def test_memory_stays_bounded_whatever_the_files_size(tmp_path: Path, size: int) -> None:
    conversation, _ = stored(tmp_path, output_of(size))
    read = 0
    tracemalloc.start()
    try:
        for piece in replay.output_pieces(conversation.outputs[SHELL]):
            read += len(piece.data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read >= min(size, OPTIONS.snapshot_size - len(CLOSING))
    assert peak < 3 * OPTIONS.snapshot_size, f"{peak} bytes held to read {size}"


# --- every client kind, through the core ------------------------------------------------------


def replayed(client: str, conversation: ev.StoredConversation) -> list[dict[str, Any]]:
    driver = CoreDriver.for_client(client, session_id=RECORDED_SESSION)
    effects = driver.attach(conversation)
    check_transcript(driver, effects, client)
    return driver.updates_of(effects)


def terminal_bytes(updates: list[dict[str, Any]]) -> bytes:
    """What a v2 client shows of the shell: its snapshots replace, its chunks append."""
    shown = b""
    for update in updates:
        if update["sessionUpdate"] == "terminal_output_chunk":
            shown += base64.b64decode(update["data"])
        elif update["sessionUpdate"] == "terminal_update" and "output" in update:
            shown = base64.b64decode(update["output"]["data"])
    return shown


def shell_call(updates: list[dict[str, Any]]) -> str:
    """The tool call of the conversation's own shell (its subagent runs one too)."""
    (call,) = {
        u["toolCallId"] for u in updates if u.get("rawInput", {}).get("command", "").startswith("echo hello")
    }
    return str(call)


def terminal_meta_text(updates: list[dict[str, Any]]) -> str:
    """What Zed shows of the shell's terminal (its ``_meta`` terminal output, appended)."""
    call = shell_call(updates)
    return "".join(
        value["data"]
        for update in updates
        for key, value in update.get("_meta", {}).items()
        if key.startswith("terminal_output") and value["terminal_id"] == call
    )


def test_v2_and_zed_get_all_of_a_file_past_256_kib(tmp_path: Path) -> None:
    data = output_of(PAST_RECALL)
    conversation, _ = stored(tmp_path, data)
    v2 = replayed("v2", conversation)
    assert terminal_bytes(v2) == data
    exits = [u for u in v2 if "exitStatus" in u]
    assert exits[0]["exitStatus"] == {"exitCode": 0, "signal": None}
    assert terminal_meta_text(replayed("v1-terminal-meta", conversation)) == data.decode()


def test_a_plain_client_sees_the_end_of_it_as_live(tmp_path: Path) -> None:
    data = output_of(PAST_RECALL)
    conversation, _ = stored(tmp_path, data)
    updates = replayed("v1-plain", conversation)
    last = [u for u in updates if u.get("toolCallId") == shell_call(updates) and "content" in u][-1]
    text = last["content"][0]["content"]["text"]
    assert text.startswith(LEFT_OUT) and data.decode()[-4000:] in text
    assert last["status"] == "completed"


def test_past_the_backlog_limit_v2_gets_the_latest_bytes_as_a_snapshot(tmp_path: Path) -> None:
    data = output_of(PAST_BACKLOG)
    conversation, _ = stored(tmp_path, data)
    updates = replayed("v2", conversation)
    assert terminal_bytes(updates) == (data + CLOSING)[-OPTIONS.snapshot_size :].removesuffix(CLOSING)
    zed = terminal_meta_text(replayed("v1-terminal-meta", conversation))
    assert zed.startswith(SKIPPED) and zed.endswith(data[-4000:].decode())


# --- end to end --------------------------------------------------------------------------------


@pytest.mark.live
def test_reopening_a_session_whose_shell_wrote_past_256_kib_shows_all_of_it(
    live: LiveModel, workdir: Path
) -> None:
    command = "seq -f 'line-%07g \u00e9\u20ac\U0001f600' 1 30000"
    written = "".join(f"line-{n:07d} \u00e9\u20ac\U0001f600\n" for n in range(1, 30001)).encode()
    assert len(written) > PAST_RECALL
    first = run(
        live,
        workdir,
        "v2",
        [
            {"op": "prompt", "text": f"[scenario:bg_from_prompt] Go. <command>{command}</command>"},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
        ],
    )
    (live_terminal,) = first.terminal_ids
    assert first.terminal_bytes(live_terminal) == written
    capabilities = {"_meta": {"terminal_output": True, "terminal_output_delta": True}}
    steps = [{"op": "loadSession", "id": "load", "sessionId": first.session_id()}]
    second = run(live, workdir, "v1", steps, autoSession=False, capabilities=capabilities)
    (terminal_id,) = second.terminal_ids
    assert second.terminal_bytes(terminal_id) == written
    assert second.terminal_info(terminal_id)["exitStatus"] == {"exitCode": 0, "signal": None}
