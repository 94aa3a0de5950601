"""What each version is told it can do with sessions, and the errors for sessions that are not
there: the installed agent over raw stdio, offline (no model is needed: nothing is prompted).
Every line is validated against the official schema of the negotiated version."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
V2_INIT = {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}


def started(offline: dict[str, str], init: dict[str, Any]) -> Iterator[tuple[StdioAgent, dict[str, Any]]]:
    agent = StdioAgent(env=offline)
    answer = agent.call(0, "initialize", init)["result"]
    yield agent, answer
    assert agent.close() == 0, agent.stderr
    violations = validate_transcript(agent.lines, agent.sent, init["protocolVersion"])
    assert not violations, "\n".join(violations)


@pytest.fixture
def v1(offline: dict[str, str]) -> Iterator[tuple[StdioAgent, dict[str, Any]]]:
    yield from started(offline, V1_INIT)


@pytest.fixture
def v2(offline: dict[str, str]) -> Iterator[tuple[StdioAgent, dict[str, Any]]]:
    yield from started(offline, V2_INIT)


def test_v1_capabilities_name_every_session_method(v1: tuple[StdioAgent, dict[str, Any]]) -> None:
    capabilities = v1[1]["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["sessionCapabilities"] == {
        "close": {},
        "additionalDirectories": {},
        "list": {},
        "resume": {},
        "fork": {},
        "delete": {},
    }
    assert capabilities["mcpCapabilities"] == {"http": True, "sse": True}


def test_v2_capabilities_hold_only_v2_fields(v2: tuple[StdioAgent, dict[str, Any]]) -> None:
    """list, resume and close are v2's baseline: no field names them; v2 has no SSE transport."""
    session = v2[1]["capabilities"]["session"]
    assert session == {
        "prompt": {"image": {}, "embeddedContext": {}},
        "mcp": {"stdio": {}, "http": {}},
        "additionalDirectories": {},
        "fork": {},
        "delete": {},
    }


def test_v2_has_no_session_load(v2: tuple[StdioAgent, dict[str, Any]], workdir: Path) -> None:
    agent = v2[0]
    params = {"sessionId": str(uuid.uuid4()), "cwd": str(workdir), "mcpServers": []}
    assert agent.call(1, "session/load", params)["error"]["code"] == -32601


@pytest.mark.parametrize("method", ["session/load", "session/resume", "session/fork", "session/delete"])
def test_an_unknown_session_is_named_in_the_error(
    v1: tuple[StdioAgent, dict[str, Any]], workdir: Path, method: str
) -> None:
    agent = v1[0]
    unknown = str(uuid.uuid4())
    reply = agent.call(1, method, {"sessionId": unknown, "cwd": str(workdir), "mcpServers": []})
    assert reply["error"] == {
        "code": -32002,
        "message": f"Unknown session {unknown}",
        "data": {"sessionId": unknown},
    }


def test_list_checks_its_params(v2: tuple[StdioAgent, dict[str, Any]], workdir: Path) -> None:
    agent = v2[0]
    assert agent.call(1, "session/list", {"cwd": str(workdir)})["result"] == {"sessions": []}
    assert agent.call(2, "session/list", {})["result"] == {"sessions": []}
    relative = agent.call(3, "session/list", {"cwd": "work"})["error"]
    assert relative["code"] == -32602 and "cwd" in relative["message"]
    cursor = agent.call(4, "session/list", {"cursor": "page-2"})["error"]
    assert cursor["code"] == -32602 and "cursor" in cursor["message"]


def test_clear_is_refused_because_it_would_change_the_session_id(
    v2: tuple[StdioAgent, dict[str, Any]], workdir: Path
) -> None:
    agent = v2[0]
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    for request_id, text in enumerate(["/clear", "  /reset now", "/new"], start=2):
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        error = agent.call(request_id, "session/prompt", prompt)["error"]
        assert error["code"] == -32602 and "/clear" in error["message"]
