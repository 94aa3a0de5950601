"""What a client declared at ``initialize``, read once (``acp.capabilities``): each version's form
of terminal auth, the extensions clients declare in ``_meta``, a value of another shape read as
not declared (never refused: the installed agent answers such an ``initialize``), and the fields
this agent does not read kept. AIR's declaration has its own cases in ``test_air``."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.capabilities import ClientCapabilities
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent


@pytest.mark.parametrize(
    ("version", "sent", "runs"),
    [
        (1, {"auth": {"terminal": True}}, True),
        (1, {"_meta": {"terminal-auth": True}}, True),
        (1, {"auth": {"terminal": {}}}, False),
        (1, {"auth": {"terminal": 1}}, False),
        (1, {"_meta": {"terminal-auth": "yes"}}, False),
        (2, {"auth": {"terminal": {}}}, True),
        (2, {"auth": {"terminal": True}}, False),
        (2, {"_meta": {"terminal-auth": True}}, False),
        (2, {"auth": "x"}, False),
        (1, {}, False),
    ],
)
def test_terminal_auth_is_read_in_its_versions_form(version: int, sent: dict[str, Any], runs: bool) -> None:
    assert ClientCapabilities.declared(version, sent).terminal_auth is runs


def test_a_value_of_another_shape_is_not_declared_and_what_was_sent_is_kept() -> None:
    sent = {
        "_meta": {"terminal_output": "yes", "terminal_output_delta": True, "vendor": {"x": 1}},
        "fs": {"readTextFile": True},
        "subagents": {},
    }
    declared = ClientCapabilities.declared(1, sent)
    assert not declared.terminal_output and declared.terminal_output_delta
    assert declared.child_sessions and declared.air is None
    assert declared.sent == sent
    for meta in ("x", None, [1]):
        assert not ClientCapabilities.declared(1, {"_meta": meta}).terminal_output
    assert not ClientCapabilities.declared(1, None).child_sessions


def test_an_initialize_with_extensions_of_other_shapes_is_answered(offline: dict[str, str]) -> None:
    agent = StdioAgent(env=offline)
    sent: dict[str, Any] = {"_meta": {"jetbrains": "air", "terminal-auth": 1}, "auth": [], "subagents": None}
    answer = agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": sent})
    assert answer["result"]["authMethods"] == [] and "_meta" not in answer["result"]
    assert agent.close() == 0, agent.stderr
    assert not validate_transcript(agent.lines, agent.sent, 1)
