"""Lifecycles as tables keyed by events, which the code is held to (as h11 keys its states).

A module that owns a lifecycle keeps its phases in an enum and the events that move it in
another (its triggers), draws the lifecycle as a table in its docstring (the phases a row starts
from in its first column, its trigger in the second, the phase it leads to in the last; ``any``
for every phase, a word in parentheses for "not known yet" or "forgotten", ``None`` here), and
declares the same rows in code as ``Transitions``: ``(phase, trigger) -> next phase``. The code
asks the table with the trigger alone: ``TABLE.move(phase, Trigger.X)`` returns the next phase
(``forget`` where the row leads to "forgotten", ``step`` where either may come). Every
(phase, trigger) the table has no row for is an ``IllegalTransition``, a bug of ours (never the
client's or Claude Code's), which reaches the session host as an internal error; staying in a
phase is a row too, one that leads back to its own phase. ``tests/edges/test_lifecycles.py`` reads
each docstring's table and checks that it has exactly the rows of the code's, and that no
phase is set any other way.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)
"""A keyed lifecycle's phase (every table may start from ``None``, "not known yet", and a row may
lead to ``None``, "forgotten")."""
T = TypeVar("T", bound=enum.Enum)


class IllegalTransition(RuntimeError):
    """A change of phase that the lifecycle's table does not have."""


@dataclass(frozen=True)
class Transitions(Generic[S, T]):
    """A lifecycle keyed by triggers: the next phase of each (phase, trigger) it has a row for."""

    name: str
    """What lives through it: the first header cell of its docstring table."""
    phases: type[enum.Enum]
    triggers: type[T]
    table: Mapping[tuple[S | None, T], S | None]

    @classmethod
    def of(
        cls,
        name: str,
        phases: type[enum.Enum],
        triggers: type[T],
        *rows: tuple[Iterable[S | None], T, S | None],
    ) -> Transitions[S, T]:
        """The lifecycle of ``rows`` as the docstring draws them: (the phases it starts from, the
        trigger, the phase it leads to); a (phase, trigger) is in one row at most."""
        table: dict[tuple[S | None, T], S | None] = {}
        for starts, trigger, to in rows:
            for was in starts:
                if (was, trigger) in table:
                    raise ValueError(f"{name}: two rows for {_name(was)} on {trigger.name}")
                table[was, trigger] = to
        return cls(name, phases, triggers, table)

    def move(self, was: S | None, trigger: T) -> S:
        """The phase ``trigger`` leads to from ``was``; raises ``IllegalTransition`` if no row
        leads from there to a phase."""
        to = self.step(was, trigger)
        if to is None:
            raise IllegalTransition(f"{self.name}: {trigger.name} forgets {_name(was)}: forget, not move")
        return to

    def forget(self, was: S | None, trigger: T) -> None:
        """``trigger`` forgets the thing in ``was``; raises ``IllegalTransition`` if no row
        leads from there to "forgotten"."""
        if self.step(was, trigger) is not None:
            raise IllegalTransition(f"{self.name}: {trigger.name} moves {_name(was)}: move, not forget")

    def step(self, was: S | None, trigger: T) -> S | None:
        """Where ``trigger`` leads from ``was``, a phase or "forgotten" (None), for a thing whose
        phase may be either; raises ``IllegalTransition`` if no row has it."""
        try:
            return self.table[was, trigger]
        except KeyError:
            raise IllegalTransition(
                f"{self.name}: no row leads from {_name(was)} on {trigger.name}"
            ) from None


def _name(phase: object) -> str:
    return "(none)" if not isinstance(phase, enum.Enum) else phase.name
