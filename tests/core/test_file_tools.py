"""What Claude Code's file tools did, read from their results (``claude.file_tools``), and the
hunks as each protocol version carries them (``presenters.diffs``). The structured results are
the shapes CLI 2.1.332 returned to the live tests (``test_live_edits``)."""

from __future__ import annotations

from typing import Any

from claude_bg_acp.claude.file_tools import Edited, FileRead, Hunk, edited, file_read, review
from claude_bg_acp.presenters.diffs import git_patch, v2

PATH = "/w/app.py"
EDIT_RESULT = {
    "filePath": PATH,
    "oldString": "    return 1\n",
    "newString": "    return 2\n",
    "originalFile": "# line 7\n# line 8\ndef answer():\n    return 1\n",
    "structuredPatch": [
        {
            "oldStart": 7,
            "oldLines": 4,
            "newStart": 7,
            "newLines": 4,
            "lines": [" # line 7", " # line 8", " def answer():", "-    return 1", "+    return 2"],
        }
    ],
    "userModified": False,
    "replaceAll": False,
}


def test_an_edit_is_its_hunks_with_their_context() -> None:
    change = review("Edit", {"file_path": PATH}, "The file has been updated successfully.", EDIT_RESULT)
    assert isinstance(change, Edited)
    (hunk,) = change.hunks
    assert hunk.text("-") == "# line 7\n# line 8\ndef answer():\n    return 1\n"
    assert hunk.text("+") == "# line 7\n# line 8\ndef answer():\n    return 2\n"
    assert change.line == 10, "the first changed line, after three lines of context"


def test_a_hunk_that_changes_its_first_line_is_at_its_start() -> None:
    hunk = Hunk(1, 1, ("-a", "+b", " c"))
    assert (hunk.changed_line, hunk.text("-"), hunk.text("+")) == (1, "a\nc\n", "b\nc\n")


def test_the_no_newline_marker_is_not_a_line() -> None:
    patch = [{"oldStart": 3, "newStart": 4, "lines": [" x", "-y", "\\ No newline at end of file", "+z"]}]
    (hunk,) = edited(PATH, {"structuredPatch": patch}).hunks
    assert hunk == Hunk(3, 4, (" x", "-y", "+z"))


def test_a_write_that_created_its_file_holds_its_text() -> None:
    created: dict[str, Any] = {
        "type": "create",
        "filePath": PATH,
        "content": "new\n",
        "structuredPatch": [],
        "originalFile": None,
    }
    assert review("Write", {"file_path": PATH}, "File created", created) == Edited(PATH, created="new\n")
    assert Edited(PATH, created="new\n").line == 1


def test_an_edit_without_hunks_keeps_what_its_request_showed() -> None:
    """No structured result (a message with several results), or an empty patch (Claude Code
    leaves it empty when the file was too large to diff): no hunks, no line."""
    assert review("Edit", {"file_path": PATH}, "updated", None) == Edited(PATH)
    update: dict[str, Any] = {"type": "update", "filePath": PATH, "structuredPatch": [], "originalFile": None}
    assert review("Write", {"file_path": PATH}, "updated", update) == Edited(PATH)
    assert Edited(PATH).line is None


def test_a_read_loses_its_line_numbers() -> None:
    assert file_read(PATH, "1\tdef foo():\n2\t    return 1\n3\t") == FileRead(
        PATH, "def foo():\n    return 1\n", 1
    )
    assert file_read(PATH, "   98\tx\t1\n   99\ty") == FileRead(PATH, "x\t1\ny", 98), "padded, tabs kept"


def test_a_read_that_is_not_numbered_lines_stays_text() -> None:
    assert file_read(PATH, "<system-reminder>Warning: the file exists but is empty</system-reminder>") is None
    assert file_read(PATH, "1\tx\n\n<system-reminder>note</system-reminder>") is None
    assert file_read(PATH, "") is None
    assert review("Bash", {"command": "ls"}, "1\tx", None) is None


def test_v2_carries_a_hunk_as_a_git_patch_at_its_lines() -> None:
    diff = v2(PATH, "a\nb\n", "a\nc\n", (7, 8))
    assert diff["changes"] == [{"operation": "modify", "path": PATH, "fileType": "text"}]
    assert diff["patch"] == {
        "format": "git_patch",
        "text": f"diff --git {PATH} {PATH}\n--- {PATH}\n+++ {PATH}\n@@ -7,2 +8,2 @@\n a\n-b\n+c\n",
    }


def test_v2_carries_a_new_file_from_dev_null() -> None:
    patch = git_patch(PATH, None, "x\ny", (1, 1))
    assert patch == (
        f"diff --git {PATH} {PATH}\nnew file mode 100644\n--- /dev/null\n+++ {PATH}\n"
        "@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
    )
    assert v2(PATH, None, "x", None)["changes"][0]["operation"] == "add"


def test_v2_leaves_out_the_patch_of_a_change_whose_place_is_unknown() -> None:
    assert "patch" not in v2(PATH, "return 1", "return 2", None)
