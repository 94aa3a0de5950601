"""Tests of tests/support/toad.py: Toad's rules accept what Toad takes and catch what it refuses.

Each verdict below is Toad's own: these shapes (and every session update and permission request
of the goldens, before and after ``rawOutput`` became an object) were put through typeguard
4.5.2 with Toad 0.6.20's ``protocol.py`` (its ``type`` aliases written as assignments, the only
change, so that Python 3.11 reads it), outside this suite, and agreed with ``toad.rejected``
every time. Toad itself needs Python 3.14 and is not installed here.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import toad
from tests.support.schema import validate_transcript

JsonObject = dict[str, Any]
CALL = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "ls"}
UPDATE = {"sessionUpdate": "tool_call_update", "toolCallId": "t"}


def update(session_update: JsonObject, **params: Any) -> JsonObject:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": session_update, **params},
    }


def permission(tool_call: JsonObject, **option: Any) -> JsonObject:
    options = [{"kind": "allow_once", "name": "Allow", "optionId": "allow", **option}]
    params = {"sessionId": "s", "options": options, "toolCall": tool_call}
    return {"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": params}


ACCEPTED = [
    update({**CALL, "_meta": {}, "rawInput": {"command": "ls"}, "status": "pending", "kind": "execute"}),
    update({**CALL, "locations": [{"path": "/a", "line": None}]}),
    update({**CALL, "content": [{"type": "diff", "path": "/a", "newText": "n", "oldText": None}]}),
    update(
        {
            **CALL,
            "content": [{"type": "content", "content": {"type": "text", "text": "x", "annotations": None}}],
        }
    ),
    update({**UPDATE, "status": None, "title": None, "kind": None, "locations": None, "content": None}),
    update({**UPDATE, "status": "failed", "rawOutput": {"output": "boom", "exitCode": 3, "signal": None}}),
    update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": "m"}
    ),
    update({"sessionUpdate": "plan", "entries": [{"content": "step"}]}),
    update(
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "n", "description": "d", "input": None}],
        }
    ),
    update({"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": 1, "currency": "USD"}}),
    update(UPDATE, _meta=None),
    permission({"toolCallId": "t", "title": None, "rawInput": {}}),
]

REJECTED = [
    (update({**CALL, "_meta": None}), "params.update._meta"),
    (update({**CALL, "kind": None}), "params.update.kind"),
    (update({**CALL, "status": "cancelled"}), "params.update.status"),
    (update({**CALL, "rawInput": "ls"}), "params.update.rawInput"),
    (update({**CALL, "locations": [{"path": "/a", "line": "3"}]}), "params.update.locations[0]"),
    (update({**UPDATE, "rawOutput": "hello"}), "params.update.rawOutput"),
    (update({**UPDATE, "rawOutput": None}), "params.update.rawOutput"),
    (update({**UPDATE, "rawOutput": ["hello"]}), "params.update.rawOutput"),
    (update({**UPDATE, "content": [{"type": "bogus"}]}), "params.update.content"),
    (
        update({**UPDATE, "content": [{"type": "diff", "path": "/a", "newText": None}]}),
        "params.update.content",
    ),
    (update({"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": None}), "params.update.cost"),
    (
        update({"sessionUpdate": "plan", "entries": [{"content": "c", "status": "cancelled"}]}),
        "params.update.entries[0]",
    ),
    (
        update({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "n"}]}),
        "params.update.availableCommands[0]",
    ),
    (update({"sessionUpdate": "agent_message_chunk", "content": None}), "params.update.content"),
    (permission({"toolCallId": "t", "rawInput": "ls"}), "params.toolCall.rawInput"),
    (permission({"toolCallId": "t", "_meta": None}), "params.toolCall._meta"),
    (permission({"toolCallId": "t"}, _meta=None), "params.options[0]._meta"),
]


@pytest.mark.parametrize("message", ACCEPTED)
def test_what_toad_takes_is_accepted(message: JsonObject) -> None:
    assert toad.unknown(message) is None
    assert toad.rejected(message) == []


@pytest.mark.parametrize(("message", "where"), REJECTED)
def test_what_toad_refuses_is_caught_where_it_is(message: JsonObject, where: str) -> None:
    (problem,) = toad.rejected(message)
    assert problem.startswith(where), problem


@pytest.mark.parametrize(
    "message",
    [
        update({"sessionUpdate": "config_option_update", "configOptions": []}),
        update({"sessionUpdate": "session_info_update", "title": "t"}),
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}},
    ],
)
def test_kinds_toad_does_not_take_are_told_apart_from_rejections(message: JsonObject) -> None:
    assert toad.unknown(message) is not None
    assert toad.rejected(message) == []


def test_a_current_mode_outside_the_offered_ones_is_caught_in_an_answer() -> None:
    modes = {"currentModeId": "auto", "availableModes": [{"id": "default", "name": "Default"}]}
    (problem,) = toad.rejected({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s", "modes": modes}})
    assert "currentModeId 'auto'" in problem


def test_a_v1_transcript_is_checked_against_toads_rules_as_well_as_the_schema() -> None:
    """A string ``rawOutput`` is valid ACP, and Toad answers it -32602."""
    line = update({**UPDATE, "status": "completed", "rawOutput": "hello"})
    assert validate_transcript([line], [], 2) == []
    (violation,) = validate_transcript([line], [], 1)
    assert "Toad rejects params.update.rawOutput" in violation
