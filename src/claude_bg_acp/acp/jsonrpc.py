"""JSON-RPC 2.0 messages, without I/O.

``classify`` turns one decoded line into a ``Request``, ``Notification`` or ``Response``, or
raises ``RpcError`` with the code the spec asks for; the endpoint answers that error with the
request's id when it could be read, else ``null``. An id is a string or an integer; a number
without a fraction (``1.0``, ``1e3``) is the integer it equals (``scan.request_id_of``). A
line may start with a UTF-8 byte-order mark, which is ignored. Handlers raise ``RpcError`` to answer with
an error; any other exception becomes -32603 without its traceback.

A call nested deeper than ``MAX_DEPTH`` is refused (-32600): every layer of the agent (the
request models, the SDK, the JSON encoder that echoes a prompt back) has a recursion limit of
its own, and a message that passes one may break the next; nothing a client means to send
comes near this depth. The rule holds however deep the line: one that the decoder cannot take
for its own limits (a thousand levels, an integer of thousands of digits) but that is JSON
(``scan``) is refused the same way, -32600 with the id of its top-level object; only a line
that is not JSON is a parse error (-32700, id ``null``: its id could only be guessed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.scan import request_id_of, scan

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
UNSUPPORTED_PROTOCOL_VERSION = -32022

MAX_DEPTH = 100
"""Arrays and objects a call may nest, one inside the other (see the module docstring)."""

RequestId = int | str


class RpcError(Exception):
    """An error answer: ``code``, a human ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    id: RequestId | None
    result: Any = None
    error: dict[str, Any] | None = None


Message = Request | Notification | Response


class MalformedMessage(RpcError):
    """Raised by ``classify``; ``request_id`` is the id to answer with (None if unreadable)."""

    def __init__(self, code: int, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id


def decode(line: bytes) -> Any:
    try:
        # A byte-order mark some writers put first is no part of the message.
        text = line.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise MalformedMessage(PARSE_ERROR, f"Parse error: invalid UTF-8 ({exc.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedMessage(PARSE_ERROR, f"Parse error: {exc}") from None
    except (ValueError, RecursionError) as exc:
        # The decoder's own limits; its depth limit is far beyond MAX_DEPTH.
        limit = f"nested deeper than {MAX_DEPTH} levels" if isinstance(exc, RecursionError) else str(exc)
        scanned = scan(text)
        if not scanned.json:
            raise MalformedMessage(PARSE_ERROR, "Parse error: not valid JSON") from None
        raise MalformedMessage(INVALID_REQUEST, f"Invalid Request: {limit}", scanned.request_id) from None


def classify(payload: Any) -> Message:
    if not isinstance(payload, dict):
        raise MalformedMessage(INVALID_REQUEST, "Invalid Request: expected a JSON object")
    request_id = request_id_of(payload.get("id"))
    if payload.get("jsonrpc") != "2.0":
        raise MalformedMessage(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id)
    if "method" in payload:
        if _deeper_than(payload, MAX_DEPTH):
            raise MalformedMessage(
                INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels", request_id
            )
        return _classify_call(payload, request_id)
    if "result" in payload or "error" in payload:
        # A response with a null id is the peer's complaint about an unreadable line of ours;
        # answering it would only start a ping-pong of errors, so it is passed on and logged.
        error = payload.get("error")
        return Response(request_id, payload.get("result"), error if isinstance(error, dict) else None)
    raise MalformedMessage(INVALID_REQUEST, "Invalid Request: neither a call nor a response", request_id)


def _classify_call(payload: dict[str, Any], request_id: RequestId | None) -> Message:
    method = payload["method"]
    if not isinstance(method, str):
        raise MalformedMessage(INVALID_REQUEST, 'Invalid Request: "method" must be a string', request_id)
    params = payload.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise MalformedMessage(
            INVALID_REQUEST, 'Invalid Request: "params" must be an object or array', request_id
        )
    if "id" not in payload:
        return Notification(method, params)
    if request_id is None:
        raise MalformedMessage(INVALID_REQUEST, 'Invalid Request: "id" must be a string or integer')
    return Request(request_id, method, params)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def encode(message: dict[str, Any]) -> bytes:
    # ensure_ascii keeps every line 7-bit clean, whatever a model or file put into strings.
    return json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def request_frame(request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification_frame(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result_frame(request_id: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_frame(request_id: RequestId | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}
