"""Subagent sessions through the core: nesting and the never-guess rule.

Hand-built frames (``tests.support.frames``, in the recorded shapes) stand in for the real CLI,
through ``CoreDriver``: the scripted model has no scenario of a subagent that launches a
subagent."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import AskPermission, Effect, FinishTail, StopTask
from claude_bg_acp.core.errors import Refusal, Refused
from claude_bg_acp.core.permission_options import ALLOW_ONCE
from tests.support.driver import CoreDriver, as_jsonrpc, check_transcript
from tests.support.frames import (
    TaskSpec,
    agent_launch,
    level_entry,
    result,
    state_changed,
    task_started,
    tasks_changed,
    text,
    tool_result,
    tool_use,
)
from tests.support.properties import examples
from tests.support.rules import BackgroundRules, check_updates
from tests.support.schema import validate_transcript

ROOT = "root"


notes = CoreDriver.notified


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


# --- a subagent's own background work ----------------------------------------------------------

HELPER = TaskSpec("agent", "agent01", tool_use_id="toolu_helper", description="helper")
CHILD_SHELL = TaskSpec("shell", "bash07", parent="toolu_helper")
CHILD_MONITOR = TaskSpec("monitor", "mon07", parent="toolu_helper")


def child_with_work(d: CoreDriver, *work: TaskSpec) -> list[Effect]:
    """The root launches a background subagent, which launches ``work`` of its own."""
    effects = d.frames(
        HELPER.launch(), HELPER.started(), tasks_changed([HELPER.level_entry()]), HELPER.hand_off()
    )
    for spec in work:
        level = [HELPER.level_entry(), *(w.level_entry() for w in work[: work.index(spec) + 1])]
        effects += d.frames(spec.launch(), spec.started(), tasks_changed(level), spec.hand_off())
    return effects


def lists(effects: list[Effect], session: str) -> list[list[dict[str, Any]]]:
    return [
        u["background"] for s, u in notes(effects) if s == session and u["sessionUpdate"] == "state_update"
    ]


def mirrored(effects: list[Effect], child: str) -> list[dict[str, Any]]:
    return [
        u["state"]
        for _, u in notes(effects)
        if u["sessionUpdate"] == "subagent_update" and u["sessionId"] == child and "state" in u
    ]


def test_a_subagents_shell_is_the_childs_terminal_listed_by_the_child() -> None:
    d = CoreDriver(2, session_id=ROOT)
    effects = child_with_work(d, CHILD_SHELL)
    opened = [(s, u) for s, u in notes(effects) if u["sessionUpdate"] == "terminal_update"]
    assert opened == [("agent01", opened[0][1])] and opened[0][1]["terminalId"] == "bash07"
    assert lists(effects, "agent01")[-1] == [{"type": "terminal", "terminalId": "bash07"}]
    assert mirrored(effects, "agent01")[-1]["background"] == [{"type": "terminal", "terminalId": "bash07"}]
    assert all({"type": "terminal", "terminalId": "bash07"} not in b for b in lists(effects, ROOT))
    # Its output is the child's, byte for byte.
    out = notes(d.output("bash07", b"\xffpart"))
    assert [(s, u["sessionUpdate"], u["data"]) for s, u in out] == [
        ("agent01", "terminal_output_chunk", "/3BhcnQ=")
    ]
    check_updates(notes(d.effects), 2)


def test_a_child_stays_listed_while_its_own_work_runs_after_it_ended() -> None:
    d = CoreDriver(2, session_id=ROOT)
    child_with_work(d, CHILD_SHELL)
    ended = d.frames(
        HELPER.updated("completed"),
        HELPER.notification("completed"),
        tasks_changed([CHILD_SHELL.level_entry()]),
    )
    assert mirrored(ended, "agent01")[0]["state"] == "idle"
    # Idle, but its shell runs: the root still lists it (its last snapshot says so).
    assert lists(d.effects, ROOT)[-1] == [{"type": "subagent", "sessionId": "agent01"}]
    done = d.frames(
        CHILD_SHELL.updated("completed"), CHILD_SHELL.notification("completed"), tasks_changed([])
    )
    done += d.drained("bash07")
    exited = [i for i, (s, u) in enumerate(notes(done)) if u.get("exitStatus") is not None]
    emptied = [i for i, (s, u) in enumerate(notes(done)) if s == "agent01" and u.get("background") == []]
    dropped = [i for i, (s, u) in enumerate(notes(done)) if s == ROOT and u.get("background") == []]
    assert exited and emptied and dropped and exited[0] < emptied[0] < dropped[0]
    check_updates(notes(d.effects), 2)


def test_a_childs_work_is_cancelled_in_the_childs_session_only() -> None:
    d = CoreDriver(2, session_id=ROOT)
    child_with_work(d, CHILD_SHELL, CHILD_MONITOR)
    with pytest.raises(Refused) as refused:
        d.handle(ev.CancelTerminal(ROOT, "bash07"))
    assert refused.value.kind is Refusal.UNKNOWN
    assert d.handle(ev.CancelTerminal("agent01", "bash07")) == [StopTask("bash07")]
    monitor_call = str(CHILD_MONITOR.tool_use_id)
    assert d.handle(ev.CancelToolCall("agent01", monitor_call)) == [StopTask("mon07")]
    calls = [u for s, u in notes(d.effects) if u.get("toolCallId") == monitor_call]
    assert calls and all(s == "agent01" for s, u in notes(d.effects) if u.get("toolCallId") == monitor_call)
    assert calls[-1]["capabilities"] == {"cancel": {}}


def test_a_childs_question_makes_the_child_wait_not_the_root() -> None:
    d = CoreDriver(2, session_id=ROOT)
    child_with_work(d)
    asked = d.ask(70, "Bash", {"command": "touch x"}, "toolu_sub", "agent01")
    assert lists(asked, ROOT) == []
    assert [
        u["state"] for s, u in notes(asked) if s == "agent01" and u["sessionUpdate"] == "state_update"
    ] == ["requires_action"]
    answered = d.answer(70, "allow_once")
    assert [m["state"] for m in mirrored(answered, "agent01")] == ["running"]
    check_updates(notes(d.effects), 2)


# --- properties: a subagent's work stays the subagent's -----------------------------------------


@st.composite
def child_work_orders(draw: st.DrawFn) -> tuple[list[TaskSpec], list[tuple[str, Any]]]:
    """A background subagent with a shell and/or a monitor of its own, their frames in an order
    they may arrive in (the child's launch after the Agent tool use; ends lost at random), and
    the client's acts (cancels in the child's session, output, ticks) in between."""
    work = draw(st.sampled_from([[CHILD_SHELL], [CHILD_MONITOR], [CHILD_SHELL, CHILD_MONITOR]]))
    agent_ends = draw(st.sampled_from(["completed", "failed", "killed"]))
    queues: list[list[tuple[str, Any]]] = [
        [
            ("frame", HELPER.launch()),
            ("frame", HELPER.started()),
            ("frame", HELPER.hand_off()),
            ("frame", HELPER.updated(agent_ends)),
        ]
    ]
    for spec in work:
        ends = [("frame", spec.updated("completed")), ("frame", spec.notification("completed"))]
        queues.append([("frame", spec.launch()), ("frame", spec.started()), ("frame", spec.hand_off())])
        queues[-1] += [end for end in ends if draw(st.booleans())] or [ends[1]]
    steps: list[tuple[str, Any]] = []
    while any(queues):
        live = [q for q in queues if q]
        steps.append(live[draw(st.integers(0, len(live) - 1))].pop(0))
        if draw(st.integers(0, 3)) == 0:
            steps.append(draw(st.sampled_from([("cancel", 0), ("cancel", 1), ("output", 0), ("tick", 0.6)])))
    return work, steps


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(child_work_orders())
def test_a_subagents_work_is_announced_listed_and_cancelled_in_its_session(
    order: tuple[list[TaskSpec], list[tuple[str, Any]]],
) -> None:
    work, steps = order
    d = CoreDriver(2, session_id=ROOT)
    rules = BackgroundRules(lists=True)
    child_refs = {spec.task_id for spec in work} | {str(spec.tool_use_id) for spec in work}

    def feed(effects: list[Effect]) -> None:
        for session, update in notes(effects):
            rules.see(session, update)
            if session == ROOT:
                mentioned = {update.get("terminalId"), update.get("toolCallId")} | {
                    rules.ref(item) for item in update.get("background") or []
                }
                assert not mentioned & child_refs, f"the child's work shows on the root: {update}"
        for effect in effects:
            if isinstance(effect, FinishTail):
                feed(d.drained(effect.task_id))

    for kind, arg in steps:
        if kind == "frame":
            feed(d.frame(arg))
        elif kind == "tick":
            feed(d.advance(arg))
        elif kind == "output" and "bash07" in d.core.background.items:
            feed(d.output("bash07", b"line\n"))
        elif kind == "cancel":
            child = rules.view("agent01")
            targets = [(t, r) for (t, r), can in child.caps.items() if can and t in ("terminal", "tool_call")]
            for item_type, ref in targets[arg % max(1, len(targets)) :][:1]:
                request = (
                    ev.CancelTerminal("agent01", ref)
                    if item_type == "terminal"
                    else ev.CancelToolCall("agent01", ref)
                )
                feed(d.handle(request))
    feed(d.frames(tasks_changed([])))
    feed(d.advance(60.0))
    # Everything ended: the child's list and the root's are empty, its work final.
    child = rules.view("agent01")
    assert child.terminals <= child.exited
    assert all(status in ("completed", "failed", "cancelled") for status in child.tool_status.values())
    assert rules.view(ROOT).listed == [] and child.listed in (None, [])
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, 2)


# --- the RFD form in v1 (issue 22) --------------------------------------------------------------


def test_a_v1_client_sees_a_failed_child_idle_with_the_error() -> None:
    """The v1 unstable schema's child state has ``stopReason: error`` with the ``error``."""
    d = CoreDriver(1, {"subagents": {}}, session_id=ROOT)
    d.frames(HELPER.launch(), HELPER.started(), tasks_changed([HELPER.level_entry()]), HELPER.hand_off())
    failed = d.frame(HELPER.notification("failed"))
    (state,) = [u["state"] for _, u in notes(failed) if u["sessionUpdate"] == "subagent_update"]
    assert state == {
        "state": "idle",
        "stopReason": "error",
        "error": {"code": -32603, "message": HELPER.summary("failed")},
    }
    agent_lines, client_lines = as_jsonrpc(d.effects)
    assert not validate_transcript(agent_lines, client_lines, 1)


