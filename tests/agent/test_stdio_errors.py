"""Bad input over stdio gets the right JSON-RPC error, and the agent keeps serving.

Drives the installed ``claude-bg-acp`` process with raw bytes (the official client cannot send
malformed input), then proves that a later ``initialize`` + ``session/new`` still works.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture
def agent(offline: dict[str, str]) -> Iterator[StdioAgent]:
    process = StdioAgent(env=offline)
    yield process
    assert process.close() == 0, process.stderr
    violations = validate_transcript(process.lines, process.sent, 1)
    assert not violations, "\n".join(violations)


def error_of(message: dict[str, object]) -> int:
    error = message["error"]
    assert isinstance(error, dict)
    return int(error["code"])


def test_parse_errors_answer_with_null_id(agent: StdioAgent) -> None:
    agent.send_raw(b"this is not json\n")
    assert error_of(agent.response(None)) == -32700
    agent.send_raw(b'\xff\xfe{"jsonrpc":"2.0","id":1,"method":"initialize"}\n')
    reply = agent.response(None)
    assert error_of(reply) == -32700
    assert "UTF-8" in str(reply["error"])


def test_multi_megabyte_line_gets_an_error(agent: StdioAgent) -> None:
    agent.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"' + b"x" * 5_000_000 + b"\n")
    assert error_of(agent.response(None)) == -32700
    assert agent.call(2, "initialize", V1_INIT)["result"]["protocolVersion"] == 1


def test_invalid_requests(agent: StdioAgent) -> None:
    agent.send_raw(b"[1, 2]\n")
    assert error_of(agent.response(None)) == -32600
    agent.send_raw(b'{"jsonrpc":"2.0","id":7}\n')
    assert error_of(agent.response(7)) == -32600
    agent.send_raw(b'{"jsonrpc":"1.0","id":8,"method":"initialize"}\n')
    assert error_of(agent.response(8)) == -32600
    agent.send_raw(b'{"jsonrpc":"2.0","id":9,"method":42}\n')
    assert error_of(agent.response(9)) == -32600


def test_requests_before_initialize_are_refused(agent: StdioAgent, workdir: Path) -> None:
    reply = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})
    assert error_of(reply) == -32600
    assert "initialize" in reply["error"]["message"]


def test_unknown_methods(agent: StdioAgent) -> None:
    agent.call(0, "initialize", V1_INIT)
    assert error_of(agent.call(1, "no/such_method", {})) == -32601
    assert error_of(agent.call(2, "_vendor/thing", {})) == -32601
    agent.send({"jsonrpc": "2.0", "method": "_vendor/notice", "params": {}})
    agent.send({"jsonrpc": "2.0", "method": "no/such_notification", "params": {}})
    # Notifications get no answer: the next thing we hear is the answer to the next request.
    assert agent.call(3, "initialize", V1_INIT)["id"] == 3


def test_invalid_params_name_the_field(agent: StdioAgent, workdir: Path) -> None:
    agent.call(0, "initialize", V1_INIT)
    cases = [
        ("initialize", {"protocolVersion": "one"}, "protocolVersion"),
        ("session/new", {"mcpServers": []}, "cwd"),
        ("session/new", {"cwd": "relative/dir", "mcpServers": []}, "cwd"),
        ("session/new", {"cwd": str(workdir / "missing"), "mcpServers": []}, "cwd"),
        ("session/prompt", {"sessionId": "s", "prompt": "hello"}, "prompt"),
        ("session/prompt", {"prompt": [{"type": "text", "text": "x"}]}, "sessionId"),
    ]
    for request_id, (method, params, field) in enumerate(cases, start=1):
        reply = agent.call(request_id, method, params)
        assert error_of(reply) == -32602, (method, reply)
        assert field in reply["error"]["message"], (method, reply)


def test_unknown_session(agent: StdioAgent) -> None:
    agent.call(0, "initialize", V1_INIT)
    prompt = {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}
    reply = agent.call(1, "session/prompt", prompt)
    assert error_of(reply) == -32002
    assert reply["error"]["data"] == {"sessionId": "nope"}


def test_unsupported_version(agent: StdioAgent) -> None:
    reply = agent.call(1, "initialize", {"protocolVersion": 0, "clientCapabilities": {}})
    assert error_of(reply) == -32022


def test_agent_survives_bad_input_and_serves_sessions(agent: StdioAgent, workdir: Path) -> None:
    for junk in (b"{", b"\x00\x01", b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":7}'):
        agent.send_raw(junk + b"\n")
    agent.next_message(lambda m: "error" in m and m.get("id") == 1)
    reply = agent.call(2, "initialize", V1_INIT)
    assert reply["result"]["agentCapabilities"]["sessionCapabilities"]["close"] == {}
    session = agent.call(3, "session/new", {"cwd": str(workdir), "mcpServers": []})
    assert session["result"]["sessionId"]
    closed = agent.call(4, "session/close", {"sessionId": session["result"]["sessionId"]})
    assert closed["result"] == {}
    prompt = {"sessionId": session["result"]["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    assert error_of(agent.call(5, "session/prompt", prompt)) == -32002  # closed means gone


INIT = b'"method":"initialize","params":' + json.dumps(V1_INIT).encode() + b"}\n"
LIST = b'"method":"session/list","params":{}}\n'


def test_a_number_without_a_fraction_is_an_id_answered_as_its_integer(agent: StdioAgent) -> None:
    """``1.0`` and ``1e3`` are JSON's integers written otherwise; a fraction is no id."""
    agent.send_raw(b'{"jsonrpc":"2.0","id":1.0,' + INIT)
    assert agent.response(1)["result"]["protocolVersion"] == 1 and type(agent.lines[-1]["id"]) is int
    agent.send_raw(b'{"jsonrpc":"2.0","id":1e3,' + LIST)
    assert agent.response(1000)["result"]["sessions"] == []
    agent.send_raw(b'{"jsonrpc":"2.0","id":1.5,' + LIST)
    assert error_of(agent.response(None)) == -32600


def test_a_byte_order_mark_at_the_start_of_a_line_is_ignored(agent: StdioAgent) -> None:
    agent.send_raw(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,' + INIT)
    assert agent.response(1)["result"]["protocolVersion"] == 1
    agent.send_raw(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":"two",' + LIST)
    assert agent.response("two")["result"]["sessions"] == []
