"""How a Claude Code tool use looks as an ACP tool call: title, kind, locations and content.

Claude Code's tools are known by name: a file tool names its file (``Read`` with the lines it
reads, and their first line in ``locations``), a search its pattern and where it looks, an
edit shows its diff (each edit of a ``MultiEdit``, the new source of a notebook cell; a
``Write`` over a file the agent could read shows that file's text as the old side). Titles name
a path relative to the session's folder, absolute outside it; ``locations`` and diffs keep it
absolute, as ACP wants. An MCP tool (``mcp__<server>__<tool>``) is titled ``server: tool``;
anything else falls back to its name and ``other``.

Results become text content and their images image content; a failed result becomes
``failed``. A file tool's result is shown as Zed draws it (``reviewed``): an edit keeps a diff,
now the hunks of the change with their context lines (or, with no hunks to show, the diff it
had), located at the first changed line; a read is the file's text in a Markdown code fence
(without ``cat -n``'s numbers), located at its first line.
edit shows its diff (each edit of a ``MultiEdit``, the new source of a notebook cell). An MCP
tool (``mcp__<server>__<tool>``) is titled ``server: tool``, a compaction of the conversation
(``core.compaction``) "Compact conversation"; anything else falls back to its name and
``other``. Results become text content and their images image content; a failed result
becomes ``failed``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.updates import Location
from claude_bg_acp.claude.file_tools import Edited, FileRead, Review
from claude_bg_acp.core.compaction import COMPACT
from claude_bg_acp.core.transcript import Image
from claude_bg_acp.presenters import diffs
from claude_bg_acp.presenters.diffs import DiffForm

KINDS = {
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "TaskStop": "execute",
    "Monitor": "execute",
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Glob": "search",
    "Grep": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "Agent": "think",
    "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
    "EnterPlanMode": "switch_mode",
}


@dataclass(frozen=True)
class ToolView:
    title: str
    kind: str
    locations: list[Location] | None = None
    content: list[dict[str, Any]] | None = None


MCP_PREFIX = "mcp__"


def describe(
    name: str,
    tool_input: dict[str, Any],
    folder: str = "",
    replaced: str | None = None,
    diff: DiffForm = diffs.v1,
) -> ToolView:
    """``folder``: the session's, which titles name paths from; ``replaced``: the text of the
    file a ``Write`` overwrites, when the agent could read it; ``diff``: the client's form of
    a change."""
    kind = KINDS.get(name, "other")
    path = _text(tool_input, "file_path") or _text(tool_input, "notebook_path")
    where = path or (_text(tool_input, "path") if name in ("Grep", "Glob") else None)
    locations: list[Location] | None = [{"path": where}] if where else None
    first = _number(tool_input, "offset")
    if name == "Read" and locations and first is not None:
        locations[0]["line"] = max(first, 1)
    title = _title(name, _shown_paths(tool_input, folder), path and _shown(path, folder))
    return ToolView(title, kind, locations, _content(name, tool_input, path, replaced, diff))


def _shown(path: str, folder: str) -> str:
    """``path`` as a title names it: relative to ``folder`` when inside it."""
    if not folder or not os.path.isabs(path):
        return path
    relative = os.path.relpath(path, folder)
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _shown_paths(tool_input: dict[str, Any], folder: str) -> dict[str, Any]:
    where = _text(tool_input, "path")
    return {**tool_input, "path": _shown(where, folder)} if where else tool_input


def _title(name: str, tool_input: dict[str, Any], path: str | None) -> str:
    if name.startswith(MCP_PREFIX) and "__" in name[len(MCP_PREFIX) :]:
        server, tool = name[len(MCP_PREFIX) :].split("__", 1)
        return f"{server}: {tool}"
    if name == "Read" and path:
        return f"Read {path}{_lines(tool_input)}"
    if name == "NotebookEdit" and path:
        cell = _text(tool_input, "cell_id")
        action = {"insert": "Insert a cell into", "delete": "Delete a cell of"}.get(
            _text(tool_input, "edit_mode") or "", "Edit a cell of"
        )
        return f"{action} {path}" + (f" (cell {cell})" if cell else "")
    if name in ("Glob", "Grep"):
        pattern, where = _text(tool_input, "pattern") or "", _text(tool_input, "path")
        only = _text(tool_input, "glob") or _text(tool_input, "type")
        return f'{name} "{pattern}"' + (f" in {where}" if where else "") + (f" ({only})" if only else "")
    if name == "Bash":
        return _text(tool_input, "command") or "Run a command"
    if name == "Monitor":
        watched = _text(tool_input, "description") or _text(tool_input, "command")
        return f"Monitor: {watched}" if watched else "Monitor"
    if name in ("Task", "Agent"):
        return _text(tool_input, "description") or name
    if path:
        return f"{name} {path}"
    if name == "WebFetch":
        return f"Fetch {_text(tool_input, 'url') or ''}".strip()
    if name == "WebSearch":
        return f"Search the web: {_text(tool_input, 'query') or ''}"
    if name == "ExitPlanMode":
        return "Ready to code? Leave plan mode with this plan"
    if name == "AskUserQuestion":
        asked = [
            q["question"]
            for q in tool_input.get("questions") or []
            if isinstance(q, dict) and _text(q, "question")
        ]
        return " / ".join(asked) or name
    if name == COMPACT:
        return "Compact conversation" + (" (automatic)" if tool_input.get("trigger") == "auto" else "")
    return name


def _lines(tool_input: dict[str, Any]) -> str:
    """The lines a ``Read`` reads (``offset`` is its first line, counted from 1)."""
    first, count = _number(tool_input, "offset"), _number(tool_input, "limit")
    if count is not None and count > 0:
        start = max(first or 1, 1)
        return f" (lines {start}-{start + count - 1})"
    return f" (from line {first})" if first is not None else ""


def _content(
    name: str, tool_input: dict[str, Any], path: str | None, replaced: str | None, diff: DiffForm
) -> list[dict[str, Any]] | None:
    if name == "Edit" and path:
        return [_edit_diff(path, tool_input, diff)]
    if name == "MultiEdit" and path:
        edits = [edit for edit in tool_input.get("edits") or [] if isinstance(edit, dict)]
        return [_edit_diff(path, edit, diff) for edit in edits] or None
    if name == "Write" and path:
        # The whole file on both sides (a new one when the agent could not read it).
        return [diff(path, replaced, _text(tool_input, "content") or "", (1, 1))]
    if name == "NotebookEdit" and path and tool_input.get("edit_mode") != "delete":
        # The cell's old source is not part of the call: its new source shows as added.
        return [diff(path, "", _text(tool_input, "new_source") or "", None)]
    description = _text(tool_input, "description")
    if name == "Bash" and description:
        return [text_content(description)]
    plan = _text(tool_input, "plan")
    if name == "ExitPlanMode" and plan:
        return [text_content(plan)]
    return None


def reviewed(review: Review, diff: DiffForm = diffs.v1) -> tuple[list[dict[str, Any]], list[Location]]:
    """The content and locations of a file tool's card once it succeeded."""
    if isinstance(review, FileRead):
        return [text_content(fenced(review.path, review.text))], [{"path": review.path, "line": review.first}]
    location: Location = {"path": review.path}
    if review.line:
        location["line"] = review.line
    return _changes(review, diff), [location]


