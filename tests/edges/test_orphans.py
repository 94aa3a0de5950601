"""Orphans: found by their owner's token, stopped group by group, reaped, mapped to their task.

Real processes throughout (``sleep`` and ``sh`` stand in for a background shell: they are what
one runs). The test process is their parent, so they are "our children" as an orphan adopted by
the agent would be; the subreaper itself is shown in a child Python process, which adopts the
grandchild a shell leaves behind.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from claude_bg_acp.claude import orphans
from claude_bg_acp.claude.conventions import ExitInfo, output_file

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="orphans are adopted on Linux only")


@pytest.fixture
def owner() -> str:
    return uuid.uuid4().hex


def spawn(
    spawned: list[subprocess.Popen[bytes]], command: str, owner: str, own_group: bool = True, **kwargs: Any
) -> subprocess.Popen[bytes]:
    env = {**os.environ, orphans.OWNER_ENV: owner}
    # ``exec X`` runs X itself, without the shell's second exec: a process caught between two
    # execs shows an empty environment, and would not be found by its owner's token yet.
    argv = (
        shlex.split(command.removeprefix("exec ")) if command.startswith("exec ") else ["sh", "-c", command]
    )
    process = subprocess.Popen(argv, env=env, start_new_session=own_group, stdin=subprocess.DEVNULL, **kwargs)
    spawned.append(process)
    exec_done(process.pid)
    return process


def exec_done(pid: int) -> None:
    """Wait until ``pid`` shows its environment. Popen returns once the exec has closed the
    child's copy of its error pipe, which happens before the kernel has placed the new
    program's environment: until then ``/proc/PID/environ`` is empty, and ``find`` would not
    see the owner's token (a third of the time on a loaded machine). One that ended already
    (a zombie: no environment to read) has nothing more to show."""
    deadline = time.monotonic() + 10
    with contextlib.suppress(ProcessLookupError):
        while not Path(f"/proc/{pid}/environ").read_bytes():
            assert time.monotonic() < deadline, f"{pid} never showed its environment"
            time.sleep(0.001)  # another process's exec: there is no event to await


def ended(pid: int) -> None:
    """Wait until ``pid`` has ended (it is a zombie then): a pidfd becomes readable."""
    watch = os.pidfd_open(pid)
    try:
        assert select.select([watch], [], [], 10)[0], f"{pid} did not end"
    finally:
        os.close(watch)


def test_an_orphan_is_found_by_its_owners_token_and_stopped_with_sigterm(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    shell = spawn(spawned, "exec sleep 60", owner)
    spawn(spawned, "exec sleep 60", uuid.uuid4().hex)  # someone else's
    found = orphans.find(owner)
    assert [(o.pid, o.pgid) for o in found] == [(shell.pid, shell.pid)]
    stopped = anyio.run(orphans.stop, found, 2.0)
    assert stopped == {shell.pid: ExitInfo(None, "SIGTERM")}
    assert orphans.find(owner) == []


def test_one_that_ignores_sigterm_is_killed_with_its_group(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    shell = spawn(spawned, "trap '' TERM; sleep 60; sleep 60", owner)
    found = orphans.find(owner)
    assert [o.pid for o in found] == [shell.pid]
    stopped = anyio.run(orphans.stop, found, 0.2)
    assert stopped == {shell.pid: ExitInfo(None, "SIGKILL")}


def test_an_orphan_in_our_own_group_is_stopped_alone(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    """Signalling its group would signal us: only the process itself is stopped."""
    shell = spawn(spawned, "exec sleep 60", owner, own_group=False)
    (found,) = orphans.find(owner)
    assert found.pgid == os.getpgrp()
    assert anyio.run(orphans.stop, [found], 2.0) == {shell.pid: ExitInfo(None, "SIGTERM")}


def test_a_task_is_known_by_the_output_file_its_process_holds(
    spawned: list[subprocess.Popen[bytes]], owner: str, tmp_path: Path
) -> None:
    root = tmp_path / "tasks-root"
    path = Path(output_file(str(root), "cli-session", "bash01"))
    path.parent.mkdir(parents=True)
    with path.open("wb") as out:
        spawn(spawned, "echo started; exec sleep 60", owner, stdout=out)
    other = tmp_path / "elsewhere.output"
    with other.open("wb") as out:
        spawn(spawned, "exec sleep 60", owner, stdout=out)
    ends = anyio.run(orphans.stop_left_by, owner, str(root))
    assert ends == {"bash01": ExitInfo(None, "SIGTERM")}
    assert orphans.find(owner) == []


def test_a_stray_zombie_is_reaped_but_one_in_our_group_is_left_to_its_waiter(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    stray = spawn(spawned, "exit 0", owner)
    ours = spawn(spawned, "exit 7", owner, own_group=False)
    ended(stray.pid)
    ended(ours.pid)
    orphans.reap_strays()
    with pytest.raises(ChildProcessError):
        os.waitpid(stray.pid, os.WNOHANG)
    # Like a Claude Code whose exit asyncio waits for: its status is still there to take.
    assert ours.wait(5) == 7


def test_a_child_the_agent_started_is_never_taken_for_an_orphan(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    """Claude Code carries its owner's token too, and asyncio waits for its exit status."""
    claude = spawn(spawned, "exec sleep 60", owner)
    stray = spawn(spawned, "exit 0", owner)
    ended(stray.pid)
    orphans.spawned(claude.pid)
    orphans.spawned(stray.pid)
    try:
        assert orphans.find(owner) == []
        assert anyio.run(orphans.stop_left_by, owner, None) == {}
        orphans.reap_strays()
        assert claude.poll() is None
        assert stray.wait(5) == 0, "its status was taken"
    finally:
        orphans.collected(claude.pid)
        orphans.collected(stray.pid)
    assert [orphan.pid for orphan in orphans.find(owner)] == [claude.pid]


def test_a_signal_to_a_child_that_ended_leaves_its_status_to_its_waiter(
    spawned: list[subprocess.Popen[bytes]], owner: str
) -> None:
    """``Popen.send_signal`` polls first, and so takes the status asyncio's watcher waits for."""
    done = spawn(spawned, "exit 3", owner)
    running = spawn(spawned, "exec sleep 60", owner)
    ended(done.pid)
    orphans.send_signal(done.pid, signal.SIGTERM)
    orphans.send_signal(running.pid, signal.SIGTERM)
    assert os.waitpid(done.pid, 0)[1] == 3 << 8
    done.returncode = 3  # taken above, for the fixture
    assert running.wait(5) == -signal.SIGTERM


ADOPTER = textwrap.dedent(
    """
    import anyio, os, subprocess, sys
    from claude_bg_acp.claude import orphans

    assert orphans.become_subreaper()
    # The shell starts a grandchild in a session of its own and exits at once.
    shell = subprocess.run(
        ["sh", "-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"],
        env={**os.environ, orphans.OWNER_ENV: sys.argv[1]}, capture_output=True, text=True,
    )
    grandchild = int(shell.stdout)
    found = orphans.find(sys.argv[1])
    print([o.pid for o in found] == [grandchild])
    print(anyio.run(orphans.stop, found, 2.0)[grandchild].signal)
    """
)


def test_the_agent_adopts_what_a_dead_parent_left_running(owner: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", ADOPTER, owner], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "SIGTERM"]
