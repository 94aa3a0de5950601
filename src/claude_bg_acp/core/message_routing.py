"""Claude Code's messages of one conversation (the root's or a child's) routed through its
transcript.

The ``Transcript`` reads a message as facts: text goes to the client (not the answer of a
cancelled turn); a tool's facts go to ``ToolUses``, which owns every tool call's lifecycle
(shown in the session a permission question showed it in: ``PermissionRequests.owner``); the
todo and task tools go to the session's ``Plan`` instead of becoming tool calls. A tool result
may hand its work to ``Background`` (a shell's terminal, work on its tool call) or to
``Schedules`` (work that only runs later), and may name the task it launched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from claude_agent_sdk.types import AssistantMessage, Message, StreamEvent, UserMessage

from claude_bg_acp.claude import conventions
from claude_bg_acp.core.child_routing import ChildRouting
from claude_bg_acp.core.effects import Effect
from claude_bg_acp.core.permission_requests import PermissionRequests
from claude_bg_acp.core.plan import PLAN_TOOLS, Plan
from claude_bg_acp.core.routes import Parts, Routes
from claude_bg_acp.core.schedules import schedules_work
from claude_bg_acp.core.task_routing import TaskRouting
from claude_bg_acp.core.tool_uses import ToolCallHandedOff
from claude_bg_acp.core.transcript import (
    MessageChunk,
    ToolInput,
    ToolResulted,
    ToolStreamed,
    TranscriptFact,
)


class MessageRouting:
    def __init__(
        self,
        parts: Parts,
        children: ChildRouting,
        permissions: PermissionRequests,
        tasks: TaskRouting,
        routes: Routes,
    ) -> None:
        self.session_id, self.foreground, self.tool_uses = parts.session_id, parts.foreground, parts.tool_uses
        self.background, self.shells, self.schedules = parts.background, parts.shells, parts.schedules
        self.transcripts = children.transcripts
        self.permissions = permissions
        self.tasks = tasks
        self.routes = routes
        self.plans: dict[str, Plan] = {}

    def translate(self, session_id: str, message: Message, now: float) -> list[Effect]:
        transcript = self.transcripts[session_id]
        facts: Sequence[TranscriptFact]
        if isinstance(message, StreamEvent):
            facts = transcript.stream_event(message.event)
        elif isinstance(message, AssistantMessage):
            facts = transcript.assistant(message)
        elif isinstance(message, UserMessage):
            facts = transcript.tool_results(message)
        else:
            return []
        effects: list[Effect] = []
        for fact in facts:
            effects += self._transcript_fact(session_id, fact, now)
        return effects

    def _transcript_fact(self, session_id: str, fact: TranscriptFact, now: float) -> list[Effect]:
        match fact:
            case MessageChunk() if session_id == self.session_id and self.foreground.muted:
                return []  # the answer of a cancelled turn
            case MessageChunk():
                return self.routes.present([fact])
            case ToolStreamed(tool_use_id, name) if name in PLAN_TOOLS:
                return []
            case ToolStreamed(tool_use_id, name):
                owner = self.permissions.owner(tool_use_id, session_id)
                return self.routes.present(self.tool_uses.streaming(owner, tool_use_id, name))
            case ToolInput(tool_use_id, name, tool_input, launched_by) if name in PLAN_TOOLS and (
                launched_by is None or session_id != self.session_id
            ):
                self.plan(session_id).input_known(tool_use_id, name, tool_input)
                return []
            case ToolResulted(tool_use_id, text, is_error) if self.plan(session_id).owns(tool_use_id):
                return self.routes.present(
                    self.plan(session_id).result(tool_use_id, is_error, text, fact.structured)
                )
            case ToolInput(tool_use_id, name, tool_input, launched_by, message):
                # Work that is only scheduled is pending from the start, never in progress.
                pending = schedules_work(name, tool_input)
                owner = self.permissions.owned(tool_use_id, session_id)
                running = self.tool_uses.input_known(
                    owner, tool_use_id, name, tool_input, launched_by, message, pending, now
                )
                return self.routes.present(running)
            case ToolResulted():
                return self._tool_result(fact, now)
            case _:
                assert_never(fact)

    def plan(self, session_id: str) -> Plan:
        return self.plans.setdefault(session_id, Plan(session_id))

    def _tool_result(self, fact: ToolResulted, now: float) -> list[Effect]:
        use = self.tool_uses.get(fact.tool_use_id)
        if use is None or use.final or use.handed_off:
            return []
        effects: list[Effect] = []
        handed = conventions.hand_off(use.tool_input, fact.text, fact.is_error, fact.structured)
        if handed is not None:
            effects += self.tasks.learned(handed.task_id, fact.tool_use_id, handed.output_file, now)
        output_file = handed.output_file if handed else None
        outs, target = self.background.hand_off(fact.tool_use_id, use.call_id, output_file)
        effects += self.tasks.background_out(outs, now)
        if target is not None:
            use.handed_off = True
            if target.terminal_id is not None:
                self.tool_uses.finish(use.call_id)
            note = conventions.launch_note(use.tool_input)  # never the hand-off's words
            handoff = ToolCallHandedOff(
                use.session_id, use.call_id, note, target.terminal_id, target.status, fact.is_error
            )
            return effects + self.routes.present([handoff])
        if not fact.is_error:
            scheduled, ended = self.schedules.tool_result(use, fact.text, now)
            effects += self.tasks.schedules_ended(ended, publish=not scheduled)
            if scheduled:
                use.handed_off = True
                self.tool_uses.detach(use.call_id)
                handoff = ToolCallHandedOff(use.session_id, use.call_id, fact.text, None, "pending")
                return effects + self.routes.present([handoff]) + self.tasks.publish()
        launched = handed is not None or conventions.agent_launched(fact.structured) is not None
        text = conventions.launch_note(use.tool_input) if launched else fact.text
        finished = self.tool_uses.result(
            use, fact.is_error, text, fact.images, handed is not None, fact.structured
        )
        return effects + self.routes.shells_out(self.shells.results(finished))