def _changes(edit: Edited, diff: DiffForm) -> list[dict[str, Any]]:
    if edit.created is not None:
        return [diff(edit.path, None, edit.created, (1, 1))]
    return [
        diff(edit.path, hunk.text("-"), hunk.text("+"), (hunk.old_start, hunk.new_start))
        for hunk in edit.hunks
    ]


_BACKTICKS = re.compile(r"`+")
_LANGUAGE = re.compile(r"[A-Za-z0-9_+-]+")


def fenced(path: str, text: str) -> str:
    """``text`` in a Markdown code fence longer than any run of backticks in it, tagged with the
    file's extension (Zed and GitHub find the language by it)."""
    fence = "`" * max([3, *(len(run) + 1 for run in _BACKTICKS.findall(text))])
    extension = os.path.splitext(path)[1][1:]
    language = extension if _LANGUAGE.fullmatch(extension) else ""
    body = text if not text or text.endswith("\n") else f"{text}\n"
    return f"{fence}{language}\n{body}{fence}"


def _edit_diff(path: str, edit: dict[str, Any], diff: DiffForm) -> dict[str, Any]:
    return diff(path, _text(edit, "old_string"), _text(edit, "new_string") or "", None)


def _text(tool_input: dict[str, Any], key: str) -> str | None:
    value = tool_input.get(key)
    return value if isinstance(value, str) and value else None


def _number(tool_input: dict[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def image_content(image: Image) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "image", "data": image.data, "mimeType": image.mime_type}}
