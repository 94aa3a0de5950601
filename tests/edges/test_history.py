"""A stored conversation replayed through the core (``session/load``, ``session/resume``), and a
client re-attaching to a live one.

The conversation is a real one: ``scripts/record_sdk_events.py conversation`` ran the CLI
through three turns (a background shell that finished, a thought, a background subagent) and
kept what Claude Code stored; ``stored_conversation`` reads it back with the SDK's readers, as
the agent does. Its replay, and those of ``compacted`` (a ``/compact`` between two turns) and
``autocompacted`` (Claude Code's own compaction mid-turn: see
``tests/core/test_replayed_compaction.py``), are compared with a golden file per client kind
(``UPDATE_GOLDEN=1`` rewrites them), validated against the schema, and held to the background
rules.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from claude_agent_sdk._internal.sessions import _parse_transcript_entries
from claude_agent_sdk.types import UserMessage
from hypothesis import given
from hypothesis import strategies as st

from claude_bg_acp.claude import conventions, store
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Notify, ReadTitle
from claude_bg_acp.core.errors import Refused
from claude_bg_acp.core.events import StoredMessage
from claude_bg_acp.core.prompts import from_claude_content, to_claude_content
from claude_bg_acp.core.terminals import RESTATE_LIMIT
from claude_bg_acp.session import replay
from tests.support.driver import (
    CLIENTS,
    CWD,
    FIXTURES,
    RECORDED_SESSION,
    CoreDriver,
    assert_golden,
    check_transcript,
    effect_json,
    joined,
    live_after_first_turn,
    load_frames,
    store_recorded,
    stored_conversation,
)
from tests.support.frames import result, text
from tests.support.handoff import shown_hand_offs

RECORDING = "conversation"
SHELL = "bash01"
CHILD = "agent01"
CHILD_BASH = "toolu_738df585b7cb3111d77ff759"
CHILD_RESULT = "00000000-0000-4000-8000-000000000074"


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> ev.StoredConversation:
    return stored_conversation(load_frames(RECORDING), tmp_path_factory.mktemp("config"))


def recalled(
    client: str, conversation: ev.StoredConversation, recorded: bool = True
) -> tuple[CoreDriver, list[Effect]]:
    """A client of this kind loads the session in a new process: the replay, then the state
    (``recorded``: the conversation as recorded, whose work all ended)."""
    driver = CoreDriver.for_client(client, session_id=RECORDED_SESSION)
    effects = driver.attach(conversation)
    check_transcript(driver, effects, client, recorded)
    return driver, effects


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("recording", [RECORDING, "compacted", "autocompacted"])
def test_replay_matches_golden(client: str, recording: str, tmp_path: Path) -> None:
    _, effects = recalled(client, stored_conversation(load_frames(recording), tmp_path))
    golden = FIXTURES / "golden" / "recalled" / f"{recording}.{client}.jsonl"
    assert_golden(golden, [effect_json(e, RECORDED_SESSION) for e in effects])


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_replay_shows_no_hand_off(client: str, conversation: ev.StoredConversation) -> None:
    """A background shell's and a subagent's launch show what they were asked to do, never
    Claude Code's words to the model (its output file's path, the agent's id), as live."""
    _, effects = recalled(client, conversation)
    assert not shown_hand_offs(effect.update.wire() for effect in effects if isinstance(effect, Notify))


def test_a_prompt_is_found_in_the_stored_conversation_only_where_it_is_stored(tmp_path: Path) -> None:
    """``store.holds_prompt`` (a keyed retry after a restart) on the recorded transcript: a
    user message is found by its uuid; an assistant message's is not, though its line and the
    next one's (its parent) name it; nor is any uuid in another session."""
    with mock.patch.dict(os.environ, store_recorded(load_frames(RECORDING), tmp_path)):
        messages = store.conversation_entries(RECORDED_SESSION, CWD)
        [prompt, *_] = [entry["uuid"] for entry in messages if entry["type"] == "user"]
        [answer, *_] = [entry["uuid"] for entry in messages if entry["type"] == "assistant"]
        assert store._holds_prompt(RECORDED_SESSION, CWD, prompt)
        assert not store._holds_prompt(RECORDED_SESSION, CWD, answer)
        assert any(entry.get("parentUuid") == answer for entry in messages)
        assert not store._holds_prompt("00000000-0000-4000-8000-000000000001", CWD, prompt)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ENTRIES = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "attachment", "progress", "summary"])},
    optional={"uuid": st.text(max_size=8) | st.integers(), "message": JSON_VALUES},
)
LINES = st.one_of(
    ENTRIES.map(lambda entry: json.dumps(entry, separators=(",", ":"))),
    ENTRIES.map(json.dumps),  # spaced, and with every non-ASCII character escaped
    JSON_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False)),
    st.sampled_from(["", "   ", "{", "not json", '{"type":"user","uuid":"\\ud800"}', '["\\udfff"]']),
    st.text(max_size=20).filter(lambda text: "\n" not in text),
)


