"""Subagent sessions: each Agent/Task subagent as a child session of the session that launched it.

Theory of operation (the Subagent Sessions RFD). A child is exposed to v2 clients, and to v1
clients that declare ``clientCapabilities.subagents``; to others it stays an ordinary tool call.

- Identity: the child's session id is Claude Code's agent id (the task id of the
  ``local_agent`` task), which is also the ``agent_id`` of its permission requests.
- Parent: the session whose transcript holds the Agent tool use that launched it (the root, or
  another child for a nested one). A child whose parent is not exposed yet waits, unexposed;
  its traffic is buffered by the core. A parent is never guessed.
- Announcement, before any of the child's traffic: ``subagent_update`` on the parent (title
  from the agent's name and type, description from the tool input's ``description``,
  ``capabilities.cancel``, ``state: running``), then the launching prompt as an incoming
  ``session_message`` in the child's transcript, sent by the parent. In v2 the child also gets
  its own ``state_update``.
- State: ``running`` while its task runs; ``idle`` with ``end_turn``, ``cancelled`` or
  ``error`` when it ends; ``unknown`` when Claude Code is gone. Each state goes to the child
  (v2) and is mirrored on the parent's association.
- ``session/cancel`` with a child's id stops that child's task only.
- The Agent tool call stays a tool call of the session that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from claude_bg_acp.acp.updates import SessionMessage, StateUpdate, SubagentUpdate
from claude_bg_acp.bridge.effects import Effect, Notify, StopTask
from claude_bg_acp.bridge.tasks import Task
from claude_bg_acp.bridge.tools import ToolUse
from claude_bg_acp.bridge.transcript import Transcript
from claude_bg_acp.bridge.turns import Version

AGENT_TASK_TYPES = ("local_agent", "remote_agent", "in_process_teammate")
CANCEL: dict[str, Any] = {"cancel": {}}
END_STATES = {"completed": "end_turn", "failed": "error", "killed": "cancelled", "stopped": "cancelled"}


@dataclass
class Child:
    session_id: str
    task_id: str
    tool_use_id: str
    parent_id: str
    transcript: Transcript
    state: str = "running"


def is_subagent(task: Task) -> bool:
    return task.task_type in AGENT_TASK_TYPES or task.subagent_type is not None


class Subagents:
    def __init__(
        self,
        root_id: str,
        version: Version,
        exposed: bool,
        tool_uses: dict[str, ToolUse],
        make_transcript: Callable[[str], Transcript],
    ) -> None:
        self.root_id = root_id
        self.version = version
        self.exposed = exposed
        self.children: dict[str, Child] = {}
        self._tool_uses = tool_uses
        self._make_transcript = make_transcript

    def announce(self, task: Task) -> list[Effect] | None:
        """Expose a subagent task as a child session; None while its parent is not known."""
        tool = self._tool_uses.get(task.tool_use_id or "")
        if tool is None or not task.tool_use_id:
            return None
        parent = tool.session_id
        if parent != self.root_id and parent not in self.children:
            return None
        known = self.children.get(task.task_id)
        if known is not None:
            return self._report(known, {"state": "running"})  # the same child, working again
        child = Child(
            task.task_id, task.task_id, task.tool_use_id, parent, self._make_transcript(task.task_id)
        )
        self.children[child.session_id] = child
        announcement = SubagentUpdate(
            session_id=child.session_id,
            title=_title(tool.tool_input, task),
            description=_text(tool.tool_input.get("description")) or task.description or None,
            capabilities=CANCEL,
            state={"state": "running"},
        )
        effects: list[Effect] = [Notify(parent, announcement)]
        prompt = task.prompt or _text(tool.tool_input.get("prompt"))
        if prompt:
            message = SessionMessage(
                message_id=f"delegation-{task.tool_use_id}",
                sender_session_id=parent,
                recipient_session_id=child.session_id,
                content=[{"type": "text", "text": prompt}],
            )
            effects.append(Notify(child.session_id, message))
        if self.version == 2:
            effects.append(Notify(child.session_id, StateUpdate(state="running", background=[])))
        return effects

    def ended(self, task: Task) -> list[Effect]:
        child = self.children.get(task.task_id)
        if child is None or child.state != "running":
            return []
        stop_reason = END_STATES.get(task.end_status or "")
        state: dict[str, Any] = {"state": "idle"}  # with no stop reason when how it ended is unknown
        if stop_reason is not None and (stop_reason != "error" or self.version == 2):
            state["stopReason"] = stop_reason
        if stop_reason == "error" and self.version == 2:
            state["error"] = {"code": INTERNAL_ERROR, "message": task.summary or "The subagent failed"}
        return self._report(child, state)

    def lost(self) -> list[Effect]:
        """Claude Code is gone: what its children were doing can no longer be observed."""
        effects: list[Effect] = []
        for child in self.children.values():
            if child.state == "running":
                effects += self._report(child, {"state": "unknown"})
        return effects

    def cancel(self, session_id: str) -> list[Effect]:
        child = self.children.get(session_id)
        if child is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown session {session_id}")
        return [StopTask(child.task_id)] if child.state == "running" else []

    def transcript_for(self, parent_tool_use_id: str) -> Transcript | None:
        for child in self.children.values():
            if child.tool_use_id == parent_tool_use_id:
                return child.transcript
        return None

    def session_of_agent(self, agent_id: str | None) -> str:
        """Where a permission request of ``agent_id`` belongs: its child session, else the root."""
        if agent_id is not None and agent_id in self.children:
            return agent_id
        return self.root_id

    def _report(self, child: Child, state: dict[str, Any]) -> list[Effect]:
        child.state = state["state"]
        effects: list[Effect] = []
        if self.version == 2:
            own = StateUpdate.model_validate({**state, "background": []})
            effects.append(Notify(child.session_id, own))
        effects.append(Notify(child.parent_id, SubagentUpdate(session_id=child.session_id, state=state)))
        return effects


def _title(tool_input: dict[str, Any], task: Task) -> str:
    name = _text(tool_input.get("name"))
    kind = task.subagent_type or _text(tool_input.get("subagent_type"))
    if name and kind:
        return f"{name} ({kind})"
    return name or kind or task.description or "Subagent"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
