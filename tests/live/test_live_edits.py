"""End to end for file tools as an editor draws them: the real CLI edits and reads a file for the
scripted model (``edits``: read ``app.py``, edit one line, write it over, read three lines), and
the cards keep what a reviewer needs. As Zed (``ZedView`` applies Zed's rules): an edit's card
ends with the change's hunk, context lines included, located at the changed line, a ``Write``
shows the file's real old text in its permission request and its card, and a read's card is the
file in a code fence. Plain v1 (Toad's rules, through the schema check) and v2 clients see valid
messages of the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.live.test_live_zed import as_zed
from tests.support.acp_client import ClientRun, run_client
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, ZedView

pytestmark = pytest.mark.live

BEFORE = "".join(f"# line {i}\n" for i in range(1, 9)) + "def answer():\n    return 1\n"
CONTEXT = "# line 7\n# line 8\ndef answer():\n"
"""The three lines Claude Code keeps before the changed one (none follow it: the file ends)."""


def edited(workdir: Path) -> Path:
    app = workdir / "app.py"
    app.write_text(BEFORE)
    return app


def prompt(workdir: Path) -> dict[str, Any]:
    return {"op": "prompt", "id": "p", "text": f"[scenario:edits] Edit <dir>{workdir}</dir>"}


def diff(path: Path, old: str | None, new: str) -> dict[str, Any]:
    return {"type": "diff", "path": str(path), "oldText": old, "newText": new}


def test_zed_keeps_each_edit_as_a_hunk_at_its_line(live: LiveModel, workdir: Path) -> None:
    app = edited(workdir)
    run, view = as_zed(live, workdir, [prompt(workdir)])
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    assert app.read_text().endswith("    return 3\n")
    edit, write = view.calls("Edit app.py") + view.calls("Write app.py")
    assert (edit.status, write.status) == ("completed", "completed")
    assert edit.content == [diff(app, f"{CONTEXT}    return 1\n", f"{CONTEXT}    return 2\n")]
    assert write.content == [diff(app, f"{CONTEXT}    return 2\n", f"{CONTEXT}    return 3\n")]
    assert edit.locations == write.locations == [{"path": str(app), "line": 10}]


def test_a_loaded_session_shows_its_edits_as_they_were(live: LiveModel, workdir: Path) -> None:
    """Claude Code's stored conversation keeps each edit's structured result: the replay of a
    ``session/load`` draws the same hunks."""
    app = edited(workdir)
    first, _ = as_zed(live, workdir, [prompt(workdir)])
    load = {"op": "loadSession", "id": "load", "sessionId": first.session_id()}
    second = run_client(
        {
            "agent": live.agent(),
            "client": "v1",
            "capabilities": ZED_CAPABILITIES,
            "clientInfo": ZED_CLIENT_INFO,
            "cwd": str(workdir),
            "steps": [load],
            "autoSession": False,
        },
        timeout=60,
    )
    view = ZedView.of_run(second)
    assert not view.problems(), "\n".join(view.problems())
    (edit,) = view.calls("Edit app.py", first.session_id())
    assert edit.content == [diff(app, f"{CONTEXT}    return 1\n", f"{CONTEXT}    return 2\n")]
    assert edit.locations == [{"path": str(app), "line": 10}]


def test_a_write_over_a_file_asks_with_its_old_text(live: LiveModel, workdir: Path) -> None:
    app = edited(workdir)
    run, _ = as_zed(live, workdir, [prompt(workdir)])
    (asked,) = [
        r["params"]["toolCall"]
        for r in run.permission_requests
        if r["params"]["toolCall"]["title"] == "Write app.py"
    ]
    after_edit = BEFORE.replace("return 1", "return 2")
    assert asked["content"] == [diff(app, after_edit, after_edit.replace("return 2", "return 3"))]


def test_zed_draws_a_read_as_a_fenced_file_at_its_first_line(live: LiveModel, workdir: Path) -> None:
    app = edited(workdir)
    _, view = as_zed(live, workdir, [prompt(workdir)])
    whole, lines = view.calls("Read app.py") + view.calls("Read app.py (lines 3-6)")
    assert [item["content"]["text"] for item in whole.content] == [f"```py\n{BEFORE}```"]
    assert whole.locations == [{"path": str(app), "line": 1}]
    assert [item["content"]["text"] for item in lines.content] == [
        "```py\n# line 3\n# line 4\n# line 5\n# line 6\n```"
    ]
    assert lines.locations == [{"path": str(app), "line": 3}]


def test_a_plain_client_gets_the_same_cards(live: LiveModel, workdir: Path) -> None:
    """A v1 client that declares nothing, as Toad: valid messages (``run_client`` checks them
    against the schema and Toad's rules), the same hunk and fenced file."""
    app = edited(workdir)
    calls = cards(
        run_client({"agent": live.agent(), "client": "v1", "cwd": str(workdir), "steps": [prompt(workdir)]})
    )
    assert calls["Edit app.py"]["content"] == [
        diff(app, f"{CONTEXT}    return 1\n", f"{CONTEXT}    return 2\n")
    ]
    assert calls["Edit app.py"]["locations"] == [{"path": str(app), "line": 10}]
    assert calls["Read app.py"]["content"][0]["content"]["text"] == f"```py\n{BEFORE}```"


def test_a_v2_client_gets_each_edit_as_a_git_patch(live: LiveModel, workdir: Path) -> None:
    app = edited(workdir)
    steps = [prompt(workdir), {"op": "waitIdle"}]
    calls = cards(run_client({"agent": live.agent(), "client": "v2", "cwd": str(workdir), "steps": steps}))
    context = "".join(f" {line}\n" for line in CONTEXT.splitlines())
    head = f"diff --git {app} {app}\n--- {app}\n+++ {app}\n@@ -7,4 +7,4 @@\n"
    patch = f"{head}{context}-    return 1\n+    return 2\n"
    assert calls["Edit app.py"]["content"] == [
        {
            "type": "diff",
            "changes": [{"operation": "modify", "path": str(app), "fileType": "text"}],
            "patch": {"format": "git_patch", "text": patch},
        }
    ]
    assert calls["Edit app.py"]["locations"] == [{"path": str(app), "line": 10}]


def cards(run: ClientRun) -> dict[str, dict[str, Any]]:
    """Each tool call as its updates leave it, by title."""
    calls: dict[str, dict[str, Any]] = {}
    for update in run.raw_updates():
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], {}).update(update)
    return {call["title"]: call for call in calls.values()}
