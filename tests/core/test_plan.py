"""The plan through the core: Claude Code's todo list (``TodoWrite``) and its task list
(``TaskCreate``/``TaskUpdate``/``TaskList``) become ``plan`` (v1) or ``plan_update`` (v2) with
every entry's status, never tool calls, live and in a replayed conversation. The tool results
are in the shapes CLI 2.1.332 gave the scripted model's ``todo`` and ``tasks`` scenarios
(``tool_use_result`` included; a stored conversation keeps only their text)."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk._internal.message_parser import parse_message

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import agent_input, state_changed, tool_result, tool_use
from tests.support.schema import validate_transcript

TODOS = [
    {"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
    {"content": "Write the tests", "status": "in_progress", "activeForm": "Writing the tests"},
    {"content": "Ship it", "status": "pending", "activeForm": "Shipping it"},
]
DONE = "Todos have been modified successfully."


def wire(driver: CoreDriver, effects: list[Effect], version: int) -> list[dict[str, Any]]:
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    return driver.updates_of(effects)


def entries(update: dict[str, Any]) -> list[tuple[str, str]]:
    listed = update["entries"] if update["sessionUpdate"] == "plan" else update["plan"]["entries"]
    assert {entry["priority"] for entry in listed} <= {"medium"}
    return [(entry["content"], entry["status"]) for entry in listed]


def running(version: int) -> CoreDriver:
    driver = CoreDriver(version)
    driver.prompt("plan it")
    driver.frame(state_changed("running"))
    return driver


@pytest.mark.parametrize("version", [1, 2])
def test_a_todo_list_is_the_plan_not_a_tool_call(version: int) -> None:
    driver = running(version)
    assert driver.frame(tool_use("toolu_todo", "TodoWrite", {"todos": TODOS})) == []
    [plan] = wire(
        driver, driver.frame(tool_result("toolu_todo", DONE, {"oldTodos": [], "newTodos": TODOS})), version
    )
    assert plan["sessionUpdate"] == ("plan" if version == 1 else "plan_update")
    if version == 2:
        assert (plan["plan"]["type"], plan["plan"]["planId"]) == ("items", "plan")
    assert entries(plan) == [
        ("Write the parser", "completed"),
        ("Writing the tests", "in_progress"),
        ("Ship it", "pending"),
    ]


def test_a_failed_todo_write_changes_nothing() -> None:
    driver = running(1)
    driver.frame(tool_use("toolu_todo", "TodoWrite", {"todos": TODOS}))
    refused = "<tool_use_error>Error: No such tool available: TodoWrite.</tool_use_error>"
    assert driver.frame(tool_result("toolu_todo", refused, is_error=True)) == []


def test_the_same_list_again_is_not_sent_again() -> None:
    driver = running(2)
    for call in ("toolu_a", "toolu_b"):
        driver.frame(tool_use(call, "TodoWrite", {"todos": TODOS}))
    assert len(wire(driver, driver.frame(tool_result("toolu_a", DONE)), 2)) == 1
    assert wire(driver, driver.frame(tool_result("toolu_b", DONE)), 2) == []


def test_tasks_are_folded_into_the_plan_one_change_at_a_time() -> None:
    driver = running(1)

    def step(call: str, name: str, tool_input: dict[str, Any], text: str, structured: dict[str, Any]) -> Any:
        driver.frame(tool_use(call, name, tool_input))
        return wire(driver, driver.frame(tool_result(call, text, structured)), 1)

    first = {"subject": "Write the parser", "description": "p", "activeForm": "Writing the parser"}
    [plan] = step(
        "t1", "TaskCreate", first, "Task #1 created successfully: Write the parser", {"task": {"id": "1"}}
    )
    assert entries(plan) == [("Write the parser", "pending")]
    [plan] = step(
        "t2",
        "TaskCreate",
        {"subject": "Write the tests", "description": "t"},
        "Task #2 created",
        {"task": {"id": "2"}},
    )
    [plan] = step(
        "t3",
        "TaskUpdate",
        {"taskId": "1", "status": "in_progress"},
        "Updated task #1 status",
        {"success": True},
    )
    assert entries(plan) == [("Writing the parser", "in_progress"), ("Write the tests", "pending")]
    listed = {"tasks": [{"id": "2", "subject": "Write the tests", "status": "completed", "blockedBy": []}]}
    [plan] = step("t4", "TaskList", {}, "#2 [completed] Write the tests", listed)
    assert entries(plan) == [("Write the tests", "completed")]
    [plan] = step(
        "t5", "TaskUpdate", {"taskId": "2", "status": "deleted"}, "Updated task #2 deleted", {"success": True}
    )
    assert entries(plan) == []
    assert step("t6", "TaskGet", {"taskId": "2"}, "Task not found", {}) == []


def test_a_subagents_list_inside_its_parents_session_stays_a_tool_call() -> None:
    driver = running(1)
    driver.frame(tool_use("toolu_agent", "Agent", agent_input()))
    shown = wire(
        driver, driver.frame(tool_use("toolu_sub", "TodoWrite", {"todos": TODOS}, parent="toolu_agent")), 1
    )
    assert [u["sessionUpdate"] for u in shown] == ["tool_call"]
    assert not any(
        u["sessionUpdate"] == "plan" for u in wire(driver, driver.frame(tool_result("toolu_sub", DONE)), 1)
    )


def stored(*frames: dict[str, Any]) -> ev.StoredConversation:
    """A stored conversation: what Claude Code's transcript keeps has no structured results."""
    messages = []
    for frame in frames:
        message = parse_message(frame)
        assert message is not None, frame
        messages.append(ev.StoredMessage(frame["uuid"], message, frame["message"]["content"]))
    return ev.StoredConversation(messages, [], {})


@pytest.mark.parametrize("version", [1, 2])
def test_a_replayed_conversation_shows_its_plan_from_the_stored_texts(version: int) -> None:
    driver = CoreDriver(version)
    conversation = stored(
        tool_use("t1", "TaskCreate", {"subject": "Write the parser", "description": "p"}),
        tool_result("t1", "Task #1 created successfully: Write the parser"),
        tool_use("t2", "TaskCreate", {"subject": "Write the tests", "description": "t"}),
        tool_result("t2", "Task #2 created successfully: Write the tests"),
        tool_use("t3", "TaskList", {}),
        tool_result("t3", "#1 [completed] Write the parser\n#2 [in_progress] Write the tests"),
    )
    replayed = wire(driver, driver.recall(conversation), version)
    marked = ["replay_complete"] if version == 2 else []
    assert [u["sessionUpdate"] for u in replayed] == [
        ("plan" if version == 1 else "plan_update")
    ] * 3 + marked
    replayed = replayed[:3]
    assert entries(replayed[-1]) == [("Write the parser", "completed"), ("Write the tests", "in_progress")]
    driver.prompt("go on")
    driver.frames(
        state_changed("running"), tool_use("t4", "TaskUpdate", {"taskId": "2", "status": "completed"})
    )
    [plan] = wire(
        driver, driver.frame(tool_result("t4", "Updated task #2 status", {"success": True})), version
    )
    assert entries(plan) == [("Write the parser", "completed"), ("Write the tests", "completed")]