@given(lines=st.lists(LINES, max_size=8), ending=st.sampled_from(["", "\n", "\r\n", "\r"]))
def test_a_transcript_is_decoded_as_the_sdk_decodes_it(lines: list[str], ending: str) -> None:
    """The messages of a transcript, read as bytes, are the lines the SDK's reader takes from the
    file it reads as text, with the values it decodes (pydantic's parser decodes them, ``json``
    what it refuses: a lone surrogate)."""
    content = ("\n".join(lines) + ending).encode()
    as_text = io.TextIOWrapper(io.BytesIO(content), encoding="utf-8").read()  # as ``read_text``
    assert store.transcript_entries(content) == _parse_transcript_entries(as_text)


def test_a_line_that_is_not_utf8_is_skipped_and_the_others_read() -> None:
    """Written by hand: Claude Code writes UTF-8, so only a damaged file has such a line (the
    SDK's reader, which decodes the whole file first, reads none of it)."""
    good = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    content = b'{"type":"user","uuid":"u0","message":"\xff"}\n' + json.dumps(good).encode() + b"\n"
    assert store.transcript_entries(content) == [good]


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("size", [1, 2])
def test_a_replay_in_parts_is_the_replay_in_one(client: str, size: int, tmp_path: Path) -> None:
    """Read ``size`` messages at a time, the conversation replays exactly as in one go (its
    golden): the child, which comes with the first part, is replayed where its Agent tool use
    is, several parts on; the shell's output comes with the part that hands it off; the notes
    of later parts end what earlier parts handed off."""
    with mock.patch.dict(os.environ, store_recorded(load_frames(RECORDING), tmp_path)):
        parts = list(replay._parts(RECORDED_SESSION, CWD, size))
    assert len(parts) == -(-len(joined(parts).messages) // size) > 2
    assert parts[0].children and parts[0].notes and not any(p.children or p.notes for p in parts[1:])
    assert not parts[0].outputs and [list(p.outputs) for p in parts if p.outputs] == [[SHELL]]
    _, whole = recalled(client, joined(parts))
    driver = CoreDriver.for_client(client, session_id=RECORDED_SESSION)
    in_parts = driver.attach(*parts)
    assert [effect_json(e, RECORDED_SESSION) for e in in_parts] == [
        effect_json(e, RECORDED_SESSION) for e in whole
    ]


def test_v2_replay_shows_the_ended_shell_the_child_and_no_live_work(
    conversation: ev.StoredConversation,
) -> None:
    driver, effects = recalled("v2", conversation)
    root = driver.updates_of(effects)
    users = [u for u in root if u["sessionUpdate"] == "user_message"]
    assert [u["content"][0]["text"] for u in users] == [
        "[scenario:bg_completed] Run a background job.",
        "[scenario:thinking] Think, then answer.",
        "[scenario:agent_bg] Start a background helper.",
    ], "Claude Code's task notifications are not the user's messages"
    stored_ids = {m.uuid for m in conversation.messages}
    assert all(u["messageId"] in stored_ids for u in users), "prompts keep the ids they are stored under"
    terminal = [u for u in root if u["sessionUpdate"] in ("terminal_update", "terminal_output_chunk")]
    assert terminal[0] == {
        "sessionUpdate": "terminal_update",
        "terminalId": SHELL,
        "command": "echo hello-from-bg; sleep 2; echo bg-finished",
        "cwd": "/tmp/claude-bg-acp/work",
    }, "no cancel for a shell of the past"
    assert base64.b64decode(terminal[1]["data"]) == b"hello-from-bg\nbg-finished\n"
    assert terminal[2]["exitStatus"] == {"exitCode": 0, "signal": None}
    assert any(u["sessionUpdate"] == "agent_thought_chunk" for u in root)
    (announced, ended) = [u for u in root if u["sessionUpdate"] == "subagent_update"]
    assert announced["sessionId"] == CHILD and "capabilities" not in announced
    assert ended["state"] == {"state": "idle", "stopReason": "end_turn", "background": []}
    child = driver.updates_of(effects, session_id=CHILD)
    assert [u["sessionUpdate"] for u in child][:2] == ["session_message", "state_update"]
    assert "subagent one finished its work" in json.dumps(child)
    assert root[-1] == {"sessionUpdate": "state_update", "state": "idle", "background": []}


def test_without_child_sessions_a_subagents_work_shows_in_its_parent(
    conversation: ev.StoredConversation,
) -> None:
    driver, effects = recalled("v1-plain", conversation)
    assert {e.session_id for e in effects if isinstance(e, Notify)} == {RECORDED_SESSION}
    root = driver.updates_of(effects)
    assert not [u for u in root if u["sessionUpdate"] == "subagent_update"]
    assert "subagent one finished its work" in json.dumps(root)
    assert "[subagent:one] Do the small job" not in json.dumps(
        [u for u in root if "user" in u["sessionUpdate"]]
    )


def test_a_background_subagent_replayed_in_its_parent_ends_as_it_did_live(
    conversation: ev.StoredConversation,
) -> None:
    """Its Agent call shows what it was asked, then its words, and ends with its report (the
    notification's ``<result>``), as live; never Claude Code's hand-off."""
    driver, effects = recalled("v1-plain", conversation)
    root = driver.updates_of(effects)
    agent = [u for u in root if u.get("toolCallId") == "toolu_3b4123d56758dc63a96aef79"]
    assert [u["status"] for u in agent] == ["in_progress"] * 3 + ["completed"]
    assert agent[-1]["content"][0]["content"]["text"] == "subagent one finished its work"
    assert agent[-1]["rawOutput"] == {"output": "subagent one finished its work"}
    assert "agentId" not in json.dumps(root)


def test_work_whose_notification_the_replay_never_reaches_is_told_before_its_end(
    conversation: ev.StoredConversation,
) -> None:
    """The notes come with the first part; should the message that carried one not be replayed,
    what waited for it is told before the replay's end is marked."""
    kept = [m for m in conversation.messages if f"<task-id>{CHILD}</task-id>" not in str(m.content)]
    assert len(kept) == len(conversation.messages) - 1
    driver, effects = recalled("v1-plain", dataclasses.replace(conversation, messages=kept))
    agent = driver.updates_of(effects)
    ended = [u for u in agent if u.get("toolCallId") == "toolu_3b4123d56758dc63a96aef79"][-1]
    assert ended["status"] == "completed" and "subagent one finished" in json.dumps(ended["content"])


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_background_subagents_work_is_replayed_between_its_launch_and_its_notification(
    client: str, conversation: ev.StoredConversation
) -> None:
    """Live, the parent said it launched the subagent before the subagent worked, and answered
    its notification after: replayed in another order, the two messages would be adjacent, and
    a client that ignores ``messageId`` glues them ("…I will report back.BG_DONE_ACK…")."""
    driver, effects = recalled(client, conversation)
    sent = json.dumps([update for _, update in driver.notified(effects)])
    launched = sent.index("I will report back.")
    assert launched < sent.index("from-subagent") < sent.rindex("BG_DONE_ACK")
    assert launched < sent.index("subagent one finished its work") < sent.rindex("BG_DONE_ACK")


def test_a_recall_leaves_live_work_to_the_live_session(conversation: ev.StoredConversation) -> None:
    """The client re-attaches while the shell of the first turn still runs: the replay does not
    end it, and the current state restates it with its output so far, cancellable, then lists it."""
    frames = load_frames(RECORDING)
    first_result = next(
        i for i, f in enumerate(frames) if f["dir"] == "in" and f["msg"].get("type") == "result"
    )
    driver = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    driver.replay(frames[: first_result + 1])
    driver.output(SHELL, b"hello-from-bg\n")
    replayed = driver.recall(conversation)
    assert not [u for u in driver.updates_of(replayed) if u.get("terminalId") == SHELL], (
        "a live terminal is not replayed"
    )
    handoff = next(
        u
        for u in driver.updates_of(replayed)
        if u.get("content") and u["content"][0].get("terminalId") == SHELL
    )
    assert handoff["status"] == "completed"
    restated = driver.updates_of(driver.resync())
    assert restated == [
        {
            "sessionUpdate": "terminal_update",
            "terminalId": SHELL,
            "command": "echo hello-from-bg; sleep 2; echo bg-finished",
            "cwd": "/tmp/claude-bg-acp/work",
            "output": {"data": base64.b64encode(b"hello-from-bg\n").decode()},
            "capabilities": {"cancel": {}},
        },
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "background": [{"type": "terminal", "terminalId": SHELL}],
        },
    ]


