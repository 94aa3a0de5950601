"""The conversation's title, as Claude Code names it.

Claude Code names a conversation in its stored session: a rename (``/rename``, or a host's)
announces itself with ``session_title_changed``, an AI title does not (it is only written to
the transcript, shortly after the first prompt). So the core asks for the stored title when a
rename is announced, after each turn while it knows none, and when a client attaches; the
answer comes back as a ``TitleRead``. Its lifecycle:

=============  ================================================  =============
state          what happens                                      next state
=============  ================================================  =============
(untitled)     a read finds a title: the client is told          ``NAMED``
``NAMED``      a read finds another title: the client is told    ``NAMED``
=============  ================================================  =============

A read that finds the title already told, or none, changes nothing. The first prompt is not a
title: the client names such a conversation itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TitleChanged:
    session_id: str
    title: str
    updated_at: str | None


class Title:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.current: str | None = None

    @property
    def wanted(self) -> bool:
        """Whether a turn's end should look for one (an AI title may have been written)."""
        return self.current is None

    def read(self, title: str | None, updated_at: str | None) -> list[TitleChanged]:
        if title is None or title == self.current:
            return []
        self.current = title
        return [TitleChanged(self.session_id, title, updated_at)]
