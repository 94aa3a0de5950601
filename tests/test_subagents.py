"""Subagent sessions through the core: nesting and the never-guess rule.

Hand-built frames (``tests.support.frames``, in the recorded shapes) stand in for the real CLI,
through ``CoreDriver``: the scripted model has no scenario of a subagent that launches a
subagent."""

from __future__ import annotations

from typing import Any

from claude_bg_acp.core.effects import Effect, Notify
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import agent_launch, level_entry, task_started, tasks_changed
from tests.support.schema import validate_transcript

ROOT = "root"


def notes(effects: list[Effect]) -> list[tuple[str, dict[str, Any]]]:
    return [(e.session_id, e.update.wire()) for e in effects if isinstance(e, Notify)]


def test_a_nested_child_is_announced_under_its_own_parent() -> None:
    d = CoreDriver(2, session_id=ROOT)
    outer = level_entry("agent01", "run01", "local_agent", "outer")
    inner = level_entry("agent02", "run01", "local_agent", "inner")
    effects = d.frames(
        agent_launch("toolu_outer", "outer", "do outer", background=False),
        tasks_changed([outer]),
        task_started(
            "agent01", "run01", "outer", "local_agent", "toolu_outer", True, "general-purpose", "do outer"
        ),
        # The outer subagent launches one of its own.
        agent_launch("toolu_inner", "inner", "do inner", background=False, parent="toolu_outer"),
        tasks_changed([outer, inner]),
        task_started(
            "agent02", "run01", "inner", "local_agent", "toolu_inner", True, "general-purpose", "do inner"
        ),
    )
    announced = {
        u["sessionId"]: session for session, u in notes(effects) if u["sessionUpdate"] == "subagent_update"
    }
    assert announced == {"agent01": ROOT, "agent02": "agent01"}
    # The inner Agent tool call belongs to the outer child's transcript, not to the root.
    inner_call = [session for session, u in notes(effects) if u.get("toolCallId") == "toolu_inner"]
    assert inner_call and set(inner_call) == {"agent01"}
    agent_lines, client_lines = as_jsonrpc(effects)
    assert not validate_transcript(agent_lines, client_lines, 2)


def test_a_child_whose_parent_is_unknown_is_never_put_under_the_root() -> None:
    d = CoreDriver(2, session_id=ROOT)
    effects = d.frames(
        tasks_changed([level_entry("agent09", "run01", "local_agent", "orphan")]),
        task_started(
            "agent09",
            "run01",
            "orphan",
            "local_agent",
            "toolu_never_seen",
            True,
            "general-purpose",
            "do orphan",
        ),
    )
    assert not [u for _, u in notes(effects) if u["sessionUpdate"] == "subagent_update"]
    # After the grace it is still not a child of the root: it is shown as a tool call of ours.
    later = notes(d.tick(1.0))
    assert not [u for _, u in later if u["sessionUpdate"] == "subagent_update"]
    assert {"type": "tool_call", "toolCallId": "task-agent09"} in later[-1][1]["background"]
