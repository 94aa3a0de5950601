"""How a Claude Code tool use looks as an ACP tool call: title, kind, locations and content.

Claude Code's tools are known by name; anything else (MCP tools, future tools) falls back to
its name and ``other``. Results become text content; a failed result becomes ``failed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    locations: list[dict[str, Any]] | None = None
    content: list[dict[str, Any]] | None = None


def describe(name: str, tool_input: dict[str, Any]) -> ToolView:
    kind = KINDS.get(name, "other")
    path = _text(tool_input, "file_path") or _text(tool_input, "notebook_path")
    locations = [{"path": path}] if path else None
    return ToolView(_title(name, tool_input, path), kind, locations, _content(name, tool_input, path))


def _title(name: str, tool_input: dict[str, Any], path: str | None) -> str:
    if name == "Bash":
        return _text(tool_input, "command") or "Run a command"
    if name == "Monitor":
        watched = _text(tool_input, "description") or _text(tool_input, "command")
        return f"Monitor: {watched}" if watched else "Monitor"
    if name in ("Task", "Agent"):
        return _text(tool_input, "description") or name
    if path:
        return f"{name} {path}"
    if name in ("Glob", "Grep"):
        return f"{name} {_text(tool_input, 'pattern') or ''}".strip()
    if name == "WebFetch":
        return f"Fetch {_text(tool_input, 'url') or ''}".strip()
    if name == "WebSearch":
        return f"Search the web: {_text(tool_input, 'query') or ''}"
    return name


def _content(name: str, tool_input: dict[str, Any], path: str | None) -> list[dict[str, Any]] | None:
    if name == "Edit" and path:
        return [_diff(path, _text(tool_input, "old_string"), _text(tool_input, "new_string") or "")]
    if name == "Write" and path:
        return [_diff(path, None, _text(tool_input, "content") or "")]
    description = _text(tool_input, "description")
    if name == "Bash" and description:
        return [text_content(description)]
    return None


def _diff(path: str, old: str | None, new: str) -> dict[str, Any]:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def _text(tool_input: dict[str, Any], key: str) -> str | None:
    value = tool_input.get(key)
    return value if isinstance(value, str) and value else None


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}
