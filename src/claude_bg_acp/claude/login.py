"""Logging Claude Code in and out, with Claude Code's own commands.

The agent has no login of its own: Claude Code keeps its credentials (in ``~/.claude``, or
``CLAUDE_CONFIG_DIR``) and reads them when it starts. ``claude-bg-acp login`` runs Claude Code's
``auth login`` in the terminal it was started in (an editor offers it as a terminal auth method:
it runs the agent's command with that argument); it exits with Claude Code's status, zero once
logged in. A logout runs ``auth logout``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import anyio

from claude_bg_acp.claude.options import claude_cli
from claude_bg_acp.platform import host


def login(cli_path: str | Path | None, args: Sequence[str]) -> None:
    """Become Claude Code's interactive login (never returns). Windows has no ``exec`` that
    keeps the process: there the login runs as a child, and its status is ours."""
    cli = claude_cli(cli_path)
    if not host().posix:
        raise SystemExit(subprocess.run([cli, "auth", "login", *args], check=False).returncode)
    os.execv(cli, [cli, "auth", "login", *args])


async def logout(cli_path: str | Path | None) -> bool:
    """Log Claude Code out; whether it succeeded."""
    done = await anyio.run_process([claude_cli(cli_path), "auth", "logout"], check=False)
    return done.returncode == 0
