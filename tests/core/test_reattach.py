"""A client re-attaching to a session, to the letter of the RFDs (issue 22): the replay's end
marked (``replay_complete``), live updates held until then, history that says what it lacks and
invents no ends, children whose current state and ``cancel`` follow the answer.

The stored conversation is the recorded one of ``tests/edges/test_history.py`` (read back as the agent
reads it); the live sessions are recordings replayed through ``CoreDriver`` or hand-built frames
in the recorded shapes. Each transcript is validated against the schema and the background
rules, which know where the client asked to re-attach and where it was answered.
"""

from __future__ import annotations

import pytest

from claude_bg_acp.core import events as ev
from tests.support.driver import (
    RECORDED_SESSION,
    CoreDriver,
    check_transcript,
    live_after_first_turn,
    load_frames,
    stored_conversation,
)
from tests.support.frames import TaskSpec, result, tasks_changed, text, tool_result, tool_use
from tests.support.rules import Answered, Reattach, Violation, check_updates

RECORDING = "conversation"
CHILD = "agent01"
MARKER = {"sessionUpdate": "replay_complete"}
CHILD_KINDS = ("subagent_update", "state_update")


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> ev.StoredConversation:
    return stored_conversation(load_frames(RECORDING), tmp_path_factory.mktemp("config"))


# --- replay_complete ----------------------------------------------------------------------------


def test_the_replays_end_is_marked_on_the_session_and_on_each_child(
    conversation: ev.StoredConversation,
) -> None:
    d = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    before = d.attach(conversation)
    sent = d.notified(before)
    markers = [(i, s) for i, (s, u) in enumerate(sent) if u == MARKER]
    assert [s for _, s in markers] == [CHILD, RECORDED_SESSION], "one per session, the child's first"
    (child_at, _), (root_at, _) = markers
    assert all(s != CHILD for s, _ in sent[child_at + 1 :]), "after the child's whole history"
    replayed = [u["sessionUpdate"] for s, u in sent[:root_at] if s == RECORDED_SESSION]
    assert replayed[0] == "user_message" and "state_update" not in replayed, "history only before it"
    assert sent[-1][1]["sessionUpdate"] == "state_update", "the current state follows it"
    d.answered()
    check_transcript(d, d.effects, "v2")


def test_an_empty_history_is_marked_too() -> None:
    d = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    sent = d.notified(d.attach(ev.StoredConversation([], [], {})))
    assert sent == [
        (RECORDED_SESSION, MARKER),
        (RECORDED_SESSION, {"sessionUpdate": "state_update", "state": "idle", "background": []}),
    ]


def test_no_marker_without_a_replay_nor_for_a_replay_cut_short_nor_in_v1(
    conversation: ev.StoredConversation,
) -> None:
    without = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    assert MARKER not in [u for _, u in without.notified(without.attach())]
    cut_short = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    cut_short.handle(ev.Attaching())
    cut_short.handle(ev.Recall(conversation))
    # The replay waits at the shell's output, which is not read: its child, told after it, is
    # told whole (and marked) at the end.
    ended = cut_short.notified(cut_short.handle(ev.Recalled(complete=False)))
    root = [u for s, u in ended if s == RECORDED_SESSION]
    assert MARKER not in root, "a replay that could not finish is not marked"
    v1 = CoreDriver.for_client("v1-subagents", session_id=RECORDED_SESSION)
    assert MARKER not in [u for _, u in v1.notified(v1.attach(conversation))], "v1 has no such update"


def test_live_updates_wait_from_the_request_until_the_marker(conversation: ev.StoredConversation) -> None:
    """Claude Code says something while the client's resume is read and replayed: it comes after
    the replay's end, in the order it was said, never among the history."""
    d = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    d.prompt("[scenario:text] Hello")
    assert d.handle(ev.Attaching()) == []
    held = d.frames(text("said while the client re-attaches"), result())
    assert d.notified(held) == [], "nothing for the client meanwhile"
    replayed = d.handle(ev.Recall(conversation))
    assert "said while" not in str(d.notified(replayed))
    ended = d.notified(d.handle(ev.Recalled()))
    kinds = [u["sessionUpdate"] for _, u in ended]
    marker_at = kinds.index("replay_complete")
    said_at = next(i for i, (_, u) in enumerate(ended) if "said while" in str(u))
    assert marker_at < said_at and kinds[-1] == "state_update" and ended[-1][1]["state"] == "idle"


def test_the_first_part_of_a_replay_holds_live_updates_too(conversation: ev.StoredConversation) -> None:
    d = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    d.prompt("[scenario:text] Hello")
    d.handle(ev.Recall(conversation))
    assert d.notified(d.frame(text("said during the replay"))) == []


# --- the children after a replay: current, and cancellable, only once answered --------------------


