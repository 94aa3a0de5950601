"""The stdio endpoint in process: what a handler asks to run after its answer runs once the
answer is written, and not after an error answer."""

from __future__ import annotations

import json
from typing import Any

import anyio

from claude_bg_acp.acp.jsonrpc import INVALID_PARAMS, RpcError
from claude_bg_acp.acp.stdio import Endpoint


class Lines:
    """A source of request lines, then end of input."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self._data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)

    async def read(self, n: int) -> bytes:
        data, self._data = self._data[:n], self._data[n:]
        return data


class Written:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.lines += [json.loads(line) for line in data.splitlines()]

    async def drain(self) -> None:
        return None


def test_what_follows_an_answer_runs_after_it_is_written_and_never_after_an_error() -> None:
    sink = Written()
    requests = [{"jsonrpc": "2.0", "id": n, "method": method} for n, method in ((1, "good"), (2, "bad"))]

    async def main() -> None:
        # The endpoint belongs to the event loop it serves in (it holds a cancel scope).
        endpoint = Endpoint(Lines(*requests), sink)

        async def on_request(method: str, params: Any, request_id: Any) -> Any:
            endpoint.after_reply(request_id, lambda: sink.lines.append({"after": request_id}))
            if method == "bad":
                raise RpcError(INVALID_PARAMS, "Invalid params")
            return {"ok": True}

        async def on_notification(method: str, params: Any) -> None:
            return None

        async with anyio.create_task_group() as tg:
            await endpoint.serve(tg, on_request, on_notification)

    anyio.run(main)
    answered = [line for line in sink.lines if line.get("id") == 1]
    assert sink.lines.index(answered[0]) < sink.lines.index({"after": 1})
    assert {"after": 2} not in sink.lines
    assert any(line.get("id") == 2 and "error" in line for line in sink.lines)
