"""What a Zed user sees, through ``SessionCore`` with Zed's capabilities and Zed's reading rules.

The core gets frames from ``tests.support.frames`` (shaped like the recorded real-CLI frames)
and output as the tailer would report it, at moments the real CLI cannot be made to choose: a
read that splits a UTF-8 character, output read before the hand-off or after the prompt's
answer, a client that fell behind, a task that names a tool call never seen. What comes out is
read by ``tests.support.zed.ZedView`` as Zed reads it. The recorded scenarios are covered by
``test_replay`` (which reads its Zed transcripts the same way) and the live ones by
``test_live_zed``. The last tests pin ``ZedView`` itself on hand-written messages, for the
cases our agent never produces.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_bg_acp.acp.capabilities import ClientCapabilities
from claude_bg_acp.claude.conventions import ExitInfo, shell_result
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Notify, Tail
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.presenters.choice import presenter_for
from claude_bg_acp.presenters.zed import SKIPPED, ZedPresenter
from tests.support.driver import CoreDriver, as_jsonrpc, shell_past_the_answer
from tests.support.frames import (
    TaskSpec,
    interrupted_result,
    result,
    shell_launch,
    state_changed,
    task_started,
    text,
    tool_result,
)
from tests.support.properties import examples
from tests.support.rules import Violation, check_updates
from tests.support.zed import ZED_CAPABILITIES, ZedView

ROOT = "session-zed"
SHELL = TaskSpec("shell", "bash01", description="background job")


def zed_driver(capabilities: dict[str, Any] | None = None) -> CoreDriver:
    return CoreDriver(1, capabilities or ZED_CAPABILITIES, session_id=ROOT)


def shown(d: CoreDriver) -> ZedView:
    """What Zed shows of everything the core sent so far (nothing rejected, dropped or lost)."""
    agent, client = as_jsonrpc(d.effects)
    check_updates(((e.session_id, e.update.wire()) for e in d.effects if isinstance(e, Notify)), 1)
    view = ZedView.replay(ROOT, agent, client)
    assert not view.problems(), "\n".join(view.problems())
    return view


def wire(d: CoreDriver) -> list[dict[str, Any]]:
    return d.updates(ROOT)


# --- which presenter ------------------------------------------------------------------------------


def test_zed_gets_terminals_and_subagents_in_the_session_that_launched_them() -> None:
    zed = presenter_for(ClientCapabilities.declared(1, ZED_CAPABILITIES))
    assert type(zed) is ZedPresenter
    # Zed declares elicitation forms: Claude's questions are one form.
    assert zed.policy == Policy(
        answers_wait_for_subagents=True, subagents_are_sessions=False, questions_as_forms=True
    )
    others = presenter_for(ClientCapabilities.declared(1, {"subagents": {}}))
    assert others.policy.subagents_are_sessions, "other v1 clients get the RFD form"
    assert not presenter_for(ClientCapabilities.declared(1, {})).policy.subagents_are_sessions


# --- background shells ----------------------------------------------------------------------------


def test_a_background_shell_is_drawn_from_its_first_tool_call_and_shows_its_output_once() -> None:
    d = zed_driver()
    ticket = shell_past_the_answer(d, SHELL)

    first = next(u for u in wire(d) if u["sessionUpdate"] != "session_info_update")  # the prompt's title
    assert first["sessionUpdate"] == "tool_call"
    assert first["_meta"] == {"terminal_info": {"terminal_id": SHELL.tool_use_id}}
    assert first["content"] == [{"type": "terminal", "terminalId": SHELL.tool_use_id}]
    view = shown(d)
    (call,) = view.calls()
    (terminal,) = view.drawn(call)
    assert terminal.text == "first \u20ac\nsecond\nlast\n"
    assert terminal.exit == (0, None)
    assert call.status == "completed"
    assert [a["id"] for _, a in view.prompt_answers] == [ticket]
    keys = {key for u in wire(d) for key in u.get("_meta", {})}
    assert "terminal_output_delta" not in keys, "Zed does not read terminal_output_delta"


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_a_shells_output_shows_exactly_once_whatever_the_order(data: st.DataObject) -> None:
    """Task events, the hand-off and reads of the file in any order; reads split anywhere."""
    chunks = data.draw(st.lists(st.binary(max_size=6), max_size=8), label="reads")
    early = data.draw(st.integers(0, len(chunks)), label="reads before the answer")
    steps = data.draw(st.permutations(["started", "hand_off", *["read"] * early]), label="order")
    d = zed_driver()
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch())
    unread = bytearray()  # the file: the tailer reads what was written once it follows it
    pending = iter(chunks)

    def read() -> None:
        unread.extend(next(pending, b""))
        if any(isinstance(e, Tail) for e in d.effects) and unread:
            d.output("bash01", bytes(unread))
            unread.clear()

    for step in [*steps, "result", *["read"] * (len(chunks) - early), "end"]:
        match step:
            case "started":
                d.frame(SHELL.started())
            case "hand_off":
                d.frame(SHELL.hand_off())
            case "result":
                d.frames(text("Started."), result())
            case "read":
                read()
            case "end":
                d.frame(SHELL.notification("completed"))
                d.drained("bash01", bytes(unread), ExitInfo(0, None))
    view = shown(d)
    (terminal,) = view.terminals.values()
    assert terminal.text == b"".join(chunks).decode("utf-8", "replace")
    assert terminal.exit == (0, None)


def test_a_client_declaring_terminal_output_delta_gets_that_key() -> None:
    d = zed_driver({"_meta": {"terminal_output": True, "terminal_output_delta": True}})
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started(), SHELL.hand_off())
    d.output("bash01", b"a\n")
    d.output("bash01", b"b\n")
    outputs = [u["_meta"] for u in wire(d) if "terminal_output_delta" in u.get("_meta", {})]
    assert [m["terminal_output_delta"]["data"] for m in outputs] == ["a\n", "b\n"]
    assert not [u for u in wire(d) if "terminal_output" in u.get("_meta", {})]


def test_a_client_that_fell_behind_is_told_output_was_skipped() -> None:
    d = zed_driver()
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started(), SHELL.hand_off())
    d.output("bash01", b"early\n")
    d.handle(ev.OutputReplaced("bash01", b"latest\n"))
    d.drained("bash01", b"", ExitInfo(0, None))
    view = shown(d)
    (terminal,) = view.drawn(view.calls()[0])
    assert terminal.text == "early\n" + SKIPPED + "latest\n"


def test_a_shell_whose_tool_call_was_never_shown_gets_one() -> None:
    d = zed_driver()
    d.prompt("Go.")
    d.frames(
        state_changed("running"),
        task_started(
            "bash09", "run01", "make all", "local_bash", tool_use_id="toolu_unseen", is_backgrounded=True
        ),
    )
    d.output("bash09", b"building\n")
    d.drained("bash09", b"", ExitInfo(2, None))
    view = shown(d)
    (call,) = view.calls()
    assert (call.tool_call_id, call.title, call.kind) == ("toolu_unseen", "make all", "execute")
    (terminal,) = view.drawn(call)
    assert (terminal.text, terminal.exit) == ("building\n", (2, None))


def test_a_killed_shell_reports_its_signal() -> None:
    d = zed_driver()
    d.prompt("Run a background job.")
    d.frames(state_changed("running"), SHELL.launch(), SHELL.started(), SHELL.hand_off(), result())
    d.output("bash01", b"tick\n")
    d.frames(SHELL.updated("killed"), SHELL.notification("stopped"))
    d.drained("bash01", b"", ExitInfo(None, "SIGKILL"))
    (terminal,) = shown(d).terminals.values()
    assert terminal.exit == (None, "SIGKILL")


# --- foreground commands ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "is_error", "status", "output", "exit"),
    [
        ("hello", False, "completed", "hello", (0, None)),
        ("(Bash completed with no output)", False, "completed", "", (0, None)),
        ("Exit code 3\nout\nerr", True, "failed", "out\nerr", (3, None)),
        (
            "The user rejected this tool use.",
            True,
            "failed",
            "The user rejected this tool use.",
            (None, None),
        ),
    ],
)
def test_a_foreground_command_shows_its_output_and_exit_with_its_result(
    content: str, is_error: bool, status: str, output: str, exit: tuple[int | None, None]
) -> None:
    d = zed_driver()
    d.prompt("Run it.")
    d.frames(state_changed("running"), shell_launch("toolu_fg", "make", background=False))
    d.frame(tool_result("toolu_fg", content, is_error=is_error))
    d.frames(text("Ran it."), result())
    view = shown(d)
    (call,) = view.calls()
    (terminal,) = view.drawn(call)
    assert (call.status, terminal.text, terminal.exit) == (status, output, exit)


def test_a_foreground_command_cut_by_an_interrupt_ends_its_terminal() -> None:
    d = zed_driver()
    d.prompt("Run it.")
    d.frames(state_changed("running"), shell_launch("toolu_fg", "sleep 100", background=False))
    d.cancel()
    d.frames(interrupted_result())
    (terminal,) = shown(d).terminals.values()
    assert terminal.exit == (None, None)


def test_shell_results_as_claude_code_writes_them() -> None:
    assert shell_result("Exit code 137", True) == ("", 137)
    assert shell_result("Exit code 1\n", True) == ("", 1)
    assert shell_result("Exit code 12x", True) == ("Exit code 12x", None)


# --- the rules a transcript must keep for Zed -------------------------------------------------------


def test_the_rules_refuse_a_terminal_zed_would_never_create() -> None:
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "_meta": {"terminal_info": {"terminal_id": "t1"}},
    }
    with pytest.raises(Violation, match="terminal_info on a tool_call_update"):
        check_updates([(ROOT, update)], 1)
    output = {**update, "_meta": {"terminal_output": {"terminal_id": "t1", "data": "x"}}}
    with pytest.raises(Violation, match="before its terminal_info"):
        check_updates([(ROOT, output)], 1)


# --- ZedView itself, on hand-written messages ---------------------------------------------------


def update(session_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}}


def test_zed_view_rejects_what_zed_rejects() -> None:
    """Our agent sends none of these; the view must still see them as Zed does."""
    view = ZedView.replay(
        ROOT,
        [
            update(
                ROOT,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "a",
                    "title": "ls",
                    "content": [{"type": "terminal", "terminalId": "nope"}],
                },
            ),
            update(ROOT, {"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "completed"}),
            update(
                ROOT,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "b",
                    "_meta": {
                        "terminal_info": {"terminal_id": "b"},
                        "terminal_output": {"terminal_id": "b", "data": "lost"},
                    },
                },
            ),
            update(ROOT, {"sessionUpdate": "subagent_update", "sessionId": "child"}),
            update(
                "child", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
            ),
        ],
    )
    problems = view.problems()
    assert any("Terminal with id `nope` not found" in p for p in problems)
    assert view.calls() and view.calls()[0].title == "Tool call not found"
    assert "output for terminal b that was never created" in problems
    assert len(view.rejected) == 1 and len(view.dropped) == 1


def test_zed_view_appends_output_and_keeps_the_first_exit() -> None:
    call: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t",
        "title": "run",
        "kind": "execute",
        "content": [{"type": "terminal", "terminalId": "t"}],
        "_meta": {"terminal_info": {"terminal_id": "t"}},
    }
    out: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t",
        "_meta": {"terminal_output": {"terminal_id": "t", "data": "ab"}},
    }
    delta: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t",
        "_meta": {"terminal_output_delta": {"terminal_id": "t", "data": "ignored"}},
    }
    exits = [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "_meta": {"terminal_exit": {"terminal_id": "t", "exit_code": c, "signal": None}},
        }
        for c in (4, 0)
    ]
    view = ZedView.replay(ROOT, [update(ROOT, u) for u in (out, call, out, delta, *exits)])
    (terminal,) = view.terminals.values()
    assert terminal.text == "abab", "output before the terminal exists is buffered, then appended"
    assert terminal.exit == (4, None)


def test_zed_view_opens_a_child_thread_for_the_draft_subagent_form() -> None:
    """The draft form our agent does not send (it is not in the v1 schema), as Zed reads it."""
    agent_call = {"sessionUpdate": "tool_call", "toolCallId": "toolu_a", "title": "helper", "kind": "think"}
    spawned = {
        "sessionUpdate": "subagent_spawned",
        "subagentSessionId": "child",
        "name": "helper",
        "prompt": "Do it.",
    }
    said = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "done"},
        "_meta": {"claudeCode": {"parentToolUseId": "toolu_a"}},
    }
    ended = {"sessionUpdate": "subagent_state_update", "subagentSessionId": "child", "state": "completed"}
    early = update(
        "child", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    )
    view = ZedView.replay(
        ROOT,
        [early, update(ROOT, agent_call), update(ROOT, spawned), update("child", said), update(ROOT, ended)],
    )
    child = view.thread("child")
    assert (child.parent, child.title, child.state) == (ROOT, "helper", "completed")
    assert child.text("user") == "Do it." and child.text() == "done"
    assert view.calls()[0].subagent_session == "child"
    assert view.dropped == [early["params"]], "a child's update before its spawn is dropped"


def test_the_zed_view_shows_a_form_as_zed_does_and_names_a_field_it_skips() -> None:
    properties = {
        "b": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
        "a": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]},
        "c": {"type": "string"},
        "d": {"type": "integer"},
        "e": {"type": "_slider"},
    }
    form = {
        "mode": "form",
        "sessionId": ROOT,
        "message": "Pick",
        "requestedSchema": {"properties": properties},
    }
    view = ZedView.replay(ROOT, [{"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": form}])
    assert view.forms[0].fields == {"a": "choice", "b": "choices", "c": "text", "d": "text"}
    assert view.problems() == ["form field e: Zed skips a property of type '_slider'"]
