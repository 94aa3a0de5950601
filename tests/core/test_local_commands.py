"""Commands that Claude Code runs without the model show what they did: a compaction is a tool
call while it runs, ending with the tokens before and after (the frames are the ones CLI 2.1.332
sends for ``/compact``, seen live); ``/mcp`` is done through the SDK's control requests, and
their answer, each server with its state, replaces Claude Code's. Every update validates
against the official schema (``test_live_commands`` has the real CLI do both)."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.claude.server_info import McpServerState
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import ControlMcp, Effect, Query
from claude_bg_acp.core.mcp_command import answer, command_of
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import assistant, compact_boundary, compacting, result, state_changed
from tests.support.schema import validate_transcript


def calls(driver: CoreDriver, effects: list[Effect], version: int) -> list[dict[str, Any]]:
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    return [u for u in driver.updates_of(effects) if u["sessionUpdate"].startswith("tool_call")]


def texts(update: dict[str, Any]) -> list[str]:
    return [c["content"]["text"] for c in update.get("content") or [] if c["type"] == "content"]


@pytest.mark.parametrize("version", [1, 2])
def test_a_compaction_is_a_tool_call_ending_with_the_tokens_before_and_after(version: int) -> None:
    driver = CoreDriver(version)
    driver.prompt("/compact")
    started = driver.frames(state_changed("running"), compacting())
    (opened,) = calls(driver, started, version)
    assert opened["title"] == "Compact conversation" and opened["status"] == "in_progress"
    ended = driver.frames(compacting("success"), compact_boundary(12_345, 2_571), result(result_text=""))
    (done,) = calls(driver, ended, version)
    assert done["toolCallId"] == opened["toolCallId"] and done["status"] == "completed"
    assert texts(done) == ["Compacted the conversation: 12,345 tokens before, 2,571 after."]


def test_an_automatic_compaction_says_so_and_shows_once() -> None:
    driver = CoreDriver(2)
    driver.prompt("Go on")
    automatic = compacting()
    automatic["compact_output_chars"] = 120
    growing = dict(automatic, compact_output_chars=480, uuid="later")
    effects = driver.frames(state_changed("running"), automatic, growing, compact_boundary(900, 100))
    opened, done = calls(driver, effects, 2)
    assert opened["title"] == "Compact conversation (automatic)" and done["status"] == "completed"


def test_a_failed_compaction_fails_its_tool_call_with_the_reason() -> None:
    driver = CoreDriver(2)
    driver.prompt("/compact")
    driver.frames(state_changed("running"), compacting())
    failed = driver.frames(compacting("failed", "Not enough messages to compact."))
    (update,) = calls(driver, failed, 2)
    assert update["status"] == "failed"
    assert texts(update) == ["Compaction failed: Not enough messages to compact."]


def test_a_compaction_claude_code_did_not_announce_shows_at_its_boundary() -> None:
    driver = CoreDriver(2)
    driver.prompt("Go on")
    effects = driver.frames(state_changed("running"), compact_boundary(900, 100))
    opened, done = calls(driver, effects, 2)
    assert opened["status"] == "in_progress" and done["status"] == "completed"
    assert texts(done) == ["Compacted the conversation: 900 tokens before, 100 after."]


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/mcp", ControlMcp("status", None)),
        ("  /mcp  ", ControlMcp("status", None)),
        ("/mcp reconnect probe", ControlMcp("reconnect", "probe")),
        ("/mcp disable my server", ControlMcp("disable", "my server")),
        ("/mcp enable", ControlMcp("enable", None)),
        ("/mcp add x", None),
        ("/mcpx", None),
        ("Use /mcp", None),
    ],
)
def test_the_mcp_commands_the_agent_does(text: str, command: ControlMcp | None) -> None:
    assert command_of([{"type": "text", "text": text}]) == command


def test_an_mcp_command_is_done_before_claude_code_has_it_and_its_answer_replaces_claude_codes() -> None:
    driver = CoreDriver(1)
    _, prompted = driver.prompt("/mcp reconnect probe")
    commands = [e for e in prompted if isinstance(e, ControlMcp | Query)]
    assert commands[0] == ControlMcp("reconnect", "probe") and isinstance(commands[1], Query)
    servers = (McpServerState("probe", "connected", 1), McpServerState("broken", "failed", 0, "spawn ENOENT"))
    answered = driver.handle(ev.McpAnswered(ControlMcp("reconnect", "probe"), servers, None))
    claude_codes = assistant([{"type": "text", "text": "Reconnect, enable, and disable aren't available"}])
    claude_codes["message"]["model"] = "<synthetic>"
    ended = driver.frames(state_changed("running"), claude_codes, result(result_text="Reconnect, ..."))
    agent, client = as_jsonrpc(answered + ended)
    assert not validate_transcript(agent, client, 1)
    shown = [u["content"]["text"] for u in driver.updates_of(answered + ended, "agent_message_chunk")]
    assert shown == [
        "Reconnected probe.\n\nMCP servers (2):\n- probe: connected, 1 tool\n- broken: failed (spawn ENOENT)"
    ]
    driver.prompt("Hello")
    later = driver.frames(state_changed("running"), claude_codes, result(result_text="..."))
    assert driver.updates_of(later, "agent_message_chunk"), "only the command's turn is answered by the agent"


@pytest.mark.parametrize(
    ("command", "servers", "failure", "text"),
    [
        (ControlMcp("status", None), (), None, "No MCP servers."),
        (ControlMcp("status", None), None, None, "The MCP servers' state could not be read."),
        (ControlMcp("enable", None), (), None, "Name the server: `/mcp enable <server>`.\n\nNo MCP servers."),
        (
            ControlMcp("disable", "x"),
            (McpServerState("probe", "disabled", 0),),
            "Server not found: x",
            "Could not disable x: Server not found: x\n\nMCP servers (1):\n- probe: disabled",
        ),
    ],
)
def test_an_mcp_answer_says_what_was_done_and_each_servers_state(
    command: ControlMcp, servers: tuple[McpServerState, ...] | None, failure: str | None, text: str
) -> None:
    assert answer(command, servers, failure) == text
