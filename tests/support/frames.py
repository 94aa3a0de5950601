"""The one set of builders of the frames Claude Code sends, shaped like the recorded ones.

Every builder returns a raw CLI frame (``dir: in``) with all the keys the SDK's own parser
indexes (``uuid``, ``session_id``, ``output_file``, ``description``, ``usage`` ...), in the
shapes of ``tests/fixtures/sdk_events`` (CLI 2.1.332). ``CoreDriver.frame`` parses each one with
``claude_agent_sdk``'s ``parse_message``, so a frame the SDK could not parse fails there and not
in the core. They stand in where the real CLI cannot be made to produce the exact interleaving
a test needs; the recorded scenarios themselves are covered by ``test_replay``.

Turns: ``state_changed``, ``assistant`` / ``text`` / ``tool_use``, ``tool_result``, ``result``
(and its ``interrupted_result`` / ``follow_up_result`` forms), the streamed ``message_start`` /
``message_delta``. Settings: ``init``, ``status``, ``commands_changed``, ``compact_boundary``.
Tasks: ``task_started``, ``task_progress``, ``task_updated``, ``task_notification`` and the level signal
``tasks_changed`` (of ``level_entry`` items). ``TaskSpec`` describes one background task of a
given kind and knows the frames of its life, built with the same functions: the assistant
``tool_use`` that launches it (if a tool does), the ``tool_result`` hand-off text, its task
events, and its entry in ``background_tasks_changed``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

CLI_SESSION = "00000000-0000-4000-8000-5e5510000000"
TASKS_DIR = f"/tmp/claude-bg-acp/tmp/claude-0/-tmp-claude-bg-acp-work/{CLI_SESSION}/tasks"
MODEL = "claude-opus-5-5"
TIMESTAMP = "1970-01-01T00:00:00.000Z"
RESULT_USAGE = {
    "input_tokens": 24,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 88,
}
"""The usage of every ``result`` (what ``test_turns`` expects back as the ACP usage)."""

_uuids = itertools.count(1)
_messages = itertools.count(1)

Frame = dict[str, Any]
Kind = Literal["shell", "monitor", "agent", "nobody", "ambient", "workflow", "fg_shell"]
EndStatus = Literal["completed", "failed", "stopped"]
"""How a task ends, as its ``task_notification`` says it."""


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuids):012d}"


def output_file(task_id: str) -> str:
    return f"{TASKS_DIR}/{task_id}.output"


def follow_up_origin(run_id: str = "run01") -> dict[str, Any]:
    """The ``origin`` of a turn Claude Code started because a task ended."""
    return {"kind": "task-notification", "producer": "session-task", "runId": run_id}


# --- turns ---------------------------------------------------------------------------------------


def _system(subtype: str, **fields: Any) -> Frame:
    frame: Frame = {"type": "system", "subtype": subtype}
    frame.update({key: value for key, value in fields.items() if value is not None})
    frame.update(uuid=_uuid(), session_id=CLI_SESSION)
    return frame


def state_changed(state: str) -> Frame:
    """``session_state_changed``: ``running``, ``requires_action`` or ``idle``."""
    return _system("session_state_changed", state=state)


def assistant(content: list[dict[str, Any]], parent: str | None = None, **extra: Any) -> Frame:
    """An assistant message; ``parent`` names the Agent tool use of the subagent it is of."""
    return {
        "type": "assistant",
        "message": {
            "id": f"msg_{next(_messages):024x}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "stop_sequence": None,
            "content": content,
            "stop_reason": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
            "context_management": None,
        },
        "parent_tool_use_id": parent,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": TIMESTAMP,
        "request_id": f"req{next(_messages):02d}",
        **extra,
    }


def text(words: str, parent: str | None = None) -> Frame:
    return assistant([{"type": "text", "text": words}], parent)


def tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any], parent: str | None = None) -> Frame:
    return assistant([{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}], parent)


def tool_result(
    tool_use_id: str,
    content: str | list[dict[str, Any]],
    tool_use_result: dict[str, Any] | None = None,
    is_error: bool = False,
) -> Frame:
    frame: Frame = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}
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


def stream(event: dict[str, Any], parent: str | None = None) -> Frame:
    return {
        "type": "stream_event",
        "uuid": _uuid(),
        "session_id": CLI_SESSION,
        "event": event,
        "parent_tool_use_id": parent,
    }


def message_start(
    input_tokens: int,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = MODEL,
    parent: str | None = None,
) -> Frame:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }
    message = {"id": f"msg_{next(_messages):024x}", "type": "message", "role": "assistant", "model": model}
    return stream({"type": "message_start", "message": {**message, "content": [], "usage": usage}}, parent)


def message_delta(output_tokens: int, parent: str | None = None) -> Frame:
    delta = {"stop_reason": "end_turn", "stop_sequence": None}
    return stream(
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": output_tokens}}, parent
    )


def init(model: str = MODEL, permission_mode: str = "default", terminal: list[str] | None = None) -> Frame:
    """``system/init``: what a turn starts with (CLI 2.1.332 sends it at every turn's start)."""
    return _system(
        "init", model=model, permissionMode=permission_mode, terminal_slash_commands=terminal or []
    )


def status(permission_mode: str) -> Frame:
    """``system/status`` after a permission-mode switch."""
    frame = _system("status", permissionMode=permission_mode)
    frame["status"] = None
    return frame


def commands_changed(commands: list[dict[str, Any]]) -> Frame:
    return _system("commands_changed", commands=commands)


def compact_boundary(pre_tokens: int, post_tokens: int) -> Frame:
    metadata = {"trigger": "manual", "pre_tokens": pre_tokens, "post_tokens": post_tokens}
    return _system("compact_boundary", compact_metadata=metadata)


def compacting(result: str | None = None, error: str | None = None) -> Frame:
    """``system/status`` as a compaction starts (``compacting``), or with its ``result`` once it
    is over (``success``, or ``failed`` with an ``error``)."""
    if result is None:
        return _system("status", status="compacting")
    frame = _system("status", compact_result=result, compact_error=error)
    frame["status"] = None
    return frame


def interrupt_marker() -> Frame:
    """The user message Claude Code writes when an interrupt ends a turn (``agent_interrupt``)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        "parent_tool_use_id": None,
        "session_id": CLI_SESSION,
        "uuid": _uuid(),
        "timestamp": TIMESTAMP,
    }


def result(
    subtype: str = "success",
    stop_reason: str | None = "end_turn",
    is_error: bool | None = None,
    result_text: str | None = "Done.",
    errors: list[str] | None = None,
    origin: dict[str, Any] | None = None,
    terminal_reason: str = "completed",
    model_usage: dict[str, Any] | None = None,
) -> Frame:
    """A turn's result; ``is_error`` defaults to whether ``subtype`` is not ``success``."""
    frame: Frame = {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": subtype != "success" if is_error is None else is_error,
        "num_turns": 1,
        "session_id": CLI_SESSION,
        "stop_reason": stop_reason,
        "total_cost_usd": 0.002,
        "usage": dict(RESULT_USAGE),
        "permission_denials": [],
        "terminal_reason": terminal_reason,
        "uuid": _uuid(),
    }
    if result_text is not None:
        frame["result"] = result_text
    if errors is not None:
        frame["errors"] = errors
    if origin is not None:
        frame["origin"] = origin
    if model_usage is not None:
        frame["modelUsage"] = model_usage
    return frame


def interrupted_result() -> Frame:
    """What the CLI sends when an interrupt ends a turn (as recorded in ``agent_interrupt``)."""
    return result(
        "error_during_execution",
        stop_reason="tool_use",
        is_error=True,
        result_text=None,
        errors=["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"],
        terminal_reason="aborted_streaming",
    )


def follow_up_result(words: str = "BG_DONE_ACK", run_id: str = "run01") -> Frame:
    """The result of a turn Claude Code started because a task ended."""
    return result(result_text=words, origin=follow_up_origin(run_id))


def max_output_tokens() -> list[Frame]:
    """As recorded in ``max_tokens``: a synthetic API-error message, then an is_error success."""
    synthetic = assistant(
        [{"type": "text", "text": "API Error: Claude's response exceeded the 128000 output token maximum."}],
        None,
        error="max_output_tokens",
        is_api_error_message=True,
        api_error="max_output_tokens",
    )
    synthetic["message"]["model"] = "<synthetic>"
    ending = result(
        "success",
        "stop_sequence",
        True,
        "API Error: Claude's response exceeded ...",
        terminal_reason="api_error",
    )
    return [synthetic, ending]


# --- launching background work -------------------------------------------------------------------


def shell_input(command: str, description: str = "background job", background: bool = True) -> dict[str, Any]:
    """A Bash tool use's input; ``run_in_background`` only when ``background``."""
    tool_input: dict[str, Any] = {"command": command, "description": description}
    if background:
        tool_input["run_in_background"] = True
    return tool_input


def agent_input(
    description: str = "background helper",
    prompt: str = "Do the small job and report.",
    background: bool = True,
) -> dict[str, Any]:
    """An Agent tool use's input; ``run_in_background`` only when ``background``."""
    tool_input: dict[str, Any] = {
        "description": description,
        "prompt": prompt,
        "subagent_type": "general-purpose",
    }
    if background:
        tool_input["run_in_background"] = True
    return tool_input


def shell_launch(
    tool_use_id: str, command: str, description: str = "background job", background: bool = True
) -> Frame:
    return tool_use(tool_use_id, "Bash", shell_input(command, description, background))


def shell_launched(tool_use_id: str, task_id: str) -> Frame:
    """The Bash tool result that hands a command off to the background."""
    text = (
        f"Command running in background with ID: {task_id}. Output is being written to: "
        f"{output_file(task_id)}. You will be notified when it completes. To check interim "
        "output, use Read on that file path."
    )
    meta = {
        "stdout": "",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
        "backgroundTaskId": task_id,
    }
    return tool_result(tool_use_id, text, meta)


def agent_launch(
    tool_use_id: str,
    description: str = "background helper",
    prompt: str = "Do the small job and report.",
    background: bool = True,
    parent: str | None = None,
) -> Frame:
    """An Agent tool use; ``parent`` names the Agent tool use of the subagent that launches it."""
    return tool_use(tool_use_id, "Agent", agent_input(description, prompt, background), parent)


def agent_launched(tool_use_id: str, task_id: str, description: str = "background helper") -> Frame:
    """The Agent tool result of a background subagent (``async_launched``)."""
    text = (
        "Async agent launched successfully.\n"
        f"agentId: {task_id} (internal ID - do not mention to user.)\n"
        "The agent is working in the background. You will be notified automatically when it "
        f"completes.\noutput_file: {output_file(task_id)}\n"
    )
    meta = {
        "isAsync": True,
        "status": "async_launched",
        "agentId": task_id,
        "description": description,
        "outputFile": output_file(task_id),
    }
    return tool_result(tool_use_id, [{"type": "text", "text": text}], meta)


# --- task events ---------------------------------------------------------------------------------


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
    spawn_depth: int | None = None,
) -> Frame:
    return _system(
        "task_started",
        task_id=task_id,
        run_id=run_id,
        tool_use_id=tool_use_id,
        description=description,
        subagent_type=subagent_type,
        spawn_depth=spawn_depth,
        is_backgrounded=is_backgrounded,
        task_type=task_type,
        prompt=prompt,
        ambient=ambient,
    )


