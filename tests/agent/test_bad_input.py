"""The bad-input corpus: hostile and broken input, each case answered as JSON-RPC says, and after
every case a valid request is still answered.

One ``claude-bg-acp`` process (offline: no model is reachable) serves the whole corpus, with an
ACP v2 connection and one live session, so that unknown terminals and tool calls are asked of a
session that exists; a second one, speaking v1, serves the cases of v1's own shapes. Each case
writes its bytes, then a probe (``initialize``, which a client may send again at any time, with
the version the connection speaks); the test collects every answer up to the probe's and
compares the errors with the case's expectation: none for notifications and responses, the code
and id the spec asks for otherwise, and the field the error must name. At the end every line
the agent wrote is validated against the schema.
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
V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}}
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
    names: str = ""
    """What the error message must name (a field's path)."""


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


def refused(name: str, method: str, params: Any, code: int, names: str = "") -> Case:
    data, request_id = request(method, params)
    return Case(name, data, ((request_id, code),), names)


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
        ("unterminated string", '{"jsonrpc":"2.0","method":"x","params":{"a":"' + "x" * 1000),
        ("control character in a string", '{"jsonrpc":"2.0","id":"unanswered","method":"a\x01b"}'),
    ]:
        yield Case(name, raw(text), ((None, PARSE),))
    for name, data in [
        ("invalid UTF-8", b'\xff\xfe{"jsonrpc":"2.0","id":"unanswered","method":"initialize"}'),
        ("NUL bytes", b"\x00\x01\x02"),
        ("UTF-16", '{"jsonrpc":"2.0","id":"unanswered","method":"x"}'.encode("utf-16")),
        ("overlong UTF-8", b'{"jsonrpc":"2.0","id":"unanswered","method":"\xc0\xaf"}'),
        ("UTF-8 encoded surrogate", b'{"jsonrpc":"2.0","id":"unanswered","method":"\xed\xa0\x80"}'),
    ]:
        yield Case(name, raw(data), ((None, PARSE),))
    for name, text in [
        ("a string", '"just a string"'),
        ("a number", "42"),
        ("an integer literal of 5000 digits, more than the decoder takes", "9" * 5000),
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
    data, request_id = request("no/such_method")
    yield Case("a UTF-8 byte order mark before it", b"\xef\xbb\xbf" + data, ((request_id, NOT_FOUND),))
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
    """Defect 1: a line of about 1,000 nested ``[`` ended the agent. Issue 19, defect 5: a request
    deeper than the decoder goes was answered with ``id: null``, so the client's request waited
    forever; JSON too deep for the decoder is now refused as any call deeper than 100 levels is
    (-32600), with the top-level object's id, and only a line that is not JSON is a parse error."""
    yield Case("1,000 nested arrays", raw(nested(1000)), ((None, INVALID),))
    yield Case("100,000 nested arrays, unclosed", raw("[" * 100_000), ((None, PARSE),))
    yield Case("1,000 nested objects", raw('{"a":' * 1000 + "1" + "}" * 1000), ((None, INVALID),))
    deep_params = '{"jsonrpc":"2.0","id":"deep-1","method":"initialize","params":{"x":' + nested(1000) + "}}"
    yield Case("1,000 levels inside a request", raw(deep_params), (("deep-1", INVALID),))
    yield from deeper_than_the_decoder()
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


def deep_call(request_id: str, params: str, after: str = "") -> bytes:
    """A call of ``request_id`` (JSON string content) with ``params`` (JSON text), then ``after``."""
    return raw(f'{{"jsonrpc":"2.0","id":"{request_id}","method":"session/prompt","params":{params}{after}}}')


def deeper_than_the_decoder() -> Iterator[Case]:
    text = nested(3000, '"hi"')
    prompt = f'{{"sessionId":"{SESSION}","prompt":[{{"type":"text","text":{text}}}]}}'
    yield Case("a prompt 3,000 levels deep", deep_call("deep-2", prompt), (("deep-2", INVALID),))
    yield Case("a call 100,000 levels deep", deep_call("deep-3", nested(100_000)), (("deep-3", INVALID),))
    objects = '{"a":' * 3000 + "1" + "}" * 3000
    yield Case(
        "3,000 levels of objects before the id",
        raw('{"params":' + objects + ',"jsonrpc":"2.0","method":"x","id":"deep-4"}'),
        (("deep-4", INVALID),),
    )
    yield Case(
        "two ids around 3,000 levels: the last wins",
        raw('{"id":"deep-5","params":' + nested(3000) + ',"jsonrpc":"2.0","method":"x","id":"deep-6"}'),
        (("deep-6", INVALID),),
    )
    yield Case(
        "an id around 3,000 levels replaced by one that is no id",
        raw('{"id":"deep-7","params":' + nested(3000) + ',"jsonrpc":"2.0","method":"x","id":[1]}'),
        ((None, INVALID),),
    )
    yield Case(
        "an id whose key is escaped, 3,000 levels",
        raw('{"jsonrpc":"2.0","\\u0069d":"deep-8","method":"x","params":' + nested(3000) + "}"),
        (("deep-8", INVALID),),
    )
    yield Case(
        "an integer id, 3,000 levels",
        raw('{"jsonrpc":"2.0","id":31337,"method":"x","params":' + nested(3000) + "}"),
        ((31337, INVALID),),
    )
    yield Case(
        "a fractional id, 3,000 levels",
        raw('{"jsonrpc":"2.0","id":1.5,"method":"x","params":' + nested(3000) + "}"),
        ((None, INVALID),),
    )
    yield Case(
        "brackets, quotes and backslashes in strings, 3,000 levels",
        deep_call(r"deep-\"9\\", nested(3000, r'"]]}}\\\"[[{{"')),
        (('deep-"9\\', INVALID),),
    )
    yield Case(
        "an id only inside the params, 3,000 levels",
        raw('{"jsonrpc":"2.0","method":"x","params":{"id":"deep-10","x":' + nested(3000) + "}}"),
        ((None, INVALID),),
    )
    yield Case(
        "a notification 3,000 levels deep",
        raw('{"jsonrpc":"2.0","method":"x","params":' + nested(3000) + "}"),
        ((None, INVALID),),
    )
    # Not JSON: its id could only be guessed.
    whole = deep_call("unanswered", nested(3000))
    yield Case("3,000 levels, cut short", whole[:-3] + b"\n", ((None, PARSE),))
    yield Case("3,000 levels and a second value", whole[:-1] + b"{}\n", ((None, PARSE),))
    yield Case(
        "3,000 levels and a trailing comma",
        deep_call("unanswered", nested(3000), after=","),
        ((None, PARSE),),
    )
    yield Case(
        "3,000 levels and a bracket that does not match",
        deep_call("unanswered", "[" * 3000 + "]" * 2999 + "}"),
        ((None, PARSE),),
    )
    yield Case(
        "3,000 levels and a control character in a string",
        deep_call("unanswered", nested(3000, '"a\x01b"')),
        ((None, PARSE),),
    )
    yield Case(
        "an integer of 5,000 digits in a call",
        raw('{"jsonrpc":"2.0","id":"digits","method":"x","params":[' + "9" * 5000 + "]}"),
        (("digits", INVALID),),
    )


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


STDIO = {"type": "stdio", "name": "probe", "command": "/bin/true", "args": [], "env": []}
HTTP = {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []}
V1_STDIO = {"name": "probe", "command": "/bin/true", "args": [], "env": []}
"""v1's stdio entry has no ``type``."""


def changed(entry: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``entry`` with ``fields`` set, and those given as ``...`` left out."""
    return {key: value for key, value in {**entry, **fields}.items() if value is not ...}


def mcp_servers_v2() -> Iterator[Case]:
    """Issue 19, defect 2: one malformed ``mcpServers`` entry ended the agent. Every field of v2's
    stdio and http entries, for every method that takes the list, refused naming the field."""
    bad: list[tuple[str, Any, str]] = [
        ("an env entry without name", [changed(STDIO, env=[{"value": "x"}])], "mcpServers[0].env[0].name"),
        ("an env entry without value", [changed(STDIO, env=[{"name": "A"}])], "mcpServers[0].env[0].value"),
        (
            "an env name a number",
            [changed(STDIO, env=[{"name": 1, "value": "x"}])],
            "mcpServers[0].env[0].name",
        ),
        (
            "an env value a number",
            [changed(STDIO, env=[{"name": "A", "value": 1}])],
            "mcpServers[0].env[0].value",
        ),
        ("an env entry a string", [changed(STDIO, env=["A=x"])], "mcpServers[0].env[0]"),
        ("env an object", [changed(STDIO, env={"A": "x"})], "mcpServers[0].env"),
        ("env a string", [changed(STDIO, env="A=x")], "mcpServers[0].env"),
        ("args a string", [changed(STDIO, args="--flag")], "mcpServers[0].args"),
        ("an arg a number", [changed(STDIO, args=["--n", 1])], "mcpServers[0].args[1]"),
        ("no command", [changed(STDIO, command=...)], "mcpServers[0].command"),
        ("command a number", [changed(STDIO, command=5)], "mcpServers[0].command"),
        ("command null", [changed(STDIO, command=None)], "mcpServers[0].command"),
        ("no name", [changed(STDIO, name=...)], "mcpServers[0].name"),
        ("name a number", [changed(STDIO, name=7)], "mcpServers[0].name"),
        ("a stdio entry without type", [V1_STDIO], "mcpServers[0].type"),
        ("type null", [changed(STDIO, type=None)], "mcpServers[0].type"),
        ("type a number", [changed(STDIO, type=1)], "mcpServers[0].type"),
        ("an unknown type", [changed(STDIO, type="ws")], "mcpServers[0].type"),
        ("type sse, which v2 has not", [changed(HTTP, type="sse")], "mcpServers[0].type"),
        ("type acp, not offered", [{"type": "acp", "name": "a", "serverId": "s"}], "mcpServers[0].type"),
        ("an extension's type", [changed(STDIO, type="_vendor")], "mcpServers[0].type"),
        ("an http entry without url", [changed(HTTP, url=...)], "mcpServers[0].url"),
        ("url a number", [changed(HTTP, url=80)], "mcpServers[0].url"),
        ("url no URI", [changed(HTTP, url="localhost mcp")], "mcpServers[0].url"),
        ("an http entry without name", [changed(HTTP, name=...)], "mcpServers[0].name"),
        ("headers a string", [changed(HTTP, headers="A: x")], "mcpServers[0].headers"),
        ("headers an object", [changed(HTTP, headers={"A": "x"})], "mcpServers[0].headers"),
        ("a header without name", [changed(HTTP, headers=[{"value": "x"}])], "mcpServers[0].headers[0].name"),
        (
            "a header without value",
            [changed(HTTP, headers=[{"name": "A"}])],
            "mcpServers[0].headers[0].value",
        ),
        (
            "a header value a number",
            [changed(HTTP, headers=[{"name": "A", "value": 1}])],
            "mcpServers[0].headers[0].value",
        ),
        ("an entry a number", [1], "mcpServers[0]"),
        ("an entry a string", ["probe"], "mcpServers[0]"),
        ("an entry null", [None], "mcpServers[0]"),
        ("an entry an array", [[STDIO]], "mcpServers[0]"),
        (
            "a bad second entry",
            [STDIO, changed(HTTP, headers=[{"value": "x"}])],
            "mcpServers[1].headers[0].name",
        ),
        ("the list an object", {"probe": STDIO}, "mcpServers"),
        ("the list a number", 3, "mcpServers"),
    ]
    yield from mcp_refusals("", ("session/new", "session/resume", "session/fork"), bad)


def mcp_servers_v1() -> Iterator[Case]:
    """v1's shapes: stdio without ``type``, every list required, SSE besides HTTP."""
    sse = changed(HTTP, type="sse")
    bad: list[tuple[str, Any, str]] = [
        (
            "the issue's entry: an env entry without name",
            [{"name": "bad", "command": "/bin/true", "args": [], "env": [{"value": "x"}]}],
            "mcpServers[0].env[0].name",
        ),
        ("a stdio entry without args", [changed(V1_STDIO, args=...)], "mcpServers[0].args"),
        ("a stdio entry without env", [changed(V1_STDIO, env=...)], "mcpServers[0].env"),
        (
            "an env value a number",
            [changed(V1_STDIO, env=[{"name": "A", "value": 1}])],
            "mcpServers[0].env[0].value",
        ),
        ("an http entry without headers", [changed(HTTP, headers=...)], "mcpServers[0].headers"),
        ("an sse entry without headers", [changed(sse, headers=...)], "mcpServers[0].headers"),
        (
            "an sse header without name",
            [changed(sse, headers=[{"value": "x"}])],
            "mcpServers[0].headers[0].name",
        ),
        ("an sse url a number", [changed(sse, url=1)], "mcpServers[0].url"),
        ("an unknown type", [changed(V1_STDIO, type="ws")], "mcpServers[0].type"),
        ("type acp, not offered", [{"type": "acp", "name": "a", "serverId": "s"}], "mcpServers[0].type"),
        ("type a number", [changed(V1_STDIO, type=2)], "mcpServers[0].type"),
        ("an entry a string", ["probe"], "mcpServers[0]"),
    ]
    yield from mcp_refusals("v1 ", ("session/new", "session/load", "session/resume", "session/fork"), bad)


def mcp_refusals(label: str, methods: tuple[str, ...], bad: list[tuple[str, Any, str]]) -> Iterator[Case]:
    """Each of ``bad`` (a name, the list, the path its error names) sent with each method."""
    for method in methods:
        for name, servers, path in bad:
            params = {"cwd": WORKDIR, "mcpServers": servers}
            if method != "session/new":
                params["sessionId"] = SESSION
            yield refused(f"{label}{method} with mcpServers: {name}", method, params, PARAMS, path)


def idempotency_keys() -> Iterator[Case]:
    """v2's ``idempotencyKey`` (Idempotency Keys RFD): an opaque string of 1 to 255 characters;
    anything else is refused naming it, before anything is inserted."""
    for name, key in [("empty", ""), ("of 256 characters", "k" * 256), ("a number", 7), ("an object", {})]:
        params = text_prompt(SESSION, "x") | {"idempotencyKey": key}
        yield refused(
            f"session/prompt with an idempotencyKey {name}",
            "session/prompt",
            params,
            PARAMS,
            "idempotencyKey",
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
    init: dict[str, Any]
    session_id: str
    workdir: Path
    probes: count[int] = field(default_factory=lambda: count(1))


CASES = [
    *json_shapes(),
    *nesting(),
    *rpc_shapes(),
    *params_of_every_method(),
    *mcp_servers_v2(),
    *idempotency_keys(),
    *sizes(),
]
V1_CASES = list(mcp_servers_v1())


def serve(tmp_path_factory: pytest.TempPathFactory, init: dict[str, Any]) -> Iterator[Served]:
    """An offline agent that speaks the version ``init`` asks for, with one live session."""
    root = tmp_path_factory.mktemp("corpus")
    workdir = root / "work"
    workdir.mkdir()
    env = offline_env("http://127.0.0.1:9", root / "offline")
    agent = StdioAgent(env=env)
    assert "result" in agent.call(0, "initialize", init)
    session = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})
    yield Served(agent, init, session["result"]["sessionId"], workdir)
    assert agent.close() == 0, agent.stderr
    assert not survivors("CLAUDE_CODE_TMPDIR=" + env["CLAUDE_CODE_TMPDIR"])
    violations = validate_transcript(agent.lines, agent.sent, init["protocolVersion"])
    assert not violations, "\n".join(violations[:20])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory, V2_INIT)