def test_the_v2_announcement_carries_the_childs_own_first_snapshot() -> None:
    """The RFD's two reports of a child's state are the same ``StateUpdate`` snapshot."""
    d = CoreDriver(2, session_id=ROOT)
    effects = d.frames(HELPER.launch(), HELPER.started())
    (announced,) = [u["state"] for _, u in notes(effects) if u["sessionUpdate"] == "subagent_update"]
    own = d.updates_of(effects, "state_update", HELPER.task_id)[0]
    assert announced == {key: value for key, value in own.items() if key != "sessionUpdate"}


# --- a turn that waits on a synchronous child (issue 22) ----------------------------------------

OUTER = TaskSpec("agent", "agent05", tool_use_id="toolu_outer", description="outer")
INNER = TaskSpec("agent", "agent06", tool_use_id="toolu_inner", description="inner", parent="toolu_outer")
PEER = TaskSpec("agent", "agent07", tool_use_id="toolu_peer", description="peer")


def root_states(d: CoreDriver, effects: list[Effect], session: str = ROOT) -> list[str]:
    return [u["state"] for u in d.updates_of(effects, "state_update", session)]


def ask_in(d: CoreDriver, spec: TaskSpec, ticket: int) -> list[Effect]:
    """The subagent of ``spec`` uses Bash, and Claude Code asks about it."""
    use = f"toolu_bash_{spec.task_id}"
    d.frame(tool_use(use, "Bash", {"command": "touch x"}, parent=spec.tool_use_id))
    return d.ask(ticket, "Bash", {"command": "touch x"}, use, spec.task_id)