def task_progress(
    task_id: str, run_id: str | None, description: str, tool_use_id: str | None = None
) -> Frame:
    return _system(
        "task_progress",
        task_id=task_id,
        run_id=run_id,
        tool_use_id=tool_use_id,
        description=description,
        usage={"total_tokens": 28, "tool_uses": 1, "duration_ms": 0},
        last_tool_name="Bash",
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
    return _system("task_updated", task_id=task_id, run_id=run_id, patch=patch)


def task_notification(
    task_id: str,
    run_id: str | None,
    status: EndStatus,
    summary: str | None = None,
    tool_use_id: str | None = None,
    ambient: bool | None = None,
    reason: str | None = None,
) -> Frame:
    return _system(
        "task_notification",
        task_id=task_id,
        run_id=run_id,
        tool_use_id=tool_use_id,
        status=status,
        reason=reason,
        output_file=output_file(task_id),
        summary=f"{task_id} {status}" if summary is None else summary,
        ambient=ambient,
    )


def level_entry(
    task_id: str, run_id: str, task_type: str, description: str, ambient: bool | None = None
) -> dict[str, Any]:
    """One task of ``background_tasks_changed``."""
    entry: dict[str, Any] = {
        "task_id": task_id,
        "run_id": run_id,
        "task_type": task_type,
        "description": description,
    }
    if task_type == "local_agent":
        entry["subagent_type"] = "general-purpose"
    if ambient:
        entry["ambient"] = True
    return entry


def tasks_changed(entries: list[dict[str, Any]]) -> Frame:
    """``background_tasks_changed``, the level signal: the full live set (replace semantics)."""
    return _system("background_tasks_changed", tasks=entries)


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
    parent: str | None = None
    """The Agent tool use whose subagent launches this task (None: the main conversation)."""

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

    @property
    def prompt(self) -> str:
        return f"Do the job of {self.task_id}."

    def tool_input(self) -> dict[str, Any]:
        if self.kind == "shell":
            return shell_input(f"sleep 5; echo {self.task_id}", self.description)
        if self.kind == "fg_shell":
            return shell_input(f"make test-{self.task_id}", self.description, background=False)
        if self.kind == "monitor":
            return {
                "description": self.description,
                "timeout_ms": 20000,
                "command": f"tail -f /tmp/{self.task_id}.log",
            }
        if self.kind == "workflow":
            return {"name": f"wf-{self.task_id}", "description": self.description}
        return agent_input(self.description, self.prompt)

    def launch(self) -> Frame:
        assert self.tool_use_id is not None and self.tool_name is not None
        return tool_use(self.tool_use_id, self.tool_name, self.tool_input(), parent=self.parent)

    def hand_off(self) -> Frame:
        """The tool result that returns control to the model while the task goes on."""
        return {**self._hand_off(), "parent_tool_use_id": self.parent}

    def _hand_off(self) -> Frame:
        assert self.tool_use_id is not None
        if self.is_shell:
            return shell_launched(self.tool_use_id, self.task_id)
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
        return agent_launched(self.tool_use_id, self.task_id, self.description)

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
            prompt=self.prompt if self.kind == "agent" else None,
            ambient=self.ambient,
            spawn_depth=1 if self.kind == "agent" else None,
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
        if self.is_shell:
            if status == "completed":
                return f'Background command "{self.description}" completed (exit code 0)'
            if status == "failed":
                return f'Background command "{self.description}" failed with exit code 3'
            return self.description
        if self.kind == "monitor":
            return f'Monitor "{self.description}" stream ended'
        return f"{self.description} finished its work" if status == "completed" else self.description

    def level_entry(self, run_id: str | None = None) -> dict[str, Any]:
        entry = level_entry(
            self.task_id, run_id or self.run_id, self.task_type, self.description, self.ambient
        )
        entry.update(self.extra_level)
        return entry
