"""What a Claude Code left running, the portable way: the processes holding the session's output
files, found with ``lsof`` and stopped by process group, their ends told by task.

Real processes throughout (``sh`` and ``sleep`` in sessions of their own, their stdout an output
file, as Claude Code starts a shell). They are the test's children, so once stopped they are
zombies until the fixture collects them: as an orphan under an init that never reaps, which the
portable way must count as ended. The host is switched to ``posix`` (what macOS is), whatever
this one is.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest

from claude_bg_acp.claude import leftovers
from claude_bg_acp.claude.conventions import ExitInfo, output_file
from claude_bg_acp.platform import POSIX, WINDOWS
from tests.support.processes import running

SESSION = "cli-session"


@pytest.fixture(autouse=True)
def portable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leftovers, "host", lambda: POSIX)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "tasks-root"


def shell(
    spawned: list[subprocess.Popen[bytes]], command: str, output: Path, own_group: bool = True
) -> subprocess.Popen[bytes]:
    """A shell whose stdout and stderr are ``output``, as Claude Code starts one."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("ab") as out:
        process = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=own_group,
        )
    spawned.append(process)
    return process


def task_file(root: Path, task_id: str, session: str = SESSION) -> Path:
    return Path(output_file(str(root), session, task_id))


def group_running(pgid: int) -> bool:
    done = subprocess.run(["ps", "-A", "-o", "pgid=", "-o", "stat="], capture_output=True, text=True)
    return any(
        line.split() and line.split()[0] == str(pgid) and line.split()[1][0] != "Z"
        for line in done.stdout.splitlines()
    )


def stop_left(root: Path, grace: float = 2.0) -> dict[str, ExitInfo]:
    return anyio.run(leftovers.stop_left_by, uuid.uuid4().hex, str(root), SESSION, grace)


def test_a_shell_holding_its_output_file_is_stopped_with_its_group(
    spawned: list[subprocess.Popen[bytes]], root: Path
) -> None:
    job = shell(spawned, "sleep 60 & echo started; exec sleep 60", task_file(root, "bash01"))
    with task_file(root, "bash01").open("rb"):  # as the agent's tailer holds it: never stopped
        assert stop_left(root) == {"bash01": ExitInfo(None, "SIGTERM")}
    assert not group_running(job.pid)
    assert job.wait(5) == -15


def test_what_holds_no_output_file_of_the_session_is_left_alone(
    spawned: list[subprocess.Popen[bytes]], root: Path, tmp_path: Path
) -> None:
    job = shell(spawned, "exec sleep 60", task_file(root, "bash01"))
    other_session = shell(spawned, "exec sleep 60", task_file(root, "bash02", session="other-session"))
    elsewhere = shell(spawned, "exec sleep 60", tmp_path / "elsewhere.output")
    # A subagent's entry is a link to its transcript, which is no terminal output.
    transcript = tmp_path / "transcript.jsonl"
    linked = shell(spawned, "exec sleep 60", transcript)
    task_file(root, "agent01").symlink_to(transcript)
    assert stop_left(root) == {"bash01": ExitInfo(None, "SIGTERM")}
    assert not running(job.pid)
    assert all(running(p.pid) for p in (other_session, elsewhere, linked))


def test_one_that_ignores_sigterm_is_killed_with_its_group(
    spawned: list[subprocess.Popen[bytes]], root: Path
) -> None:
    job = shell(spawned, "trap '' TERM; sleep 60; sleep 60", task_file(root, "bash01"))
    assert stop_left(root, grace=0.3) == {"bash01": ExitInfo(None, "SIGKILL")}
    assert job.wait(5) == -9


def test_one_in_the_agents_own_group_is_stopped_alone(
    spawned: list[subprocess.Popen[bytes]], root: Path
) -> None:
    """Signalling its group would signal the agent: only the process itself is stopped."""
    job = shell(spawned, "exec sleep 60", task_file(root, "bash01"), own_group=False)
    assert os.getpgid(job.pid) == os.getpgrp()
    assert stop_left(root) == {"bash01": ExitInfo(None, "SIGTERM")}
    assert job.wait(5) == -15


def test_two_tasks_each_get_their_own_end(spawned: list[subprocess.Popen[bytes]], root: Path) -> None:
    first = shell(spawned, "exec sleep 60", task_file(root, "bash01"))
    second = shell(spawned, "trap '' TERM; sleep 60; sleep 60", task_file(root, "bash02"))
    ends = stop_left(root, grace=0.3)
    assert ends == {"bash01": ExitInfo(None, "SIGTERM"), "bash02": ExitInfo(None, "SIGKILL")}
    assert (first.wait(5), second.wait(5)) == (-15, -9)


def test_windows_has_no_process_groups_to_stop(
    spawned: list[subprocess.Popen[bytes]], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leftovers, "host", lambda: WINDOWS)
    job = shell(spawned, "exec sleep 60", task_file(root, "bash01"))
    assert stop_left(root) == {}
    assert running(job.pid)


def test_lsofs_output_for_programs_is_read_per_process_and_file() -> None:
    output = "".join(
        f"{line}\n"
        for line in ("p41", "g41", "n/t/s/tasks/bash01.output", "n/t/s/tasks/bash02.output", "p42", "g41")
    )
    output += "n/t/s/tasks/bash01.output\n"
    assert leftovers.parse_lsof(output) == [
        leftovers.Holder(41, 41, "bash01"),
        leftovers.Holder(41, 41, "bash02"),
        leftovers.Holder(42, 41, "bash01"),
    ]
