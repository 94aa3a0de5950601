"""Rules for a background task's output file, without any I/O.

Claude Code appends one closing line to the output file when the command ends. CLI 2.1.332
writes it as ``"\\n[exited with code N]\\n"`` (``N`` is the exit code, or ``unknown`` when the
process ended without one) or ``"\\n[killed]\\n"`` (the task was stopped). That closing line is
bookkeeping, not output, so it must never reach the editor. Two rules live here:

- :class:`TrailerGate` sits between the file and the editor. Fed the file's bytes in any split,
  it releases every byte that can no longer be part of a closing line and withholds only the
  tail that still could be one: a newline (or the very start of the file) followed by a prefix
  of a closing line, or a complete closing line at the end of what was read so far (more bytes
  after it would prove it was output). That tail is at most :data:`MAX_TRAILER` bytes. When the
  task ends, :meth:`TrailerGate.close` strips a real closing line and parses it.
- :func:`plan_read` decides what the next read of a followed file is: the next chunk of at most
  ``chunk_size`` bytes, or, once the reader has fallen more than ``backlog_limit`` bytes behind
  the file, a snapshot of the file's last ``snapshot_size`` bytes that replaces everything.

Trade-off: output that itself ends with a line exactly like a closing line, in a file the CLI
has not closed yet, is taken for a closing line by :meth:`TrailerGate.close`. The CLI always
appends its own line after the output, so this only matters when a task is finished before its
closing line is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KILLED_SIGNAL = "SIGKILL"
"""The signal reported for ``[killed]``.

The closing line does not name a signal. The CLI stops a task by killing its process group, and
its group kill defaults to SIGKILL (seen in the bundled CLI 2.1.332), so that is what we report.
"""

_KILLED = b"[killed]\n"
_EXITED = b"[exited with code "
_CODE_END = b"]\n"
_UNKNOWN = b"unknown"
_MAX_DIGITS = 20  # bounds the withheld tail; no real exit code comes close

MAX_TRAILER = 1 + len(_EXITED) + 1 + _MAX_DIGITS + len(_CODE_END)
"""The most bytes a :class:`TrailerGate` ever withholds."""

_CLOSING_LINE = re.compile(
    rb"\[(?:(?P<killed>killed)|exited with code (?P<code>-?[0-9]{1,%d}|unknown))\]\n" % _MAX_DIGITS
)
_CODE_PREFIX = re.compile(rb"-?[0-9]{0,%d}" % _MAX_DIGITS)
_CODE_DONE = re.compile(rb"-?[0-9]{1,%d}\]\n?" % _MAX_DIGITS)


@dataclass(frozen=True, slots=True)
class ExitInfo:
    """How the command ended: an exit code, or the signal that stopped it (never both)."""

    exit_code: int | None
    signal: str | None


def _is_code_prefix(text: bytes) -> bool:
    """Whether ``text`` is a prefix of ``<code>]\\n``."""
    if (_UNKNOWN + _CODE_END).startswith(text):
        return True
    return bool(_CODE_PREFIX.fullmatch(text) or _CODE_DONE.fullmatch(text))


def _is_line_prefix(text: bytes) -> bool:
    """Whether ``text`` is a prefix of some closing line (without its leading newline)."""
    if _KILLED.startswith(text):
        return True
    if len(text) <= len(_EXITED):
        return _EXITED.startswith(text)
    return text.startswith(_EXITED) and _is_code_prefix(text[len(_EXITED) :])


def _trailer_start(buf: bytes, at_stream_start: bool) -> int:
    """Index of the earliest byte of ``buf`` that could still belong to a closing line.

    ``len(buf)`` when there is none. Only the last ``MAX_TRAILER`` bytes can qualify, and a
    closing line starts at a newline, or at the first byte of the file when nothing precedes it.
    """
    low = max(0, len(buf) - MAX_TRAILER)
    if at_stream_start and low == 0 and _is_line_prefix(buf):
        return 0
    newline = buf.find(b"\n", low)
    while newline != -1:
        if _is_line_prefix(buf[newline + 1 :]):
            return newline
        newline = buf.find(b"\n", newline + 1)
    return len(buf)


def parse_closing_line(tail: bytes, at_stream_start: bool) -> ExitInfo | None:
    """The exit described by ``tail`` if it is exactly one closing line, else ``None``.

    ``tail`` includes the leading newline unless it starts the file (``at_stream_start``).
    """
    if tail.startswith(b"\n"):
        body = tail[1:]
    elif at_stream_start:
        body = tail
    else:
        return None
    match = _CLOSING_LINE.fullmatch(body)
    if match is None:
        return None
    if match.group("killed"):
        return ExitInfo(exit_code=None, signal=KILLED_SIGNAL)
    code = match.group("code")
    return ExitInfo(exit_code=None if code == _UNKNOWN else int(code), signal=None)


class TrailerGate:
    """Releases output bytes and withholds a possible closing line; see the module docstring.

    ``at_start`` says whether the first byte fed is the first byte of the file (a snapshot taken
    from the middle of a file is not).
    """

    __slots__ = ("_at_start", "_held")

    def __init__(self, *, at_start: bool = True) -> None:
        self._held = b""
        self._at_start = at_start

    @property
    def withheld(self) -> int:
        """How many bytes are held back (at most :data:`MAX_TRAILER`)."""
        return len(self._held)

    def feed(self, data: bytes) -> bytes:
        """Take the next bytes of the file; return the bytes now proven to be output."""
        if not data:
            return b""
        buf = self._held + data if self._held else data
        cut = _trailer_start(buf, self._at_start)
        self._held = buf[cut:]
        if cut:
            self._at_start = False
        return buf[:cut]

    def close(self) -> tuple[bytes, ExitInfo | None]:
        """End of the file: return the output still held and the parsed closing line, if any."""
        held, self._held = self._held, b""
        exit_info = parse_closing_line(held, self._at_start)
        if exit_info is None:
            return held, None
        return b"", exit_info


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Read ``length`` bytes at ``start``; a snapshot replaces everything delivered before."""

    start: int
    length: int
    snapshot: bool


def plan_read(
    size: int, offset: int, *, chunk_size: int, backlog_limit: int, snapshot_size: int
) -> ReadPlan | None:
    """The next read of a file of ``size`` bytes of which ``offset`` were already read.

    The backlog is ``size - offset``: bytes in the file that the consumer has not been handed
    yet. Past ``backlog_limit`` the reader gives up on relaying them all and jumps to the last
    ``snapshot_size`` bytes. ``None`` means there is nothing new.
    """
    backlog = size - offset
    if backlog <= 0:
        return None
    if backlog > backlog_limit:
        start = max(0, size - snapshot_size)
        return ReadPlan(start=start, length=size - start, snapshot=True)
    return ReadPlan(start=offset, length=min(chunk_size, backlog), snapshot=False)
