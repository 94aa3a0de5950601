"""What a plain v1 client's user sees, through ``SessionCore`` with a plain client's capabilities.

The core gets frames from ``tests.support.frames`` (shaped like the recorded real-CLI frames)
and output as the tailer would report it, at moments the real CLI cannot be made to choose: a
read that splits a UTF-8 character, output after the prompt's answer, a client that fell
behind, a turn cut while its shell runs, a result that comes after the shell ended. What comes
out is read by ``tests.support.plain.PlainView`` as Toad and the Python SDK's clients read it,
and checked against the background rules (``tests.support.rules``) and Toad's
(``tests.support.toad``, through the schema check). The recorded scenarios are covered by
``test_replay`` (kind ``v1-plain``), the live ones by ``test_live_clients``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_bg_acp.acp.capabilities import ClientCapabilities
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Notify
from claude_bg_acp.presenters.air import AirPresenter
from claude_bg_acp.presenters.choice import presenter_for
from claude_bg_acp.presenters.live_output import LEFT_OUT, WINDOW
from claude_bg_acp.presenters.plain import PlainPresenter
from claude_bg_acp.presenters.v1 import V1Presenter
from claude_bg_acp.presenters.zed import ZedPresenter
from tests.support.air import ASYNC_TASKS, air_capabilities
from tests.support.driver import PLAIN_CAPABILITIES, CoreDriver, as_jsonrpc, shell_past_the_answer
from tests.support.frames import (
    TaskSpec,
    agent_launch,
    follow_up_result,
    interrupted_result,
    result,
    state_changed,
    task_started,
    text,
    tool_result,
)
from tests.support.plain import PlainView
from tests.support.properties import examples
from tests.support.rules import Violation, check_updates
from tests.support.schema import validate_transcript
from tests.support.zed import ZED_CAPABILITIES

ROOT = "session-plain"
SHELL = TaskSpec("shell", "bash01", description="background job")
COMMAND = "sleep 5; echo bash01"


def plain_driver(capabilities: dict[str, Any] | None = None) -> CoreDriver:
    return CoreDriver(1, PLAIN_CAPABILITIES if capabilities is None else capabilities, session_id=ROOT)


def shown(d: CoreDriver) -> PlainView:
    """What a plain client shows of everything the core sent so far; nothing it would trip on,
    every message valid (the official schema and Toad's rules) and the background rules kept."""
    agent, client = as_jsonrpc(d.effects)
    assert not validate_transcript(agent, client, 1)
    check_updates(((e.session_id, e.update.wire()) for e in d.effects if isinstance(e, Notify)), 1)
    view = PlainView.replay(agent, client)
    assert not view.problems, "\n".join(view.problems)
    return view


def launched_shell(d: CoreDriver) -> None:
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started(), SHELL.hand_off())


# --- which presenter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "capabilities",
    [
        PLAIN_CAPABILITIES,  # acpx
        {},  # the Python SDK's default
        {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},  # acp-client
        {"subagents": {}},
        {"_meta": {"something": True}},
    ],
)
def test_a_client_without_zeds_or_airs_extension_is_plain(capabilities: dict[str, Any]) -> None:
    presenter = presenter_for(ClientCapabilities.declared(1, capabilities))
    assert type(presenter) is PlainPresenter
    assert presenter.policy.subagents_are_sessions == ("subagents" in capabilities)


def test_zed_and_air_keep_their_forms() -> None:
    assert (
        type(presenter_for(ClientCapabilities.declared(1, {**PLAIN_CAPABILITIES, **ZED_CAPABILITIES})))
        is ZedPresenter
    )
    air = presenter_for(
        ClientCapabilities.declared(1, {**PLAIN_CAPABILITIES, **air_capabilities(ASYNC_TASKS)})
    )
    assert type(air) is AirPresenter and type(air.plain) is V1Presenter
    assert type(presenter_for(ClientCapabilities.declared(1, air_capabilities("diffPatch")))) is V1Presenter


