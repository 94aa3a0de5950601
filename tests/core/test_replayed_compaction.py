"""A compaction in a reopened conversation: the card it was live, completed, at its place.

The conversation is a real one: ``scripts/record_sdk_events.py compacted`` ran the CLI through a
turn, ``/compact`` and a turn after it, and kept what Claude Code stored (its compaction is a
``system`` record, ``compact_boundary``, whose ``compactMetadata`` has the ``trigger``,
``preTokens`` and ``postTokens``, and ``preservedMessages``: what it kept as it was, stored ahead
of it); it is read back as the agent reads it. Its replay is
validated against the schema and held to the background rules (and compared with a golden file
per client kind in ``tests/edges/test_history.py``); the card is compared with the one the same
recording's live frames give.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from claude_bg_acp.claude import store
from claude_bg_acp.core import events as ev
from claude_bg_acp.scripted_model.scenarios import FILLED
from claude_bg_acp.session import replay
from tests.support.driver import (
    CLIENTS,
    CWD,
    RECORDED_SESSION,
    CoreDriver,
    check_transcript,
    load_frames,
    store_recorded,
    stored_conversation,
)

RECORDING = "compacted"
BOUNDARY = "00000000-0000-4000-8000-000000000027"
"""The stored boundary's uuid (the live ``compact_boundary`` message has it too)."""
CARD = f"compaction-{BOUNDARY}"
AUTO_BOUNDARY = "00000000-0000-4000-8000-000000000028"
"""The ``autocompacted`` recording's boundary."""
BOUNDARIES = {RECORDING: BOUNDARY, "autocompacted": AUTO_BOUNDARY}
TOOL = "tool toolu_505f6a3eac8162b74a25628f"
"""The ``autocompacted`` recording's tool call, the one its compaction interrupted."""


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> ev.StoredConversation:
    return stored_conversation(load_frames(RECORDING), tmp_path_factory.mktemp("config"))


def recalled(client: str, *parts: ev.StoredConversation) -> list[dict[str, Any]]:
    """A client of this kind loads the session in a new process: what it is sent of the root."""
    driver = CoreDriver.for_client(client, session_id=RECORDED_SESSION)
    effects = driver.attach(*parts)
    check_transcript(driver, effects, client, recorded=True)
    return driver.updates_of(effects)


def stored_metadata(recording: str = RECORDING) -> dict[str, Any]:
    """The ``compactMetadata`` of the recording's stored boundary."""
    (record,) = [
        line["record"]
        for line in load_frames(recording)
        if line["dir"] == "stored" and line["record"].get("subtype") == "compact_boundary"
    ]
    assert record["uuid"] == BOUNDARIES[recording] and record["parentUuid"] is None
    metadata: dict[str, Any] = record["compactMetadata"]
    return metadata


def story(updates: list[dict[str, Any]]) -> list[str]:
    """What the updates say, a tool call's (but the card's) once where it opens."""
    told = [said(u) for u in updates if u["sessionUpdate"] not in ("replay_complete", "state_update")]
    return [text for n, text in enumerate(told) if not (text.startswith("tool ") and text in told[:n])]


def said(update: dict[str, Any]) -> str:
    """What a replayed update is, in a word: a prompt's text, the agent's text, the card's status,
    or the tool call it is of."""
    if str(update.get("toolCallId")).startswith("compaction-"):
        return f"card {update['status']}"
    if "toolCallId" in update:
        return f"tool {update['toolCallId']}"
    content = update.get("content")
    blocks = content if isinstance(content, list) else [content]
    return " ".join(block["text"] for block in blocks if isinstance(block, dict) and "text" in block)


