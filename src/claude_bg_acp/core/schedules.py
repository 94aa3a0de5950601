"""Scheduled work: a ``ScheduleWakeup`` or ``CronCreate`` tool call stays pending while scheduled.

The RFD's reading of Claude Code's scheduling tools. Once the tool result says the work is
scheduled, its tool call goes ``pending`` and is listed in ``background``: nothing runs now, but
closing the session discards it. A durable cron job lives in the project, outlives the
session, and is not listed. A client cannot cancel a scheduled call (it never advertises
``cancel``, live or restated): Claude Code offers whoever drives it no way to unschedule a
wakeup or a session's cron job (its control requests stop tasks, which these are not; only the
model's own ``ScheduleWakeup`` with ``stop`` and ``CronDelete`` remove them).

The scheduled call's phase is its tool call's status:

=================  =============  ===========================================================  =============
schedule           trigger        what happens                                                 next
=================  =============  ===========================================================  =============
(tool call)        ``SCHEDULED``  the result of ``ScheduleWakeup``, or of a non-durable        ``PENDING``
                                  ``CronCreate``
``PENDING``        ``FIRED``      a wakeup: Claude Code starts a turn whose origin is a        ``COMPLETED``
                                  ``scheduled-trigger`` (the oldest pending wakeup is the one
                                  that fired)
``PENDING``        ``STOPPED``    a wakeup: a later ``ScheduleWakeup`` with ``stop`` ends the  ``CANCELLED``
                                  loop; a cron job: a ``CronDelete`` names its id; any: the
                                  session closes, or Claude Code is gone
=================  =============  ===========================================================  =============

A scheduled call that ended is forgotten.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.tool_uses import ToolUse

WAKEUP, CRON, CRON_DELETE = "ScheduleWakeup", "CronCreate", "CronDelete"
FIRE_SLACK = 1.0
"""Seconds a wakeup may seem to fire early (its delay counts from its tool result, here)."""


class SchedulePhase(enum.Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class ScheduleTrigger(enum.Enum):
    SCHEDULED = "scheduled"
    FIRED = "fired"
    STOPPED = "stopped"


SCHEDULES: Transitions[SchedulePhase, ScheduleTrigger] = Transitions.of(
    "schedule",
    SchedulePhase,
    ScheduleTrigger,
    ((None,), ScheduleTrigger.SCHEDULED, SchedulePhase.PENDING),
    ((SchedulePhase.PENDING,), ScheduleTrigger.FIRED, SchedulePhase.COMPLETED),
    ((SchedulePhase.PENDING,), ScheduleTrigger.STOPPED, SchedulePhase.CANCELLED),
)


@dataclass(frozen=True)
class ScheduleEnded:
    """A scheduled tool call's final status."""

    session_id: str
    tool_call_id: str
    status: Literal["completed", "cancelled"]


@dataclass
class Scheduled:
    tool_call_id: str
    tool: str
    session_id: str
    result_text: str
    due_at: float | None = None
    """When a wakeup fires (from its ``delaySeconds``), if it said."""
    phase: SchedulePhase = field(default_factory=lambda: SCHEDULES.move(None, ScheduleTrigger.SCHEDULED))


def schedules_work(name: str, tool_input: dict[str, Any]) -> bool:
    """Whether a tool call only schedules work: it is ``pending`` from its start until it fires."""
    return (name == WAKEUP and not tool_input.get("stop")) or (name == CRON and not tool_input.get("durable"))


class Schedules:
    def __init__(self) -> None:
        self.pending: dict[str, Scheduled] = {}

    def tool_result(self, use: ToolUse, text: str, now: float) -> tuple[bool, list[ScheduleEnded]]:
        """A scheduling tool's own result: whether its call is now scheduled, and the calls it ended."""
        name, tool_input = use.name, use.tool_input
        if name == WAKEUP and tool_input.get("stop"):
            return False, self._end(lambda s: s.tool == WAKEUP, "cancelled")
        if name == CRON_DELETE:
            job = str(tool_input.get("id") or tool_input.get("job_id") or "")
            return False, self._end(
                lambda s: s.tool == CRON and bool(job) and job in s.result_text, "cancelled"
            )
        if schedules_work(name, tool_input):
            delay = tool_input.get("delaySeconds")
            due = now + delay if name == WAKEUP and isinstance(delay, int | float) else None
            self.pending[use.call_id] = Scheduled(use.call_id, name, use.session_id, text, due)
            return True, []
        return False, []

    def fired(self) -> list[ScheduleEnded]:
        """A turn whose origin is a ``scheduled-trigger`` ended: the oldest wakeup fired."""
        wakeup = next((s for s in self.pending.values() if s.tool == WAKEUP), None)
        if wakeup is None:
            return []
        return self._end(lambda s: s is wakeup, "completed")

    def due(self, now: float) -> list[ScheduleEnded]:
        """Claude Code started a turn by itself, unexpected, when a wakeup was due: it fired."""
        wakeup = next(
            (s for s in self.pending.values() if s.due_at is not None and now >= s.due_at - FIRE_SLACK), None
        )
        if wakeup is None:
            return []
        return self._end(lambda s: s is wakeup, "completed")

    def cancel_all(self) -> list[ScheduleEnded]:
        return self._end(lambda _: True, "cancelled")

    def listed(self, session_id: str) -> list[str]:
        """The tool calls of the session's scheduled work, in the order they were scheduled."""
        return [s.tool_call_id for s in self.pending.values() if s.session_id == session_id]

    def _end(
        self, which: Callable[[Scheduled], bool], status: Literal["completed", "cancelled"]
    ) -> list[ScheduleEnded]:
        ended = [s for s in self.pending.values() if which(s)]
        trigger = ScheduleTrigger.FIRED if status == "completed" else ScheduleTrigger.STOPPED
        for scheduled in ended:
            scheduled.phase = SCHEDULES.move(scheduled.phase, trigger)
            del self.pending[scheduled.tool_call_id]
        return [ScheduleEnded(s.session_id, s.tool_call_id, status) for s in ended]
