"""A tool call is ``pending`` until it runs: a permission question keeps it so until it is
allowed; one that asks nothing runs at a task started for it, or once ``START_GRACE`` has passed.

Hand-built frames (``tests.support.frames``, in the recorded shapes) through ``CoreDriver``, with
the time passed in: the grace and the orders around it (a question before the input, after the
grace, withdrawn) cannot be timed with the real CLI. The recording ``agent_bg`` (the real CLI;
an Agent call that asks nothing) shows the start a task gives. Every transcript is checked for
every client kind (schema, background rules, Zed's and a plain client's reading).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from claude_bg_acp.core.effects import AskPermission, Decide, Effect, Notify
from claude_bg_acp.core.permission_options import ALLOW_ONCE, REJECT_ONCE
from claude_bg_acp.core.tool_uses import START_GRACE
from tests.support.driver import CLIENTS, CoreDriver, check_transcript, load_frames
from tests.support.frames import interrupted_result, result, state_changed, text, tool_result, tool_use

CALL = "toolu_touch_abababababab"
TOUCH = {"command": "touch made.txt", "description": "create a file"}


def story(effects: list[Effect], call_id: str = CALL) -> list[str]:
    """What happens to the call, in order: its statuses, the question, the decision."""
    told: list[str] = []
    for effect in effects:
        if isinstance(effect, Notify):
            update = effect.update.wire()
            if update.get("toolCallId") == call_id and "status" in update:
                told.append(update["status"])
        elif isinstance(effect, AskPermission):
            told.append("asked")
        elif isinstance(effect, Decide):
            told.append("allowed" if effect.allow else "denied")
    return told


def started(client: str) -> CoreDriver:
    d = CoreDriver.for_client(client)
    d.prompt("Create a file.")
    d.frames(state_changed("running"), tool_use(CALL, "Bash", TOUCH))
    return d


def ended(d: CoreDriver, client: str, is_error: bool = False) -> None:
    d.frames(tool_result(CALL, "done", is_error=is_error), text("Done."), result())
    check_transcript(d, d.effects, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_call_that_asks_nothing_runs_once_the_grace_has_passed(client: str) -> None:
    d = started(client)
    assert story(d.effects) == ["pending"]
    assert story(d.advance(START_GRACE - 0.05)) == []
    assert story(d.advance(0.1)) == ["in_progress"]
    ended(d, client)
    assert story(d.effects) == ["pending", "in_progress", "completed"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_call_asked_about_stays_pending_until_it_is_allowed(client: str) -> None:
    d = started(client)
    d.ask(1, "Bash", TOUCH, CALL)
    assert story(d.advance(START_GRACE * 5)) == []  # the grace is not the question's
    assert story(d.answer(1, ALLOW_ONCE)) == ["allowed", "in_progress"]
    ended(d, client)
    assert story(d.effects) == ["pending", "asked", "allowed", "in_progress", "completed"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_call_denied_never_runs(client: str) -> None:
    d = started(client)
    d.ask(1, "Bash", TOUCH, CALL)
    d.answer(1, REJECT_ONCE)
    assert story(d.advance(START_GRACE * 2)) == []
    ended(d, client, is_error=True)
    assert story(d.effects) == ["pending", "asked", "denied", "failed"]


def test_a_call_whose_question_is_withdrawn_never_runs() -> None:
    d = started("v2")
    d.ask(1, "Bash", TOUCH, CALL)
    d.cancel()
    d.frame(interrupted_result())
    d.advance(START_GRACE * 2)
    assert "in_progress" not in story(d.effects)
    assert story(d.effects)[-1] == "cancelled"


def test_a_question_before_the_input_holds_the_call_too() -> None:
    """Claude Code may ask before the assistant message with the input reaches the agent."""
    d = CoreDriver.for_client("v2")
    d.prompt("Create a file.")
    d.frame(state_changed("running"))
    d.ask(1, "Bash", TOUCH, CALL)
    d.frame(tool_use(CALL, "Bash", TOUCH))
    assert story(d.advance(START_GRACE * 2)) == []
    assert story(d.answer(1, ALLOW_ONCE)) == ["allowed", "in_progress"]
    ended(d, "v2")


def test_a_call_allowed_before_its_input_runs_at_its_input() -> None:
    d = CoreDriver.for_client("v2")
    d.prompt("Create a file.")
    d.frame(state_changed("running"))
    d.ask(1, "Bash", TOUCH, CALL)
    d.answer(1, ALLOW_ONCE)
    assert story(d.frame(tool_use(CALL, "Bash", TOUCH))) == ["in_progress"]
    ended(d, "v2")


def test_a_question_after_the_grace_finds_the_call_running_and_leaves_it_so() -> None:
    """A slow ``PreToolUse`` hook of the user's delays the question past the grace: the call
    shows ``in_progress`` already, and statuses only move forward."""
    d = started("v2")
    d.advance(START_GRACE + 0.1)
    (asked,) = [e for e in d.ask(1, "Bash", TOUCH, CALL) if isinstance(e, AskPermission)]
    assert "status" not in asked.params["subject"]["toolCall"]
    assert story(d.answer(1, ALLOW_ONCE)) == ["allowed"]
    ended(d, "v2")
    assert story(d.effects) == ["pending", "in_progress", "asked", "allowed", "completed"]


def test_a_call_that_ends_within_its_grace_goes_from_pending_to_its_end() -> None:
    d = started("v2")
    d.frame(tool_result(CALL, "done"))
    assert d.core.next_deadline() is None  # no grace left to run
    assert story(d.advance(START_GRACE * 2)) == []
    assert story(d.effects) == ["pending", "completed"]


@pytest.mark.parametrize(("client", "shown"), [("v2", []), ("v1-plain", ["in_progress"])])
def test_scheduled_work_stays_pending_where_the_client_shows_it_so(client: str, shown: list[str]) -> None:
    d = CoreDriver.for_client(client)
    d.prompt("Wake up later.")
    wakeup: dict[str, Any] = {"delaySeconds": 600, "prompt": "check", "reason": "later"}
    d.frames(state_changed("running"), tool_use(CALL, "ScheduleWakeup", wakeup))
    assert story(d.effects) == ["pending"]
    assert story(d.advance(START_GRACE * 2)) == shown


@pytest.mark.parametrize("client", CLIENTS)
def test_a_task_started_for_the_call_runs_it_before_the_grace(client: str) -> None:
    """The real CLI: an Agent call asks nothing, and its subagent's ``task_started`` comes some
    30 ms after its input, well within the grace (the replay does not tick)."""
    frames = load_frames("agent_bg")
    d = CoreDriver.for_client(client)
    at = next(i for i, f in enumerate(frames) if f.get("msg", {}).get("subtype") == "task_started")
    call = frames[at]["msg"]["tool_use_id"]
    before = d.replay(frames[:at])
    assert "in_progress" not in story(before, call) and story(before, call)[-1] == "pending"
    assert story(d.replay([frames[at]]), call) == ["in_progress"]


def test_a_call_that_begins_keeps_what_its_question_showed() -> None:
    """A Write's question shows its diff against the file it overwrites; its input did not. The
    update that starts it says its status alone, so the client keeps the question's diff."""
    d = CoreDriver.for_client("v2")
    d.prompt("Write a file.")
    write = {"file_path": "/tmp/notes.txt", "content": "new\n"}
    d.frames(state_changed("running"), tool_use(CALL, "Write", write))
    d.ask(1, "Write", write, CALL)
    (began,) = [u for u in d.updates_of(d.answer(1, ALLOW_ONCE)) if u.get("toolCallId") == CALL]
    assert began == {"sessionUpdate": "tool_call_update", "toolCallId": CALL, "status": "in_progress"}


RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "denied"])
@pytest.mark.parametrize("order", list(itertools.permutations(("input", "ask", "grace"))), ids="-".join)
def test_in_every_order_a_question_asked_within_the_grace_holds_the_call(
    order: tuple[str, ...], allow: bool, client: str
) -> None:
    """The input, the question and the grace's end in any order, then the answer and the result:
    statuses only move forward; a question that came before the grace passed (or before the
    input) holds the call ``pending`` until it is allowed, and a denied one never runs."""
    d = CoreDriver.for_client(client)
    d.prompt("Create a file.")
    d.frame(state_changed("running"))
    steps = {
        "input": lambda: d.frame(tool_use(CALL, "Bash", TOUCH)),
        "ask": lambda: d.ask(1, "Bash", TOUCH, CALL),
        "grace": lambda: d.advance(START_GRACE + 0.1),
    }
    for step in order:
        steps[step]()
    d.answer(1, ALLOW_ONCE if allow else REJECT_ONCE)
    ended(d, client, is_error=not allow)
    told = story(d.effects)
    shown = [status for status in told if status in RANK]
    assert [RANK[s] for s in shown] == sorted(RANK[s] for s in shown), told
    held = order.index("ask") < order.index("grace") or order.index("grace") < order.index("input")
    decided = told.index("allowed" if allow else "denied")
    if held:
        assert "in_progress" not in told[:decided], told
    assert ("in_progress" in told) == (allow or not held), told
