"""Claude Code's conventions that the agent reads: text formats and file layouts, not API.

Each was observed on the Claude Code CLI 2.1.332 (bundled with claude-agent-sdk 0.2.189; see
the lock file). None is documented, so a CLI upgrade is reviewed here, in one file:

- the hand-off text of a tool result that sent work to the background;
- the exit code in a task notification's summary;
- the closing line appended to a background shell's output file, and the signal it implies;
- where task output files live.

Standard library only: the core and the edges both import it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

OBSERVED_ON = "2.1.332"
"""The Claude Code CLI version every convention below was observed on."""

# --- the hand-off -----------------------------------------------------------------------------

HANDOFF = re.compile(
    r"running in background with ID: (\S+?)\.? Output is being written to: (\S+?)\.?(?:\s|$)"
)
"""A Bash (or Monitor) tool result that backgrounded its command, e.g. ``Command running in
background with ID: bash01. Output is being written to: /tmp/.../bash01.output``."""


@dataclass(frozen=True)
class HandOff:
    task_id: str
    output_file: str


def hand_off(text: str) -> HandOff | None:
    """The task and output file a tool result hands its work to, if it does."""
    match = HANDOFF.search(text)
    return HandOff(match[1], match[2]) if match else None


# --- the summary of a task notification -------------------------------------------------------

_EXIT_CODE = re.compile(r"exit code (-?\d+)")
"""``"... completed (exit code 0)"``, ``"... failed with exit code 3"``."""


def summary_exit_code(summary: str | None) -> int | None:
    match = _EXIT_CODE.search(summary or "")
    return int(match[1]) if match else None


# --- the closing line of a background shell's output file -------------------------------------

KILLED_SIGNAL = "SIGKILL"
"""The signal reported for ``[killed]``: the line names none; the CLI stops a task by killing
its process group, and its group kill defaults to SIGKILL."""

KILLED_LINE = b"[killed]\n"
EXITED_PREFIX = b"[exited with code "
CODE_END = b"]\n"
UNKNOWN_CODE = b"unknown"
"""The code written when the process ended without one."""
MAX_CODE_DIGITS = 20
"""Bounds the closing line's length; no real exit code comes close."""

CLOSING_LINE = re.compile(
    rb"\[(?:(?P<killed>killed)|exited with code (?P<code>-?[0-9]{1,%d}|unknown))\]\n" % MAX_CODE_DIGITS
)
"""A whole closing line, without its leading newline."""
MAX_CLOSING_LINE = 1 + len(EXITED_PREFIX) + 1 + MAX_CODE_DIGITS + len(CODE_END)
"""The longest closing line, its leading newline included. Claude Code appends
``"\\n[exited with code N]\\n"`` or ``"\\n[killed]\\n"`` with ONE ``write()``, some 20 ms
after the command ended, having opened the file by path with ``O_WRONLY | O_APPEND | O_NOFOLLOW``
and no ``O_CREAT`` (seen with strace): so a deleted output file gets no closing line, and a
symbolic link put in its place gets none either."""

# --- where task output files live -------------------------------------------------------------


def tasks_base(environ: dict[str, str] | None = None) -> str:
    """``$CLAUDE_CODE_TMPDIR/claude-<uid>``: every task output file of this user is below it."""
    env = os.environ if environ is None else environ
    return os.path.join(env.get("CLAUDE_CODE_TMPDIR") or "/tmp", f"claude-{os.getuid()}")


def tasks_root(cwd: str, environ: dict[str, str] | None = None) -> str:
    """``tasks_base()/<cwd, each non-alphanumeric character as ->``.

    Below it: ``<CLI session id>/tasks/<task id>.output`` (see :func:`output_file`), a regular
    file for a shell. A subagent's file there is a symbolic link to its transcript (a JSONL file
    elsewhere), not terminal output.
    """
    return os.path.join(tasks_base(environ), re.sub(r"[^A-Za-z0-9]", "-", cwd))


def output_file(root: str, cli_session_id: str, task_id: str) -> str:
    return f"{root}/{cli_session_id}/tasks/{task_id}.output"
