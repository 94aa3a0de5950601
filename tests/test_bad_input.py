"""The bad-input corpus: hostile and broken input, each case answered as JSON-RPC says, and after
every case a valid request is still answered.

One ``claude-bg-acp`` process (offline: no model is reachable) serves the whole corpus, with an
ACP v2 connection and one live session, so that unknown terminals and tool calls are asked of a
session that exists. Each case writes its bytes, then a probe (``initialize``, which a client may
send again at any time); the test collects every answer up to the probe's and compares the
errors with the case's expectation: none for notifications and responses, the code and id the
spec asks for otherwise. At the end every line the agent wrote is validated against the schema.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.scripted_model import offline_env
from tests.support.processes import survivors
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

V2_INIT = {"protocolVersion": 2, "info": {"name": "corpus", "version": "1"}}
SESSION = "@SESSION@"
"""Stands for the live session's id in a case's bytes."""
WORKDIR = "@WORKDIR@"
"""Stands for the session's working directory."""

PARSE, INVALID, NOT_FOUND, PARAMS, UNKNOWN_SESSION, VERSION = -32700, -32600, -32601, -32602, -32002, -32022

RequestId = int | str | None
_ids = count(1)


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    answers: tuple[tuple[RequestId, int], ...] = ()
    """The error answers it gets: (id, code); none for what is not answered."""


def raw(text: str | bytes) -> bytes:
    return (text.encode() if isinstance(text, str) else text) + b"\n"