# --- background shells ----------------------------------------------------------------------------


def test_a_background_shell_is_its_tool_call_until_it_exits() -> None:
    d = plain_driver()
    ticket = shell_past_the_answer(d, SHELL)

    view = shown(d)
    (call,) = view.calls()
    answered_at = view.prompt_answers[0][0]
    assert [a["id"] for _, a in view.prompt_answers] == [ticket]
    after_answer = [s for s in call.shown if s.t > answered_at]
    assert [s.status for s in after_answer] == ["in_progress", "in_progress", "completed"]
    assert after_answer[0].text == "first \u20ac\nsecond\n", "the character cut in half arrives whole"
    assert after_answer[1].text == "first \u20ac\nsecond\nlast\n"
    assert call.status == "completed" and call.title == COMMAND
    assert call.text == "first \u20ac\nsecond\nlast\n", "every line, and no closing line"
    assert call.raw_output == {"output": call.text, "exitCode": 0, "signal": None}
    assert view.agent_text == "Started."
    for update in d.updates_of(d.effects, "tool_call_update", ROOT)[1:]:  # once the command is known
        assert (update["title"], update["kind"]) == (COMMAND, "execute"), update


def failed_with_code_3(d: CoreDriver) -> None:
    d.frames(SHELL.notification("failed"))
    d.drained("bash01", b"", ExitInfo(3, None))


def killed(d: CoreDriver) -> None:
    d.frames(SHELL.updated("killed"), SHELL.notification("stopped"))
    d.drained("bash01", b"", ExitInfo(None, "SIGKILL"))


def closed(d: CoreDriver) -> None:
    """The client closed the session (acpx does after each answer): Claude Code stops it."""
    d.handle(ev.Close())
    killed(d)


def lost(d: CoreDriver) -> None:
    d.handle(ev.ClaudeDied("Claude Code exited", fatal=False))


@pytest.mark.parametrize(
    ("end", "said", "exit"),
    [
        (failed_with_code_3, "Exited with code 3.", {"exitCode": 3, "signal": None}),
        (killed, "Ended by signal SIGKILL.", {"exitCode": None, "signal": "SIGKILL"}),
        (closed, "Stopped when the session closed.", {"exitCode": None, "signal": "SIGKILL"}),
        (lost, "Its exit is unknown.", {"exitCode": None, "signal": None}),
    ],
)
def test_a_shell_that_fails_says_how_it_ended(
    end: Callable[[CoreDriver], None], said: str, exit: dict[str, Any]
) -> None:
    d = plain_driver()
    launched_shell(d)
    d.frames(text("Started."), result())
    d.output("bash01", b"working\n")
    end(d)
    (call,) = shown(d).calls()
    assert call.status == "failed"
    assert call.text == "working\n\n" + said
    assert call.raw_output == {"output": call.text, **exit}


def test_a_shell_that_printed_nothing_completes_with_no_content() -> None:
    d = plain_driver()
    launched_shell(d)
    d.frames(text("Started."), result(), SHELL.notification("completed"))
    d.drained("bash01", b"", ExitInfo(0, None))
    (call,) = shown(d).calls()
    assert (call.status, call.fields["content"], call.raw_output["output"]) == ("completed", [], "")


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_a_shells_output_shows_whole_whatever_the_reads(data: st.DataObject) -> None:
    chunks = data.draw(st.lists(st.binary(max_size=6), max_size=8), label="reads")
    d = plain_driver()
    launched_shell(d)
    d.frames(text("Started."), result())
    for chunk in chunks:
        d.output("bash01", chunk)
    d.frames(SHELL.notification("completed"))
    d.drained("bash01", b"", ExitInfo(0, None))
    (call,) = shown(d).calls()
    assert call.text == b"".join(chunks).decode("utf-8", "replace")


