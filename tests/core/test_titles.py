"""A thread's title: made from the first prompt at once, Claude Code's own wherever it has one,
the same live, in a listing and after a load.

The core is driven as the live session drives it (``CoreDriver``); the listing reads real
transcripts the recorded conversation left, with the records Claude Code appends to name a
conversation (``custom-title`` for ``/rename``, ``ai-title``, ``summary``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest

from claude_bg_acp.claude import listing, store
from claude_bg_acp.claude.prompt_text import LIMIT, from_prompt, short
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import ReadTitle
from tests.support.driver import CWD, RECORDED_SESSION, CoreDriver, load_frames, store_recorded
from tests.support.frames import result, text

FIRST_PROMPT = "[scenario:bg_completed] Run a background job."


def titles(effects: list[Any], driver: CoreDriver) -> list[str]:
    return [update["title"] for update in driver.updates_of(effects, "session_info_update")]


@pytest.mark.parametrize(
    ("content", "title"),
    [
        ("Fix the parser\nIt drops the last line.", "Fix the parser"),
        ("\n\n   Fix   the parser  \n", "Fix the parser"),
        ("word " * 30, "word " * 15 + "word…"),
        ("x" * 100, "x" * (LIMIT - 1) + "…"),
        ("a " + "x" * 100, "a " + "x" * (LIMIT - 3) + "…"),
        ("/rename Parser refactor", None),
        ("", None),
        (
            [
                {"type": "text", "text": '<context ref="file:///src/a.py">\nimport os\n</context>'},
                {"type": "text", "text": "@file:///src/b.py"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                {"type": "text", "text": "Why does this fail?\nSee above."},
            ],
            "Why does this fail?",
        ),
        ([{"type": "text", "text": "@file:///src/b.py"}], "b.py"),
    ],
)
def test_a_prompt_makes_a_short_title(content: Any, title: str | None) -> None:
    made = from_prompt(content)
    assert made == title
    assert made is None or (len(made) <= LIMIT and "\n" not in made)


def test_the_first_prompt_titles_a_new_conversation_at_once() -> None:
    driver = CoreDriver(2, session_id="new")
    _, command = driver.prompt("/model")
    assert titles(command, driver) == [], "a command is no first prompt"
    driver.frames(text("ok"), result())
    _, effects = driver.prompt(
        [
            {"type": "resource_link", "uri": "file:///src/a.py", "name": "a.py"},
            {"type": "text", "text": "Fix the parser\nIt drops the last line."},
        ]
    )
    assert titles(effects, driver) == ["Fix the parser"]
    _, later = driver.prompt("Something else")
    assert titles(later, driver) == []
    ended = driver.frames(text("done"), result())
    assert ReadTitle() in ended, "Claude Code may name it yet"
    assert titles(driver.handle(ev.TitleRead("Fix the parser", False, None)), driver) == []
    named = driver.handle(ev.TitleRead("Parser work", True, "2026-12-01T00:00:00.000Z"))
    assert titles(named, driver) == ["Parser work"]
    assert titles(driver.handle(ev.TitleRead("Fix the parser", False, None)), driver) == []
    driver.prompt("More")
    assert ReadTitle() not in driver.frames(text("done"), result()), "named by Claude Code"


def test_a_stored_conversation_is_titled_by_the_store_not_by_the_next_prompt() -> None:
    driver = CoreDriver(2, session_id="stored")
    driver.handle(ev.ClaudeResuming())
    _, effects = driver.prompt("Go on")
    assert titles(effects, driver) == []
    assert titles(driver.handle(ev.TitleRead("Fix the parser", False, None)), driver) == ["Fix the parser"]


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[Path]:
    """The recorded conversation's transcript, in a store named by ``CLAUDE_CONFIG_DIR``."""
    env = store_recorded(load_frames("conversation"), tmp_path)
    with mock.patch.dict(os.environ, env):
        yield next(tmp_path.glob(f"projects/*/{RECORDED_SESSION}.jsonl"))


def appended(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a") as transcript:
        for record in records:
            transcript.write(
                json.dumps({**record, "sessionId": RECORDED_SESSION}, separators=(",", ":")) + "\n"
            )


def listed_title(path: Path) -> str | None:
    return listing.described(str(path)).title


def test_a_stored_title_is_claude_codes_else_the_first_prompts(recorded: Path) -> None:
    assert listed_title(recorded) == FIRST_PROMPT
    assert anyio.run(store.title, RECORDED_SESSION, CWD) == (FIRST_PROMPT, False, mock.ANY)
    appended(recorded, {"type": "summary", "summary": "Summarised", "leafUuid": "x"})
    assert listed_title(recorded) == "Summarised"
    appended(recorded, {"type": "ai-title", "aiTitle": "An AI title"})
    assert listed_title(recorded) == "An AI title"
    appended(recorded, {"type": "custom-title", "customTitle": "Renamed " + "y" * 100})
    title, own, _ = anyio.run(store.title, RECORDED_SESSION, CWD)
    assert own and title == short("Renamed " + "y" * 100) and title is not None and len(title) == LIMIT


def test_a_first_prompt_stored_with_context_is_titled_by_its_first_typed_line(recorded: Path) -> None:
    lines = recorded.read_text().splitlines()
    prompt = FIRST_PROMPT
    content = [
        {"type": "text", "text": '<context ref="file:///src/a.py">\nimport os\n</context>'},
        {"type": "text", "text": "Explain this file\nin detail, please."},
    ]
    edited = [
        line.replace(json.dumps(prompt), json.dumps(content)) if prompt in line else line for line in lines
    ]
    assert edited != lines
    recorded.write_text("\n".join(edited) + "\n")
    assert listed_title(recorded) == "Explain this file"
