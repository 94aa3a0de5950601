"""The conversation's title: Claude Code's where it has one, else one made from the first prompt.

Claude Code names a conversation in its stored session: a rename (``/rename``, or a host's)
announces itself with ``session_title_changed``, an AI title does not (it is only written to
the transcript). So the core asks for the stored title when a rename is announced and after
each turn while Claude Code has named none, and the host reads it when a client attaches
(before its answer); the answer comes back as a ``TitleRead``: Claude Code's own title or, for
a stored conversation it has not named, the one its first prompt makes. A new conversation is
titled by its first prompt as soon as Claude Code is given it, without a model request
(``claude.prompt_text.from_prompt``): the first line the person typed, cut at a word to
``LIMIT`` characters, embedded context and resource links left out (a prompt of resources
alone is titled by the first one's name). Its lifecycle:

=============  =============  ========================================  ============
title          trigger        what happens                              next
=============  =============  ========================================  ============
``UNTITLED``   ``PROMPTED``   the first prompt, or a read of a stored   ``PROMPTED``
                              one, makes a title: the client is told
``UNTITLED``,  ``NAMED``      a read finds Claude Code's title: the     ``NAMED``
``PROMPTED``,                 client is told (unless it is the title
``NAMED``                     told already)
=============  =============  ========================================  ============

A read that finds no title, or only the first prompt's once a title is told, changes nothing;
so does a prompt of a conversation that was stored before (``stored``): its first prompt is
the stored one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.claude.prompt_text import from_prompt
from claude_bg_acp.core.lifecycle import Transitions


class TitlePhase(enum.Enum):
    UNTITLED = "untitled"
    PROMPTED = "prompted"
    """Titled by its first prompt: Claude Code has named it nothing yet."""
    NAMED = "named"
    """Titled by Claude Code."""


class TitleTrigger(enum.Enum):
    PROMPTED = "prompted"
    """The first prompt (or a read of a stored conversation's) makes a title."""
    NAMED = "named"
    """A read finds Claude Code's own title."""


TITLES: Transitions[TitlePhase, TitleTrigger] = Transitions.of(
    "title",
    TitlePhase,
    TitleTrigger,
    ((TitlePhase.UNTITLED,), TitleTrigger.PROMPTED, TitlePhase.PROMPTED),
    ((TitlePhase.UNTITLED, TitlePhase.PROMPTED, TitlePhase.NAMED), TitleTrigger.NAMED, TitlePhase.NAMED),
)


@dataclass(frozen=True)
class TitleChanged:
    session_id: str
    title: str
    updated_at: str | None


class Title:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.current: str | None = None
        self.phase: TitlePhase = TitlePhase.UNTITLED
        self._stored = False

    @property
    def wanted(self) -> bool:
        """Whether a turn's end should look for one (Claude Code may have named it)."""
        return self.phase is not TitlePhase.NAMED

    def stored(self) -> None:
        """The conversation was stored before: its prompts from now on are not its first."""
        self._stored = True

    def prompted(self, content: list[dict[str, Any]]) -> list[TitleChanged]:
        """A prompt goes to Claude Code (in its form): the first of a new conversation titles it."""
        if self._stored or self.phase is not TitlePhase.UNTITLED:
            return []
        title = from_prompt(content)
        if title is None:
            return []  # a command: the next prompt may be the first one
        return self._told(TitleTrigger.PROMPTED, title, None)

    def read(self, title: str | None, own: bool, updated_at: str | None) -> list[TitleChanged]:
        """What the stored session is titled: Claude Code's own title (``own``) or its first
        prompt's."""
        if title is None or (not own and self.phase is not TitlePhase.UNTITLED):
            return []
        return self._told(TitleTrigger.NAMED if own else TitleTrigger.PROMPTED, title, updated_at)

    def _told(self, trigger: TitleTrigger, title: str, updated_at: str | None) -> list[TitleChanged]:
        self.phase = TITLES.move(self.phase, trigger)
        if title == self.current:
            return []
        self.current = title
        return [TitleChanged(self.session_id, title, updated_at)]
