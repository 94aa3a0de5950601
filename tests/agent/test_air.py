"""JetBrains AIR: who is AIR, the async tasks and the stop by task id through the core, the draft
subagent form, and the agent's side (its ``initialize`` answer, and who may send the stop).

Core tests use hand-built frames in the recorded shapes (``tests.support.frames``) through
``CoreDriver``; the recorded scenarios go through the replay goldens (client kind ``air``) and
the live tests (``test_live_air``).
"""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.capabilities import ClientCapabilities
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Reply, StopTask
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.presenters.air import AirPresenter
from claude_bg_acp.presenters.choice import presenter_for
from claude_bg_acp.presenters.v1 import V1Presenter
from claude_bg_acp.presenters.v2 import V2Presenter
from claude_bg_acp.presenters.zed import ZedPresenter
from tests.support import air
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import (
    TaskSpec,
    agent_launch,
    level_entry,
    result,
    shell_launch,
    shell_launched,
    task_notification,
    task_progress,
    task_started,
    task_updated,
    tasks_changed,
    tool_use,
)
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

BOTH = (air.ASYNC_TASKS, air.NATIVE_SUBAGENTS)


def declaration(value: Any) -> dict[str, Any]:
    return {"_meta": {"jetbrains": {"air": value}}}


@pytest.mark.parametrize(
    ("capabilities", "declared"),
    [
        (declaration({"version": 1, "capabilities": ["asyncTasks", 7]}), {"asyncTasks"}),
        (declaration({"version": 3, "capabilities": []}), set()),
        (declaration({"version": 0, "capabilities": ["asyncTasks"]}), None),
        (declaration({"version": "1", "capabilities": ["asyncTasks"]}), None),
        (declaration({"version": True, "capabilities": ["asyncTasks"]}), None),
        (declaration({"version": 1.5, "capabilities": ["asyncTasks"]}), None),
        (declaration({"version": 1, "capabilities": "asyncTasks"}), None),
        (declaration({"version": 1}), None),
        (declaration(["asyncTasks"]), None),
        ({"_meta": {"jetbrains": {}}}, None),
        ({}, None),
    ],
)
def test_air_declares_an_integer_version_and_a_list(capabilities: dict[str, Any], declared: Any) -> None:
    expected = None if declared is None else frozenset(declared)
    assert ClientCapabilities.declared(1, capabilities).air == expected
    assert ClientCapabilities.declared(2, capabilities).air is None, "AIR is a v1 client"


def chosen(version: int, capabilities: dict[str, Any]) -> Presenter:
    return presenter_for(ClientCapabilities.declared(version, capabilities))


def test_the_presenter_of_an_air_client_wraps_the_v1_client_it_also_is() -> None:
    assert type(chosen(1, air.air_capabilities("diffPatch"))) is V1Presenter
    assert type(chosen(2, air.air_capabilities(*BOTH))) is V2Presenter
    plain = chosen(1, air.air_capabilities(air.ASYNC_TASKS))
    assert isinstance(plain, AirPresenter) and type(plain.plain) is V1Presenter
    assert not plain.policy.subagents_are_sessions
    zed_capabilities = air.air_capabilities(*BOTH)
    zed_capabilities["_meta"]["terminal_output"] = True
    zed_like = chosen(1, zed_capabilities)
    assert isinstance(zed_like, AirPresenter) and type(zed_like.plain) is ZedPresenter
    assert zed_like.policy == Policy(answers_wait_for_subagents=True, subagents_are_sessions=True)


