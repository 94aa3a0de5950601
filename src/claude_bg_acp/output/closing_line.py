"""The closing line of a background shell's output file: withheld from the editor, parsed.

Claude Code appends one closing line to the output file when the command ends (its exact form
is in ``claude.conventions``). That line is bookkeeping, not output, so it must never reach the
editor. :class:`TrailerGate` sits between the file and the editor. Fed the file's bytes in any
split, it releases every byte that can no longer be part of a closing line and withholds only
the tail that still could be one: a newline (or the very start of the file) followed by a
prefix of a closing line, or a complete closing line at the end of what was read so far (more
bytes after it would prove it was output). That tail is at most :data:`MAX_TRAILER` bytes.
When the task ends, :meth:`TrailerGate.close` strips a real closing line and parses it.

A withheld tail that is not a whole closing line need not wait for the end: Claude Code writes
its closing line with one ``write()``, so once the file has stopped growing for
:meth:`TrailerGate.grace` seconds, such a tail is output and :meth:`TrailerGate.release` hands it
out. The grace covers a ``write()`` caught half done: a reader can see the part of it before a
page boundary while the writer is descheduled (``scripts/bench_grace.py`` measures how long).
A lone newline, the tail of every quiet shell whose last line is complete, gets the short
:data:`LINE_GRACE`; and should it have been the first byte of a closing line after all, the
rest is still recognised as one (the editor then shows one newline too many, never the line).
A longer prefix (``\n[exi``) is rare in real output, so it gets the long :data:`PREFIX_GRACE`,
which outlasts every half-done write measured.

A command can print a line exactly like a closing line, and Claude Code tells a task's end
before its closing line reaches the file: at that moment the forged line is the file's last.
So a live task's closing line counts only if the task's end confirms it (``conventions.ShellEnd``: its
status, and the exit code its summary names); one that does not is output, and the real line
is waited for. Left: a forged line that agrees with the real end is taken for it (the exit is
right; that one line of output is not shown).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from claude_bg_acp.claude.conventions import (
    CLOSING_LINE,
    CODE_END,
    EXITED_PREFIX,
    KILLED_LINE,
    KILLED_SIGNAL,
    MAX_CLOSING_LINE,
    MAX_CODE_DIGITS,
    UNKNOWN_CODE,
    ExitInfo,
)

MAX_TRAILER = MAX_CLOSING_LINE
"""The most bytes a :class:`TrailerGate` ever withholds."""
LINE_GRACE = 0.002
"""Seconds a withheld lone newline waits, once the file stopped growing, before it is output."""
PREFIX_GRACE = 0.1
"""Seconds a withheld longer prefix of a closing line waits likewise."""

_CODE_PREFIX = re.compile(rb"-?[0-9]{0,%d}" % MAX_CODE_DIGITS)
_CODE_DONE = re.compile(rb"-?[0-9]{1,%d}\]\n?" % MAX_CODE_DIGITS)


def _is_code_prefix(text: bytes) -> bool:
    """Whether ``text`` is a prefix of ``<code>]\\n``."""
    if (UNKNOWN_CODE + CODE_END).startswith(text):
        return True
    return bool(_CODE_PREFIX.fullmatch(text) or _CODE_DONE.fullmatch(text))


def _is_line_prefix(text: bytes) -> bool:
    """Whether ``text`` is a prefix of some closing line (without its leading newline)."""
    if KILLED_LINE.startswith(text):
        return True
    if len(text) <= len(EXITED_PREFIX):
        return EXITED_PREFIX.startswith(text)
    return text.startswith(EXITED_PREFIX) and _is_code_prefix(text[len(EXITED_PREFIX) :])


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
    match = CLOSING_LINE.fullmatch(body)
    if match is None:
        return None
    if match.group("killed"):
        return ExitInfo(exit_code=None, signal=KILLED_SIGNAL)
    code = match.group("code")
    return ExitInfo(exit_code=None if code == UNKNOWN_CODE else int(code), signal=None)


class TrailerGate:
    """Releases output bytes and withholds a possible closing line; see the module docstring.

    ``at_start`` says whether a closing line may begin with the first byte fed, without its
    leading newline: true at the first byte of the file (a snapshot taken from the middle of a
    file is not), and again after :meth:`release` handed out a lone newline.
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

    def grace(self) -> float | None:
        """Seconds the withheld tail may wait, once the file stopped growing, before
        :meth:`release`; None when nothing is withheld or it is a whole closing line (that one
        is proven output only by more output)."""
        if self._held == b"\n":
            return LINE_GRACE
        if not self._held or parse_closing_line(self._held, self._at_start) is not None:
            return None
        return PREFIX_GRACE

    def release(self) -> bytes:
        """The file stopped growing for :meth:`grace` seconds: the withheld tail is output."""
        if self.grace() is None:
            return b""
        held, self._held = self._held, b""
        self._at_start = held == b"\n"
        return held

    def close(self, confirms: Callable[[ExitInfo], bool] | None = None) -> tuple[bytes, ExitInfo | None]:
        """End of the file: return the output still held and the parsed closing line, if any
        (and if ``confirms`` it, when given: else the line is output)."""
        held, self._held = self._held, b""
        exit_info = parse_closing_line(held, self._at_start)
        if exit_info is None or (confirms is not None and not confirms(exit_info)):
            return held, None
        return b"", exit_info
