"""How tool calls read: titles, locations and diffs from the tool's input (``tool_views``), and
their results through the core (every update schema-checked): images as images, an edit's hunk,
a read's file in a code fence, a ``Write``'s old text in its permission request."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import AskPermission
from claude_bg_acp.presenters.tool_views import describe, fenced
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


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/w/src/a.py", "src/a.py"),
        ("/w", "."),
        ("/elsewhere/a.py", "/elsewhere/a.py"),
        ("/w-other/a.py", "/w-other/a.py"),
        ("/w/../etc/passwd", "/w/../etc/passwd"),
    ],
)
def test_titles_name_paths_from_the_sessions_folder(path: str, shown: str) -> None:
    assert describe("Edit", {"file_path": path}, "/w").title == f"Edit {shown}"
    assert describe("Grep", {"pattern": "x", "path": path}, "/w").title == f'Grep "x" in {shown}'
    view = describe("Read", {"file_path": path, "offset": 3}, "/w")
    assert view.title == f"Read {shown} (from line 3)"
    assert view.locations == [{"path": path, "line": 3}], "locations stay absolute"


def test_a_write_over_a_file_shows_its_old_text() -> None:
    assert describe("Write", {"file_path": "/w/a.py", "content": "new\n"}, "/w", "old\n").content == [
        {"type": "diff", "path": "/w/a.py", "oldText": "old\n", "newText": "new\n"}
    ]


@pytest.mark.parametrize(
    ("path", "text", "fenced_text"),
    [
        ("/w/a.py", "x = 1\n", "```py\nx = 1\n```"),
        ("/w/Makefile", "all:", "```\nall:\n```"),
        ("/w/README.md", "```sh\nls\n```\n", "````md\n```sh\nls\n```\n````"),
        ("/w/a.weird ext", "x", "```\nx\n```"),
    ],
)
def test_a_file_is_fenced_longer_than_any_backticks_in_it(path: str, text: str, fenced_text: str) -> None:
    assert fenced(path, text) == fenced_text


EDIT_INPUT = {"file_path": "/w/app.py", "old_string": "    return 1\n", "new_string": "    return 2\n"}
EDITED = {
    "filePath": "/w/app.py",
    "structuredPatch": [
        {
            "oldStart": 8,
            "newStart": 8,
            "lines": [" # line 8", " def answer():", "-    return 1", "+    return 2"],
        }
    ],
}


def finished(version: int, name: str, tool_input: dict[str, Any], result: Any, **kw: Any) -> dict[str, Any]:
    """The update that ends a tool call of ``name``, checked against the version's schema."""
    driver = CoreDriver(version)
    driver.prompt("go")
    driver.frames(state_changed("running"), tool_use("toolu_f", name, tool_input))
    effects = driver.frame(tool_result("toolu_f", result, **kw))
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    [done] = driver.updates_of(effects)
    return done


@pytest.mark.parametrize("version", [1, 2])
def test_a_completed_edit_keeps_its_hunk_at_the_changed_line(version: int) -> None:
    done = finished(
        version,
        "Edit",
        EDIT_INPUT,
        "The file /w/app.py has been updated successfully.",
        tool_use_result=EDITED,
    )
    assert done["status"] == "completed"
    assert done["locations"] == [{"path": "/w/app.py", "line": 10}]
    (diff,) = done["content"]
    if version == 1:
        assert diff == {
            "type": "diff",
            "path": "/w/app.py",
            "oldText": "# line 8\ndef answer():\n    return 1\n",
            "newText": "# line 8\ndef answer():\n    return 2\n",
        }
    else:
        assert diff["patch"]["text"].endswith(
            "@@ -8,3 +8,3 @@\n # line 8\n def answer():\n-    return 1\n+    return 2\n"
        )


def test_a_completed_edit_without_hunks_keeps_the_diff_it_had() -> None:
    done = finished(1, "Edit", EDIT_INPUT, "The file /w/app.py has been updated successfully.")
    assert "content" not in done, "no content: the client keeps the request's diff"
    assert done["rawOutput"]["output"].startswith("The file /w/app.py")


def test_a_failed_edit_says_why() -> None:
    done = finished(1, "Edit", EDIT_INPUT, "String to replace not found in file.", is_error=True)
    assert done["status"] == "failed"
    assert done["content"] == [
        {"type": "content", "content": {"type": "text", "text": "String to replace not found in file."}}
    ]


@pytest.mark.parametrize("version", [1, 2])
def test_a_read_is_a_fenced_file_at_its_first_line(version: int) -> None:
    done = finished(version, "Read", {"file_path": "/w/a.py", "offset": 4}, "4\tx = 1\n5\ty = 2")
    assert done["content"] == [
        {"type": "content", "content": {"type": "text", "text": "```py\nx = 1\ny = 2\n```"}}
    ]
    assert done["locations"] == [{"path": "/w/a.py", "line": 4}]


@pytest.mark.parametrize("version", [1, 2])
def test_a_write_asks_with_the_text_it_replaces(version: int) -> None:
    driver = CoreDriver(version)
    driver.prompt("go")
    write = {"file_path": "/w/a.py", "content": "new\n"}
    driver.frames(state_changed("running"), tool_use("toolu_w", "Write", write))
    effects = driver.handle(ev.PermissionAsked(driver.ticket(), "Write", write, "toolu_w", None, "old\n"))
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    [asked] = [e.params for e in effects if isinstance(e, AskPermission)]
    call = asked["toolCall"] if version == 1 else asked["subject"]["toolCall"]
    if version == 1:
        assert call["content"] == [
            {"type": "diff", "path": "/w/a.py", "oldText": "old\n", "newText": "new\n"}
        ]
    else:
        assert call["content"][0]["patch"]["text"].endswith("@@ -1,1 +1,1 @@\n-old\n+new\n")