@pytest.fixture(scope="module")
def served_v1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory, V1_INIT)


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 100
    names = [case.name for case in CASES + V1_CASES]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gets_its_answer_and_the_agent_keeps_serving(served: Served, case: Case) -> None:
    answered(served, case)


@pytest.mark.parametrize("case", V1_CASES, ids=[case.name for case in V1_CASES])
def test_bad_input_in_v1_shapes_gets_its_answer(served_v1: Served, case: Case) -> None:
    answered(served_v1, case)


def answered(served: Served, case: Case) -> None:
    """Send ``case``, then a probe; the errors are the case's, and the probe is answered."""
    data = case.data.replace(SESSION.encode(), served.session_id.encode())
    data = data.replace(WORKDIR.encode(), str(served.workdir).encode())
    probe = f"probe-{next(served.probes)}"
    served.agent.send_raw(data)
    served.agent.request(probe, "initialize", served.init)
    expected = Counter(case.answers)
    answers: Counter[tuple[RequestId, int]] = Counter()
    messages: list[str] = []
    probe_answer: dict[str, Any] | None = None
    # Requests are answered concurrently: one may be answered after the probe.
    while probe_answer is None or sum(answers.values()) < sum(expected.values()):
        reply = served.agent.next_message(lambda m: "method" not in m, timeout=30)
        if reply.get("id") == probe:
            probe_answer = reply
        else:
            answers[(reply.get("id"), reply.get("error", {}).get("code"))] += 1
            messages.append(reply.get("error", {}).get("message", ""))
    assert probe_answer.get("result", {}).get("protocolVersion") == served.init["protocolVersion"], (
        probe_answer
    )
    assert answers == expected
    assert all(f": {case.names}: " in message for message in messages if case.names), messages
    assert served.agent.proc.poll() is None