def test_a_restated_terminal_shows_its_latest_output() -> None:
    frames = load_frames(RECORDING)
    first_result = next(
        i for i, f in enumerate(frames) if f["dir"] == "in" and f["msg"].get("type") == "result"
    )
    driver = CoreDriver.for_client("v2", session_id=RECORDED_SESSION)
    driver.replay(frames[: first_result + 1])
    for index in range(40):
        driver.output(SHELL, bytes([65 + index % 26]) * 16384)
    (terminal, _) = driver.updates_of(driver.resync())
    shown = base64.b64decode(terminal["output"]["data"])
    assert len(shown) == RESTATE_LIMIT and shown.endswith(bytes([65 + 39 % 26]) * 16384)


def test_the_title_goes_out_when_claude_code_names_the_conversation() -> None:
    driver = CoreDriver(2, session_id="titled")
    driver.prompt("hello")
    effects = driver.frames(text("hi"), result())
    assert ReadTitle() in effects, "an AI title may have been written: look"
    assert driver.updates_of(driver.handle(ev.TitleRead(None, False, None))) == []
    assert driver.updates_of(driver.handle(ev.TitleRead("hello", False, "2026-12-01T00:00:00.000Z"))) == []
    named = driver.handle(ev.TitleRead("Greeting", True, "2026-12-01T00:00:00.000Z"))
    assert driver.updates_of(named) == [
        {"sessionUpdate": "session_info_update", "title": "Greeting", "updatedAt": "2026-12-01T00:00:00.000Z"}
    ]
    again = driver.handle(ev.TitleRead("Greeting", True, "2026-12-01T00:00:01.000Z"))
    assert driver.updates_of(again) == []
    driver.prompt("again")
    assert ReadTitle() not in driver.frames(text("hi"), result()), "named: only a rename is looked for"
    renamed = {
        "type": "system",
        "subtype": "session_title_changed",
        "title": "New",
        "uuid": "u",
        "session_id": "s",
    }
    assert driver.frame(renamed) == [ReadTitle()]


