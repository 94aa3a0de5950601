"""What Claude Code's file tools did, read from their results (observed on CLI 2.1.332).

An edit (``Edit``, ``Write``, ``MultiEdit``) that succeeded comes with a structured result, the
SDK's ``tool_use_result``: ``filePath``, and ``structuredPatch``, the change as unified-diff
hunks (``oldStart``, ``newStart``, ``lines`` each prefixed with ``" "``, ``"-"`` or ``"+"``,
three lines of context around the change); a ``Write`` that created its file says
``type: "create"`` and holds the ``content`` (its patch is empty). The hunks are the change as it
happened (the request only holds the fragments the model asked to replace), so the card shows
them. A result without them (an edit of a notebook, a patch Claude Code left empty) is
``Edited`` with no hunks: the card keeps what the request showed.

A ``Read`` of a text file answers with its lines numbered as ``cat -n`` does (``N<tab>line``,
the number maybe padded), starting at the line it was asked for; anything else (an image, an
empty file's warning, a note after the lines) is left as text.

Standard library only: the core and the presenters import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
"""The tools that change a file: their card shows the change, never the result's sentence."""

_NUMBERED = re.compile(r" *(\d+)\t")
"""The number ``cat -n`` puts before each line of a ``Read``."""


@dataclass(frozen=True)
class Hunk:
    """One hunk of a unified diff, as Claude Code's ``structuredPatch`` gives it."""

    old_start: int
    new_start: int
    lines: tuple[str, ...]

    def text(self, side: str) -> str:
        """The hunk's lines on one side (``"-"``: before, ``"+"``: after), context included."""
        kept = [line[1:] for line in self.lines if line[:1] in (" ", side)]
        return "".join(f"{line}\n" for line in kept)

    @property
    def changed_line(self) -> int:
        """The first line the change touches, counted from 1 in the new text."""
        context = 0
        for line in self.lines:
            if not line.startswith(" "):
                break
            context += 1
        return self.new_start + context


@dataclass(frozen=True)
class Edited:
    """A file an edit changed: its hunks, or the whole ``created`` text of a new file."""

    path: str
    hunks: tuple[Hunk, ...] = ()
    created: str | None = None

    @property
    def line(self) -> int | None:
        return self.hunks[0].changed_line if self.hunks else (1 if self.created is not None else None)


@dataclass(frozen=True)
class FileRead:
    """The text a ``Read`` returned, without its line numbers, from line ``first`` on."""

    path: str
    text: str
    first: int


Review = Edited | FileRead


def review(
    name: str, tool_input: dict[str, Any], text: str, structured: dict[str, Any] | None
) -> Review | None:
    """What a file tool's successful result shows (None for other tools)."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return None
    if name in EDIT_TOOLS:
        return edited(path, structured or {})
    if name == "Read":
        return file_read(path, text)
    return None


def edited(path: str, structured: dict[str, Any]) -> Edited:
    if structured.get("type") == "create" and isinstance(structured.get("content"), str):
        return Edited(path, created=structured["content"])
    patch = structured.get("structuredPatch")
    hunks = tuple(hunk for item in patch if (hunk := _hunk(item))) if isinstance(patch, list) else ()
    return Edited(path, hunks)


def _hunk(item: Any) -> Hunk | None:
    if not isinstance(item, dict):
        return None
    old, new, lines = item.get("oldStart"), item.get("newStart"), item.get("lines")
    if not (isinstance(old, int) and isinstance(new, int) and isinstance(lines, list)):
        return None
    # "\ No newline at end of file" is a marker, not a line of the file.
    kept = tuple(line for line in lines if isinstance(line, str) and line[:1] in (" ", "-", "+"))
    return Hunk(old, new, kept) if kept else None


def file_read(path: str, text: str) -> FileRead | None:
    """The lines of a ``Read``'s result without their numbers; None unless every line has one."""
    numbered = [match for line in text.split("\n") if (match := _NUMBERED.match(line))]
    if not text or len(numbered) != text.count("\n") + 1:
        return None
    content = "\n".join(match.string[match.end() :] for match in numbered)
    return FileRead(path, content, int(numbered[0][1]))
