"""A replay reads a background shell's output under the live rules, and nothing else (issue 19,
defect 3).

The conversation is the real recorded one (``conversation``: a background shell that finished,
a thought, a background subagent), written where Claude Code keeps it, with the shell's output
file in this session's task directory where its hand-off says (``store_recorded``). Each test
then puts something else where a path leads, as a foreground command or another process could,
and reads the conversation back as the agent does (``store``, real files and
directories). The stored records are edited only where the recording cannot show the case: a
foreground command whose output names a path of its choosing.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.output.task_output import NotOutput, open_output
from claude_bg_acp.session import replay
from tests.support.driver import (
    CWD,
    RECORDED_SESSION,
    CoreDriver,
    Frame,
    check_transcript,
    load_frames,
    read_whole,
    store_recorded,
)

SHELL = "bash01"
OWN_OUTPUT = b"hello-from-bg\nbg-finished\n"
SECRET = b"SECRET not a task's output\n"
READ_TIMEOUT = 10.0


def recorded(edit: Callable[[dict[str, Any]], None] | None = None) -> list[Frame]:
    """The recording, each stored record passed through ``edit``."""
    frames = load_frames("conversation")
    for frame in frames:
        if frame["dir"] == "stored" and edit is not None:
            edit(frame["record"])
    return frames


def shell_tasks(env: dict[str, str]) -> Path:
    """This session's task directory, as Claude Code lays it out."""
    return Path(conventions.output_file(conventions.tasks_root(CWD, env), RECORDED_SESSION, SHELL)).parent


def read_back(env: dict[str, str]) -> ev.StoredConversation:
    """The conversation as the agent reads it; fails (never hangs) if that takes over
    ``READ_TIMEOUT`` seconds."""
    result: list[ev.StoredConversation] = []
    with mock.patch.dict(os.environ, env):
        reader = threading.Thread(
            target=lambda: result.append(read_whole(RECORDED_SESSION, CWD)), daemon=True
        )
        reader.start()
        reader.join(READ_TIMEOUT)
    assert not reader.is_alive(), f"reading the conversation took over {READ_TIMEOUT} s"
    (conversation,) = result
    return conversation


def output_of(conversation: ev.StoredConversation) -> tuple[bytes, ExitInfo | None]:
    """The shell's output as the replay reads it once it comes to the shell, and its exit."""
    pieces = list(replay.output_pieces(conversation.outputs[SHELL]))
    assert all(not piece.replaced for piece in pieces) and pieces[-1].end
    return b"".join(piece.data for piece in pieces), pieces[-1].exit


def secret_file(where: Path) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_bytes(SECRET)
    return where


def test_the_shells_own_output_is_read_back(tmp_path: Path) -> None:
    env = store_recorded(recorded(), tmp_path, rename=True)
    assert output_of(read_back(env)) == (OWN_OUTPUT, ExitInfo(0, None))


@pytest.mark.parametrize("where", ["outside the task directory", "in another session's task directory"])
def test_a_path_a_tool_result_names_is_never_read(tmp_path: Path, where: str) -> None:
    """The hand-off names another file than the task's own: its own is read, never the named."""
    tasks = shell_tasks({"CLAUDE_CODE_TMPDIR": str(tmp_path / "tmp")})
    named = (
        secret_file(tmp_path / "elsewhere" / f"{SHELL}.output")
        if where == "outside the task directory"
        else secret_file(tasks.parent.parent / str(uuid.uuid4()) / "tasks" / f"{SHELL}.output")
    )
    recorded_path = f"/{RECORDED_SESSION}/tasks/{SHELL}.output"

    def rename(record: dict[str, Any]) -> None:
        for block in record.get("message", {}).get("content") or []:
            text = block.get("content") if isinstance(block, dict) else None
            if isinstance(text, str) and recorded_path in text:
                start = text.index("Output is being written to: ") + len("Output is being written to: ")
                end = text.index(recorded_path) + len(recorded_path)
                block["content"] = text[:start] + str(named) + text[end:]

    env = store_recorded(recorded(rename), tmp_path, rename=True)
    conversation = read_back(env)
    assert str(named) in repr([m.content for m in conversation.messages]), "the result names it"
    assert output_of(conversation)[0] == OWN_OUTPUT
    assert SECRET not in repr(conversation).encode()


@pytest.mark.parametrize("kind", ["a link pointing out", "a link on the way", "a FIFO", "a directory"])
def test_what_is_not_a_regular_file_of_the_task_directory_is_not_read(tmp_path: Path, kind: str) -> None:
    env = store_recorded(recorded(), tmp_path, rename=True)
    tasks = shell_tasks(env)
    own = tasks / f"{SHELL}.output"
    own.unlink()
    secret = secret_file(tmp_path / "elsewhere" / f"{SHELL}.output")
    if kind == "a link pointing out":
        own.symlink_to(secret)
    elif kind == "a link on the way":
        tasks.rmdir()
        tasks.symlink_to(secret.parent, target_is_directory=True)
    elif kind == "a FIFO":
        os.mkfifo(own)
    else:
        own.mkdir()
    try:
        conversation = read_back(env)
    finally:
        if kind == "a FIFO":
            _release_a_reader(own)
    assert SHELL not in conversation.outputs
    assert SECRET not in repr(conversation).encode()
    assert conversation.messages, "the rest of the conversation is replayed"