def test_a_turn_waiting_on_a_synchronous_child_that_asks_requires_action() -> None:
    """The child's question blocks the foreground: the child's and the root's, which waits on it
    (prompt lifecycle: requires_action while foreground work is blocked on user action)."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate and wait")
    d.frames(state_changed("running"), OUTER.launch(), OUTER.started(backgrounded=False))
    asked = ask_in(d, OUTER, 1)
    assert root_states(d, asked, OUTER.task_id) == ["requires_action"]
    assert root_states(d, asked) == ["requires_action"]
    answered = d.answer(1, ALLOW_ONCE)
    assert root_states(d, answered, OUTER.task_id) == ["running"] and root_states(d, answered) == ["running"]
    check_updates(d.notified(d.effects), 2)


def test_a_question_two_synchronous_children_down_blocks_each_one_that_waits() -> None:
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate and wait")
    d.frames(state_changed("running"), OUTER.launch(), OUTER.started(backgrounded=False))
    d.frames(INNER.launch(), INNER.started(backgrounded=False))
    asked = ask_in(d, INNER, 1)
    for session in (INNER.task_id, OUTER.task_id, ROOT):
        assert root_states(d, asked, session) == ["requires_action"], session
    answered = d.answer(1, ALLOW_ONCE)
    for session in (INNER.task_id, OUTER.task_id, ROOT):
        assert root_states(d, answered, session) == ["running"], session
    check_updates(d.notified(d.effects), 2)


def test_a_turn_is_not_blocked_while_other_foreground_work_goes_on() -> None:
    """A backgrounded child's question blocks only the child; so does a synchronous child's
    while another synchronous child of the same turn still works."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate")
    d.frames(state_changed("running"), HELPER.launch(), HELPER.started(), HELPER.hand_off())
    assert root_states(d, ask_in(d, HELPER, 1)) == []
    d.frames(
        OUTER.launch(), OUTER.started(backgrounded=False), PEER.launch(), PEER.started(backgrounded=False)
    )
    assert root_states(d, ask_in(d, OUTER, 2)) == []
    assert root_states(d, ask_in(d, PEER, 3)) == ["requires_action"]
    assert root_states(d, d.answer(2, ALLOW_ONCE)) == ["running"]