@pytest.mark.parametrize("native", [False, True])
def test_air_declaring_subagents_keeps_the_draft_or_nothing(native: bool) -> None:
    """The subagents PR: AIR keeps the earlier draft whichever signal it declares; the RFD form
    (``subagent_update``, ``session_message``) is for v1 clients that declare ``subagents`` and
    are not AIR. Without native subagent sessions AIR sees no child session at all."""
    declared = (air.ASYNC_TASKS, air.NATIVE_SUBAGENTS) if native else (air.ASYNC_TASKS,)
    d = CoreDriver(1, {"subagents": {}, **air.air_capabilities(*declared)}, session_id="root")
    d.prompt("go")
    agent = TaskSpec("agent", "agent01")
    d.frames(agent.launch(), agent.started(), tasks_changed([agent.level_entry()]), agent.hand_off())
    kinds = {u["sessionUpdate"] for _, u in d.notified(d.effects)}
    assert not kinds & {"subagent_update", "session_message"}
    assert ("subagent_spawned" in kinds) is native
    clean(d)


# --- async tasks ---------------------------------------------------------------------------------


def clean(d: CoreDriver) -> None:
    """Every message validates (AIR's own against its contract), and the rules hold."""
    agent_lines, client_lines = as_jsonrpc(d.effects, d.requests)
    assert not validate_transcript(agent_lines, client_lines, 1, air=True)
    check_updates(d.notified(d.effects), 1)


def air_driver(*capabilities: str) -> CoreDriver:
    d = CoreDriver(1, air.air_capabilities(*capabilities), session_id="root", tasks_root="/tmp/tasks")
    d.prompt("go")
    return d


def launch_shell(d: CoreDriver) -> list[Effect]:
    return d.frames(
        shell_launch("toolu_sh", "sleep 600", "sleepy"),
        tasks_changed([level_entry("bash01", "run01", "local_bash", "sleepy")]),
        task_started("bash01", "run01", "sleepy", "local_bash", "toolu_sh", True),
        shell_launched("toolu_sh", "bash01"),
    )


def answer(effects: list[Effect], ticket: int) -> Any:
    (reply,) = [e for e in effects if isinstance(e, Reply) and e.ticket == ticket]
    return reply.result


def test_a_shell_is_spawned_with_its_tool_call_then_its_output_file() -> None:
    d = air_driver(air.ASYNC_TASKS)
    effects = launch_shell(d)
    (spawned,) = d.updates_of(effects, "async_task_spawned")
    assert spawned == {
        "sessionUpdate": "async_task_spawned",
        "asyncTaskId": "bash01",
        "name": "sleepy",
        "taskType": "shell",
        "description": "sleepy",
        "showInTranscript": False,
        "canStop": True,
        "toolCallId": "toolu_sh",
    }
    # Claude Code names the output file in its tool result: that is when the client learns it.
    (progress,) = d.updates_of(effects, "async_task_progress")
    assert progress["outputFilePath"].endswith("/bash01.output") and set(progress) == {
        "sessionUpdate",
        "asyncTaskId",
        "outputFilePath",
    }
    call = [u for u in d.updates_of(effects) if u.get("toolCallId") == "toolu_sh"][-1]
    assert call["status"] == "completed"
    assert call["_meta"] == {"jetbrains": {"air": {"version": 1, "asyncTasks": {"backgrounded": True}}}}
    ended = d.frames(task_updated("bash01", "run01", "failed"))
    assert d.updates_of(ended, "async_task_state_update") == [
        {"sessionUpdate": "async_task_state_update", "asyncTaskId": "bash01", "state": "failed"}
    ]
    clean(d)