@pytest.mark.parametrize("client", list(CLIENTS))
def test_the_card_comes_after_the_compact_that_asked_for_it(
    client: str, conversation: ev.StoredConversation
) -> None:
    """Claude Code stores the boundary (and its summary) ahead of the echo of ``/compact``; the
    replay shows the answer the compaction kept as it was (stored ahead of the boundary), the
    command, then the card, then what followed. The rest of what came before the boundary is the
    summary's, which is not replayed (nor is Claude Code's echo of the command's output)."""
    assert story(recalled(client, conversation)) == [
        "The command printed hello-fg.",
        "/compact",
        "card in_progress",
        "card completed",
        "[scenario:text] Say hello.",
        "Hello from the scripted model.",
    ]


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_automatic_compaction_is_replayed_where_it_happened_mid_turn(
    client: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The ``autocompacted`` recording: Claude Code compacted by itself after a tool's result,
    before the turn's answer, and stored the boundary there (then its summary, then the answer).
    It kept the turn's tool call and result as they were (``preservedMessages``, stored ahead of
    the boundary; not the prompt, which its summary covers), and links them back after the
    summary when it resumes the conversation. The replay shows that tool call, the card, the
    answer, the next prompt, as live, each once; the card is the live one, automatic, with the
    tokens the stored record says."""
    frames = load_frames("autocompacted")
    live = CoreDriver.for_client(client)
    answers = [u for u in live.updates_of(live.replay(frames)) if not u["sessionUpdate"].startswith("user_")]
    live_story = [said for said in story(answers) if said]
    at = live_story.index("card in_progress") - 1
    assert live_story[at:] == [
        TOOL,
        "card in_progress",
        "card completed",
        FILLED,
        "Hello from the scripted model.",
    ]
    conversation = stored_conversation(frames, tmp_path_factory.mktemp("config"))
    uuids = [stored.uuid for stored in conversation.messages]
    assert len(set(uuids)) == len(uuids)
    assert uuids[:3] == [*stored_metadata("autocompacted")["preservedMessages"]["uuids"], AUTO_BOUNDARY]
    updates = recalled(client, conversation)
    replayed = [u for u in updates if u.get("toolCallId") == TOOL.removeprefix("tool ")]
    assert replayed[-1]["status"] == "completed"
    assert story(updates) == [
        TOOL,
        "card in_progress",
        "card completed",
        FILLED,
        "[scenario:text] Say hello again.",
        "Hello from the scripted model.",
    ]
    card = [u for u in updates if str(u.get("toolCallId")).startswith("compaction-")]
    assert card[0]["rawInput"] == {"trigger": "auto"}
    (text,) = [c["content"]["text"] for c in card[-1]["content"]]
    assert text == "Compacted the conversation: 100,039 tokens before, 2,634 after."


@pytest.mark.parametrize("client", list(CLIENTS))
def test_the_replayed_card_is_the_live_one_with_the_stored_tokens(
    client: str, conversation: ev.StoredConversation
) -> None:
    """The same updates as live, but for the id (the boundary's: see the next test), with the
    tokens before and after that the stored record says."""
    live = CoreDriver.for_client(client)
    live_effects = live.replay(load_frames(RECORDING))
    live_card = [
        u for u in live.updates_of(live_effects) if str(u.get("toolCallId")).startswith("compaction-")
    ]
    updates = recalled(client, conversation)
    replayed = [u for u in updates if u.get("toolCallId") == CARD]
    assert [u | {"toolCallId": CARD} for u in live_card] == replayed
    metadata = stored_metadata()
    before, after = f"{metadata['preTokens']:,}", f"{metadata['postTokens']:,}"
    (text,) = [c["content"]["text"] for c in replayed[-1]["content"]]
    assert text == f"Compacted the conversation: {before} tokens before, {after} after."
    assert replayed[0]["rawInput"] == {"trigger": metadata["trigger"]}


def test_a_live_compaction_after_the_replay_is_a_card_of_its_own(conversation: ev.StoredConversation) -> None:
    """A stored compaction replayed in a new process and the next live one never share an id."""
    driver = CoreDriver.for_client("v1-plain", session_id=RECORDED_SESSION)
    driver.attach(conversation)
    driver.answered()
    live_compaction = [
        line["msg"]
        for line in load_frames(RECORDING)
        if line["dir"] == "in" and line["msg"].get("subtype") in ("status", "compact_boundary")
    ]
    driver.prompt("/compact")
    effects = driver.frames(*live_compaction)
    ids = {u["toolCallId"] for u in driver.updates_of(effects) if "toolCallId" in u}
    assert len(ids) == 1 and CARD not in ids
    check_transcript(driver, driver.effects, "v1-plain", recorded=True)


@pytest.mark.parametrize("size", [1, 2])
def test_a_replay_in_parts_is_the_replay_in_one(
    size: int, tmp_path: Path, conversation: ev.StoredConversation
) -> None:
    """Read a message at a time (the boundary a part of its own), the replay is the same."""
    with mock.patch.dict(os.environ, store_recorded(load_frames(RECORDING), tmp_path)):
        parts = list(replay._parts(RECORDED_SESSION, CWD, size))
    assert len(parts) > 2
    assert recalled("v2", *parts) == recalled("v2", conversation)


def entry(kind: str, uuid: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, **fields}


def user(uuid: str, content: str, **fields: Any) -> dict[str, Any]:
    return entry("user", uuid, message={"role": "user", "content": content}, **fields)


BOUNDARY_ENTRY = entry("system", "b", subtype="compact_boundary", compactMetadata={"trigger": "manual"})
SUMMARY = user("s", "This session is being continued from a previous conversation.", isCompactSummary=True)
PROMPT = user("p", "Go on.")


def test_only_a_compact_commands_boundary_moves_after_its_echo() -> None:
    """With instructions too; an automatic compaction, which no command asked for, stays where
    Claude Code stored it."""
    echo = user("c", "<command-name>/compact</command-name>\n<command-args>keep the tests</command-args>")
    moved = store._compaction_in_place([BOUNDARY_ENTRY, SUMMARY, echo, PROMPT])
    assert [e["uuid"] for e in moved] == ["s", "c", "b", "p"]
    automatic = store._compaction_in_place([BOUNDARY_ENTRY, SUMMARY, PROMPT])
    assert [e["uuid"] for e in automatic] == ["b", "s", "p"]
    other = user("o", "<command-name>/context</command-name>")
    assert [e["uuid"] for e in store._compaction_in_place([BOUNDARY_ENTRY, other])] == ["b", "o"]


def test_what_a_compaction_kept_comes_back_before_its_boundary_once() -> None:
    """Listed (``preservedMessages``) or only a segment walked from its tail up to its head (by
    ``parentUuid``); none when one of them is not stored, as Claude Code links none back then;
    one the chain holds already is not put back twice."""
    call = entry("assistant", "a", parentUuid="p", message={"role": "assistant", "content": []})
    result = user("r", "done", parentUuid="a")
    segment = {"headUuid": "a", "anchorUuid": "s", "tailUuid": "r"}
    walked = entry("system", "b", subtype="compact_boundary", compactMetadata={"preservedSegment": segment})
    listed = walked | {"compactMetadata": {"preservedMessages": {"anchorUuid": "s", "uuids": ["a", "r"]}}}
    stored = [PROMPT, call, result]
    for boundary in (walked, listed):
        put_back = store._preserved_put_back([boundary, SUMMARY], [*stored, boundary, SUMMARY])
        assert [e["uuid"] for e in put_back] == ["a", "r", "b", "s"]
        lost = store._preserved_put_back([boundary, SUMMARY], [PROMPT, result, boundary, SUMMARY])
        assert [e["uuid"] for e in lost] == ["b", "s"]
    again = store._preserved_put_back([listed, result], [*stored, listed, result])
    assert [e["uuid"] for e in again] == ["a", "b", "r"]