def test_a_background_childs_question_after_the_turn_leaves_the_root_idle() -> None:
    """Claude Code's state is the whole session's: once the root's turn ended, the
    ``requires_action`` and ``running`` around a background child's question are the child's,
    and the root stays idle (live, Claude Code says ``idle`` only after its next result)."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate")
    d.frames(state_changed("running"), HELPER.launch(), HELPER.started(), HELPER.hand_off())
    ended = d.frames(text("It works in the background."), result())
    assert root_states(d, ended)[-1] == "idle"
    use, touch = "toolu_bash_agent01", {"command": "touch x"}
    d.frame(tool_use(use, "Bash", touch, parent=HELPER.tool_use_id))
    asked = d.frame(state_changed("requires_action")) + d.ask(1, "Bash", touch, use, "agent01")
    answered = d.answer(1, ALLOW_ONCE) + d.frame(state_changed("running"))
    assert root_states(d, asked + answered) == []
    assert root_states(d, asked, HELPER.task_id) == ["requires_action"]
    assert root_states(d, answered, HELPER.task_id) == ["running"]
    # Its next turn is the root's again: a turn Claude Code starts shows itself.
    assert root_states(d, d.frame(text("Something of the root's."))) == ["running"]
    check_updates(d.notified(d.effects), 2)


def test_cancelling_a_child_cancels_its_working_descendants_the_deepest_first() -> None:
    """Subagent Sessions RFD: a child's cancel cascades to its active descendants, never to its
    parent or siblings. The agent stops each itself (the deepest first, so that each stop finds
    its subagent), whether or not Claude Code stops a subagent's own subagents with it."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate")
    d.frames(state_changed("running"), OUTER.launch(), OUTER.started(), OUTER.hand_off())
    d.frames(INNER.launch(), INNER.started(), INNER.hand_off())
    d.frames(PEER.launch(), PEER.started(), PEER.hand_off())
    assert d.handle(ev.CancelChild(INNER.task_id)) == [StopTask(INNER.task_id)], "not its parent"
    assert d.handle(ev.CancelChild(OUTER.task_id)) == [StopTask(INNER.task_id), StopTask(OUTER.task_id)]
    d.frames(INNER.updated("killed"), INNER.notification("stopped"))
    assert d.handle(ev.CancelChild(OUTER.task_id)) == [StopTask(OUTER.task_id)], "an ended one stays so"


