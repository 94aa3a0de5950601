"""Refusals and failures as JSON-RPC errors: the one place that gives them codes.

Handlers raise in their own terms and ``rpc_error`` turns each into the error the client is
sent. The core refuses with ``Refused`` and fails with a ``Failure``; the agent turns a request
down before any session's core sees it with ``Rejected`` (a request before ``initialize``, a
method the client does not have, a session it does not know, ...). The codes:

- a refusal is invalid params (-32602), its message ``Invalid params: `` and the reason, naming
  the refused field when there is one (the agent's own checks of params refuse so too);
- a failure is ACP's ``auth_required`` (-32000) when Claude Code is not logged in, a cancelled
  request (-32800) when it was withdrawn before it was carried out, and an internal error
  (-32603) otherwise, its message the core's;
- a rejection's code is its kind's (``REJECTIONS``), its message and data as the agent gives
  them (an unknown session is ACP's resource-not-found, -32002, naming it in ``data``).

The edges' own errors are made here too, each by a function named for what happened: a client
gone (``disconnected``) or answering our request with an error (``client_error``), a line too
long to read (``oversized``), a handler that raised something else (``internal_error``), a
session whose task raised (``session_failed``). No other module builds an ``RpcError``
(``tests/core/test_architecture.py``); ``jsonrpc`` alone raises its ``MalformedMessage``.
"""

from __future__ import annotations

import enum
from typing import Any

from claude_bg_acp.acp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    UNSUPPORTED_PROTOCOL_VERSION,
    RpcError,
)
from claude_bg_acp.core.errors import Failing, Failure, Refused

AUTH_REQUIRED = -32000
"""ACP's code for a request that needs the user to authenticate first."""
RESOURCE_NOT_FOUND = -32002
"""ACP's code for a request that names a session the agent does not have."""


class Rejection(enum.Enum):
    """Why the agent turns a request down before any session's core sees it."""

    NOT_INITIALIZED = "not initialized"
    """A request other than ``initialize`` came first."""
    NO_METHOD = "no method"
    """The client has no method of that name (its version or its declarations lack it)."""
    UNSUPPORTED_VERSION = "unsupported version"
    """The client speaks no protocol version this agent does."""
    NOT_FOUND = "not found"
    """The request names a session (or a stored conversation) the agent does not have."""
    NOT_HERE = "not here"
    """The request cannot be made of what it names (a subagent session prompted, loaded, deleted)."""
    WITHDRAWN = "withdrawn"
    """The request was cancelled before it was carried out."""
    BROKEN = "broken"
    """What the request needs is there but unusable (a transcript, Claude Code's logout)."""


REJECTIONS = {
    Rejection.NOT_INITIALIZED: INVALID_REQUEST,
    Rejection.NO_METHOD: METHOD_NOT_FOUND,
    Rejection.UNSUPPORTED_VERSION: UNSUPPORTED_PROTOCOL_VERSION,
    Rejection.NOT_FOUND: RESOURCE_NOT_FOUND,
    Rejection.NOT_HERE: INVALID_REQUEST,
    Rejection.WITHDRAWN: REQUEST_CANCELLED,
    Rejection.BROKEN: INTERNAL_ERROR,
}
FAILURES = {
    Failing.LOGIN_REQUIRED: AUTH_REQUIRED,
    Failing.ERROR: INTERNAL_ERROR,
    Failing.WITHDRAWN: REQUEST_CANCELLED,
}


class Rejected(Exception):
    """A request the agent turns down (see the module docstring): the kind, the message as the
    client is shown it, and the error's ``data`` if it has any."""

    def __init__(self, kind: Rejection, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.data = data


def unknown_session(session_id: str, message: str | None = None) -> Rejected:
    """A session the agent does not have (ACP names it in ``data``)."""
    return Rejected(
        Rejection.NOT_FOUND, message or f"Unknown session {session_id}", {"sessionId": session_id}
    )


def rpc_error(error: Refused | Rejected | Failure) -> RpcError:
    """The JSON-RPC error the client is sent for ``error``."""
    if isinstance(error, Refused):
        return RpcError(INVALID_PARAMS, f"Invalid params: {error}")
    if isinstance(error, Rejected):
        return RpcError(REJECTIONS[error.kind], error.message, error.data)
    return RpcError(FAILURES[error.kind], error.message)


def disconnected() -> RpcError:
    """Our request to a client that is gone (or went while we waited for its answer)."""
    return rpc_error(Failure(Failing.ERROR, "the client has disconnected"))


def client_error(error: dict[str, Any]) -> RpcError:
    """The error a client answered our request with, as it gave it."""
    return RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message")))


def oversized(limit: int) -> RpcError:
    """A line longer than the endpoint reads (answered with the id ``null``: it was not read)."""
    return RpcError(INVALID_REQUEST, f"Message larger than {limit} bytes")


def internal_error() -> RpcError:
    """A handler raised something other than a refusal: the client gets no traceback."""
    return rpc_error(Failure(Failing.ERROR, "Internal error"))


def session_failed(session_id: str, message: str) -> RpcError:
    """A session one of whose tasks raised: a failure that names the session in ``data``."""
    return RpcError(FAILURES[Failing.ERROR], message, {"sessionId": session_id})


def failed_fork(error: RpcError, session_id: str, fork_id: str) -> RpcError:
    """Why a fork failed, told of the session forked: the copy it names is gone."""
    message = error.message.replace(f"session {fork_id}", f"the fork of session {session_id}")
    message = message.replace(fork_id, f"the fork of {session_id}")
    data = {**error.data, "sessionId": session_id} if isinstance(error.data, dict) else error.data
    return RpcError(error.code, message, data)
