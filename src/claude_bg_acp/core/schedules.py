"""Scheduled work: a ``ScheduleWakeup`` or ``CronCreate`` tool call stays pending while scheduled.

The RFD's reading of Claude Code's scheduling tools. Once the tool result says the work is
scheduled, its tool call goes ``pending`` and is listed in ``background``: nothing runs now, but
closing the session discards it. A durable cron job lives in the project, outlives the
session, and is not listed.

=================  ================================================================  =============
state              what happens                                                      next
=================  ================================================================  =============
(tool call)        the result of ``ScheduleWakeup``, or of a non-durable ``CronCreate``  ``pending``
``pending`` wakeup Claude Code starts a turn whose origin is a ``scheduled-trigger``  ``completed``
                   (the oldest pending wakeup is the one that fired)
``pending`` wakeup a later ``ScheduleWakeup`` with ``stop`` ends the loop             ``cancelled``
``pending`` cron   a ``CronDelete`` names its id                                     ``cancelled``
``pending``        the session closes, or Claude Code is gone                        ``cancelled``
=================  ================================================================  =============
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

WAKEUP, CRON, CRON_DELETE = "ScheduleWakeup", "CronCreate", "CronDelete"


@dataclass(frozen=True)
class ScheduleEnded:
    """A scheduled tool call's final status."""

    session_id: str
    tool_call_id: str
    status: Literal["completed", "cancelled"]


@dataclass
class Scheduled:
    tool_use_id: str
    tool: str
    result_text: str


class Schedules:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.pending: dict[str, Scheduled] = {}

    def tool_result(
        self, tool_use_id: str, name: str, tool_input: dict[str, Any], text: str
    ) -> tuple[bool, list[ScheduleEnded]]:
        """A scheduling tool's own result: whether its call is now scheduled, and the calls it ended."""
        if name == WAKEUP and tool_input.get("stop"):
            return False, self._end(lambda s: s.tool == WAKEUP, "cancelled")
        if name == CRON_DELETE:
            job = str(tool_input.get("id") or tool_input.get("job_id") or "")
            return False, self._end(
                lambda s: s.tool == CRON and bool(job) and job in s.result_text, "cancelled"
            )
        if name == WAKEUP or (name == CRON and not tool_input.get("durable")):
            self.pending[tool_use_id] = Scheduled(tool_use_id, name, text)
            return True, []
        return False, []

    def fired(self) -> list[ScheduleEnded]:
        wakeup = next((s for s in self.pending.values() if s.tool == WAKEUP), None)
        if wakeup is None:
            return []
        return self._end(lambda s: s is wakeup, "completed")

    def cancel_all(self) -> list[ScheduleEnded]:
        return self._end(lambda _: True, "cancelled")

    def listed(self) -> list[str]:
        """The tool calls of scheduled work, in the order they were scheduled."""
        return list(self.pending)

    def _end(
        self, which: Callable[[Scheduled], bool], status: Literal["completed", "cancelled"]
    ) -> list[ScheduleEnded]:
        ended = [s for s in self.pending.values() if which(s)]
        for scheduled in ended:
            del self.pending[scheduled.tool_use_id]
        return [ScheduleEnded(self.session_id, s.tool_use_id, status) for s in ended]