def message(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def request(
    method: str, params: Any = None, request_id: int | str | None = None, **extra: Any
) -> tuple[bytes, int | str]:
    """A request with a fresh id (unless given); returns its bytes and its id."""
    the_id = f"case-{next(_ids)}" if request_id is None else request_id
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": the_id, "method": method, **extra}
    if params is not None:
        frame["params"] = params
    return message(frame), the_id


def refused(name: str, method: str, params: Any, code: int) -> Case:
    data, request_id = request(method, params)
    return Case(name, data, ((request_id, code),))


def notification(name: str, method: str, params: Any = None) -> Case:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        frame["params"] = params
    return Case(name, message(frame))


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def text_prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def json_shapes() -> Iterator[Case]:
    for name, text in [
        ("not json", "this is not json"),
        ("open brace", "{"),
        ("close brace", "}"),
        ("open bracket", "["),
        ("truncated request", '{"jsonrpc":"2.0","id":"unanswered","method":"initialize"'),
        ("partial literal", "nul"),
        ("partial true", "tru"),
        ("trailing comma", '{"jsonrpc":"2.0","id":"unanswered",}'),
        ("single quotes", "{'jsonrpc':'2.0'}"),
        ("two objects on one line", '{"jsonrpc":"2.0"}{"jsonrpc":"2.0"}'),
        ("integer literal of 5000 digits", "9" * 5000),
        ("unterminated string", '{"jsonrpc":"2.0","method":"x","params":{"a":"' + "x" * 1000),
        ("control character in a string", '{"jsonrpc":"2.0","id":"unanswered","method":"a\x01b"}'),
    ]:
        yield Case(name, raw(text), ((None, PARSE),))
    for name, data in [
        ("invalid UTF-8", b'\xff\xfe{"jsonrpc":"2.0","id":"unanswered","method":"initialize"}'),
        ("NUL bytes", b"\x00\x01\x02"),
        ("UTF-8 byte order mark", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":"unanswered","method":"x"}'),
        ("UTF-16", '{"jsonrpc":"2.0","id":"unanswered","method":"x"}'.encode("utf-16")),
        ("overlong UTF-8", b'{"jsonrpc":"2.0","id":"unanswered","method":"\xc0\xaf"}'),
        ("UTF-8 encoded surrogate", b'{"jsonrpc":"2.0","id":"unanswered","method":"\xed\xa0\x80"}'),
    ]:
        yield Case(name, raw(data), ((None, PARSE),))
    for name, text in [
        ("a string", '"just a string"'),
        ("a number", "42"),
        ("null", "null"),
        ("true", "true"),
        ("an empty array", "[]"),
        ("an array of numbers", "[1, 2]"),
        ("a batch", '[{"jsonrpc":"2.0","id":"unanswered","method":"initialize"}]'),
        ("an empty object", "{}"),
    ]:
        yield Case(name, raw(text), ((None, INVALID),))
    yield Case("an empty line", b"\n")
    yield Case("only whitespace", b" \t \r\n")
    data, request_id = request("no/such_method")
    yield Case("a CRLF line end", data[:-1] + b"\r\n", ((request_id, NOT_FOUND),))
    yield Case(
        "duplicate keys: the last wins",
        raw('{"jsonrpc":"2.0","id":"dup-1","id":"dup-2","method":"x"}'),
        (("dup-2", NOT_FOUND),),
    )
    yield refused("NaN where a version goes", "initialize", {"protocolVersion": float("nan")}, PARAMS)
    yield refused("Infinity where a version goes", "initialize", {"protocolVersion": float("inf")}, PARAMS)
    yield refused("1e999 where a version goes", "initialize", {"protocolVersion": 1e999}, PARAMS)
    data, request_id = request("no/such_method")
    yield Case(
        "a lone surrogate escaped in a string",
        data.replace(b"no/such_method", b"no/\\ud800"),
        ((request_id, NOT_FOUND),),
    )


def nesting() -> Iterator[Case]:
    """Defect 1: a line of about 1,000 nested ``[`` ended the agent."""
    yield Case("1,000 nested arrays", raw(nested(1000)), ((None, PARSE),))
    yield Case("100,000 nested arrays, unclosed", raw("[" * 100_000), ((None, PARSE),))
    yield Case("1,000 nested objects", raw('{"a":' * 1000 + "1" + "}" * 1000), ((None, PARSE),))
    deep_params = '{"jsonrpc":"2.0","id":"deep-1","method":"initialize","params":{"x":' + nested(1000) + "}}"
    yield Case("1,000 levels inside a request", raw(deep_params), ((None, PARSE),))
    for depth in (150, 500):
        data, request_id = request("initialize", json.loads(nested(depth)))
        yield Case(f"params {depth} levels deep", data, ((request_id, INVALID),))
    data, request_id = request(
        "session/prompt", text_prompt(SESSION, "x") | {"_meta": json.loads(nested(300))}
    )
    yield Case("a prompt with 300 levels of _meta", data, ((request_id, INVALID),))
    yield Case(
        "a notification 500 levels deep",
        message({"jsonrpc": "2.0", "method": "session/cancel", "params": json.loads(nested(500))}),
        ((None, INVALID),),
    )
    yield Case(
        "a response 500 levels deep",
        message({"jsonrpc": "2.0", "id": 999_001, "result": json.loads(nested(500))}),
    )
    # Within the limit: the request reaches its method, whose params check refuses it.
    deep_id = {"sessionId": SESSION, "terminalId": json.loads(nested(97))}
    yield refused("params 99 levels deep", "terminal/cancel", deep_id, PARAMS)


def rpc_shapes() -> Iterator[Case]:
    for name, frame, answer in [
        ("no method, no result", {"jsonrpc": "2.0", "id": "shape-1"}, ("shape-1", INVALID)),
        ("jsonrpc 1.0", {"jsonrpc": "1.0", "id": "shape-2", "method": "initialize"}, ("shape-2", INVALID)),
        ("no jsonrpc", {"id": "shape-3", "method": "initialize"}, ("shape-3", INVALID)),
        (
            "jsonrpc as a number",
            {"jsonrpc": 2.0, "id": "shape-4", "method": "initialize"},
            ("shape-4", INVALID),
        ),
        ("method a number", {"jsonrpc": "2.0", "id": "shape-5", "method": 42}, ("shape-5", INVALID)),
        ("method null", {"jsonrpc": "2.0", "id": "shape-6", "method": None}, ("shape-6", INVALID)),
        ("method an array", {"jsonrpc": "2.0", "id": "shape-7", "method": []}, ("shape-7", INVALID)),
        (
            "params a string",
            {"jsonrpc": "2.0", "id": "shape-8", "method": "initialize", "params": "x"},
            ("shape-8", INVALID),
        ),
        (
            "params a number",
            {"jsonrpc": "2.0", "id": "shape-9", "method": "initialize", "params": 7},
            ("shape-9", INVALID),
        ),
        (
            "params true",
            {"jsonrpc": "2.0", "id": "shape-10", "method": "initialize", "params": True},
            ("shape-10", INVALID),
        ),
        ("id null", {"jsonrpc": "2.0", "id": None, "method": "initialize"}, (None, INVALID)),
        ("id true", {"jsonrpc": "2.0", "id": True, "method": "initialize"}, (None, INVALID)),
        ("id a fraction", {"jsonrpc": "2.0", "id": 1.5, "method": "initialize"}, (None, INVALID)),
        ("id an object", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}, (None, INVALID)),
        ("id an array", {"jsonrpc": "2.0", "id": [1], "method": "initialize"}, (None, INVALID)),
        ("neither call nor response", {"jsonrpc": "2.0", "id": "shape-11", "foo": 1}, ("shape-11", INVALID)),
    ]:
        yield Case(name, message(frame), (answer,))
    odd_ids: list[tuple[str, RequestId]] = [
        ("id negative", -1),
        ("id beyond 64 bits", 2**70),
        ("id a long string", "i" * 10_000),
        ("id empty", ""),
        ("id with emoji", "id-é-🙂"),
    ]
    for name, request_id in odd_ids:
        data, _ = request("no/such_method", request_id=request_id)
        yield Case(name, data, ((request_id, NOT_FOUND),))
    for name, method in [
        ("an unknown method", "no/such_method"),
        ("an extension method", "_vendor/thing"),
        ("an empty method", ""),
        ("a method with a trailing space", "initialize "),
        ("a method in the wrong case", "Initialize"),
        ("session/update sent to the agent", "session/update"),
        ("session/request_permission sent to the agent", "session/request_permission"),
        ("session/cancel as a request", "session/cancel"),
        ("$/cancel_request as a request", "$/cancel_request"),
        ("session/load, not offered", "session/load"),
    ]:
        yield refused(name, method, {}, NOT_FOUND)
    data, request_id = request("no/such_method", {}, extra_field=1, _meta={"x": 1})
    yield Case("unknown top-level fields", data, ((request_id, NOT_FOUND),))
    for name, frame in [
        ("a response to an unknown id", {"jsonrpc": "2.0", "id": 999_002, "result": {}}),
        (
            "an error response to an unknown id",
            {"jsonrpc": "2.0", "id": 999_003, "error": {"code": 1, "message": "x"}},
        ),
        (
            "an error response with a null id",
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
        ),
        ("a response with result and error", {"jsonrpc": "2.0", "id": 999_004, "result": 1, "error": {}}),
        ("an error that is a string", {"jsonrpc": "2.0", "id": 999_005, "error": "oops"}),
        ("a response without id", {"jsonrpc": "2.0", "result": 1}),
    ]:
        yield Case(name, message(frame))
    yield notification("an unknown notification", "no/such_notification", {})
    yield notification("an extension notification", "_vendor/notice", {"x": 1})
    yield notification("$/cancel_request of an unknown id", "$/cancel_request", {"requestId": 424242})
    yield notification("$/cancel_request with an object id", "$/cancel_request", {"requestId": {"a": 1}})
    yield notification("$/cancel_request without params", "$/cancel_request")


def params_of_every_method() -> Iterator[Case]:
    params: Any
    for name, params, code in [
        ("initialize without params", None, PARAMS),
        ("initialize with a version in words", {"protocolVersion": "one"}, PARAMS),
        ("initialize with a negative version", {"protocolVersion": -1}, PARAMS),
        ("initialize with version true", {"protocolVersion": True}, PARAMS),
        ("initialize with version 1.5", {"protocolVersion": 1.5}, PARAMS),
        ("initialize with version 0", {"protocolVersion": 0}, VERSION),
        ("initialize v2 without info", {"protocolVersion": 2}, PARAMS),
        ("initialize with params an array", [1], PARAMS),
        (
            "initialize v1 with clientCapabilities a string",
            {"protocolVersion": 1, "clientCapabilities": "x"},
            PARAMS,
        ),
        ("initialize v1 with clientInfo a number", {"protocolVersion": 1, "clientInfo": 5}, PARAMS),
        (
            "initialize v2 with info.name a number",
            {"protocolVersion": 2, "info": {"name": 1, "version": "1"}},
            PARAMS,
        ),
    ]:
        yield refused(name, "initialize", params, code)
    for name, params in [
        ("session/new without params", None),
        ("session/new without cwd", {"mcpServers": []}),
        ("session/new with cwd a number", {"cwd": 42, "mcpServers": []}),
        ("session/new with a relative cwd", {"cwd": "relative/dir", "mcpServers": []}),
        ("session/new with a missing cwd", {"cwd": "/no/such/directory/anywhere", "mcpServers": []}),
        ("session/new with a file as cwd", {"cwd": sys.executable, "mcpServers": []}),
        ("session/new with a NUL in cwd", {"cwd": "/tmp/\u0000x", "mcpServers": []}),
        ("session/new with a 5,000 character cwd", {"cwd": "/" + "d" * 5000, "mcpServers": []}),
        ("session/new with mcpServers a string", {"cwd": WORKDIR, "mcpServers": "x"}),
        ("session/new with mcpServers of numbers", {"cwd": WORKDIR, "mcpServers": [1]}),
        ("session/new with additionalDirectories a string", {"cwd": WORKDIR, "additionalDirectories": "x"}),
        (
            "session/new with a relative additional directory",
            {"cwd": WORKDIR, "additionalDirectories": ["rel"]},
        ),
        ("session/new with params an array of 10,000", list(range(10_000))),
    ]:
        yield refused(name, "session/new", params, PARAMS)
    for method, name, params, code in [
        ("session/prompt", "without sessionId", {"prompt": [{"type": "text", "text": "x"}]}, PARAMS),
        ("session/prompt", "with sessionId a number", {"sessionId": 5, "prompt": [{"type": "text"}]}, PARAMS),
        ("session/prompt", "with prompt a string", {"sessionId": SESSION, "prompt": "hello"}, PARAMS),
        ("session/prompt", "with an empty prompt", {"sessionId": SESSION, "prompt": []}, PARAMS),
        ("session/prompt", "with a number as block", {"sessionId": SESSION, "prompt": [42]}, PARAMS),
        (
            "session/prompt",
            "with a block without type",
            {"sessionId": SESSION, "prompt": [{"text": "x"}]},
            PARAMS,
        ),
        ("session/prompt", "to an unknown session", text_prompt("no-such-session", "hi"), UNKNOWN_SESSION),
        (
            "session/prompt",
            "of 1 MB to an unknown session",
            text_prompt("nope", "x" * 1_000_000),
            UNKNOWN_SESSION,
        ),
        # v2 has no session/set_mode: the mode is a config option.
        ("session/set_mode", "in v2", {"sessionId": SESSION, "modeId": "default"}, NOT_FOUND),
        ("session/set_config_option", "without params", None, PARAMS),
        (
            "session/set_config_option",
            "with configId a number",
            {"sessionId": SESSION, "configId": 3, "value": "default"},
            PARAMS,
        ),
        (
            "session/set_config_option",
            "of an unknown session",
            {"sessionId": "nope", "configId": "mode", "value": "default"},
            UNKNOWN_SESSION,
        ),
        (
            "session/set_config_option",
            "of an unknown option",
            {"sessionId": SESSION, "configId": "no-such-option", "value": "x"},
            PARAMS,
        ),
        (
            "session/set_config_option",
            "to an unknown mode",
            {"sessionId": SESSION, "configId": "mode", "value": "no-such-mode"},
            PARAMS,
        ),
        ("terminal/cancel", "without terminalId", {"sessionId": SESSION}, PARAMS),
        ("terminal/cancel", "with terminalId a number", {"sessionId": SESSION, "terminalId": 1}, PARAMS),
        (
            "terminal/cancel",
            "of an unknown session",
            {"sessionId": "nope", "terminalId": "t"},
            UNKNOWN_SESSION,
        ),
        ("terminal/cancel", "of an unknown terminal", {"sessionId": SESSION, "terminalId": "nope"}, PARAMS),
        ("tool_call/cancel", "without toolCallId", {"sessionId": SESSION}, PARAMS),
        (
            "tool_call/cancel",
            "of an unknown session",
            {"sessionId": "nope", "toolCallId": "t"},
            UNKNOWN_SESSION,
        ),
        ("tool_call/cancel", "of an unknown tool call", {"sessionId": SESSION, "toolCallId": "nope"}, PARAMS),
        ("session/close", "without params", None, PARAMS),
        ("session/close", "with sessionId an array", {"sessionId": []}, PARAMS),
        ("session/close", "of an unknown session", {"sessionId": "no-such-session"}, UNKNOWN_SESSION),
    ]:
        yield refused(f"{method} {name}", method, params, code)
    yield notification(
        "session/cancel of an unknown session", "session/cancel", {"sessionId": "no-such-session"}
    )
    yield notification("session/cancel without params", "session/cancel")
    yield notification("session/cancel with sessionId a number", "session/cancel", {"sessionId": 7})
    yield notification(
        "session/cancel of the live session while idle", "session/cancel", {"sessionId": SESSION}
    )


def sizes() -> Iterator[Case]:
    yield Case("a 2 MB line of garbage", raw("g" * 2_000_000), ((None, PARSE),))
    wide = {f"key{i}": i for i in range(100_000)}
    yield refused("params with 100,000 keys", "no/such_method", wide, NOT_FOUND)
    pipelined: list[bytes] = []
    answers: list[tuple[RequestId, int]] = []
    for _ in range(200):
        data, request_id = request("no/such_method")
        pipelined.append(data)
        answers.append((request_id, NOT_FOUND))
    yield Case("200 requests in one write", b"".join(pipelined), tuple(answers))


@dataclass
class Served:
    agent: StdioAgent
    session_id: str
    workdir: Path
    marker: str
    probes: count[int] = field(default_factory=lambda: count(1))


CASES = [*json_shapes(), *nesting(), *rpc_shapes(), *params_of_every_method(), *sizes()]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("corpus")
    workdir = root / "work"
    workdir.mkdir()
    env = offline_env("http://127.0.0.1:9", root / "offline")
    agent = StdioAgent(env=env)
    assert "result" in agent.call(0, "initialize", V2_INIT)
    session = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})
    served = Served(
        agent, session["result"]["sessionId"], workdir, "CLAUDE_CODE_TMPDIR=" + env["CLAUDE_CODE_TMPDIR"]
    )
    yield served
    assert agent.close() == 0, agent.stderr
    assert not survivors(served.marker)
    violations = validate_transcript(agent.lines, agent.sent, 2)
    assert not violations, "\n".join(violations[:20])


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 100
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gets_its_answer_and_the_agent_keeps_serving(served: Served, case: Case) -> None:
    data = case.data.replace(SESSION.encode(), served.session_id.encode())
    data = data.replace(WORKDIR.encode(), str(served.workdir).encode())
    probe = f"probe-{next(served.probes)}"
    served.agent.send_raw(data)
    served.agent.request(probe, "initialize", V2_INIT)
    expected = Counter(case.answers)
    answers: Counter[tuple[RequestId, int]] = Counter()
    probe_answer: dict[str, Any] | None = None
    # Requests are answered concurrently: one may be answered after the probe.
    while probe_answer is None or sum(answers.values()) < sum(expected.values()):
        reply = served.agent.next_message(lambda m: "method" not in m, timeout=30)
        if reply.get("id") == probe:
            probe_answer = reply
        else:
            answers[(reply.get("id"), reply.get("error", {}).get("code"))] += 1
    assert probe_answer.get("result", {}).get("protocolVersion") == 2, probe_answer
    assert answers == expected
    assert served.agent.proc.poll() is None
