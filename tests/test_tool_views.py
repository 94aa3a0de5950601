"""How tool calls read: titles, locations and diffs from the tool's input (``tool_views``), and
images in a tool's result shown as images, through the core (every update schema-checked)."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.presenters.tool_views import describe
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import state_changed, tool_result, tool_use
from tests.support.schema import validate_transcript

PNG = "iVBORw0KGgo="


@pytest.mark.parametrize(
    ("tool_input", "title", "line"),
    [
        ({"file_path": "/w/a.py", "offset": 10, "limit": 20}, "Read /w/a.py (lines 10-29)", 10),
        ({"file_path": "/w/a.py", "offset": 5}, "Read /w/a.py (from line 5)", 5),
        ({"file_path": "/w/a.py", "limit": 3}, "Read /w/a.py (lines 1-3)", None),
        ({"file_path": "/w/a.py"}, "Read /w/a.py", None),
    ],
)
def test_a_read_names_its_lines(tool_input: dict[str, Any], title: str, line: int | None) -> None:
    view = describe("Read", tool_input)
    assert (view.title, view.kind) == (title, "read")
    assert view.locations == [{"path": "/w/a.py"} | ({"line": line} if line else {})]


@pytest.mark.parametrize(
    ("name", "tool_input", "title", "locations"),
    [
        (
            "Grep",
            {"pattern": "TODO", "path": "/w/src", "glob": "*.py"},
            'Grep "TODO" in /w/src (*.py)',
            [{"path": "/w/src"}],
        ),
        ("Grep", {"pattern": "TODO"}, 'Grep "TODO"', None),
        ("Glob", {"pattern": "**/*.md", "path": "/w"}, 'Glob "**/*.md" in /w', [{"path": "/w"}]),
    ],
)
def test_a_search_names_its_pattern_and_where_it_looks(
    name: str, tool_input: dict[str, Any], title: str, locations: list[dict[str, Any]] | None
) -> None:
    view = describe(name, tool_input)
    assert (view.title, view.kind, view.locations) == (title, "search", locations)


def test_an_mcp_tool_is_named_by_its_server_and_tool() -> None:
    assert describe("mcp__github__create_issue", {"title": "x"}).title == "github: create_issue"
    assert describe("mcp__my_server__do__it", {}).title == "my_server: do__it"


def test_leaving_plan_mode_shows_the_plan() -> None:
    view = describe("ExitPlanMode", {"plan": "1. Parse\n2. Test"})
    assert view.kind == "switch_mode"
    assert view.content == [{"type": "content", "content": {"type": "text", "text": "1. Parse\n2. Test"}}]
    assert describe("ExitPlanMode", {}).content is None


def test_every_edit_of_a_multi_edit_is_a_diff() -> None:
    edits = [
        {"old_string": "a", "new_string": "b"},
        {"old_string": "c", "new_string": "d", "replace_all": True},
    ]
    view = describe("MultiEdit", {"file_path": "/w/a.py", "edits": edits})
    assert view.kind == "edit" and view.locations == [{"path": "/w/a.py"}]
    assert view.content == [
        {"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"},
        {"type": "diff", "path": "/w/a.py", "oldText": "c", "newText": "d"},
    ]


@pytest.mark.parametrize(
    ("mode", "title", "diff"),
    [
        ("replace", "Edit a cell of /w/n.ipynb (cell c1)", True),
        ("insert", "Insert a cell into /w/n.ipynb (cell c1)", True),
        ("delete", "Delete a cell of /w/n.ipynb (cell c1)", False),
    ],
)
def test_a_notebook_edit_shows_the_new_source(mode: str, title: str, diff: bool) -> None:
    tool_input = {"notebook_path": "/w/n.ipynb", "cell_id": "c1", "new_source": "print(1)", "edit_mode": mode}
    view = describe("NotebookEdit", tool_input)
    assert (view.title, view.kind) == (title, "edit")
    expected = [{"type": "diff", "path": "/w/n.ipynb", "oldText": "", "newText": "print(1)"}]
    assert view.content == (expected if diff else None)


@pytest.mark.parametrize("version", [1, 2])
def test_images_in_a_tool_result_are_shown_as_images(version: int) -> None:
    driver = CoreDriver(version)
    driver.prompt("look")
    driver.frames(state_changed("running"), tool_use("toolu_img", "Read", {"file_path": "/w/p.png"}))
    picture = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    effects = driver.frame(tool_result("toolu_img", [{"type": "text", "text": "the file"}, picture]))
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    [done] = driver.updates_of(effects)
    assert done["status"] == "completed"
    assert done["content"] == [
        {"type": "content", "content": {"type": "text", "text": "the file"}},
        {"type": "content", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
    ]
