"""How a prompt stands in Claude Code's content, as sent and as stored: the text forms a
resource takes in it, and the title a first prompt makes.

An embedded text resource is given to Claude as a ``<context ref="URI">`` block of its own, a
resource link as a mention (``@URI``); ``resource_uri`` tells such a block from typed text. A
conversation's first prompt titles it (``from_prompt``): the first line the person typed, cut
at a word to ``LIMIT`` characters, resources left out (a prompt of resources alone is titled
by the first one's name). The core titles a live conversation by it, a listing of the stored
ones likewise, so it lives here, below both.
"""

from __future__ import annotations

import re
from typing import Any

CONTEXT = re.compile(r'<context ref="([^"]*)">\n(.*)\n</context>', re.DOTALL)
"""An embedded resource's text as given to Claude: its URI, then its text."""
_MENTION = re.compile(r"@\S*")

LIMIT = 80
"""The longest title a client is shown, in characters (a longer one is cut, ``…`` ending it)."""


def resource_uri(text: str) -> str | None:
    """The URI of the resource a text block of Claude's content stands for (an embedded one's
    context, or the mention a link became: a block of its own); None for typed text."""
    context = CONTEXT.fullmatch(text)
    if context:
        return context[1]
    return text[1:] if _MENTION.fullmatch(text) else None


def from_prompt(content: str | list[Any]) -> str | None:
    """The title a prompt makes (Claude Code's content, as sent or stored): the first line the
    person typed, else the name of the first resource it holds; ``short``. None for a command
    (``/name``) or a prompt without text."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts = [
        block["text"]
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    uris = [uri for text in texts if (uri := resource_uri(text)) is not None]
    typed = "\n".join(text for text in texts if resource_uri(text) is None)
    line = next((line for line in typed.splitlines() if line.strip()), None)
    if line is None:
        return short(uris[0].rstrip("/").rsplit("/", 1)[-1]) if uris else None
    return None if line.lstrip().startswith("/") else short(line)


def short(text: str) -> str | None:
    """``text`` on one line, at most ``LIMIT`` characters: cut at a word when longer (within one
    only when that would keep less than half). None when it is blank."""
    line = " ".join(text.split())
    if not line:
        return None
    if len(line) <= LIMIT:
        return line
    cut = line[:LIMIT]  # one more than is kept: a space there ends a word
    space = cut.rfind(" ")
    kept = cut[:space] if space > LIMIT // 2 else cut[: LIMIT - 1]
    return kept.rstrip() + "…"
