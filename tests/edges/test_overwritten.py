"""The text of the file a ``Write`` would overwrite (``overwritten``): read only inside the
session's folders, and only a regular UTF-8 file of bounded size."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from claude_bg_acp.session.overwritten import LIMIT, read_inside, replaced_text


def test_a_file_in_the_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("old\n")
    assert read_inside(str(tmp_path / "a.py"), (str(tmp_path),)) == "old\n"
    assert read_inside(str(tmp_path / "new.py"), (str(tmp_path),)) is None, "a new file"


def test_nothing_outside_the_folders_is_read(tmp_path: Path) -> None:
    inside, outside = tmp_path / "work", tmp_path / "secret"
    inside.mkdir()
    outside.mkdir()
    (outside / "key").write_text("secret")
    (inside / "link").symlink_to(outside / "key")
    assert read_inside(str(outside / "key"), (str(inside),)) is None
    assert read_inside(str(inside / ".." / "secret" / "key"), (str(inside),)) is None
    assert read_inside(str(inside / "link"), (str(inside),)) is None, "a link out of the folder"
    assert read_inside(str(outside / "key"), (str(inside), str(outside))) == "secret", "an added folder"


def test_only_a_regular_utf8_file_of_bounded_size_is_read(tmp_path: Path) -> None:
    folders = (str(tmp_path),)
    os.mkfifo(tmp_path / "fifo")
    assert read_inside(str(tmp_path / "fifo"), folders) is None, "a FIFO is not waited on"
    assert read_inside(str(tmp_path), folders) is None
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    assert read_inside(str(tmp_path / "bin"), folders) is None
    (tmp_path / "big").write_text("x" * (LIMIT + 1))
    assert read_inside(str(tmp_path / "big"), folders) is None


def test_only_a_write_with_an_absolute_path_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("old\n")

    async def main() -> list[str | None]:
        folders = [str(tmp_path)]
        return [
            await replaced_text("Write", {"file_path": str(tmp_path / "a.py")}, folders),
            await replaced_text("Edit", {"file_path": str(tmp_path / "a.py")}, folders),
            await replaced_text("Write", {"file_path": "a.py"}, folders),
            await replaced_text("Write", {}, folders),
        ]

    assert anyio.run(main) == ["old\n", None, None, None]
