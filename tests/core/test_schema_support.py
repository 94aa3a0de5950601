"""Tests of tests/support/schema.py: it must accept valid ACP messages and catch real violations.

The example shapes follow the official schema files and the v2 prompt-lifecycle / background
work documents (tests/client/node_modules/@agentclientprotocol/sdk/schema, /work/shared/seeds).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.acp_client import ensure_node_client
from tests.support.properties import examples
from tests.support.schema import (
    SDK_PACKAGE_DIR,
    acp_schema,
    load_schema,
    negotiated_version,
    schema_path,
    validate_agent_message,
    validate_transcript,
)

JsonObject = dict[str, Any]


@pytest.fixture(scope="module", autouse=True)
def _node_client() -> None:
    ensure_node_client()


def update(session_update: JsonObject, session_id: str = "sess_1") -> JsonObject:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": session_update},
    }


def response(request_id: int, result: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


PENDING_V1 = {0: "initialize", 1: "session/new", 2: "session/prompt", 3: "session/close"}
PENDING_V2 = {
    0: "initialize",
    1: "session/new",
    2: "session/prompt",
    3: "terminal/cancel",
    4: "tool_call/cancel",
    5: "session/close",
}

VALID_V1: list[JsonObject] = [
    response(
        0,
        {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False, "promptCapabilities": {"image": False}},
            "agentInfo": {"name": "claude-bg-acp", "version": "0.1.0"},
            "authMethods": [],
        },
    ),
    response(1, {"sessionId": "sess_1"}),
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
    update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Run tests",
            "kind": "execute",
            "status": "in_progress",
            "_meta": {"terminal_info": {"terminal_id": "term_1"}},
        }
    ),
    update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "status": "completed",
            "_meta": {
                "terminal_output_delta": {"terminal_id": "term_1", "data": "ok\n"},
                "terminal_exit": {"terminal_id": "term_1", "exit_code": 0, "signal": None},
            },
        }
    ),
    update(
        {"sessionUpdate": "subagent_update", "sessionId": "sess_child", "title": "Explore"},
    ),
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "session/request_permission",
        "params": {
            "sessionId": "sess_1",
            "toolCall": {"toolCallId": "call_2", "title": "touch file"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        },
    },
    response(2, {"stopReason": "end_turn"}),
    response(3, {}),
]

VALID_V2: list[JsonObject] = [
    response(
        0,
        {
            "protocolVersion": 2,
            "info": {"name": "claude-bg-acp", "version": "0.1.0"},
            "capabilities": {},
        },
    ),
    response(1, {"sessionId": "sess_1"}),
    response(2, {"messageId": "msg_user_1"}),
    update(
        {
            "sessionUpdate": "user_message",
            "messageId": "msg_user_1",
            "content": [{"type": "text", "text": "run the dev server"}],
        }
    ),
    update({"sessionUpdate": "state_update", "state": "running", "background": []}),
    update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "msg_agent_1",
            "content": {"type": "text", "text": "Starting it."},
        }
    ),
    update(
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_003",
            "command": "npm run dev",
            "cwd": "/workspace/project",
            "capabilities": {"cancel": {}},
        }
    ),
    update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term_003", "data": "4oKs/w=="}),
    update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_012",
            "title": "Watch deploy logs",
            "kind": "other",
            "status": "in_progress",
            "capabilities": {"cancel": {}},
        }
    ),
    update(
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "background": [
                {"type": "terminal", "terminalId": "term_003"},
                {"type": "tool_call", "toolCallId": "call_012"},
                {"type": "subagent", "sessionId": "sess_child_4"},
            ],
        }
    ),
    response(3, {}),
    update(
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_003",
            "exitStatus": {"exitCode": None, "signal": "SIGTERM"},
            "capabilities": None,
        }
    ),
    update({"sessionUpdate": "tool_call_update", "toolCallId": "call_012", "status": "paused"}),
    update({"sessionUpdate": "state_update", "state": "idle", "background": []}),
    update(
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32603, "message": "model request failed"},
            "background": [],
        }
    ),
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "_claude/custom"}),
    update({"sessionUpdate": "_claude/task", "taskId": "t1"}),
    {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}},
    {"jsonrpc": "2.0", "method": "_claude/debug", "params": {"anything": True}},
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "session/request_permission",
        "params": {
            "sessionId": "sess_1",
            "title": "Run `touch x`?",
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
        },
    },
    {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Unknown tool call"}},
    response(5, {}),
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
]


def test_schemas_come_from_the_pinned_npm_package() -> None:
    for version in (1, 2):
        path = schema_path(version)
        assert path.is_relative_to(SDK_PACKAGE_DIR)
        assert "node_modules" in path.parts
        assert path.name == "schema.unstable.json"
        assert "$defs" in load_schema(version)
    assert acp_schema(2).agent_responses["terminal/cancel"] == "CancelTerminalResponse"
    assert acp_schema(2).agent_responses["session/prompt"] == "PromptResponse"
    assert acp_schema(1).agent_responses["initialize"] == "InitializeResponse"
    assert acp_schema(1).client_notifications["session/update"] == "SessionNotification"
    assert acp_schema(2).client_notifications["session/update"] == "UpdateSessionNotification"
    assert acp_schema(2).client_requests["session/request_permission"] == "RequestPermissionRequest"


@pytest.mark.parametrize("message", VALID_V1, ids=lambda m: str(m.get("method") or m.get("id")))
def test_valid_v1_messages_pass(message: JsonObject) -> None:
    assert validate_agent_message(message, 1, PENDING_V1) == []


@pytest.mark.parametrize("message", VALID_V2, ids=lambda m: str(m.get("method") or m.get("id")))
def test_valid_v2_messages_pass(message: JsonObject) -> None:
    assert validate_agent_message(message, 2, PENDING_V2) == []


def one_violation(message: JsonObject, version: int, **kwargs: Any) -> str:
    pending = PENDING_V2 if version == 2 else PENDING_V1
    problems = validate_agent_message(message, version, pending, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


def test_v2_state_update_with_a_bad_state() -> None:
    problem = one_violation(update({"sessionUpdate": "state_update", "state": 42}), 2)
    assert "$.params.update.state" in problem and "42" in problem


def test_v2_state_update_without_state() -> None:
    problem = one_violation(update({"sessionUpdate": "state_update", "background": []}), 2)
    assert "$.params.update.state" in problem and "missing" in problem


def test_v2_unknown_state_is_only_rejected_in_strict_mode() -> None:
    finished = update({"sessionUpdate": "state_update", "state": "finished"})
    assert '"finished"' in one_violation(finished, 2)
    assert validate_agent_message(finished, 2, PENDING_V2, strict=False) == []


def test_v2_agent_message_chunk_without_message_id() -> None:
    chunk = update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    problem = one_violation(chunk, 2)
    assert "'messageId' is a required property" in problem
    assert "UpdateSessionNotification" in problem


def test_v1_prompt_response_without_stop_reason() -> None:
    problem = one_violation(response(2, {}), 1)
    assert "PromptResponse" in problem and "'stopReason' is a required property" in problem


def test_v1_prompt_response_with_unknown_stop_reason() -> None:
    problem = one_violation(response(2, {"stopReason": "finished"}), 1)
    assert "$.result.stopReason" in problem


def test_v2_prompt_response_needs_a_message_id() -> None:
    assert "'messageId' is a required property" in one_violation(response(2, {"stopReason": "end_turn"}), 2)


def test_v2_initialize_response_in_v1_shape() -> None:
    problem = one_violation(response(0, {"protocolVersion": 2, "agentCapabilities": {}}), 2)
    assert "InitializeResponse" in problem and "'info'" in problem


def test_v2_unknown_stop_reason_and_unknown_update_are_strict_violations() -> None:
    weird_stop = update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "done"})
    assert "$.params.update.stopReason" in one_violation(weird_stop, 2)
    bogus = update({"sessionUpdate": "bogus_update"})
    assert "$.params.update.sessionUpdate" in one_violation(bogus, 2)
    assert validate_agent_message(bogus, 2, PENDING_V2, strict=False) == []


def test_v1_has_no_fallback_for_unknown_updates() -> None:
    bogus = update({"sessionUpdate": "_claude/task"})
    problem = validate_agent_message(bogus, 1, PENDING_V1, strict=False)
    assert len(problem) == 1 and "sessionUpdate" in problem[0]


def test_v2_background_item_missing_its_id() -> None:
    bad = update({"sessionUpdate": "state_update", "state": "idle", "background": [{"type": "terminal"}]})
    problem = one_violation(bad, 2)
    assert "$.params.update.background[0]" in problem and "terminalId" in problem


def test_v2_terminal_output_chunk_must_be_base64() -> None:
    bad = update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "not b64!"})
    assert "not valid base64" in one_violation(bad, 2)
    assert validate_agent_message(bad, 2, PENDING_V2, strict=False) == []


def test_v2_tool_call_status_must_be_known() -> None:
    bad = update({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "running"})
    assert "$.params.update.status" in one_violation(bad, 2)


def test_v2_cancel_terminal_response_must_be_an_object() -> None:
    assert "CancelTerminalResponse" in one_violation(response(3, []), 2)  # type: ignore[arg-type]


def test_request_permission_needs_options() -> None:
    bad = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "session/request_permission",
        "params": {"sessionId": "s", "title": "x", "options": []},
    }
    assert "options" in one_violation(bad, 2)


@pytest.mark.parametrize("version", [1, 2])
def test_an_elicitation_form_choice_needs_a_title(version: int) -> None:
    """``elicitation/create`` is checked as any request (``CreateElicitationRequest``)."""
    choice: JsonObject = {"type": "string", "oneOf": [{"const": "red"}]}
    schema = {"type": "object", "properties": {"colour": choice}}
    params = {"mode": "form", "sessionId": "s", "message": "Pick", "requestedSchema": schema}
    bad = {"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": params}
    assert "title" in one_violation(bad, version)
    choice["oneOf"][0]["title"] = "Red"
    assert validate_agent_message(bad, version, {}) == []


def test_envelope_violations() -> None:
    assert "jsonrpc" in one_violation({"jsonrpc": "1.0", "id": 5, "result": {}}, 2)
    assert "exactly one of result/error" in one_violation(
        {"jsonrpc": "2.0", "id": 5, "result": {}, "error": {"code": 1, "message": "x"}}, 2
    )
    assert "no pending client request" in one_violation(response(99, {}), 2)
    assert "not an agent->client notification" in one_violation(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}, 2
    )
    assert "not an agent->client method" in one_violation(
        {"jsonrpc": "2.0", "id": 1, "method": "terminal/create", "params": {}}, 2
    )
    assert "id null" in one_violation(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "x"}}, 2
    )
    assert "$.error.code" in one_violation(
        {"jsonrpc": "2.0", "id": 2, "error": {"code": "bad", "message": "x"}}, 2
    )
    assert "not a JSON object" in one_violation([1, 2], 2)  # type: ignore[arg-type]


def test_validate_transcript_pairs_responses_with_requests() -> None:
    client_lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}},
    ]
    agent_lines = [
        VALID_V1[0],
        response(1, {"sessionId": "sess_1"}),
        response(2, {}),
        response(2, {"stopReason": "end_turn"}),
    ]
    violations = validate_transcript(agent_lines, client_lines, 1)
    assert len(violations) == 2, violations
    assert violations[0].startswith("agent line 2 [response to session/prompt (id 2)]")
    assert "stopReason" in violations[0]
    assert violations[1].startswith("agent line 3")
    assert "already answered" in violations[1]
    assert negotiated_version(agent_lines, client_lines) == 1


def test_validate_transcript_accepts_a_whole_valid_v2_run() -> None:
    client_lines = [
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}
        for request_id, method in PENDING_V2.items()
    ]
    assert validate_transcript(VALID_V2, client_lines, 2) == []
    assert negotiated_version(VALID_V2, client_lines) == 2


@settings(max_examples=examples(50), deadline=None)
@given(
    message_id=st.text(min_size=1, max_size=20),
    text=st.text(max_size=50),
    data=st.binary(max_size=64),
)
def test_any_well_formed_v2_chunk_validates(message_id: str, text: str, data: bytes) -> None:
    import base64

    chunk = update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": message_id,
            "content": {"type": "text", "text": text},
        }
    )
    terminal = update(
        {
            "sessionUpdate": "terminal_output_chunk",
            "terminalId": "term_1",
            "data": base64.b64encode(data).decode("ascii"),
        }
    )
    assert validate_agent_message(chunk, 2, {}) == []
    assert validate_agent_message(terminal, 2, {}) == []
