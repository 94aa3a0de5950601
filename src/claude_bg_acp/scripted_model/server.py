"""A scripted Anthropic Messages API on loopback, for driving the real Claude Code CLI offline.

Each connection is read as HTTP/1.1 (keep-alive, Content-Length or chunked bodies). A
``POST /v1/messages`` request is handed to the scenario named in the conversation (see
``scenarios.py``), whose reply is written as one complete SSE stream with a Content-Length:
the CLI parses it exactly as it would a streamed answer from the real API. A request that does
not ask for a stream (``"stream": true``) gets the whole message as JSON: the CLI validates a
model it is switched to with such a request (no ``stream`` key, ``max_tokens: 1``).
``POST /v1/messages/count_tokens`` gets a rough count; anything else a JSON 404.

The server runs on anyio, so it lives in any asyncio program (``serve``), in a background
thread for synchronous tests (``serve_in_thread``), or as its own process
(``python -m claude_bg_acp.scripted_model``). Every request served is kept in
``ScriptedModel.requests`` for tests to assert on (``models()``: the model each message request
asked for). Logs go to stderr only.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.from_thread import start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

from claude_bg_acp.scripted_model.scenarios import (
    DEFAULT_SCENARIO,
    Reply,
    choose_scenario,
    reply_for,
    reply_sse,
)

log = logging.getLogger("claude_bg_acp.scripted_model")

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
RELEASE_POLL = 0.02
"""How often a held answer looks for its release file (seconds)."""

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


@dataclass(frozen=True)
class ServedRequest:
    """One request as the server saw it; ``body`` is the parsed JSON (None if not JSON)."""

    method: str
    path: str
    query: str
    body: Any
    scenario: str | None = None

    @property
    def model(self) -> str | None:
        model = self.body.get("model") if isinstance(self.body, dict) else None
        return model if isinstance(model, str) else None


@dataclass
class ScriptedModel:
    """A running server: where it listens and what it has served so far."""

    host: str
    port: int
    default_scenario: str
    requests: list[ServedRequest] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def messages_requests(self) -> list[ServedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    def models(self) -> list[str | None]:
        """The model id of each message request, in order."""
        return [r.model for r in self.messages_requests()]


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


class BadRequest(Exception):
    pass


@dataclass(frozen=True)
class HttpResponse:
    status: int
    content_type: str
    body: bytes
    delay: float = 0.0
    extra_headers: tuple[tuple[str, str], ...] = ()
    release: str | None = None


@asynccontextmanager
async def serve(
    scenario: str = DEFAULT_SCENARIO, port: int = 0, host: str = "127.0.0.1"
) -> AsyncIterator[ScriptedModel]:
    """Serve until the block exits; ``scenario`` answers conversations without a marker."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError("the scripted model listens on loopback only")
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound_port = listener.extra(anyio.abc.SocketAttribute.local_port)
    model = ScriptedModel(host=host, port=bound_port, default_scenario=scenario)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, lambda stream: _serve_connection(model, stream))
        log.info("scripted model listening on %s (default scenario %s)", model.base_url, scenario)
        try:
            yield model
        finally:
            tg.cancel_scope.cancel()


