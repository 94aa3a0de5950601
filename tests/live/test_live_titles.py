"""Every thread has a short title, end to end: the real CLI, the scripted model, and a client
that declares exactly Zed's capabilities, its transcript read by Zed's rules (``ZedView``) and
every message validated against the v1 schema.

A new thread is titled by its first prompt during its first turn (no model request), and
shows that title in ``session/list`` and when a second agent process loads it; a thread
renamed with ``/rename`` shows Claude Code's title everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.live.test_live_zed import as_zed
from tests.support.acp_client import ClientRun
from tests.support.zed import ZedView

pytestmark = pytest.mark.live

FIRST_LINE = (
    "[scenario:text] Look into why the parser drops the last line of a file that has no newline "
    "at its end, please"
)
TITLE = "[scenario:text] Look into why the parser drops the last line of a file that has…"


def loaded(live: LiveModel, workdir: Path, session_id: str, title: str) -> ZedView:
    """What a second agent process shows of the thread when Zed loads it."""
    steps: list[dict[str, Any]] = [
        {"op": "loadSession", "sessionId": session_id, "name": "main"},
        {"op": "waitFor", "update": "session_info_update", "match": {"title": title}},
    ]
    _, view = as_zed(live, workdir, steps, autoSession=False)
    return view


def listed_titles(run: ClientRun, step: str) -> dict[str, str | None]:
    return {s["sessionId"]: s.get("title") for s in run.response(step)["sessions"]}


def test_a_thread_is_titled_by_its_first_prompt_in_its_first_turn(live: LiveModel, workdir: Path) -> None:
    run, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "id": "p", "text": f"{FIRST_LINE}\nIt happens with every file."},
            {"op": "prompt", "text": "[scenario:text] And another thing."},
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
        ],
    )
    session_id = run.session_id()
    thread = view.threads[session_id]
    assert [title for _, title in thread.titled] == [TITLE], "titled once, by the first prompt"
    assert len(TITLE) == 80
    (answered_at, _) = view.prompt_answers[0]
    assert thread.titled[0][0] < answered_at, "during the first turn"
    assert live.model.messages_requests()[0].body["messages"][0]["content"], "the model got the prompt"
    assert len(live.model.messages_requests()) == 2, "no model request made the title"
    assert listed_titles(run, "list") == {session_id: TITLE}
    assert loaded(live, workdir, session_id, TITLE).threads[session_id].title == TITLE


def test_a_renamed_thread_keeps_claude_codes_title(live: LiveModel, workdir: Path) -> None:
    run, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:text] Hello there."},
            {"op": "prompt", "text": "/rename Parser refactor"},
            {"op": "waitFor", "update": "session_info_update", "match": {"title": "Parser refactor"}},
            {"op": "prompt", "text": "[scenario:text] Go on."},
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
        ],
    )
    session_id = run.session_id()
    titles = [title for _, title in view.threads[session_id].titled]
    assert titles == ["[scenario:text] Hello there.", "Parser refactor"]
    assert listed_titles(run, "list") == {session_id: "Parser refactor"}
    assert loaded(live, workdir, session_id, "Parser refactor").threads[session_id].title == "Parser refactor"
