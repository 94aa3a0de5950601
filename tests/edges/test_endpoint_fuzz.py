"""Random lines and bytes into the endpoint, in process: whatever comes, no exception ends it,
every line it writes is a JSON-RPC message, and a valid request after the noise is answered.

The endpoint runs with the real ``Agent`` behind it, so params reach the real request models and
method handlers; only a ``session/new`` that would start a real Claude Code (an absolute path to
an existing directory) is kept out. Input arrives in chunks of random size, so lines are split
across reads, and the line limit is small, so oversized lines occur.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import anyio
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.agent import Agent

MAX_LINE = 4096
METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/close",
    "terminal/cancel",
    "tool_call/cancel",
    "$/cancel_request",
    "session/update",
    "_vendor/x",
]
V2_INIT = {"protocolVersion": 2, "info": {"name": "fuzz", "version": "1"}}

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
ids = (
    st.none()
    | st.integers()
    | st.text(max_size=8)
    | st.booleans()
    | st.floats()
    | st.lists(st.integers(), max_size=2)
)
blocks = st.lists(
    st.fixed_dictionaries(
        {}, optional={"type": st.sampled_from(["text", "image", "x"]) | scalars, "text": scalars}
    ),
    max_size=2,
)
acp_params = st.fixed_dictionaries(
    {},
    optional={
        "protocolVersion": st.integers(-1, 3) | scalars,
        "info": st.fixed_dictionaries({"name": scalars, "version": scalars}) | scalars,
        "clientCapabilities": values,
        "sessionId": st.sampled_from(["s", ""]) | scalars,
        "prompt": blocks | scalars,
        "cwd": st.sampled_from(["relative", "/no/such/dir"]) | scalars,
        "mcpServers": values,
        "terminalId": scalars,
        "toolCallId": scalars,
        "modeId": scalars,
        "requestId": ids,
        "_meta": values,
    },
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | scalars,
        "id": ids,
        "method": st.sampled_from(METHODS) | st.text(max_size=12),
        "params": acp_params | values,
        "result": values,
        "error": values,
    },
)
lines = st.one_of(
    messages.map(lambda m: json.dumps(m).encode()),
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
    st.integers(1, 3000).map(lambda n: b"[" * n),
    st.integers(1, 3000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.integers(MAX_LINE - 8, MAX_LINE * 2).map(lambda n: b"x" * n),
)


def starts_claude(line: bytes) -> bool:
    """A ``session/new`` the agent would honour by starting a real Claude Code."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return False
    params = message.get("params") if isinstance(message, dict) else None
    cwd = params.get("cwd") if isinstance(params, dict) else None
    return isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd)


class Feed:
    """The client's bytes, handed out in chunks of a given size."""

    def __init__(self, data: bytes, chunk: int) -> None:
        self._data = memoryview(data)
        self._chunk = chunk

    async def read(self, n: int) -> bytes:
        await anyio.lowlevel.checkpoint()
        piece, self._data = self._data[: min(n, self._chunk)], self._data[min(n, self._chunk) :]
        return bytes(piece)


class Written:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        await anyio.lowlevel.checkpoint()


async def serve(data: bytes, chunk: int) -> list[Any]:
    written = Written()
    endpoint = Endpoint(Feed(data, chunk), written, max_line=MAX_LINE)
    async with anyio.create_task_group() as tg:
        agent = Agent(endpoint, tg)
        await endpoint.serve(tg, agent.on_request, agent.on_notification)
    return [json.loads(line) for line in bytes(written.data).splitlines()]


def check_message(message: Any) -> None:
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
    if "method" in message:
        return
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        assert isinstance(message["error"]["code"], int) and isinstance(message["error"]["message"], str)


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(noise=st.lists(lines, max_size=8), initialized=st.booleans(), chunk=st.integers(1, 4096))
def test_no_input_ends_the_endpoint_and_a_valid_request_is_still_answered(
    noise: list[bytes], initialized: bool, chunk: int
) -> None:
    assume(not any(starts_claude(line) for line in noise))
    probe = f"probe-{uuid.uuid4()}"
    head = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": V2_INIT}).encode()]
    tail = json.dumps({"jsonrpc": "2.0", "id": probe, "method": "initialize", "params": V2_INIT}).encode()
    data = b"\n".join([*(head if initialized else []), *noise, b"", tail]) + b"\n"
    written = anyio.run(serve, data, chunk)
    for message in written:
        check_message(message)
    (answer,) = [m for m in written if m.get("id") == probe]
    assert answer["result"]["protocolVersion"] == 2