OUTER_SHELL = TaskSpec("shell", "bash05", parent="toolu_outer")


def test_a_synchronous_child_with_a_shell_of_its_own_is_not_listed_while_its_parent_waits() -> None:
    """The parent's turn waits on it: it is the parent's foreground work, its shell listed in
    its own session; once it ended, the parent lists it for as long as its shell runs."""
    d = CoreDriver(2, session_id=ROOT)
    d.prompt("delegate and wait")
    d.frames(state_changed("running"), OUTER.launch(), OUTER.started(backgrounded=False))
    level = [OUTER.level_entry(), OUTER_SHELL.level_entry()]
    started = d.frames(
        OUTER_SHELL.launch(), OUTER_SHELL.started(), tasks_changed(level), OUTER_SHELL.hand_off()
    )
    assert lists(started, OUTER.task_id)[-1] == [{"type": "terminal", "terminalId": OUTER_SHELL.task_id}]
    assert all(listed == [] for listed in lists(started, ROOT)), "not while the turn waits on it"
    ended = d.frames(
        tool_result(str(OUTER.tool_use_id), "outer is done"),
        OUTER.updated("completed"),
        tasks_changed([OUTER_SHELL.level_entry()]),
        text("Done."),
        result(),
    )
    assert lists(ended, ROOT)[-1] == [{"type": "subagent", "sessionId": OUTER.task_id}], "its shell runs on"
    check_updates(d.notified(d.effects), 2)


# --- later messages to a resumed child (issue 22) ----------------------------------------------


def finished_helper(d: CoreDriver) -> None:
    d.frames(HELPER.launch(), HELPER.started(), tasks_changed([HELPER.level_entry()]), HELPER.hand_off())
    d.frames(HELPER.updated("completed"), HELPER.notification("completed"), tasks_changed([]))


def sent_to(effects: list[Effect]) -> list[tuple[str, dict[str, Any]]]:
    return [(s, u) for s, u in notes(effects) if u["sessionUpdate"] == "session_message"]


@pytest.mark.parametrize("level_first", [False, True])
@pytest.mark.parametrize("client", ["v2", "v1-subagents"])
def test_a_message_to_a_resumed_child_is_a_session_message_from_the_session_that_sent_it(
    client: str, level_first: bool
) -> None:
    """Subagent Sessions: every task a parent gives a child, not only the first, is a
    session-directed message; its sender is the session whose tool use sent it."""
    d = CoreDriver.for_client(client, session_id=ROOT)
    finished_helper(d)
    sent = tool_use("toolu_send", "SendMessage", {"to": HELPER.task_id, "message": "Now the tests."})
    started = task_started(
        HELPER.task_id,
        "run02",
        "helper",
        "local_agent",
        "toolu_send",
        True,
        "general-purpose",
        "Now the tests.",
    )
    level = tasks_changed([HELPER.level_entry("run02")])
    resumed = d.frames(sent, *([level, started] if level_first else [started, level]))
    assert sent_to(resumed) == [
        (
            HELPER.task_id,
            {
                "sessionUpdate": "session_message",
                "messageId": "delegation-toolu_send",
                "senderSessionId": ROOT,
                "recipientSessionId": HELPER.task_id,
                "content": [{"type": "text", "text": "Now the tests."}],
            },
        )
    ]
    assert sent_to(d.frames(HELPER.progress("run02"), level)) == []  # once per run
    check_transcript(d, d.effects, client)


def test_a_message_whose_sender_is_not_known_names_none() -> None:
    """A new run that names no tool use of its own: the message is shown, its sender never
    guessed (prompt lifecycle: with no evidence of the sender, omit it)."""
    d = CoreDriver(2, session_id=ROOT)
    finished_helper(d)
    resumed = d.frame(
        task_started(HELPER.task_id, "run02", "helper", "local_agent", None, True, "general-purpose", "More.")
    )
    ((session, message),) = sent_to(resumed)
    assert session == HELPER.task_id and "senderSessionId" not in message
    assert message["messageId"] == f"delegation-{HELPER.task_id}-2"
    assert message["content"] == [{"type": "text", "text": "More."}]


# --- a subagent shown before its parent was known (issue 22) ----------------------------------


