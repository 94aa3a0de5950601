"""Subagent sessions through the core: nesting and the never-guess rule.

Hand-built frames (``tests/support/task_events``, in the recorded shapes) stand in for the real
CLI: the scripted model has no scenario of a subagent that launches a subagent."""

from __future__ import annotations

from typing import Any

from claude_bg_acp.bridge.effects import Effect, Notify
from claude_bg_acp.bridge.session import SessionCore
from tests.support.replay import as_jsonrpc
from tests.support.schema import validate_transcript
from tests.support.task_events import Frame, assistant_tool_use, level, parse, task_started


def feed(core: SessionCore, *frames: Frame) -> list[Effect]:
    effects: list[Effect] = []
    for frame in frames:
        effects += core.sdk_message(parse(frame), 0.0)
    return effects


def notes(effects: list[Effect]) -> list[tuple[str, dict[str, Any]]]:
    return [(e.session_id, e.update.wire()) for e in effects if isinstance(e, Notify)]


def launch(tool_use_id: str, description: str, parent: str | None = None) -> Frame:
    frame = assistant_tool_use(
        tool_use_id,
        "Agent",
        {"description": description, "prompt": f"do {description}", "subagent_type": "general-purpose"},
    )
    frame["parent_tool_use_id"] = parent
    return frame


def started(task_id: str, tool_use_id: str, description: str) -> Frame:
    return task_started(
        task_id,
        "run01",
        description,
        "local_agent",
        tool_use_id,
        True,
        "general-purpose",
        f"do {description}",
    )


def entry(task_id: str, description: str) -> dict[str, Any]:
    return {"task_id": task_id, "run_id": "run01", "task_type": "local_agent", "description": description}


def test_a_nested_child_is_announced_under_its_own_parent() -> None:
    core = SessionCore("root", 2)
    effects = feed(
        core,
        launch("toolu_outer", "outer"),
        level([entry("agent01", "outer")]),
        started("agent01", "toolu_outer", "outer"),
        launch("toolu_inner", "inner", parent="toolu_outer"),
        level([entry("agent01", "outer"), entry("agent02", "inner")]),
        started("agent02", "toolu_inner", "inner"),
    )
    announced = {
        u["sessionId"]: session for session, u in notes(effects) if u["sessionUpdate"] == "subagent_update"
    }
    assert announced == {"agent01": "root", "agent02": "agent01"}
    # The inner Agent tool call belongs to the outer child's transcript, not to the root.
    inner_call = [session for session, u in notes(effects) if u.get("toolCallId") == "toolu_inner"]
    assert inner_call and set(inner_call) == {"agent01"}
    agent_lines, client_lines = as_jsonrpc(effects)
    assert not validate_transcript(agent_lines, client_lines, 2)


def test_a_child_whose_parent_is_unknown_is_never_put_under_the_root() -> None:
    core = SessionCore("root", 2)
    effects = feed(
        core,
        level([entry("agent09", "orphan")]),
        started("agent09", "toolu_never_seen", "orphan"),
    )
    assert not [u for _, u in notes(effects) if u["sessionUpdate"] == "subagent_update"]
    # After the grace it is still not a child of the root: it is shown as a tool call of ours.
    later = notes(core.tick(1.0))
    assert not [u for _, u in later if u["sessionUpdate"] == "subagent_update"]
    assert {"type": "tool_call", "toolCallId": "task-agent09"} in later[-1][1]["background"]
