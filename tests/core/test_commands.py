"""Slash commands through the core: what the client is offered (Claude Code's recorded list,
CLI 2.1.332), when it is told again, and that a ``/name args`` prompt reaches Claude Code as
typed while its local answer shows as the agent's message. Every update validates against
the official schema of its version."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Notify, Query
from tests.support.driver import CoreDriver, as_jsonrpc, recorded_server_info
from tests.support.frames import assistant, commands_changed, init, result, state_changed
from tests.support.schema import validate_transcript

INFO = recorded_server_info()


def told(effects: list[Effect], version: int) -> list[list[dict[str, Any]]]:
    """The command lists of the ``available_commands_update``s (validated)."""
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    return [
        e.update.wire()["availableCommands"]
        for e in effects
        if isinstance(e, Notify) and e.update.wire()["sessionUpdate"] == "available_commands_update"
    ]


def started(version: int) -> CoreDriver:
    driver = CoreDriver(version)
    driver.start(INFO, "claude-opus-5-5", "medium")
    return driver


@pytest.mark.parametrize("version", [1, 2])
def test_the_client_is_offered_claude_codes_commands_once_it_has_the_answer(version: int) -> None:
    driver = started(version)
    _, opened = driver.open()
    [commands] = told(opened, version)
    by_name = {command["name"]: command for command in commands}
    compact = next(c for c in INFO["commands"] if c["name"] == "compact")
    assert by_name["compact"]["description"] == compact["description"]
    hint = by_name["compact"]["input"]["hint"]
    assert hint == compact["argumentHint"]
    assert "input" not in by_name["context"], "a command without arguments takes no input"
    if version == 2:
        assert by_name["compact"]["type"] == "command" and by_name["compact"]["input"]["type"] == "text"
    assert "clear" not in by_name, "it would carry on under another Claude Code session"
    internal = {c["name"] for c in INFO["commands"] if c["name"].startswith("_")}
    assert internal and not internal & set(by_name)
    own = {"tasks", "stop"}  # the agent's own (tests/core/test_task_list.py)
    assert set(by_name) == ({c["name"] for c in INFO["commands"]} - {"clear"} - internal) | own


def test_commands_that_change_are_told_again_and_the_same_list_is_not() -> None:
    driver = started(1)
    driver.open()
    added = [
        *INFO["commands"],
        {"name": "hello", "description": "Say hello (project)", "argumentHint": "<name>"},
    ]
    [commands] = told(driver.frame(commands_changed(added)), 1)
    assert {"name": "hello", "description": "Say hello (project)", "input": {"hint": "<name>"}} in commands
    assert told(driver.frame(commands_changed(added)), 1) == []


def test_terminal_only_commands_leave_once_claude_code_names_them() -> None:
    driver = started(2)
    driver.open()
    [commands] = told(driver.frame(init(terminal=["doctor", "color"])), 2)
    names = {command["name"] for command in commands}
    assert "doctor" not in names and "color" not in names and "compact" in names
    assert told(driver.frame(init(terminal=["doctor", "color"])), 2) == []


def test_changes_before_the_answer_wait_for_it() -> None:
    driver = started(2)
    assert driver.frame(commands_changed(INFO["commands"][:3])) == []
    [commands] = told(driver.handle(ev.AnswerWritten()), 2)
    assert [c["name"] for c in commands] == ["tasks", "stop", *(c["name"] for c in INFO["commands"][:3])]


def test_a_client_told_of_the_session_again_gets_the_commands_again() -> None:
    driver = started(1)
    driver.open()
    assert len(told(driver.open()[1], 1)) == 1


def test_a_slash_prompt_reaches_claude_code_as_typed_and_its_answer_is_the_agents() -> None:
    driver = started(1)
    driver.open()
    _, prompted = driver.prompt("/model sonnet")
    [query] = [e for e in prompted if isinstance(e, Query)]
    assert query.content == [{"type": "text", "text": "/model sonnet"}]
    local = assistant([{"type": "text", "text": "Set model to `Sonnet 5.5` for this session only"}])
    local["message"]["model"] = "<synthetic>"
    answered = driver.frames(state_changed("running"), local, result(result_text="Set model to ..."))
    shown = [
        e.update.wire()
        for e in answered
        if isinstance(e, Notify) and e.update.wire()["sessionUpdate"].endswith("message_chunk")
    ]
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in shown] == [
        ("agent_message_chunk", "Set model to `Sonnet 5.5` for this session only")
    ]
