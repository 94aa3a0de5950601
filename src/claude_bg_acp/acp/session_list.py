"""``session/list``: stored sessions in pages, the latest change first.

A page's ``nextCursor`` names the last session it holds by its position in that order
(``updatedAt``, then ``sessionId``), and the next page starts after it. So a session that
changes between two requests does not shift the pages: it moves to the top, where the client
sees it when it lists again, and nothing is listed twice or skipped because of it.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from claude_bg_acp.acp.jsonrpc import INVALID_PARAMS, RpcError

PAGE_SIZE = 100

SessionInfo = dict[str, Any]
"""ACP's ``SessionInfo``: ``sessionId``, ``cwd``, ``title``, ``updatedAt`` (RFC 3339)."""


def page(infos: list[SessionInfo], cursor: str | None, size: int = PAGE_SIZE) -> dict[str, Any]:
    """The page after ``cursor`` of ``infos`` (ordered latest first, as ``_position`` sorts)."""
    after = _decode(cursor) if cursor is not None else None
    remaining = [info for info in infos if after is None or _position(info) < after]
    result: dict[str, Any] = {"sessions": remaining[:size]}
    if len(remaining) > size:
        result["nextCursor"] = _encode(_position(remaining[size - 1]))
    return result


def _position(info: SessionInfo) -> tuple[str, str]:
    return (str(info.get("updatedAt") or ""), str(info["sessionId"]))


def _encode(position: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode("ascii")


def _decode(cursor: str) -> tuple[str, str]:
    try:
        position = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeEncodeError):
        position = None
    if not (isinstance(position, list) and len(position) == 2 and all(isinstance(p, str) for p in position)):
        raise RpcError(INVALID_PARAMS, f"Invalid params: cursor: {cursor!r} is not a cursor this agent gave")
    return position[0], position[1]
