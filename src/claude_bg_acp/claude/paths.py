"""Where Claude Code writes task output files, so a shell can be tailed before any event names
its file: ``$CLAUDE_CODE_TMPDIR/claude-<uid>/<cwd, each non-alphanumeric character as ->``,
then ``/<CLI session id>/tasks/<task id>.output`` (the core adds the last part)."""

from __future__ import annotations

import os
import re


def tasks_root(cwd: str, environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    base = env.get("CLAUDE_CODE_TMPDIR") or "/tmp"
    return os.path.join(base, f"claude-{os.getuid()}", re.sub(r"[^A-Za-z0-9]", "-", cwd))