def test_a_file_replaced_by_a_link_before_the_replay_comes_to_it_is_not_read(tmp_path: Path) -> None:
    """The file is read only once the replay comes to its shell, under the same rules: a link
    put in its place meanwhile is refused then; the shell ends with nothing shown."""
    env = store_recorded(recorded(), tmp_path, rename=True)
    conversation = read_back(env)
    own = shell_tasks(env) / f"{SHELL}.output"
    own.unlink()
    own.symlink_to(secret_file(tmp_path / "elsewhere" / f"{SHELL}.output"))
    assert list(replay.output_pieces(conversation.outputs[SHELL])) == [
        ev.OutputRecalled(SHELL, b"", end=True)
    ]


def _release_a_reader(fifo: Path) -> None:
    """A reader blocked opening the FIFO (the defect) goes on once a writer opens it."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        assert exc.errno == errno.ENXIO  # no reader waits: nothing to release


def without_run_in_background(record: dict[str, Any]) -> None:
    for block in record.get("message", {}).get("content") or []:
        if isinstance(block, dict) and block.get("name") == "Bash":
            block["input"].pop("run_in_background", None)


def without_background_task(record: dict[str, Any]) -> None:
    if isinstance(record.get("toolUseResult"), dict):
        record["toolUseResult"].pop("backgroundTaskId", None)


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param([without_run_in_background, without_background_task], id="foreground command"),
        pytest.param([without_background_task], id="asked for the background, ran in the foreground"),
    ],
)
def test_a_foreground_command_that_prints_the_hand_off_is_an_ordinary_tool_call(
    tmp_path: Path, edits: list[Callable[[dict[str, Any]], None]]
) -> None:
    """The result's words are Claude Code's hand-off, but Claude Code's structured result (and,
    for the first, the tool use) says the command ran in the foreground: no terminal, no file."""

    def edit(record: dict[str, Any]) -> None:
        for change in edits:
            change(record)

    env = store_recorded(recorded(edit), tmp_path, rename=True)
    conversation = read_back(env)
    assert conversation.outputs == {}
    driver = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    effects = driver.attach(conversation)
    check_transcript(driver, effects, "v2")
    updates = driver.updates_of(effects)
    assert not [u for u in updates if u["sessionUpdate"].startswith("terminal")]
    (call,) = [u for u in updates if u.get("rawInput", {}).get("command", "").startswith("echo hello")]
    ended = [u for u in updates if u.get("toolCallId") == call["toolCallId"] and "status" in u]
    assert ended[-1]["status"] == "completed"
    assert "Output is being written to" in json.dumps(ended[-1]["content"]), "its output, as text"
    assert all(c.get("type") != "terminal" for c in ended[-1]["content"])
    assert base64.b64encode(OWN_OUTPUT).decode() not in json.dumps(updates)


@pytest.mark.parametrize(
    ("tool_input", "is_error", "structured", "handed"),
    [
        ({"run_in_background": True}, False, {"backgroundTaskId": "b1"}, True),
        ({}, False, {"backgroundTaskId": "b1"}, True),  # backgrounded while it ran
        ({"run_in_background": True}, False, {"stdout": "words"}, False),
        ({"run_in_background": True}, False, {"backgroundTaskId": "other"}, False),
        ({"run_in_background": True}, False, None, True),  # a subagent's: no structured result
        ({}, False, None, False),
        ({"run_in_background": "yes"}, False, None, False),
        ({"run_in_background": True}, True, None, False),
    ],
)
def test_a_hand_off_is_claude_codes_word_not_the_outputs(
    tool_input: dict[str, Any], is_error: bool, structured: Any, handed: bool
) -> None:
    text = "Command running in background with ID: b1. Output is being written to: /t/b1.output."
    found = conventions.hand_off(tool_input, text, is_error, structured)
    assert found == (conventions.HandOff("b1", "/t/b1.output") if handed else None)


# --- the one way of opening (the live tailer's too) ----------------------------------------------


def test_a_device_is_refused_without_being_opened() -> None:
    with pytest.raises(NotOutput, match="not a regular file"):
        open_output("/dev/null", "/dev")


def test_dot_dot_never_leaves_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "tasks").mkdir(parents=True)
    secret_file(tmp_path / "secret.output")
    for path in (f"{root}/tasks/../../secret.output", f"{root}/../secret.output", f"{root}//x/../.."):
        with pytest.raises(NotOutput, match="outside"):
            open_output(path, str(root))


def test_a_root_named_through_a_link_is_the_same_root(tmp_path: Path) -> None:
    """Claude Code names its files from the resolved directory; the agent may know it by a link."""
    real = tmp_path / "real"
    (real / "s" / "tasks").mkdir(parents=True)
    (real / "s" / "tasks" / "t.output").write_bytes(b"output\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    fd = open_output(f"{real}/s/tasks/t.output", str(tmp_path / "link"))
    try:
        assert os.read(fd, 100) == b"output\n"
    finally:
        os.close(fd)