def test_the_stop_by_task_id_answers_whether_it_sent_a_stop() -> None:
    d = air_driver(*BOTH)
    launch_shell(d)
    d.frames(
        agent_launch("toolu_agent"),
        tasks_changed(
            [
                level_entry("bash01", "run01", "local_bash", "sleepy"),
                level_entry("agent01", "run01", "local_agent", "background helper"),
            ]
        ),
        task_started(
            "agent01", "run01", "background helper", "local_agent", "toolu_agent", True, "general-purpose"
        ),
    )
    assert answer(d.stop_task("nope")[1], d.ticket() - 1) == {"stopped": False}
    ticket, effects = d.stop_task("agent01")
    assert answer(effects, ticket) == {"stopped": False}, "a subagent is no async task"
    assert not [e for e in effects if isinstance(e, StopTask)]
    ticket, effects = d.stop_task("bash01")
    assert answer(effects, ticket) == {"stopped": True}
    assert StopTask("bash01") in effects
    # The answer goes out before the stop is confirmed; the confirmation ends the task.
    assert not d.updates_of(effects, "async_task_state_update")
    ticket, effects = d.stop_task("bash01")
    assert answer(effects, ticket) == {"stopped": False}, "being stopped already"
    ended = d.frames(
        task_updated("bash01", "run01", "killed"),
        task_notification("bash01", "run01", "stopped", tool_use_id="toolu_sh"),
    )
    assert [u["state"] for u in d.updates_of(ended, "async_task_state_update")] == ["stopped"]
    ticket, effects = d.stop_task("bash01")
    assert answer(effects, ticket) == {"stopped": False}, "finished"
    clean(d)


def test_a_stop_nobody_confirms_ends_the_task_stopped() -> None:
    d = air_driver(air.ASYNC_TASKS)
    launch_shell(d)
    d.stop_task("bash01")
    ended = d.advance(60.0)
    assert [u["state"] for u in d.updates_of(ended, "async_task_state_update")] == ["stopped"]
    clean(d)


def test_a_paused_workflow_reports_paused_then_running() -> None:
    d = air_driver(air.ASYNC_TASKS)
    opened = d.frames(
        tool_use("toolu_wf", "Workflow", {"name": "build"}),
        task_started("wf01", "run01", "build all", "local_workflow", "toolu_wf", True),
    )
    assert d.updates_of(opened, "async_task_spawned")[0]["taskType"] == "workflow"
    paused = d.frames(task_updated("wf01", "run01", "paused"))
    resumed = d.frames(task_updated("wf01", "run01", "running"), task_updated("wf01", "run01", "running"))
    states = [u["state"] for u in d.updates_of(paused + resumed, "async_task_state_update")]
    assert states == ["paused", "running"]
    done = d.frames(task_notification("wf01", "run01", "completed", summary="built"))
    assert d.updates_of(done, "async_task_state_update")[-1] == {
        "sessionUpdate": "async_task_state_update",
        "asyncTaskId": "wf01",
        "state": "completed",
        "summary": "built",
    }
    clean(d)


def test_a_task_no_tool_call_showed_is_in_the_transcript_until_its_tool_call_is_known() -> None:
    d = air_driver(air.ASYNC_TASKS)
    d.frames(tasks_changed([level_entry("mcp01", "run01", "mcp_task", "watch the queue")]))
    (spawned,) = d.updates_of(d.advance(1.0), "async_task_spawned")
    assert spawned["showInTranscript"] is True and "toolCallId" not in spawned
    assert spawned["taskType"] == "mcp_task"
    later = d.frames(task_progress("mcp01", "run01", "watch the queue", tool_use_id="toolu_mcp"))
    assert d.updates_of(later, "async_task_progress") == [
        {"sessionUpdate": "async_task_progress", "asyncTaskId": "mcp01", "toolCallId": "toolu_mcp"}
    ]
    clean(d)


def test_without_async_tasks_an_air_client_gets_none() -> None:
    d = air_driver(air.NATIVE_SUBAGENTS)
    effects = launch_shell(d)
    assert not [u for u in d.updates_of(effects) if u["sessionUpdate"].startswith("async_task")]
    assert "_meta" not in [u for u in d.updates_of(effects) if u.get("toolCallId") == "toolu_sh"][-1]


# --- the draft subagent form ----------------------------------------------------------------------


