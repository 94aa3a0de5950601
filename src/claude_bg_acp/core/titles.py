"""The conversation's title, as Claude Code names it.

Claude Code names a conversation in its stored session: a rename (``/rename``, or a host's)
announces itself with ``session_title_changed``, an AI title does not (it is only written to
the transcript, shortly after the first prompt). So the core asks for the stored title when a
rename is announced, after each turn while it knows none, and when a client attaches; the
answer comes back as a ``TitleRead``. Its lifecycle:

=============  ========  ================================================  =============
title          trigger   what happens                                      next
=============  ========  ================================================  =============
``UNTITLED``   ``READ``  a read finds a title: the client is told          ``NAMED``
``NAMED``      ``READ``  a read finds another title: the client is told    ``NAMED``
=============  ========  ================================================  =============

A read that finds the title already told, or none, changes nothing. The first prompt is not a
title: the client names such a conversation itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from claude_bg_acp.core.lifecycle import Transitions


class TitlePhase(enum.Enum):
    UNTITLED = "untitled"
    NAMED = "named"


class TitleTrigger(enum.Enum):
    READ = "read"
    """A read finds a title the client was not told."""


TITLES: Transitions[TitlePhase, TitleTrigger] = Transitions.of(
    "title",
    TitlePhase,
    TitleTrigger,
    ((TitlePhase.UNTITLED,), TitleTrigger.READ, TitlePhase.NAMED),
    ((TitlePhase.NAMED,), TitleTrigger.READ, TitlePhase.NAMED),
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

    @property
    def wanted(self) -> bool:
        """Whether a turn's end should look for one (an AI title may have been written)."""
        return self.phase is TitlePhase.UNTITLED

    def read(self, title: str | None, updated_at: str | None) -> list[TitleChanged]:
        if title is None or title == self.current:
            return []
        self.phase, self.current = TITLES.move(self.phase, TitleTrigger.READ), title
        return [TitleChanged(self.session_id, title, updated_at)]
