"""JetBrains AIR in tests: how an AIR client declares itself, and the contract of the updates
only AIR is sent.

AIR's async tasks (``async_task_*``) and the draft subagent form (``subagent_*``) are
``session/update`` kinds that the ACP schema does not have, so a transcript of an AIR client
validates every other message against the official schema and exactly these kinds against the
contract below instead (the wire contract the TypeScript adapter documents for AIR, in
``docs/air-extensions.md`` of ``agentclientprotocol/claude-agent-acp``, and what Zed decodes of
the draft form). The official v1 client drops these updates (it does not know them), so an AIR
run accepts exactly that many dropped notifications.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

ASYNC_TASKS, NATIVE_SUBAGENTS = "asyncTasks", "nativeSubagentSessions"


def air_capabilities(*names: str) -> dict[str, Any]:
    """``clientCapabilities`` of an AIR client declaring ``names``."""
    return {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": list(names)}}}}


def declares_air(capabilities: Any) -> bool:
    meta = capabilities.get("_meta") if isinstance(capabilities, dict) else None
    jetbrains = meta.get("jetbrains") if isinstance(meta, dict) else None
    return isinstance(jetbrains, dict) and isinstance(jetbrains.get("air"), dict)


_TEXT = {"type": "string"}
_ID = {"type": "string", "minLength": 1}


def _update(kind: str, required: dict[str, Any], optional: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"sessionUpdate": {"const": kind}, "_meta": {"type": "object"}, **required, **optional},
        "required": ["sessionUpdate", *required],
        "additionalProperties": False,
        **extra,
    }


UPDATES: dict[str, dict[str, Any]] = {
    "async_task_spawned": _update(
        "async_task_spawned",
        {
            "asyncTaskId": _ID,
            "name": _TEXT,
            "taskType": _ID,
            "description": _TEXT,
            "showInTranscript": {"type": "boolean"},
            "canStop": {"type": "boolean"},
        },
        {"toolCallId": _ID, "outputFilePath": _ID},
    ),
    "async_task_progress": _update(
        "async_task_progress",
        {"asyncTaskId": _ID},
        {
            "description": _TEXT,
            "summary": _TEXT,
            "lastToolName": _TEXT,
            "usage": {"type": "object"},
            "outputFilePath": _ID,
            "toolCallId": _ID,
        },
        minProperties=3,  # a progress update with nothing new is not sent
    ),
    "async_task_state_update": _update(
        "async_task_state_update",
        {
            "asyncTaskId": _ID,
            "state": {"enum": ["running", "paused", "completed", "failed", "stopped"]},
        },
        {"summary": _TEXT, "outputFilePath": _ID, "toolCallId": _ID},
    ),
    "subagent_spawned": _update(
        "subagent_spawned",
        {
            "subagentSessionId": _ID,
            "name": _TEXT,
            "task": _TEXT,
            "capabilities": {
                "type": "object",
                "properties": {"cancel": {"type": "boolean"}},
                "additionalProperties": False,
            },
        },
        {"prompt": _TEXT},
    ),
    "subagent_state_update": _update(
        "subagent_state_update",
        {
            "subagentSessionId": _ID,
            "state": {"enum": ["completed", "failed", "cancelled", "disconnected"]},
        },
        {},
    ),
}
"""The updates only AIR is sent, each with its contract."""

NOTIFICATION = {
    "type": "object",
    "properties": {"sessionId": _ID, "update": {"type": "object"}, "_meta": {"type": "object"}},
    "required": ["sessionId", "update"],
    "additionalProperties": False,
}


def is_air_update(params: Any) -> bool:
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") in UPDATES


def check(params: dict[str, Any]) -> list[str]:
    """Violations of AIR's contract by the params of one ``session/update`` of an AIR kind."""
    update = params["update"]
    errors = [*Draft202012Validator(NOTIFICATION).iter_errors(params)]
    errors += Draft202012Validator(UPDATES[update["sessionUpdate"]]).iter_errors(update)
    return [f"AIR {update['sessionUpdate']}: {error.json_path}: {error.message}" for error in errors]


def air_update_count(agent_lines: list[Any]) -> int:
    """How many of the agent's lines are ``session/update`` notifications of an AIR kind."""
    notifications = [line for line in agent_lines if isinstance(line, dict) and "method" in line]
    return sum(
        1
        for line in notifications
        if line["method"] == "session/update" and is_air_update(line.get("params"))
    )
