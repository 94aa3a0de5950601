"""A background terminal's own rules: the latest output a live one keeps, to restate it to a
client that (re)attaches, and how its command ended (its file's closing line, else how its
process ended when the agent stopped it, else what its task said).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from claude_bg_acp.claude.conventions import KILLED_SIGNAL, ExitInfo, ShellEnd, summary_exit_code
from claude_bg_acp.core.tasks import Task

RESTATE_LIMIT = 256 * 1024
"""Bytes of a live terminal's latest output kept to restate it (the size of the snapshot a
client that falls behind gets)."""


@dataclass
class Recent:
    """The latest output of a live terminal, at least ``RESTATE_LIMIT`` bytes of it when it has
    that many (whole chunks are kept, so appending costs no copy)."""

    parts: deque[bytes] = field(default_factory=deque)
    size: int = 0

    def add(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        while self.size - len(self.parts[0]) >= RESTATE_LIMIT:
            self.size -= len(self.parts.popleft())

    def replace(self, data: bytes) -> None:
        self.parts.clear()
        self.size = 0
        self.add(data)

    def latest(self) -> bytes:
        return b"".join(self.parts)[-RESTATE_LIMIT:]


def end_of_stop(stopped: ExitInfo) -> ShellEnd:
    """The end the agent's own stop of a shell tells, which a closing line must agree with."""
    if stopped.signal is not None:
        return ShellEnd("killed")
    if stopped.exit_code is None:
        return ShellEnd()
    return ShellEnd("completed" if stopped.exit_code == 0 else "failed", stopped.exit_code)


def exit_of(
    task: Task | None, exit_info: ExitInfo | None, stopped_with: ExitInfo | None = None
) -> ExitInfo | None:
    """How a terminal's command ended: its file's closing line, else how its process ended when
    the agent stopped it, else what the task said."""
    if exit_info is not None and (exit_info.exit_code is not None or exit_info.signal is not None):
        return exit_info
    if stopped_with is not None:
        return stopped_with
    code = summary_exit_code(task.summary) if task is not None else None
    if code is not None:
        return ExitInfo(code, None)
    if task is not None and task.end_status in ("killed", "stopped"):
        return ExitInfo(None, KILLED_SIGNAL)
    if task is not None and task.end_status == "completed":
        return ExitInfo(0, None)
    return None