def test_a_long_output_shows_its_latest_part_within_the_window() -> None:
    d = plain_driver()
    launched_shell(d)
    lines = [f"line {i:06d} \u00e9\u20ac\n".encode() for i in range(20_000)]
    for start in range(0, len(lines), 1000):
        d.output("bash01", b"".join(lines[start : start + 1000]))
    d.frames(SHELL.notification("completed"))
    d.drained("bash01", b"", ExitInfo(0, None))
    view = shown(d)
    (call,) = view.calls()
    sizes = [len(s.text.encode()) for s in call.shown]
    assert max(sizes) <= WINDOW
    assert call.text.startswith(LEFT_OUT)
    kept = call.text[len(LEFT_OUT) :]
    assert kept.encode() == b"".join(lines)[-len(kept.encode()) :], "the latest output, as written"
    assert kept.startswith("line "), "from a line's start"
    assert len(kept.encode()) > WINDOW - 100


def test_a_client_that_fell_behind_sees_the_latest_output() -> None:
    d = plain_driver()
    launched_shell(d)
    d.output("bash01", b"early\n")
    d.handle(ev.OutputReplaced("bash01", b"latest\n"))
    d.drained("bash01", b"", ExitInfo(0, None))
    (call,) = shown(d).calls()
    assert call.text == LEFT_OUT + "latest\n"


def test_a_cut_turn_leaves_the_shell_it_launched_running() -> None:
    """An interrupt that comes before the hand-off's result cuts the turn's tool calls: the Bash
    call's shell runs on, so the call does too, and ends with it."""
    d = plain_driver()
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started())
    d.output("bash01", b"tick\n")
    d.cancel()
    d.frames(interrupted_result())
    d.output("bash01", b"tock\n")
    d.frames(SHELL.notification("completed"))
    d.drained("bash01", b"", ExitInfo(0, None))
    (call,) = shown(d).calls()
    assert [s.status for s in call.shown][-2:] == ["in_progress", "completed"]
    assert call.text == "tick\ntock\n"


def test_a_result_after_the_shell_ended_changes_nothing() -> None:
    d = plain_driver()
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started())
    d.output("bash01", b"quick\n")
    d.frames(SHELL.notification("completed"))
    d.drained("bash01", b"", ExitInfo(0, None))
    d.frames(SHELL.hand_off(), text("Started."), result())
    (call,) = shown(d).calls()
    assert (call.status, call.text) == ("completed", "quick\n")
    assert [s.status for s in call.shown].count("completed") == 1


def test_a_shell_no_tool_call_launched_gets_one_of_ours() -> None:
    d = plain_driver()
    d.prompt("Go.")
    d.frames(
        state_changed("running"),
        task_started("bash09", "run01", "make all", "local_bash", tool_use_id=None, is_backgrounded=True),
    )
    d.tick(1.0)  # classified on the level signal's grace
    d.output("bash09", b"building\n")
    d.drained("bash09", b"", ExitInfo(2, None))
    view = shown(d)
    (call,) = view.calls()
    assert (call.title, call.fields["kind"], call.status) == ("make all", "execute", "failed")
    assert call.text == "building\n\nExited with code 2."


# --- work without a process -----------------------------------------------------------------------


def test_a_monitor_stays_in_progress_until_it_ends() -> None:
    monitor = TaskSpec("monitor", "mon01", description="tick watcher")
    d = plain_driver()
    d.prompt("Watch.")
    d.frames(state_changed("running"), monitor.launch(), monitor.started(), monitor.hand_off())
    d.frames(text("Watching."), result())
    view = shown(d)
    (call,) = view.calls()
    # What it watches, never Claude Code's words to the model (its task id, how to wait).
    assert (call.status, call.text) == ("in_progress", "tick watcher")
    d.frames(monitor.updated("completed"), monitor.notification("completed"))
    (call,) = shown(d).calls()
    assert call.status == "completed"
    assert call.raw_output == {"output": call.text}
    assert call.title == "Monitor: tick watcher"


