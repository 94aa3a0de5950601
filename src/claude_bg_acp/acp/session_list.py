"""``session/list``: stored sessions in pages, the latest change first.

A page's ``nextCursor`` names the last session it holds by its position in that order
(``updatedAt``, then ``sessionId``), and the next page starts after it. So a session that
changes between two requests does not shift the pages: it moves to the top, where the client
sees it when it lists again, and nothing is listed twice or skipped because of it.

The sessions come from where they are stored, asked for from a position on (``start``), one
more than a page holds: that one tells whether a next page exists.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Protocol

from claude_bg_acp.acp.answers import ListSessionsResponse, SessionInfo
from claude_bg_acp.core.errors import Refusal, Refused

PAGE_SIZE = 100

Position = tuple[str, str]
"""``(updatedAt, sessionId)``: the latest first."""


def start(cursor: str | None) -> Position | None:
    """Where the page after ``cursor`` starts: its sessions come after this position (None: the
    first page); -32602 for a cursor this agent did not give."""
    return _decode(cursor) if cursor is not None else None


class Stored(Protocol):
    """A stored session as the listing reads it."""

    @property
    def session_id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def updated_at(self) -> str: ...
    @property
    def title(self) -> str | None: ...


def info(stored: Stored) -> SessionInfo:
    """ACP's ``SessionInfo`` of ``stored``: its title only if it has one."""
    found: SessionInfo = {"sessionId": stored.session_id, "cwd": stored.cwd, "updatedAt": stored.updated_at}
    if stored.title:
        found["title"] = stored.title
    return found


def page(infos: list[SessionInfo], size: int = PAGE_SIZE) -> ListSessionsResponse:
    """The page of ``infos``: the sessions after the cursor in order, up to ``size + 1`` of them."""
    result: ListSessionsResponse = {"sessions": infos[:size]}
    if len(infos) > size:
        result["nextCursor"] = _encode(_position(infos[size - 1]))
    return result


def _position(info: SessionInfo) -> Position:
    return (str(info.get("updatedAt") or ""), str(info["sessionId"]))


def _encode(position: Position) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode("ascii")


def _decode(cursor: str) -> Position:
    try:
        position = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeEncodeError):
        position = None
    if not (isinstance(position, list) and len(position) == 2 and all(isinstance(p, str) for p in position)):
        raise Refused(Refusal.INVALID, f"{cursor!r} is not a cursor this agent gave", "cursor")
    return position[0], position[1]
