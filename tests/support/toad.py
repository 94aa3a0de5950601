"""Toad's rules for what an agent sends it, written down from its source, as a validator.

Toad (PyPI ``batrachian-toad`` 0.6.20) needs Python 3.14, so it cannot run here; these are its
rules, read from ``toad/acp/protocol.py`` (the typed models), ``toad/acp/agent.py`` (the methods
it exposes and their parameters) and ``toad/jsonrpc.py`` (how a call is checked):

- Every call's params are checked with typeguard against the handler's annotations, every item
  of every list included; a param the handler does not name is ignored. A mismatch is answered
  -32602 and the call is not made: for a ``session/update`` notification, Toad writes an error
  response with ``id: null`` and the update is lost (nothing is shown to the user). A method it
  does not expose (``$/cancel_request``, say) is answered -32601 the same way.
- Its models are TypedDicts that accept unknown keys, and are often stricter than the official
  schema: ``rawInput``, ``rawOutput`` and ``_meta`` of a tool call must be objects (a string or
  ``null`` is rejected), ``usage_update.cost`` must not be ``null``, a ``tool_call``'s ``kind``,
  ``status`` and ``locations`` are not nullable, tool call statuses are the four of v1, and a
  permission option's ``_meta`` must be an object.
- ``session/update`` takes nine kinds: message and thought chunks (user, agent), ``tool_call``,
  ``tool_call_update``, ``plan``, ``available_commands_update``, ``current_mode_update`` and
  ``usage_update``. Any other kind (``config_option_update``, ``session_info_update``, ...) is
  rejected whole (-32602).
- Answers to its own requests are not checked, but it reads ``modes`` of the ``session/new``
  and ``session/load`` answers and looks ``currentModeId`` up among ``availableModes`` (a
  missing one is a KeyError).

``rejected`` gives what Toad would refuse in a message of a kind it takes; ``unknown`` says
whether it is a kind Toad does not take at all (the agent sends those all the same, for the
clients that read them; see the note on strictly typed clients in docs/clients.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jsonschema import Draft202012Validator

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
OBJECT = {"type": "object"}
ARRAY = {"type": "array"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _enum(*values: str) -> dict[str, Any]:
    return {"enum": list(values)}


def _typed(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """A TypedDict of Toad's: these keys (unknown ones are accepted)."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required)}


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


ANNOTATIONS = _typed({}, {"audience": _array(STRING), "priority": NUMBER, "lastModified": STRING})
CONTENT_BLOCK = {
    "anyOf": [
        _typed({"type": STRING, "text": STRING}, {"annotations": ANNOTATIONS}),
        _typed(
            {"type": STRING, "data": STRING, "mimeType": STRING}, {"url": STRING, "annotations": ANNOTATIONS}
        ),
        _typed({"type": STRING, "data": STRING, "mimeType": STRING}, {"Annotations": ANNOTATIONS}),
        _typed(
            {"type": STRING},
            {
                "resource": {
                    "anyOf": [
                        _typed({"uri": STRING, "text": STRING}, {"mimeType": STRING}),
                        _typed({"uri": STRING, "blob": STRING}, {"mimeType": STRING}),
                    ]
                }
            },
        ),
        _typed(
            {"name": STRING, "type": STRING, "uri": STRING},
            {
                "annotations": _nullable(ANNOTATIONS),
                "description": _nullable(STRING),
                "mimeType": _nullable(STRING),
                "size": _nullable(INTEGER),
                "title": _nullable(STRING),
            },
        ),
    ]
}
TOOL_CALL_CONTENT = {
    "anyOf": [
        _typed({"content": CONTENT_BLOCK, "type": {"const": "content"}}),
        _typed(
            {"newText": STRING, "path": STRING, "type": {"const": "diff"}}, {"oldText": _nullable(STRING)}
        ),
        _typed({"terminalId": STRING, "type": {"const": "terminal"}}),
    ]
}
TOOL_KIND = _enum(
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
)
TOOL_STATUS = _enum("pending", "in_progress", "completed", "failed")
LOCATION = _typed({"path": STRING}, {"line": _nullable(INTEGER)})
UPDATED_CALL = {
    "_meta": OBJECT,
    "content": _nullable(_array(TOOL_CALL_CONTENT)),
    "kind": _nullable(TOOL_KIND),
    "locations": _nullable(ARRAY),
    "rawInput": OBJECT,
    "rawOutput": OBJECT,
    "status": _nullable(TOOL_STATUS),
    "title": _nullable(STRING),
}
"""A ``tool_call_update``'s keys, and those of the tool call in a permission request."""


