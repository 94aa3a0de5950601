"""The core's refusals and failures as JSON-RPC errors: the one place that gives them codes.

A refusal is invalid params (-32602), its message ``Invalid params: `` and the core's reason,
naming the refused field when there is one. A failure is ACP's ``auth_required`` (-32000) when
Claude Code is not logged in, a cancelled request (-32800) when it was withdrawn before it was
carried out, and an internal error (-32603) otherwise, its message the core's.
"""

from __future__ import annotations

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_CANCELLED, RpcError
from claude_bg_acp.core.errors import Failing, Failure, Refused

AUTH_REQUIRED = -32000
"""ACP's code for a request that needs the user to authenticate first."""
CODES = {
    Failing.LOGIN_REQUIRED: AUTH_REQUIRED,
    Failing.ERROR: INTERNAL_ERROR,
    Failing.WITHDRAWN: REQUEST_CANCELLED,
}


def refused(refusal: Refused) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid params: {refusal}")


def failed(failure: Failure) -> RpcError:
    return RpcError(CODES[failure.kind], failure.message)