@contextmanager
def serve_in_thread(
    scenario: str = DEFAULT_SCENARIO, port: int = 0, host: str = "127.0.0.1"
) -> Iterator[ScriptedModel]:
    """``serve`` on an event loop of its own in a background thread (for synchronous tests)."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve(scenario, port, host)) as model,
    ):
        yield model


async def _hold(response: HttpResponse) -> None:
    """Holds the answer back (a turn kept open long enough to interrupt it, or to send it
    something) for its delay, or until its release file exists if that comes first."""
    release = response.release
    with anyio.move_on_after(response.delay):
        if release is None:
            await anyio.sleep_forever()
        else:
            while not os.path.exists(release):
                await anyio.sleep(RELEASE_POLL)


async def _serve_connection(model: ScriptedModel, stream: anyio.abc.SocketStream) -> None:
    reader = BufferedByteReceiveStream(stream)
    async with stream:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                response = _respond(model, request)
                if response.delay > 0:
                    await _hold(response)
                await stream.send(_encode_response(response, request.keep_alive))
                if not request.keep_alive:
                    return
        except BadRequest as exc:
            error = _json_error(400, "invalid_request_error", str(exc))
            await stream.send(_encode_response(error, keep_alive=False))
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The CLI aborts requests when a turn is interrupted; that is not an error here.
            log.debug("connection closed by the client")
        except Exception:
            # One bad connection must not take the server (and every other session) down.
            log.exception("scripted model: connection failed")


async def _read_request(reader: BufferedByteReceiveStream) -> HttpRequest | None:
    try:
        head = await reader.receive_until(b"\r\n\r\n", MAX_HEADER_BYTES)
    except (anyio.IncompleteRead, anyio.EndOfStream):
        return None
    except anyio.DelimiterNotFound as exc:
        raise BadRequest("request head too large") from exc
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise BadRequest(f"malformed request line {lines[0]!r}")
    headers = _parse_headers(lines[1:])
    body = await _read_body(reader, headers)
    return HttpRequest(parts[0].upper(), parts[1], headers, _decode_body(body, headers))


def _parse_headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


async def _read_body(reader: BufferedByteReceiveStream, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return await _read_chunked(reader)
    try:
        length = int(headers.get("content-length", "0") or "0")
    except ValueError as exc:
        raise BadRequest("invalid Content-Length") from exc
    if length > MAX_BODY_BYTES:
        raise BadRequest("request body too large")
    return await reader.receive_exactly(length) if length else b""


async def _read_chunked(reader: BufferedByteReceiveStream) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = await reader.receive_until(b"\r\n", 1024)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            # Trailers (if any) end with an empty line.
            while await reader.receive_until(b"\r\n", MAX_HEADER_BYTES):
                pass
            return b"".join(chunks)
        chunks.append(await reader.receive_exactly(size))
        await reader.receive_exactly(2)


def _decode_body(body: bytes, headers: dict[str, str]) -> bytes:
    encoding = headers.get("content-encoding", "").lower()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def _respond(model: ScriptedModel, request: HttpRequest) -> HttpResponse:
    route = request.path.rstrip("/")
    if route not in ("/v1/messages", "/v1/messages/count_tokens"):
        model.requests.append(ServedRequest(request.method, request.path, request.query, None))
        return _json_error(404, "not_found_error", f"no route for {request.path}")
    body = _parse_json(request.body)
    if request.method != "POST" or not isinstance(body, dict):
        model.requests.append(ServedRequest(request.method, route, request.query, body))
        if request.method != "POST":
            return _json_error(405, "invalid_request_error", f"{request.method} not allowed")
        return _json_error(400, "invalid_request_error", "the body must be a JSON object")
    if route.endswith("/count_tokens"):
        model.requests.append(ServedRequest(request.method, route, request.query, body))
        return _json(200, {"input_tokens": _rough_token_count(body)})
    name = choose_scenario(body, model.default_scenario)
    model.requests.append(ServedRequest(request.method, route, request.query, body, name))
    reply = reply_for(name, body)
    log.info("scenario %s answers with %s", name, _describe(reply))
    return _messages_response(body, reply)


def _messages_response(body: dict[str, Any], reply: Reply) -> HttpResponse:
    model_name = str(body.get("model", "claude-scripted"))
    headers = (("request-id", reply.request_id),)
    if body.get("stream") is not True:
        body_bytes, content_type = _dumps(reply.message(model_name)), "application/json"
    else:
        body_bytes, content_type = reply_sse(reply, model_name).encode("utf-8"), "text/event-stream"
    return HttpResponse(200, content_type, body_bytes, reply.delay, headers, reply.release)


def _describe(reply: Reply) -> str:
    kinds = ", ".join(type(block).__name__ for block in reply.blocks)
    return f"[{kinds}] stop_reason={reply.stop_reason} delay={reply.delay}"


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _rough_token_count(body: dict[str, Any]) -> int:
    # About four characters a token is what tokenizers average on English text.
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _json(status: int, value: Any) -> HttpResponse:
    return HttpResponse(status, "application/json", _dumps(value))


def _json_error(status: int, kind: str, message: str) -> HttpResponse:
    return _json(status, {"type": "error", "error": {"type": kind, "message": message}})


def _encode_response(response: HttpResponse, keep_alive: bool) -> bytes:
    headers = [
        f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Error')}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Cache-Control: no-cache",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
        *(f"{name}: {value}" for name, value in response.extra_headers),
    ]
    return ("\r\n".join(headers) + "\r\n\r\n").encode("latin-1") + response.body