def spawn_child(d: CoreDriver) -> list[Effect]:
    return d.frames(
        agent_launch("toolu_agent", prompt="Do the small job."),
        tasks_changed([level_entry("agent01", "run01", "local_agent", "background helper")]),
        task_started(
            "agent01", "run01", "background helper", "local_agent", "toolu_agent", True, "general-purpose"
        ),
        tool_use(
            "toolu_child_sh", "Bash", {"command": "echo hi", "description": "say hi"}, parent="toolu_agent"
        ),
    )


def test_a_child_is_spawned_on_its_parent_and_its_updates_are_stamped() -> None:
    d = air_driver(air.NATIVE_SUBAGENTS)
    effects = spawn_child(d)
    notes = d.notified(effects)
    spawned = [(s, u) for s, u in notes if u["sessionUpdate"] == "subagent_spawned"]
    assert spawned == [
        (
            "root",
            {
                "sessionUpdate": "subagent_spawned",
                "subagentSessionId": "agent01",
                "name": "background helper",
                "task": "Do the small job.",
                "prompt": "Do the small job.",
                "capabilities": {},
            },
        )
    ]
    child = [u for s, u in notes if s == "agent01"]
    assert child and all(u["_meta"] == {"claudeCode": {"parentToolUseId": "toolu_agent"}} for u in child)
    assert not [u for s, u in notes if s == "root" and "_meta" in u]
    failed = d.frames(task_updated("agent01", "run01", "failed"))
    assert d.updates_of(failed, "subagent_state_update") == [
        {"sessionUpdate": "subagent_state_update", "subagentSessionId": "agent01", "state": "failed"}
    ]
    clean(d)


def test_a_child_claude_code_lost_is_disconnected() -> None:
    d = air_driver(air.NATIVE_SUBAGENTS)
    spawn_child(d)
    lost = d.handle(ev.ClaudeDied("Claude Code exited", fatal=False))
    assert [u["state"] for u in d.updates_of(lost, "subagent_state_update")] == ["disconnected"]
    clean(d)


def test_a_resumed_child_is_spawned_again() -> None:
    d = air_driver(air.NATIVE_SUBAGENTS)
    first = d.updates_of(spawn_child(d), "subagent_spawned")
    d.frames(task_updated("agent01", "run01", "completed"), result())
    again = d.frames(
        task_started("agent01", "run02", "background helper", "local_agent", "toolu_agent", True)
    )
    assert d.updates_of(again, "subagent_spawned") == first


# --- the agent ------------------------------------------------------------------------------------


def initialize(agent: StdioAgent, capabilities: dict[str, Any]) -> dict[str, Any]:
    params = {
        "protocolVersion": 1,
        "clientCapabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    return agent.call(1, "initialize", params)["result"]


STOP = {"sessionId": "no-such-session", "asyncTaskId": "bash01"}


def test_the_agent_tells_air_what_it_implements(offline: dict[str, str]) -> None:
    agent = StdioAgent(env=offline)
    result = initialize(agent, air.air_capabilities(air.ASYNC_TASKS))
    assert result["_meta"] == {"jetbrains": {"air": {"version": 1, "capabilities": list(BOTH)}}}
    assert agent.call(2, "_session/async_task/stop", STOP)["error"]["code"] == -32002
    blank = {"sessionId": "no-such-session", "asyncTaskId": ""}
    assert agent.call(3, "_session/async_task/stop", blank)["error"]["code"] == -32602
    assert agent.close() == 0
    assert not validate_transcript(agent.lines, agent.sent, 1)


@pytest.mark.parametrize(
    "capabilities", [{}, air.air_capabilities(air.NATIVE_SUBAGENTS), declaration({"version": 0})]
)
def test_other_clients_have_no_stop_by_task_id(offline: dict[str, str], capabilities: dict[str, Any]) -> None:
    agent = StdioAgent(env=offline)
    result = initialize(agent, capabilities)
    assert ("_meta" in result) == (ClientCapabilities.declared(1, capabilities).air is not None)
    assert agent.call(2, "_session/async_task/stop", STOP)["error"]["code"] == -32601
    assert agent.close() == 0
