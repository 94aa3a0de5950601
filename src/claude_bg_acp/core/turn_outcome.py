"""How a turn ended, as its result message says: the ACP stop reason (``cancelled`` for a turn
that was, whatever the result says; ``max_tokens`` for an output cut short; ``error`` with the
failure Claude Code reported, or how to log in when it is not), and the turn's usage in ACP's
terms.
"""

from __future__ import annotations

from typing import Any

from claude_bg_acp.claude.conventions import NOT_LOGGED_IN
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.foreground_facts import Outcome

LOGIN_HINT = (
    "Claude Code is not logged in: run `claude /login` (or `claude-bg-acp login`) in a terminal, "
    "or give the agent an ANTHROPIC_API_KEY"
)

RESULT_STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


def outcome_of(
    cancelled: bool,
    subtype: str,
    stop_reason: str | None,
    usage: dict[str, Any] | None,
    is_error: bool,
    errors: list[str],
    api_error: str | None,
) -> Outcome:
    """How a result message says the turn ended (``cancelled``: the turn was)."""
    acp_usage = _usage(usage)
    if cancelled:
        return Outcome("cancelled", acp_usage)
    if api_error == "max_output_tokens":
        return Outcome("max_tokens", acp_usage)
    if subtype == "error_max_turns":
        return Outcome("max_turn_requests", acp_usage)
    if subtype == "success" and not is_error:
        return Outcome(RESULT_STOP_REASONS.get(stop_reason or "end_turn", "end_turn"), acp_usage)
    message = "; ".join(errors) or f"Claude Code ended the turn: {subtype}"
    if api_error == NOT_LOGGED_IN:
        return Outcome("error", acp_usage, Failure(Failing.LOGIN_REQUIRED, f"{LOGIN_HINT} ({message})"))
    return Outcome("error", acp_usage, Failure(Failing.ERROR, message))


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    inputs = int(usage.get("input_tokens") or 0)
    outputs = int(usage.get("output_tokens") or 0)
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_write = int(usage.get("cache_creation_input_tokens") or 0)
    return {
        "totalTokens": inputs + outputs + cache_read + cache_write,
        "inputTokens": inputs,
        "outputTokens": outputs,
        "cachedReadTokens": cache_read,
        "cachedWriteTokens": cache_write,
    }