def _update(kind: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return _typed({"sessionUpdate": {"const": kind}, **required}, optional)


UPDATES: dict[str, dict[str, Any]] = {
    **{
        kind: _update(kind, {"content": CONTENT_BLOCK})
        for kind in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
    },
    "tool_call": _update(
        "tool_call",
        {"title": STRING, "toolCallId": STRING},
        {
            "_meta": OBJECT,
            "content": _array(TOOL_CALL_CONTENT),
            "kind": TOOL_KIND,
            "locations": _array(LOCATION),
            "rawInput": OBJECT,
            "rawOutput": OBJECT,
            "status": TOOL_STATUS,
        },
    ),
    "tool_call_update": _update("tool_call_update", {"toolCallId": STRING}, UPDATED_CALL),
    "plan": _update(
        "plan",
        {
            "entries": _array(
                _typed(
                    {"content": STRING},
                    {
                        "priority": _enum("high", "medium", "low"),
                        "status": _enum("pending", "in_progress", "completed"),
                    },
                )
            )
        },
    ),
    "available_commands_update": _update(
        "available_commands_update",
        {
            "availableCommands": _array(
                _typed(
                    {"description": STRING, "name": STRING}, {"input": _nullable(_typed({"hint": STRING}))}
                )
            )
        },
    ),
    "current_mode_update": _update("current_mode_update", {"currentModeId": STRING}),
    "usage_update": _update(
        "usage_update",
        {"used": INTEGER, "size": INTEGER},
        {"cost": _typed({}, {"amount": NUMBER, "currency": STRING})},
    ),
}

PERMISSION_OPTION = _typed(
    {
        "kind": _enum("allow_once", "allow_always", "reject_once", "reject_always"),
        "name": STRING,
        "optionId": STRING,
    },
    {"_meta": OBJECT},
)
PARAMS: dict[str, dict[str, Any]] = {
    "session/update": {"sessionId": STRING, "_meta": _nullable(OBJECT)},
    "session/request_permission": {
        "sessionId": STRING,
        "options": _array(PERMISSION_OPTION),
        "toolCall": _typed({"toolCallId": STRING}, UPDATED_CALL),
        "_meta": _nullable(OBJECT),
    },
}
"""The params Toad checks, by method (``session/update``'s ``update`` by its kind, below)."""
METHODS = frozenset(
    {
        *PARAMS,
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/kill",
        "terminal/output",
        "terminal/release",
        "terminal/wait_for_exit",
    }
)
"""What Toad exposes to an agent; anything else is answered -32601."""


def _problems(schema: dict[str, Any], value: Any, where: str) -> list[str]:
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: e.json_path)
    return [f"{where}{_path(error.absolute_path)}: {error.message}" for error in errors]


def _path(parts: Iterable[str | int]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def unknown(message: Any) -> str | None:
    """Why Toad answers this message of ours with an error although it may be valid ACP: a
    method it does not expose, or an update kind outside its union. None for what it takes."""
    if not isinstance(message, dict) or "method" not in message:
        return None
    method = message["method"]
    if method not in METHODS:
        return f"Toad does not expose {method!r} (-32601)"
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    if method == "session/update" and isinstance(update, dict) and update.get("sessionUpdate") not in UPDATES:
        return f"Toad does not take sessionUpdate {update.get('sessionUpdate')!r} (-32602)"
    return None


def rejected(message: Any) -> list[str]:
    """What Toad would refuse (-32602) in a message of a kind it takes, or fail on in an answer."""
    if not isinstance(message, dict) or unknown(message) is not None:
        return []
    if "method" not in message:
        return _answer(message.get("result"))
    method, params = message["method"], message.get("params")
    if method not in PARAMS or not isinstance(params, dict):
        return []
    problems: list[str] = []
    for name, schema in PARAMS[method].items():
        if name in params:
            problems += _problems(schema, params[name], f"params.{name}")
    update = params.get("update")
    if method == "session/update" and isinstance(update, dict):
        problems += _problems(UPDATES[update["sessionUpdate"]], update, "params.update")
    return problems


def _answer(result: Any) -> list[str]:
    modes = result.get("modes") if isinstance(result, dict) else None
    if not isinstance(modes, dict):
        return []
    offered = [mode.get("id") for mode in modes.get("availableModes") or [] if isinstance(mode, dict)]
    current = modes.get("currentModeId")
    if current not in offered:
        return [f"result.modes: currentModeId {current!r} is not in availableModes {offered}"]
    return []


def check_transcript(agent_lines: Sequence[Any]) -> list[str]:
    """Every agent line Toad would refuse, naming the line (0-based) and its method."""
    return [
        f"agent line {index} [{line.get('method', 'response')}]: Toad rejects {problem}"
        for index, line in enumerate(agent_lines)
        for problem in rejected(line)
    ]