def test_a_subagent_first_shown_as_work_of_ours_becomes_its_child_session() -> None:
    """Seen only on the level signal for longer than the grace, a subagent is shown as a tool
    call of ours on the root (its parent is never guessed). Once ``task_started`` names the
    Agent tool use that launched it, that tool call ends, the child is announced, and what it
    said meanwhile follows."""
    d = CoreDriver(2, session_id=ROOT)
    d.frame(tasks_changed([HELPER.level_entry()]))
    d.advance(0.6)
    stand_in = {"type": "tool_call", "toolCallId": f"task-{HELPER.task_id}"}
    assert lists(d.effects, ROOT)[-1] == [stand_in]
    d.frames(HELPER.launch(), text("hello from the child", parent=HELPER.tool_use_id))
    placed = d.frames(HELPER.started(), HELPER.hand_off())
    ends = [u for u in d.updates_of(placed) if u.get("toolCallId") == stand_in["toolCallId"]]
    assert [u["status"] for u in ends] == ["completed"]
    assert [u["sessionId"] for u in d.updates_of(placed, "subagent_update")] == [HELPER.task_id]
    chunks = d.updates_of(placed, "agent_message_chunk", HELPER.task_id)
    assert [c["content"]["text"] for c in chunks] == ["hello from the child"]
    assert lists(d.effects, ROOT)[-1] == [{"type": "subagent", "sessionId": HELPER.task_id}]
    check_transcript(d, d.effects, "v2")


def test_a_nested_subagent_shown_as_work_of_ours_becomes_a_child_of_its_own_parent() -> None:
    """Both were shown as work of ours; the inner one's ``task_started`` came while its parent
    was not exposed. Once the outer one is, the inner one is its child."""
    outer = TaskSpec("agent", "agent05", tool_use_id="toolu_outer", description="outer")
    inner = TaskSpec("agent", "agent06", tool_use_id="toolu_inner", description="inner", parent="toolu_outer")
    d = CoreDriver(2, session_id=ROOT)
    d.frame(tasks_changed([outer.level_entry(), inner.level_entry()]))
    d.advance(0.6)
    d.frames(outer.launch(), inner.launch(), inner.started())
    assert d.updates_of(d.effects, "subagent_update") == []
    placed = d.frames(outer.started())
    announced = [(s, u["sessionId"]) for s, u in notes(placed) if u["sessionUpdate"] == "subagent_update"]
    assert announced[:2] == [(ROOT, outer.task_id), (outer.task_id, inner.task_id)]
    assert lists(d.effects, outer.task_id)[-1] == [{"type": "subagent", "sessionId": inner.task_id}]
    assert lists(d.effects, ROOT)[-1] == [{"type": "subagent", "sessionId": outer.task_id}]
    check_transcript(d, d.effects, "v2")


def test_a_question_asked_before_its_child_was_announced_keeps_its_tool_call_on_the_root() -> None:
    """The question was asked on the root (the child was not exposed yet), which showed its tool
    call there: that tool call stays the root's to its final status, never moved to the child
    (Subagent Sessions: an issued interaction is not moved later)."""
    d = CoreDriver(2, session_id=ROOT)
    d.frames(HELPER.launch(), tasks_changed([HELPER.level_entry()]))
    d.frame(tool_use("toolu_early", "Bash", {"command": "touch x"}, parent=HELPER.tool_use_id))
    asked = d.ask(1, "Bash", {"command": "touch x"}, "toolu_early", HELPER.task_id)
    (request,) = [e.params for e in asked if isinstance(e, AskPermission)]
    assert request["sessionId"] == ROOT and request["subject"]["toolCall"]["toolCallId"] == "toolu_early"
    d.answer(1, ALLOW_ONCE)
    d.frames(
        HELPER.started(),
        HELPER.hand_off(),
        {**tool_result("toolu_early", "done"), "parent_tool_use_id": HELPER.tool_use_id},
    )
    shown = [(s, u.get("status")) for s, u in notes(d.effects) if u.get("toolCallId") == "toolu_early"]
    assert {s for s, _ in shown} == {ROOT} and shown[-1] == (ROOT, "completed")
    assert d.updates(HELPER.task_id)  # the child was announced, and shows the rest of its work
    check_transcript(d, d.effects, "v2")
