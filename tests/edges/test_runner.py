"""A runner started ahead of its session (``runner.starting`` + ``start``): whoever connects
later waits for that same start, and learns what stopped it.

The Claude Code here cannot start (its path names a script that exits at once): the real CLI
starting is what every live test's first ``session/new`` does through the same path.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from claude_bg_acp.claude.runner import starting


@pytest.fixture
def broken_cli(tmp_path: Path) -> Path:
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\necho 'no Claude Code here' >&2\nexit 3\n")
    cli.chmod(0o755)
    return cli


def test_a_start_that_fails_is_told_to_everyone_who_connects(tmp_path: Path, broken_cli: Path) -> None:
    runner = starting(str(tmp_path), str(broken_cli), "00000000-0000-4000-8000-000000000001", (), None)
    errors: list[Exception] = []

    async def connect() -> None:
        try:
            await runner.connect()
        except Exception as exc:
            errors.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.start)  # the agent's early start: it never raises
            tg.start_soon(connect)
            tg.start_soon(connect)
        await connect()  # after the start ended, too
        await runner.disconnect()

    anyio.run(main)
    assert len(errors) == 3
    assert errors[0] is errors[1] is errors[2]


def test_launched_returns_once_the_process_runs(tmp_path: Path, broken_cli: Path) -> None:
    """The agent imports the rest of a session only then (``Agent._start_claude``)."""
    runner = starting(str(tmp_path), str(broken_cli), "00000000-0000-4000-8000-000000000001", (), None)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.start)
            with anyio.fail_after(30):
                await runner.launched()
            assert runner.spawned.is_set()
        await runner.disconnect()

    anyio.run(main)


def test_launched_returns_when_the_start_fails_before_a_process_runs(
    tmp_path: Path, broken_cli: Path
) -> None:
    """No process: the folder is gone. The start's failure is for ``connect`` to raise."""
    gone = tmp_path / "gone"
    runner = starting(str(gone), str(broken_cli), "00000000-0000-4000-8000-000000000001", (), None)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.start)
            with anyio.fail_after(30):
                await runner.launched()
        assert not runner.spawned.is_set()
        with pytest.raises(Exception, match="Working directory does not exist"):
            await runner.connect()

    anyio.run(main)
