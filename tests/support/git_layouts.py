"""Git repositories and linked worktrees made by the real ``git``, for the trust tests: the
layouts whose trust Claude Code keys by the main repository's root (``claude.repository``), and
``BORROWERS``: folders whose ``.git`` names a trusted repository's folders without being one of
its worktrees, each in a way Claude Code refuses.

``git`` runs with no user or system config of the machine's, so that a hook or template of
the machine's own cannot change what it makes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def main_repository(path: Path) -> Path:
    """A repository at ``path`` with one commit, holding ``sub/deeper``."""
    (path / "sub" / "deeper").mkdir(parents=True)
    (path / "sub" / "deeper" / "file").write_text("tracked\n")
    git("init", "--quiet", "--initial-branch=main", cwd=path)
    git("add", ".", cwd=path)
    git("commit", "--quiet", "--message=first", cwd=path)
    return path


def worktree(repository: Path, path: Path) -> Path:
    """A linked worktree of ``repository`` (a main or a bare one) at ``path``, on a branch of its own."""
    git("worktree", "add", "--quiet", "-b", path.name, str(path), cwd=repository)
    return path


def admin_folder(repository: Path, tree: Path) -> Path:
    """The administrative folder git keeps for the worktree ``tree`` of the main ``repository``."""
    return repository / ".git" / "worktrees" / tree.name


Layout = Callable[[Path, Path, Path], Path]
"""Given a main repository, a worktree of it and the test's folder, makes a folder whose
``.git`` tries to borrow the main repository's trust, and returns it."""


def _names_another_worktree(main: Path, tree: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "cloned"
    folder.mkdir()
    (folder / ".git").write_text(f"gitdir: {admin_folder(main, tree)}\n")
    return folder


def _names_the_main_repository(main: Path, tree: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "cloned"
    folder.mkdir()
    (folder / ".git").write_text(f"gitdir: {main / '.git'}\n")
    return folder


def _claims_the_main_repository(main: Path, tree: Path, tmp_path: Path) -> Path:
    """A folder of its own that points back, whose ``commondir`` names the main repository's:
    it does not lie in that repository's ``worktrees``."""
    folder, admin = tmp_path / "cloned", tmp_path / "cloned" / "fake" / "worktrees" / "x"
    admin.mkdir(parents=True)
    (folder / ".git").write_text(f"gitdir: {admin}\n")
    (admin / "commondir").write_text(f"{main / '.git'}\n")
    (admin / "gitdir").write_text(f"{folder / '.git'}\n")
    return folder


def _moved(main: Path, tree: Path, tmp_path: Path) -> Path:
    return Path(shutil.move(tree, tmp_path / "moved"))


def _points_back_through_a_link(main: Path, tree: Path, tmp_path: Path) -> Path:
    back = admin_folder(main, tree) / "gitdir"
    (tmp_path / "elsewhere").write_text(back.read_text())
    back.unlink()
    back.symlink_to(tmp_path / "elsewhere")
    return tree


def _points_back_through_a_fifo(main: Path, tree: Path, tmp_path: Path) -> Path:
    """Read without blocking: a FIFO is no file."""
    back = admin_folder(main, tree) / "gitdir"
    back.unlink()
    os.mkfifo(back)
    return tree


def _spelled(text: Callable[[Path, Path], str]) -> Layout:
    """The worktree's ``.git`` file names its own administrative folder, spelled ``text`` (of
    that folder and the test's folder, which holds a link to itself, ``loop``)."""

    def layout(main: Path, tree: Path, tmp_path: Path) -> Path:
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        (tree / ".git").write_text(f"gitdir: {text(admin_folder(main, tree), tmp_path)}\n")
        return tree

    return layout


BORROWERS: dict[str, Layout] = {
    "names another worktree's folder": _names_another_worktree,
    "names the main repository's .git": _names_the_main_repository,
    "claims the main repository from a folder of its own": _claims_the_main_repository,
    "a moved worktree": _moved,
    "points back through a link": _points_back_through_a_link,
    "points back through a FIFO": _points_back_through_a_fifo,
    "spelled through a link loop": _spelled(lambda admin, tmp: f"{tmp}/loop/../{admin.relative_to(tmp)}"),
    "spelled through another host's automount": _spelled(lambda admin, _: f"/net/otherhost/../..{admin}"),
    "spelled as a network path": _spelled(lambda admin, _: f"/{admin}"),
    "spelled through a macOS volume root": _spelled(lambda admin, _: f"/.vol/..{admin}"),
}
