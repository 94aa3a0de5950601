"""Scheduled work: a ``ScheduleWakeup`` or ``CronCreate`` tool call stays pending while scheduled.

The RFD's reading of Claude Code's scheduling tools. Once the tool result says the work is
scheduled, its tool call goes ``pending`` and is listed in ``background``: nothing runs now, but
closing the session discards it. A wakeup is ``completed`` when it fires (Claude Code starts a
turn whose origin is a ``scheduled-trigger``; the oldest pending wakeup is the one that fired)
and ``cancelled`` when a later ``ScheduleWakeup`` with ``stop`` ends the loop. A cron job stays
pending until ``CronDelete`` names its id, then ``cancelled``. A durable cron job lives in the
project, outlives the session, and is not listed. Closing the session cancels the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.updates import ToolCall
from claude_bg_acp.bridge.tools import ToolUse

WAKEUP, CRON, CRON_DELETE = "ScheduleWakeup", "CronCreate", "CronDelete"


@dataclass
class Scheduled:
    tool_use_id: str
    tool: str
    result_text: str


class Schedules:
    def __init__(self) -> None:
        self.pending: dict[str, Scheduled] = {}

    def tool_result(
        self, tool_use_id: str, tool: ToolUse, text: str
    ) -> tuple[dict[str, Any] | None, list[ToolCall]]:
        """The update fields for a scheduling tool's own result, and the calls it ended."""
        tool_input = tool.tool_input
        if tool.name == WAKEUP and tool_input.get("stop"):
            return None, self._end(lambda s: s.tool == WAKEUP, "cancelled")
        if tool.name == CRON_DELETE:
            job = str(tool_input.get("id") or tool_input.get("job_id") or "")
            return None, self._end(
                lambda s: s.tool == CRON and bool(job) and job in s.result_text, "cancelled"
            )
        if tool.name == WAKEUP or (tool.name == CRON and not tool_input.get("durable")):
            self.pending[tool_use_id] = Scheduled(tool_use_id, tool.name, text)
            return {"status": "pending"}, []
        return None, []

    def fired(self) -> list[ToolCall]:
        wakeup = next((s for s in self.pending.values() if s.tool == WAKEUP), None)
        if wakeup is None:
            return []
        return self._end(lambda s: s is wakeup, "completed")

    def cancel_all(self) -> list[ToolCall]:
        return self._end(lambda _: True, "cancelled")

    def listed(self) -> list[dict[str, Any]]:
        return [{"type": "tool_call", "toolCallId": s.tool_use_id} for s in self.pending.values()]

    def _end(self, which: Any, status: str) -> list[ToolCall]:
        ended = [s for s in self.pending.values() if which(s)]
        for scheduled in ended:
            del self.pending[scheduled.tool_use_id]
        return [
            ToolCall(session_update="tool_call_update", tool_call_id=s.tool_use_id, status=status)
            for s in ended
        ]