def test_a_background_subagents_report_is_its_tool_calls_result() -> None:
    agent = TaskSpec("agent", "agent01", description="background helper")
    assert agent.tool_use_id is not None
    d = plain_driver()
    ticket, _ = d.prompt("Delegate.")
    d.frames(state_changed("running"), agent.launch(), agent.started(), agent.hand_off())
    d.frames(text("It works in the background."), result())
    (call,) = shown(d).calls()
    assert (call.status, call.text) == ("in_progress", "background helper"), "what it was asked to do"
    d.frame(text("Looking around.", parent=agent.tool_use_id))
    d.frame(text("background helper finished its work", parent=agent.tool_use_id))
    d.frames(agent.updated("completed"), agent.notification("completed"))
    d.frames(text("It is done."), follow_up_result())
    view = shown(d)
    (call,) = view.calls()
    assert call.status == "completed"
    assert call.text == "background helper finished its work", "its last message: its report"
    working = [s.text for s in call.shown if s.status == "in_progress"]
    assert working[-1] == "Looking around.\n\nbackground helper finished its work"
    assert view.agent_text == "It works in the background.It is done.", "no word of the subagent's"
    assert not [s for s in call.shown if "agent01" in s.text], "never Claude Code's internal hand-off"
    assert [a["id"] for _, a in view.prompt_answers] == [ticket], "the held answer came once it was done"
    assert view.prompt_answers[0][0] > call.shown[-1].t


def test_a_foreground_subagents_words_are_its_tool_calls_content() -> None:
    d = plain_driver()
    d.prompt("Delegate.")
    d.frames(state_changed("running"), agent_launch("toolu_fg_agent", background=False))
    d.frame(text("Reading the files.", parent="toolu_fg_agent"))
    d.frame(tool_result("toolu_fg_agent", "The files say hello."))
    d.frames(text("Done."), result())
    view = shown(d)
    (call,) = view.calls()
    assert [s.text for s in call.shown][-2:] == ["Reading the files.", "The files say hello."]
    assert call.status == "completed" and view.agent_text == "Done."


def test_a_client_with_child_sessions_gets_the_subagents_words_in_them() -> None:
    agent = TaskSpec("agent", "agent01", description="background helper")
    assert agent.tool_use_id is not None
    d = plain_driver({**PLAIN_CAPABILITIES, "subagents": {}})
    d.prompt("Delegate.")
    d.frames(state_changed("running"), agent.launch(), agent.started(), agent.hand_off())
    d.frame(text("background helper finished its work", parent=agent.tool_use_id))
    chunks = d.updates_of(d.effects, "agent_message_chunk", session_id="agent01")
    assert [c["content"]["text"] for c in chunks] == ["background helper finished its work"]


# --- the rules --------------------------------------------------------------------------------


def test_the_rules_refuse_a_status_after_a_final_one() -> None:
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
    with pytest.raises(Violation, match="final status completed is followed by completed"):
        check_updates([(ROOT, done), (ROOT, done)], 1)


def test_the_plain_view_sees_what_a_strict_reader_trips_on() -> None:
    updates = [
        {"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "in_progress"},
        {"sessionUpdate": "tool_call", "toolCallId": "b", "title": "run", "status": "in_progress"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "b",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "x"}}],
            "rawOutput": {"output": "x\n[exited with code 0]"},
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "b", "rawOutput": "x"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "failed"},
    ]
    view = PlainView.replay(
        [
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": ROOT, "update": u}}
            for u in updates
        ]
    )
    assert [p.split(": ", 1)[1] for p in view.problems] == [
        "an update for a tool call never announced",
        "rawOutput.output is not the content's text",
        "rawOutput that is not an object: 'x'",
        "status failed after its final completed",
    ]
    assert view.calls()[0].title == "Tool call"
