"""The host the agent runs on: one decision (``platform.detect``) that the portable switch feeds
as the real platform does, Claude Code's temp directory as each platform has it, and an agent
that starts where no POSIX-only module can be imported.

Windows itself is not here: what can be shown on Linux is that nothing POSIX-only is imported
when the package is, that ``--version`` and ``--help`` work then, and that the Windows paths of
the edges (thread-driven stdio, files opened by path) do their job on real descriptors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from claude_bg_acp import platform
from claude_bg_acp.acp import stdio
from claude_bg_acp.claude import conventions
from claude_bg_acp.output import task_output
from claude_bg_acp.platform import LINUX, PORTABLE_ENV, POSIX, WINDOWS, detect


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("system", "environ", "expected"),
    [
        ("linux", {}, LINUX),
        ("linux", {PORTABLE_ENV: "0"}, LINUX),
        ("linux", {PORTABLE_ENV: "1"}, POSIX),
        ("darwin", {}, POSIX),
        ("darwin", {PORTABLE_ENV: "1"}, POSIX),
        ("freebsd14", {}, POSIX),
        ("win32", {}, WINDOWS),
        ("win32", {PORTABLE_ENV: "1"}, WINDOWS),
    ],
)
def test_the_portable_switch_selects_what_macos_runs(
    system: str, environ: dict[str, str], expected: platform.Host
) -> None:
    assert detect(system, environ) == expected


def test_what_each_host_offers() -> None:
    assert (LINUX.linux, LINUX.posix) == (True, True)
    assert (POSIX.linux, POSIX.posix) == (False, True)
    assert (WINDOWS.linux, WINDOWS.posix) == (False, False)


@pytest.mark.parametrize(
    ("environ", "temp"),
    [
        ({"CLAUDE_CODE_TMPDIR": "/ct", "TMPDIR": "/t"}, "/ct"),
        ({"TMPDIR": "/var/folders/xy/T/", "TMP": "/tmp2"}, "/var/folders/xy/T/"),
        ({"TMP": "/tmp2", "TEMP": "/tmp3"}, "/tmp2"),
        ({"TEMP": "/tmp3"}, "/tmp3"),
        ({}, "/tmp"),
    ],
)
def test_task_output_lives_where_claude_code_puts_it_on_posix(
    environ: dict[str, str], temp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conventions, "host", lambda: POSIX)
    assert conventions.tasks_base(environ) == os.path.join(temp, f"claude-{os.getuid()}")


@pytest.mark.parametrize(
    ("environ", "temp"),
    [
        ({"TEMP": r"C:\Users\a\AppData\Local\Temp", "TMP": r"C:\tmp"}, r"C:\Users\a\AppData\Local\Temp"),
        ({"TMP": r"C:\tmp"}, r"C:\tmp"),
        ({"SystemRoot": r"C:\Windows"}, r"C:\Windows\temp"),
    ],
)
def test_task_output_lives_where_claude_code_puts_it_on_windows(
    environ: dict[str, str], temp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code names the folder claude-<uid>, with 0 where there is no uid.
    monkeypatch.setattr(conventions, "host", lambda: WINDOWS)
    monkeypatch.delattr(os, "getuid")
    assert conventions.tasks_base(environ) == os.path.join(temp, "claude-0")


NO_POSIX = """
import importlib, importlib.abc, os, pkgutil, signal, sys

POSIX_ONLY = {"fcntl", "termios", "resource", "pwd", "grp", "pty", "tty"}


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in POSIX_ONLY:
            raise ImportError(f"{name} is POSIX-only")


for name in POSIX_ONLY:
    sys.modules.pop(name, None)
sys.meta_path.insert(0, Blocker())
for name in ("getuid", "geteuid", "getgid", "getpgrp", "getpgid", "killpg", "setsid", "fork",
             "pread", "O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC", "pidfd_open"):
    delattr(os, name)
for name in ("SIGHUP", "SIGCHLD", "SIGKILL", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM",
             "SIGSTOP", "SIGCONT", "SIGPIPE"):
    delattr(signal, name)

