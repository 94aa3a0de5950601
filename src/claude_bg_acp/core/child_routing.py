"""Subagents' messages routed to their child sessions.

A message of Claude Code's whose ``parent_tool_use_id`` names the Agent tool use that launched
a subagent goes to that child's transcript once the child is exposed (announced: it gets its
transcript then), and waits in a bounded buffer until then; a child is never guessed. Once the
child is exposed (``flush``), what waited is said in it, in order, and the work it launched is
shown. Where subagents are not sessions, their messages go to the root's transcript as they come.
"""

from __future__ import annotations

from collections import defaultdict

from claude_agent_sdk.types import AssistantMessage, Message, ToolUseBlock

from claude_bg_acp.core.effects import Effect
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.routes import Routes
from claude_bg_acp.core.subagents import ChildAnnounced, ChildFact, Subagents
from claude_bg_acp.core.transcript import Transcript

BUFFER_LIMIT = 1000
"""Messages kept per subagent that is not exposed yet (its parent is unknown)."""


class ChildRouting:
    def __init__(self, session_id: str, policy: Policy, subagents: Subagents, routes: Routes) -> None:
        self.session_id = session_id
        self.policy = policy
        self.subagents = subagents
        self.routes = routes
        self.transcripts = {session_id: Transcript(session_id)}
        self._buffered: defaultdict[str, list[Message]] = defaultdict(list)

    def message(self, parent_tool_use_id: str, message: Message, now: float) -> list[Effect]:
        if not self.policy.subagents_are_sessions:
            # Subagents' work shows in the session that launched them, as the official adapter
            # shows it.
            return self.routes.translate(self.session_id, message, now)
        child = self.subagents.child_launched_by(parent_tool_use_id)
        if child is not None:
            return self.routes.translate(child, message, now)
        # Its child is not exposed yet: never guess where it belongs, wait.
        pending = self._buffered[parent_tool_use_id]
        if len(pending) < BUFFER_LIMIT:
            pending.append(message)
        return []

    def flush(self, now: float) -> list[Effect]:
        """Send what waited for a child that is exposed now, and show the work it launched (a
        subagent among it that was shown as work of ours is its child session now)."""
        effects: list[Effect] = []
        for tool_use_id in list(self._buffered):
            child = self.subagents.child_launched_by(tool_use_id)
            if child is not None and tool_use_id in self._buffered:  # not sent by a nested flush
                for message in self._buffered.pop(tool_use_id):
                    effects += self.routes.translate(child, message, now)
                effects += self.routes.exposed(now)
        return effects

    def waiting_for(self, tool_use_id: str) -> bool:
        """Whether a buffered message of a child not exposed yet holds this tool use."""
        return any(
            isinstance(message, AssistantMessage)
            and any(isinstance(block, ToolUseBlock) and block.id == tool_use_id for block in message.content)
            for messages in self._buffered.values()
            for message in messages
        )

    def present(self, facts: list[ChildFact]) -> list[Effect]:
        """Facts of the children, each announced one given its transcript."""
        for fact in facts:
            if isinstance(fact, ChildAnnounced):
                self.transcripts[fact.child_id] = Transcript(fact.child_id)
        return self.routes.present(facts)