def test_clear_is_refused_before_anything_changes() -> None:
    driver = CoreDriver(1, session_id="kept")
    with pytest.raises(Refused) as refused:
        driver.prompt("  /clear")
    assert refused.value.field == "prompt" and driver.effects == []
    driver.prompt("/clearly not a command")
    assert driver.effects, "only the command itself is refused"


def test_claude_codes_own_messages_are_told_from_the_users() -> None:
    assert conventions.user_text("Fix the parser") == "Fix the parser"
    echo = (
        "<command-message>hello</command-message>\n<command-name>/hello</command-name>\n"
        "<command-args>Bob</command-args>"
    )
    assert conventions.user_text(echo) == "/hello Bob"
    for own in (
        "<task-notification>\n<task-id>x</task-id>",
        "[Request interrupted by user]",
        "<local-command-stdout>x",
    ):
        assert conventions.user_text(own) is None
    (note,) = conventions.task_notes(
        "<task-notification>\n<task-id>b1</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n"
        "<status>failed</status>\n<summary>failed with exit code 3</summary>\n</task-notification>"
    )
    assert note == conventions.TaskNote("b1", "toolu_1", "failed", "failed with exit code 3")


def test_a_stored_prompt_comes_back_as_it_was_sent() -> None:
    sent: list[dict[str, Any]] = [
        {"type": "text", "text": "Look at this"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a.py", "text": "print(1)\n"}},
    ]
    assert from_claude_content(to_claude_content(sent)) == sent


def test_a_listed_tool_call_is_restated_whole_and_cancellable() -> None:
    driver = live_after_first_turn("monitor")
    restated = driver.updates_of(driver.resync())
    call, state = restated
    assert call["sessionUpdate"] == "tool_call_update" and call["status"] == "in_progress"
    assert call["title"].startswith("Monitor") and call["rawInput"]["description"] == "tick watcher"
    assert call["capabilities"] == {"cancel": {}}
    assert state["background"] == [{"type": "tool_call", "toolCallId": call["toolCallId"]}]


def test_a_listed_child_is_introduced_then_its_state_follows() -> None:
    driver = live_after_first_turn("agent_bg")
    effects = driver.attach()
    root = driver.updates_of(effects)
    intro, mirrored, state = root
    assert intro == {
        "sessionUpdate": "subagent_update",
        "sessionId": "agent01",
        "title": "general-purpose",
        "description": "background helper",
        "capabilities": {"cancel": {}},
    }, "who it is and that it can be cancelled: its state comes whole, with its list, next"
    assert mirrored["state"] == {"state": "running", "background": []}
    assert driver.updates_of(effects, session_id="agent01")[0]["sessionUpdate"] == "state_update"
    assert state["background"] == [{"type": "subagent", "sessionId": "agent01"}]
    check_transcript(driver, driver.effects, "v2")


# --- what history has, and what it lacks (issue 22) -----------------------------------------------


def with_child_messages(
    conversation: ev.StoredConversation, edit: Callable[[list[StoredMessage]], list[StoredMessage]]
) -> ev.StoredConversation:
    (child,) = conversation.children
    return dataclasses.replace(
        conversation, children=[dataclasses.replace(child, messages=edit(child.messages))]
    )


def test_a_childs_later_message_is_an_incoming_session_message_from_nobody_known(
    conversation: ev.StoredConversation,
) -> None:
    """A subagent's task continued (``SendMessage``) is written to its transcript as a user message:
    replayed, it is a message the child received, not the user's prompt, and no sender is made up."""
    first = conversation.children[0].messages[0].message
    assert isinstance(first, UserMessage)
    later = StoredMessage("later-0001", dataclasses.replace(first, content="next task"), "next task")
    more = with_child_messages(conversation, lambda messages: [*messages, later])
    for client in ("v2", "v1-subagents"):
        driver, effects = recalled(client, more)
        child = driver.updates_of(effects, session_id=CHILD)
        assert not [u for u in child if u["sessionUpdate"] in ("user_message", "user_message_chunk")]
        (received,) = [u for u in child if u.get("messageId") == "later-0001"]
        assert received == {
            "sessionUpdate": "session_message",
            "messageId": "later-0001",
            "recipientSessionId": CHILD,
            "content": [{"type": "text", "text": "next task"}],
        }
    driver, effects = recalled("v1-plain", more)
    assert "next task" not in json.dumps(driver.updates_of(effects)), "nor the user's, children hidden"


def test_a_tool_call_history_leaves_without_a_result_is_left_unfinished(
    conversation: ev.StoredConversation,
) -> None:
    """The child's Bash call has no result in what is stored: that proves no end, so none is sent."""
    cut = with_child_messages(conversation, lambda messages: [m for m in messages if m.uuid != CHILD_RESULT])
    for client in ("v2", "v1-subagents", "v1-plain"):
        driver, effects = recalled(client, cut, recorded=False)
        call = [u for _, u in driver.notified(effects) if u.get("toolCallId") == CHILD_BASH]
        assert call and all(u.get("status") in (None, "pending", "in_progress") for u in call), client


def test_a_missing_childs_conversation_and_shell_output_are_told(conversation: ev.StoredConversation) -> None:
    """Claude Code kept neither the subagent's conversation nor the shell's output file: the
    replay says so (a ``notice``), after the history, and does not make anything up for them."""
    bare = dataclasses.replace(conversation, children=[], outputs={})
    driver, effects = recalled("v2", bare)
    root = driver.updates_of(effects)
    (notice,) = [u for u in root if u["sessionUpdate"] == "notice"]
    assert notice["severity"] == "info" and notice["title"]
    assert CHILD in notice["description"] and SHELL in notice["description"]
    kinds = [u["sessionUpdate"] for u in root]
    assert kinds.index("replay_complete") < kinds.index("notice") < kinds.index("state_update")
    told = CoreDriver(1, {"session": {"notices": {}}}, session_id=RECORDED_SESSION)
    told_effects = told.attach(bare)
    assert [u for u in told.updates_of(told_effects) if u["sessionUpdate"] == "notice"]
    untold, untold_effects = recalled("v1-subagents", bare)
    kinds = [u["sessionUpdate"] for _, u in untold.notified(untold_effects)]
    assert "notice" not in kinds, "v1 only when the client takes notices"