def test_a_running_child_is_granted_cancel_only_after_the_answer(conversation: ev.StoredConversation) -> None:
    d = live_after_first_turn("agent_bg")
    before = d.notified(d.attach(conversation))
    granted = [u for _, u in before if u["sessionUpdate"] == "subagent_update" and u.get("capabilities")]
    assert granted == [], "what comes before the answer is history: it authorizes nothing"
    mirrored = [
        u for s, u in before if s == RECORDED_SESSION and u.get("sessionId") == CHILD and "state" in u
    ]
    assert mirrored[-1]["state"]["state"] == "running", "the child's current state comes before the answer"
    after = [(s, u) for s, u in d.notified(d.answered()) if u["sessionUpdate"] in CHILD_KINDS]
    assert after == [
        (CHILD, {"sessionUpdate": "state_update", "state": "running", "background": []}),
        (
            RECORDED_SESSION,
            {
                "sessionUpdate": "subagent_update",
                "sessionId": CHILD,
                "state": {"state": "running", "background": []},
                "capabilities": {"cancel": {}},
            },
        ),
    ]
    check_transcript(d, d.effects, "v2")


def test_without_a_replay_a_running_child_is_restated_cancellable_before_the_answer() -> None:
    d = live_after_first_turn("agent_bg")
    restated = d.notified(d.attach())
    intro = next(u for _, u in restated if u["sessionUpdate"] == "subagent_update")
    assert intro["capabilities"] == {"cancel": {}}
    after = [u for _, u in d.notified(d.answered()) if u["sessionUpdate"] in CHILD_KINDS]
    assert after == [], "nothing owed after the answer"


def test_resuming_without_replay_announces_a_running_foreground_child() -> None:
    """A subagent the turn waits on is not listed (it is foreground work), but it runs: a client
    that re-attaches hears of it before any of its traffic."""
    d = CoreDriver.for_client("v2", session_id="root")
    helper = TaskSpec("agent", "agent07", tool_use_id="toolu_helper")
    d.prompt("delegate")
    d.frames(helper.launch(), helper.started(backgrounded=False), tasks_changed([helper.level_entry()]))
    restated = d.attach()
    assert [u["sessionId"] for _, u in d.notified(restated) if u["sessionUpdate"] == "subagent_update"]
    d.answered()
    d.frame(text("the child works on", parent=helper.tool_use_id))
    check_transcript(d, d.effects, "v2")


# --- the rules checker knows the replay window ----------------------------------------------------


def test_the_rules_refuse_a_replay_without_its_marker_and_a_historical_grant() -> None:
    child_update = {
        "sessionUpdate": "subagent_update",
        "sessionId": "c",
        "title": "t",
        "state": {"state": "running", "background": []},
    }
    idle = {"sessionUpdate": "state_update", "state": "idle", "background": []}
    with pytest.raises(Violation, match="replay_complete"):
        check_updates([Reattach("s", replay=True), ("s", idle), Answered("s")], 2)
    with pytest.raises(Violation, match="replay_complete"):
        check_updates(
            [Reattach("s", replay=True), ("s", child_update), ("s", MARKER), ("s", idle), Answered("s")], 2
        )
    granting = {**child_update, "capabilities": {"cancel": {}}}
    with pytest.raises(Violation, match="history"):
        check_updates([Reattach("s", replay=True), ("s", granting)], 2)
    with pytest.raises(Violation, match="replay_complete"):
        check_updates([("s", MARKER)], 2)
    check_updates(
        [
            Reattach("s", replay=True),
            ("s", child_update),
            ("c", MARKER),
            ("s", MARKER),
            ("s", idle),
            Answered("s"),
            ("s", granting),
        ],
        2,
    )


def test_the_rules_refuse_a_user_message_in_a_child_session() -> None:
    announce = {
        "sessionUpdate": "subagent_update",
        "sessionId": "c",
        "state": {"state": "running", "background": []},
    }
    message = {"sessionUpdate": "user_message", "messageId": "m", "content": [{"type": "text", "text": "hi"}]}
    with pytest.raises(Violation, match="user"):
        check_updates([("s", announce), ("c", message)], 2)


def test_the_rules_refuse_traffic_of_a_child_not_announced_again() -> None:
    announce = {
        "sessionUpdate": "subagent_update",
        "sessionId": "c",
        "state": {"state": "running", "background": []},
    }
    chunk = {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m",
        "content": {"type": "text", "text": "x"},
    }
    with pytest.raises(Violation, match="announced"):
        check_updates([("s", announce), Reattach("s", replay=False), Answered("s"), ("c", chunk)], 2)


def test_a_wakeup_restated_after_a_resume_is_not_cancellable() -> None:
    d = CoreDriver(2, session_id="s")
    d.frames(
        tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600, "reason": "check CI"}),
        tool_result("toolu_wake", "Scheduled a wakeup in 600 seconds."),
        result(),
    )
    (restated, _) = d.updates_of(d.attach())
    assert restated["status"] == "pending" and "capabilities" not in restated
    d.answered()
    d.frame(result(origin={"kind": "task-notification", "subkind": "scheduled-trigger"}))
    check_transcript(d, d.effects, "v2")
