"""Builders of the frames Claude Code sends about background tasks, shaped like the recorded ones.

Every builder returns a raw CLI frame (``dir: in``) with all the keys the SDK's own parser
indexes (``uuid``, ``session_id``, ``output_file``, ``description``, ``usage`` ...), in the
shapes of ``tests/fixtures/sdk_events`` (CLI 2.1.332). ``parse`` turns one into the SDK message
the core receives, through ``claude_agent_sdk``'s ``parse_message``, so a frame the SDK could not
parse fails here and not in the core.

``TaskSpec`` describes one background task of a given kind and knows the frames of its life:
the assistant ``tool_use`` that launches it (if a tool does), the ``tool_result`` hand-off text,
``task_started`` / ``task_progress`` / ``task_updated`` / ``task_notification``, and its entry in
``background_tasks_changed``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk.types import Message

CLI_SESSION = "00000000-0000-4000-8000-5e5510000000"
TASKS_DIR = f"/tmp/claude-bg-acp/tmp/claude-0/-tmp-claude-bg-acp-work/{CLI_SESSION}/tasks"
MODEL = "claude-opus-5-5"
TIMESTAMP = "1970-01-01T00:00:00.000Z"

_uuids = itertools.count(1)
_messages = itertools.count(1)

Frame = dict[str, Any]
Kind = Literal["shell", "monitor", "agent", "nobody", "ambient", "workflow", "fg_shell"]
EndStatus = Literal["completed", "failed", "stopped"]
"""How a task ends, as its ``task_notification`` says it."""


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuids):012d}"


def parse(frame: Frame) -> Message:
    message = parse_message(frame)
    assert message is not None, frame
    return message


def output_file(task_id: str) -> str:
    return f"{TASKS_DIR}/{task_id}.output"


# --- frames ----------------------------------------------------------------------------------


def assistant_tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> Frame:
    return {
        "type": "assistant",
        "message": {
            "id": f"msg_{next(_messages):024x}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "stop_sequence": None,
            "content": [{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}],
            "stop_reason": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
            "context_management": None,
        },
        "parent_tool_use_id": None,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": TIMESTAMP,
        "request_id": f"req{next(_messages):02d}",
    }


def tool_result(
    tool_use_id: str, content: str | list[dict[str, Any]], tool_use_result: dict[str, Any] | None = None
) -> Frame:
    frame: Frame = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": False}
            ],
        },
        "parent_tool_use_id": None,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": TIMESTAMP,
    }
    if tool_use_result is not None:
        frame["tool_use_result"] = tool_use_result
    return frame


def _system(subtype: str, fields: dict[str, Any]) -> Frame:
    frame: Frame = {"type": "system", "subtype": subtype}
    frame.update({key: value for key, value in fields.items() if value is not None})
    frame.update(uuid=_uuid(), session_id=CLI_SESSION)
    return frame


def task_started(
    task_id: str,
    run_id: str | None,
    description: str,
    task_type: str,
    tool_use_id: str | None = None,
    is_backgrounded: bool | None = None,
    subagent_type: str | None = None,
    prompt: str | None = None,
    ambient: bool | None = None,
) -> Frame:
    return _system(
        "task_started",
        {
            "task_id": task_id,
            "run_id": run_id,
            "tool_use_id": tool_use_id,
            "description": description,
            "subagent_type": subagent_type,
            "is_backgrounded": is_backgrounded,
            "task_type": task_type,
            "prompt": prompt,
            "ambient": ambient,
        },
    )


def task_progress(
    task_id: str, run_id: str | None, description: str, tool_use_id: str | None = None
) -> Frame:
    return _system(
        "task_progress",
        {
            "task_id": task_id,
            "run_id": run_id,
            "tool_use_id": tool_use_id,
            "description": description,
            "usage": {"total_tokens": 28, "tool_uses": 1, "duration_ms": 0},
            "last_tool_name": "Bash",
        },
    )


def task_updated(
    task_id: str, run_id: str | None, status: str | None = None, is_backgrounded: bool | None = None
) -> Frame:
    patch: dict[str, Any] = {}
    if status is not None:
        patch["status"] = status
        if status in ("completed", "failed", "killed"):
            patch["end_time"] = 0
    if is_backgrounded is not None:
        patch["is_backgrounded"] = is_backgrounded
    return _system("task_updated", {"task_id": task_id, "run_id": run_id, "patch": patch})


def task_notification(
    task_id: str,
    run_id: str | None,
    status: EndStatus,
    summary: str,
    tool_use_id: str | None = None,
    ambient: bool | None = None,
    reason: str | None = None,
) -> Frame:
    return _system(
        "task_notification",
        {
            "task_id": task_id,
            "run_id": run_id,
            "tool_use_id": tool_use_id,
            "status": status,
            "reason": reason,
            "output_file": output_file(task_id),
            "summary": summary,
            "ambient": ambient,
        },
    )


def level(entries: list[dict[str, Any]]) -> Frame:
    """``background_tasks_changed``: the full live set (replace semantics)."""
    return _system("background_tasks_changed", {"tasks": entries})


def session_state(state: str) -> Frame:
    return _system("session_state_changed", {"state": state})


def result(origin: dict[str, Any] | None = None, subtype: str = "success") -> Frame:
    frame: Frame = {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": subtype != "success",
        "num_turns": 1,
        "stop_reason": "end_turn",
        "session_id": CLI_SESSION,
        "total_cost_usd": 0.0,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 19,
        },
        "permission_denials": [],
        "result": "done",
        "uuid": _uuid(),
    }
    if origin is not None:
        frame["origin"] = origin
    return frame


# --- tasks -----------------------------------------------------------------------------------

TOOL_NAMES: dict[str, str] = {
    "shell": "Bash",
    "fg_shell": "Bash",
    "monitor": "Monitor",
    "agent": "Agent",
    "workflow": "Workflow",
}
TASK_TYPES: dict[str, str] = {
    "shell": "local_bash",
    "fg_shell": "local_bash",
    "monitor": "local_bash",
    "agent": "local_agent",
    "workflow": "local_workflow",
    "ambient": "local_agent",
}


@dataclass
class TaskSpec:
    """One background task: its ids and the frames of its life."""

    kind: Kind
    task_id: str
    run_id: str = "run01"
    tool_use_id: str | None = None
    task_type: str = ""
    description: str = ""
    extra_level: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.task_type = self.task_type or TASK_TYPES.get(self.kind, "local_workflow")
        self.description = self.description or f"{self.kind} {self.task_id}"
        if self.tool_use_id is None and self.kind in TOOL_NAMES:
            self.tool_use_id = f"toolu_{self.task_id}_{'ab' * 6}"

    @property
    def ambient(self) -> bool | None:
        return True if self.kind == "ambient" else None

    @property
    def tool_name(self) -> str | None:
        return TOOL_NAMES.get(self.kind)

    @property
    def is_shell(self) -> bool:
        """Bash-launched process work: listed as its terminal, never as its tool call."""
        return self.kind in ("shell", "fg_shell")

    def tool_input(self) -> dict[str, Any]:
        if self.kind == "shell":
            return {
                "command": f"sleep 5; echo {self.task_id}",
                "description": self.description,
                "run_in_background": True,
            }
        if self.kind == "fg_shell":
            return {"command": f"make test-{self.task_id}", "description": self.description}
        if self.kind == "monitor":
            return {
                "description": self.description,
                "timeout_ms": 20000,
                "command": f"tail -f /tmp/{self.task_id}.log",
            }
        if self.kind == "workflow":
            return {"name": f"wf-{self.task_id}", "description": self.description}
        return {
            "description": self.description,
            "prompt": f"Do the job of {self.task_id}.",
            "subagent_type": "general-purpose",
            "run_in_background": True,
        }

    def launch(self) -> Frame:
        assert self.tool_use_id is not None and self.tool_name is not None
        return assistant_tool_use(self.tool_use_id, self.tool_name, self.tool_input())

    def hand_off(self) -> Frame:
        """The tool result that returns control to the model while the task goes on."""
        assert self.tool_use_id is not None
        if self.kind in ("shell", "fg_shell"):
            text = (
                f"Command running in background with ID: {self.task_id}. Output is being written to: "
                f"{output_file(self.task_id)}. You will be notified when it completes. To check interim "
                "output, use Read on that file path."
            )
            meta = {
                "stdout": "",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
                "backgroundTaskId": self.task_id,
            }
            return tool_result(self.tool_use_id, text, meta)
        if self.kind == "monitor":
            text = (
                f"Monitor started (task {self.task_id}, expires in 20s unless the source ends first; you "
                "get one notice at expiry \u2014 re-arm if you still need the watch). You will be notified "
                "on each event."
            )
            return tool_result(
                self.tool_use_id, text, {"taskId": self.task_id, "timeoutMs": 20000, "persistent": False}
            )
        if self.kind == "workflow":
            text = f"Workflow wf-{self.task_id} started in the background (task {self.task_id})."
            return tool_result(self.tool_use_id, text, {"taskId": self.task_id})
        text = (
            "Async agent launched successfully.\n"
            f"agentId: {self.task_id} (internal ID - do not mention to user.)\n"
            "The agent is working in the background. You will be notified automatically when it "
            f"completes.\noutput_file: {output_file(self.task_id)}\n"
        )
        meta = {
            "isAsync": True,
            "status": "async_launched",
            "agentId": self.task_id,
            "description": self.description,
            "outputFile": output_file(self.task_id),
        }
        return tool_result(self.tool_use_id, [{"type": "text", "text": text}], meta)

    def started(self, run_id: str | None = None, backgrounded: bool | None = None) -> Frame:
        if backgrounded is None:
            backgrounded = self.kind != "fg_shell"
        return task_started(
            self.task_id,
            run_id or self.run_id,
            self.description,
            self.task_type,
            tool_use_id=self.tool_use_id,
            is_backgrounded=backgrounded if self.kind in ("shell", "fg_shell", "agent", "monitor") else None,
            subagent_type="general-purpose" if self.task_type == "local_agent" else None,
            prompt=f"Do the job of {self.task_id}." if self.kind == "agent" else None,
            ambient=self.ambient,
        )

    def progress(self, run_id: str | None = None) -> Frame:
        return task_progress(self.task_id, run_id or self.run_id, "Running a step", self.tool_use_id)

    def updated(
        self, status: str | None = None, backgrounded: bool | None = None, run_id: str | None = None
    ) -> Frame:
        return task_updated(self.task_id, run_id or self.run_id, status, backgrounded)

    def notification(self, status: EndStatus, run_id: str | None = None, reason: str | None = None) -> Frame:
        return task_notification(
            self.task_id,
            run_id or self.run_id,
            status,
            self.summary(status),
            tool_use_id=self.tool_use_id,
            ambient=self.ambient,
            reason=reason,
        )

    def summary(self, status: EndStatus) -> str:
        if self.kind in ("shell", "fg_shell"):
            if status == "completed":
                return f'Background command "{self.description}" completed (exit code 0)'
            if status == "failed":
                return f'Background command "{self.description}" failed with exit code 3'
            return self.description
        if self.kind == "monitor":
            return f'Monitor "{self.description}" stream ended'
        return f"{self.description} finished its work" if status == "completed" else self.description

    def level_entry(self, run_id: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "task_id": self.task_id,
            "run_id": run_id or self.run_id,
            "task_type": self.task_type,
            "description": self.description,
        }
        if self.task_type == "local_agent":
            entry["subagent_type"] = "general-purpose"
        if self.ambient:
            entry["ambient"] = True
        entry.update(self.extra_level)
        return entry
