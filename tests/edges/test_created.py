"""The record of a session this agent created and Claude Code has not stored yet
(``claude.created``): kept safely beside Claude Code's store, and only ever read as a record.

End to end (a session created in one agent process, opened and prompted in the next):
``test_live_sessions.py::test_a_session_never_prompted_opens_in_the_next_process_as_it_was_left``.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path

import pytest

from claude_bg_acp.claude import created
from claude_bg_acp.claude.created import Choices, Created


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    return tmp_path


def test_a_record_is_found_again_until_it_is_forgotten(config: Path) -> None:
    session_id = str(uuid.uuid4())
    created.record(session_id, "/work/a", Choices())
    created.record(session_id, "/work/a", Choices("plan", "opus", "high", fast=False))
    assert created.find(session_id) == Created(session_id, "/work/a", Choices("plan", "opus", "high", False))
    (path,) = (config / "claude-bg-acp" / "created").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, "as private as Claude Code's transcripts"
    assert created.forget(session_id) and created.find(session_id) is None
    assert not created.forget(session_id)


def test_a_record_written_before_fast_mode_was_kept_reads_as_never_chosen(config: Path) -> None:
    session_id = str(uuid.uuid4())
    folder = config / "claude-bg-acp" / "created"
    folder.mkdir(parents=True)
    older = {"format": 1, "cwd": "/work/a", "mode": "plan", "model": "opus", "effort": None}
    (folder / f"{session_id}.json").write_text(json.dumps(older))
    assert created.find(session_id) == Created(session_id, "/work/a", Choices("plan", "opus", None, None))


@pytest.mark.parametrize(
    "session_id", ["../../etc/passwd", "not-a-uuid", "9B2F6C1E-4D7A-4E0B-8C3D-5A6F7E8D9C0B", ""]
)
def test_an_id_that_is_not_a_uuid_names_no_file(config: Path, session_id: str) -> None:
    created.record(session_id, "/work/a", Choices())
    assert created.find(session_id) is None and not created.forget(session_id)
    assert not (config / "claude-bg-acp").exists()


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        json.dumps({"format": 2, "cwd": "/work/a"}),
        json.dumps({"format": 1}),
        json.dumps({"format": 1, "cwd": "/work/a", "mode": 3}),
        json.dumps({"format": 1, "cwd": "/work/a", "fast": "on"}),
    ],
)
def test_a_record_that_is_not_this_format_is_none(config: Path, content: str) -> None:
    session_id = str(uuid.uuid4())
    folder = config / "claude-bg-acp" / "created"
    folder.mkdir(parents=True)
    (folder / f"{session_id}.json").write_text(content)
    assert created.find(session_id) is None


def test_the_oldest_records_go_first(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(created, "KEPT", 3)
    ids = [str(uuid.uuid4()) for _ in range(5)]
    folder = config / "claude-bg-acp" / "created"
    for n, session_id in enumerate(ids):
        created.record(session_id, "/work/a", Choices())
        # Written in this order (a coarse clock could give them one mtime).
        os.utime(folder / f"{session_id}.json", ns=(n * 10**9, n * 10**9))
    assert [created.find(i) is not None for i in ids] == [False, False, True, True, True]


def test_a_folder_that_cannot_be_written_records_nothing(config: Path) -> None:
    (config / "claude-bg-acp").write_text("a file where the folder would be")
    session_id = str(uuid.uuid4())
    created.record(session_id, "/work/a", Choices())
    assert created.find(session_id) is None