import claude_bg_acp.platform
claude_bg_acp.platform.host = lambda: claude_bg_acp.platform.WINDOWS

from claude_bg_acp.claude.sdk_import import defer_mcp
defer_mcp()  # as the command does first: the SDK without mcp, which is the SDK's business
import claude_bg_acp
for module in pkgutil.walk_packages(claude_bg_acp.__path__, "claude_bg_acp."):
    if module.name != "claude_bg_acp.__main__":  # that one runs the agent
        importlib.import_module(module.name)
print("imported", len(sys.modules), flush=True)

from claude_bg_acp.cli import main
main(sys.argv[1:])
"""
"""Imports every module of the package with the POSIX-only modules unimportable and the POSIX-only
functions and signals of ``os`` and ``signal`` gone (after Python itself started, which needs
some of them), on a host that says it is Windows; then runs the command with the arguments."""


def run_without_posix(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_POSIX, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_no_module_of_the_package_needs_a_posix_only_module_to_be_imported() -> None:
    done = run_without_posix("--version")
    assert done.stderr == ""
    assert done.stdout.startswith("imported ")
    assert done.stdout.splitlines()[1].startswith("claude-bg-acp ")
    assert done.returncode == 0


def test_help_works_without_posix_modules() -> None:
    done = run_without_posix("--help")
    assert done.returncode == 0, done.stderr
    assert "usage: claude-bg-acp" in done.stdout and "--cli-path" in done.stdout


def test_the_demo_is_refused_with_a_reason_where_it_cannot_run() -> None:
    done = run_without_posix("demo")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "claude-bg-acp demo: not supported on Windows yet (it stops the agent by process group)"
    )


def test_the_blocker_catches_a_posix_only_import() -> None:
    """The proof above could fail: the same program, given a module that imports fcntl."""
    program = NO_POSIX.replace("import claude_bg_acp\nfor module", "import fcntl\nfor module")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False)
    assert "ImportError: fcntl is POSIX-only" in done.stderr


@pytest.mark.anyio
async def test_windows_stdio_relays_bytes_in_order_through_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread-driven streams Windows gets, chosen by the host switch, on real pipes."""
    monkeypatch.setattr(stdio, "host", lambda: WINDOWS)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    try:
        source, sink = await stdio.stdio_streams(in_read, out_write)
        assert type(source).__name__ == "_FdSource" and type(sink).__name__ == "_ThreadSink"
        os.write(in_write, b'{"jsonrpc": "2.0"}\n')
        assert await source.read(1024) == b'{"jsonrpc": "2.0"}\n'
        lines = [f"line {i}\n".encode() * 1000 for i in range(20)]
        async with anyio.create_task_group() as tg:
            for line in lines:
                sink.write(line)
                tg.start_soon(sink.drain)
            received = b""
            while len(received) < sum(map(len, lines)):
                received += await anyio.to_thread.run_sync(os.read, out_read, 1 << 20)
        assert received == b"".join(lines)
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            os.close(fd)


def test_windows_opens_an_output_file_by_path_and_refuses_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The by-path opening Windows gets (no O_NOFOLLOW there), chosen by the host switch."""
    monkeypatch.setattr(task_output, "host", lambda: WINDOWS)
    tasks = tmp_path / "root" / "session" / "tasks"
    tasks.mkdir(parents=True)
    output = tasks / "b1.output"
    output.write_bytes(b"\xff\x00bytes\n")
    fd = task_output.open_output(str(output), str(tmp_path / "root"))
    try:
        assert task_output.read_at(fd, 100, 0) == b"\xff\x00bytes\n"
        assert task_output.read_at(fd, 3, 2) == b"byt"
    finally:
        os.close(fd)
    (tasks / "link.output").symlink_to(output)
    with pytest.raises(task_output.NotOutput, match="symbolic link"):
        task_output.open_output(str(tasks / "link.output"), str(tmp_path / "root"))
    with pytest.raises(task_output.NotOutput, match="outside"):
        task_output.open_output(str(output), str(tmp_path / "elsewhere"))
