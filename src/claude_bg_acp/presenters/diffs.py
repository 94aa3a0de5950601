"""How a change to a file shows in a tool call, in each protocol version's form.

A change is a path, the old text (None for a new file), the new text and, when known, the lines
where the two begin in the file (``starts``: old, new; counted from 1). v1 carries the texts
(``oldText``, ``newText``) and the client diffs them itself. v2 names the change (``changes``:
``add`` or ``modify``, the path) and carries it as a ``git_patch`` with absolute paths, which
needs the line numbers: a change whose place is unknown (the fragments an ``Edit`` asks to
replace) goes without a patch, as v2 allows, rather than with numbers that would mislead.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

Starts = tuple[int, int]
DiffForm = Callable[[str, str | None, str, Starts | None], dict[str, Any]]
NO_NEWLINE = "\\ No newline at end of file"


def v1(path: str, old: str | None, new: str, starts: Starts | None = None) -> dict[str, Any]:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def v2(path: str, old: str | None, new: str, starts: Starts | None = None) -> dict[str, Any]:
    operation = "add" if old is None else "modify"
    diff: dict[str, Any] = {
        "type": "diff",
        "changes": [{"operation": operation, "path": path, "fileType": "text"}],
    }
    if old is None or starts is not None:
        diff["patch"] = {"format": "git_patch", "text": git_patch(path, old, new, starts or (1, 1))}
    return diff


def git_patch(path: str, old: str | None, new: str, starts: Starts) -> str:
    """One ``diff --git`` section: the change as a single hunk (all of ``old`` and ``new``)."""
    before, after = _lines(old or ""), _lines(new)
    head = [f"diff --git {path} {path}"]
    if old is None:
        head += ["new file mode 100644", "--- /dev/null"]
    else:
        head.append(f"--- {path}")
    head.append(f"+++ {path}")
    old_start = starts[0] if before else starts[0] - 1
    new_start = starts[1] if after else starts[1] - 1
    head.append(f"@@ -{old_start},{len(before)} +{new_start},{len(after)} @@")
    return "".join(f"{line}\n" for line in head + _body(before, after))


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _body(before: list[str], after: list[str]) -> list[str]:
    body: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            body += _marked(" ", before[i1:i2])
        else:
            body += _marked("-", before[i1:i2]) + _marked("+", after[j1:j2])
    return body


def _marked(sign: str, lines: list[str]) -> list[str]:
    marked: list[str] = []
    for line in lines:
        marked.append(sign + line.rstrip("\n"))
        if not line.endswith("\n"):
            marked.append(NO_NEWLINE)
    return marked
