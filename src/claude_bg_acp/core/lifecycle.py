"""Lifecycles as tables that the code is held to.

A module that owns a lifecycle keeps its phases in an enum, draws the lifecycle as a table in its
docstring (the phases a row starts from in its first column, the phase it leads to in its last;
``any`` for every phase, a word in parentheses for "not known yet" or "forgotten", ``None``
here), and declares the same rows in code as a ``Lifecycle``. Every change of phase goes through
``Lifecycle.move``, which refuses one that no row has: ``IllegalTransition``, a bug of ours
(never the client's or Claude Code's), which reaches the session host as an internal error.
Staying in a phase is no transition. ``tests/test_lifecycles.py`` reads each docstring's table
and checks that it has exactly the rows of the code's, and that no phase is set any other way.

A lifecycle keyed by triggers (``Transitions``, as h11 keys its connection states) names the event
of each move as well: its table is ``(phase, trigger) -> next phase``, its docstring table has a
trigger column (the second), and the code asks it with the trigger alone,
``TABLE.move(phase, Trigger.X)``, which returns the next phase (``forget`` where the row leads
to "forgotten", ``step`` where either may come). Every (phase, trigger) a table
has no row for is an ``IllegalTransition``, staying in a phase included: a trigger that leaves
the phase as it is has a row that leads back to its own phase.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar, overload

P = TypeVar("P", bound=enum.Enum)
S = TypeVar("S", bound=enum.Enum)
"""A keyed lifecycle's phase (every table may start from ``None``, "not known yet", and a row may
lead to ``None``, "forgotten")."""
T = TypeVar("T", bound=enum.Enum)


class IllegalTransition(RuntimeError):
    """A change of phase that the lifecycle's table does not have."""


@dataclass(frozen=True)
class Lifecycle(Generic[P]):
    name: str
    """What lives through it: the first header cell of its docstring table."""
    phases: type[P]
    allowed: frozenset[tuple[P | None, P | None]]
    """(from, to) for every row; ``None`` before the thing is known, or once it is forgotten."""

    @classmethod
    def of(cls, name: str, phases: type[P], *rows: tuple[Iterable[P | None], P | None]) -> Lifecycle[P]:
        """The lifecycle of ``rows`` as the docstring draws them: (the phases it starts from, the
        phase it leads to)."""
        pairs = {(was, to) for starts, to in rows for was in starts if was is not to}
        return cls(name, phases, frozenset(pairs))

    @overload
    def move(self, was: P | None, to: P) -> P: ...

    @overload
    def move(self, was: P | None, to: None) -> None: ...

    def move(self, was: P | None, to: P | None) -> P | None:
        """``to``, if the table leads there from ``was``; raises ``IllegalTransition`` if not."""
        if was is not to and (was, to) not in self.allowed:
            raise IllegalTransition(f"{self.name}: no row leads from {_name(was)} to {_name(to)}")
        return to


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

    @property
    def allowed(self) -> frozenset[tuple[S | None, S | None]]:
        """(from, to) of every row that changes the phase."""
        return frozenset((was, to) for (was, _), to in self.table.items() if was is not to)

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
