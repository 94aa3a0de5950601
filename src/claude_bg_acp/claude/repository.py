"""A folder's git repository as Claude Code finds it, and the root it keys the repository's trust by.

How it works. The pinned CLI finds a folder's repository by walking up from the folder to the
first one whose ``.git`` is a directory or a file (a link to one counts when its text is a safe
path): ``git_root``. It records a repository's trust under its *canonical* root
(``canonical_root``): the root itself, except in a linked worktree, whose ``.git`` file names
its administrative folder ``<common dir>/worktrees/<id>``. There it is the main repository's
root (the common dir's parent; a bare repository's common dir itself), but only when every link
agrees: the administrative folder's ``commondir`` names the common dir it lies in, and its
``gitdir`` points back at this very ``.git``. A ``.git`` file that a cloned repository carries
cannot borrow another folder's trust that way: the folder it names does not point back. No path
on the way may be a link loop, a FIFO or device, an unreadable one or a network spelling
(``//host``, ``/net/<host>``, ``/Network``, ``/.vol``); else the root stands for itself. Each
rule is the CLI's, read from its code (``findGitRoot`` and ``findCanonicalGitRoot``, 2.1.332);
like it, this reads files (bounded, never blocking) and runs no git. The CLI's further checks of
macOS spellings (another user's ``/home`` automount, case and firmlink folding) act on macOS
alone and are not made here.
"""

from __future__ import annotations

import errno
import ntpath
import os
import re
import stat
from collections.abc import Iterator

from claude_bg_acp.claude import store_files

LINK_FILE_LIMIT = 64 << 10
"""Bytes of a ``commondir`` or ``gitdir`` file the CLI reads (a larger one names nothing); a
``.git`` file is read to the same bound (the CLI reads it whole, but no git writes a larger one,
and one that large names no repository here, which only asks more)."""
LINK_DEPTH = 40
"""Links the CLI follows through a path before it gives up on it."""
JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    map(chr, range(0x2000, 0x200B))
)
"""What JavaScript's ``trim()`` strips, as the CLI trims the files it reads."""
UNC, DEVICE = re.compile(r"[\\/]{2}"), re.compile(r"[\\/]\?\?[\\/]")
MACOS_ROOTS = re.compile(r"\.(?:vol|file|nofollow|resolve)", re.IGNORECASE)
INVISIBLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def git_root(folder: str) -> str | None:
    """The root of the repository that holds ``folder`` (absolute), as the CLI finds it. (The
    CLI does not look for a ``.git`` at the top of an automount map, where there is none.)"""
    current = os.path.normpath(folder)
    while True:
        if _holds_git(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def canonical_root(root: str) -> str:
    """The folder whose trust record stands for the repository at ``root`` (see the module
    docstring): the main repository's root for a linked worktree whose links agree, else
    ``root`` itself."""
    try:
        text = _read_text(os.path.join(root, ".git"))
    except OSError:
        return root  # a .git directory, or nothing readable: a repository's own root
    found = None if text is None else _main_root(root, text)
    return root if found is None else found


def _main_root(root: str, text: str) -> str | None:
    """The main repository's root named by the ``.git`` file ``text`` of the worktree at ``root``,
    or None unless every link agrees."""
    line = text.strip(JS_SPACE)
    if not line.startswith("gitdir:"):
        return None
    named = line[len("gitdir:") :].strip(JS_SPACE)
    if _network(named, root) or _walk_refused(named, root):
        return None
    admin = _resolve(root, named)
    common_named = _link_file(admin, "commondir")
    if common_named is None or _network(common_named, admin) or _walk_refused(common_named, admin):
        return None
    common = _resolve(admin, common_named)
    if os.path.dirname(admin) != os.path.join(common, "worktrees"):
        return None
    back = _link_file(admin, "gitdir")
    if back is None or _network(back, root) or _walk_refused(back, admin, root):
        return None
    if any("\\" in path for path in (root, admin, back, common)):
        return None
    try:
        points_back = os.path.realpath(_resolve(admin, back), strict=True) == os.path.join(
            os.path.realpath(root, strict=True), ".git"
        )
    except OSError:
        return None
    if not points_back:
        return None
    if os.path.basename(common) != ".git":
        # A bare repository's worktree: the common dir is the repository, unless it holds a .git.
        return None if _holds_git(common) else common
    return os.path.dirname(common)


def _link_file(admin: str, name: str) -> str | None:
    """The trimmed text of ``admin/name``, a plain file reached by a safe path, else None."""
    path = os.path.join(admin, name)
    if not _walkable(path, admin) or _kind(path) in ("symlink", "special", "other"):
        return None
    try:
        text = _read_text(path)
    except OSError:
        return None
    return None if text is None else text.strip(JS_SPACE)


def _read_text(path: str) -> str | None:
    """A regular file's text, through a link too (None if it holds more than
    ``LINK_FILE_LIMIT`` bytes)."""
    try:
        data = store_files.read_regular(path, LINK_FILE_LIMIT, follow=True)
    except store_files.NotRegular as exc:
        if exc.errno == errno.EFBIG:
            return None
        raise
    return data.decode("utf-8", errors="replace")


def _holds_git(folder: str) -> bool:
    """Whether ``folder`` holds a ``.git`` directory or file (through a safe link, too)."""
    path = os.path.join(folder, ".git")
    try:
        seen = os.lstat(path)
        if stat.S_ISLNK(seen.st_mode):
            target = _link_text(path)
            if target is None or _network(target, folder) or _walk_refused(target, folder):
                return False
            seen = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(seen.st_mode) or stat.S_ISREG(seen.st_mode)


def _walk_refused(path: str, base: str, home: str | None = None) -> bool:
    """Whether ``path`` (relative to ``base``) is refused, as spelled or once resolved: see
    ``_walkable``; network hosts are compared with ``home``'s (``base`` unless given)."""
    home = base if home is None else home
    spelled = path if path.startswith("/") else f"{base}/{path}"
    if not _walkable(spelled, home):
        return True
    resolved = _resolve(base, path)
    return resolved != spelled and not _walkable(resolved, home)


def _walkable(path: str, home: str, links: int = LINK_DEPTH) -> bool:
    """Whether each folder on the way to ``path`` (absolute) is absent, a file, a folder or a link
    whose target is walkable in turn: no FIFO or device, nothing unreadable, no link loop, no
    network spelling other than on ``home``'s host."""
    if links <= 0:
        return False
    parts = [part for part in path.split("/") if part]
    reached = "/"
    for index, part in enumerate(parts):
        if part == ".":
            continue
        if part == "..":
            reached = os.path.dirname(reached)
            continue
        reached = os.path.join(reached, part)
        if _macos_root(reached) or _other_host(reached, home) or _first_is(reached, "network"):
            return False
        kind = _kind(reached)
        if kind in ("special", "other"):
            return False
        if kind == "symlink":
            target = _link_text(reached)
            if target is None or _network(target, os.path.dirname(reached)):
                return False
            where = target if target.startswith("/") else f"{os.path.dirname(reached)}/{target}"
            rest = "/".join(parts[index + 1 :])
            return _walkable(f"{where.rstrip('/')}/{rest}" if rest else where, home, links - 1)
    return True


def _network(path: str, base: str) -> bool:
    """Whether ``path`` (relative to ``base``) is spelled the way the CLI never follows: a UNC or
    device path (``//host``, ``/??/``), a macOS ``/Network``, ``/net`` or ``/.vol``-like root, or
    another host's automount (``/net/<host>``) than ``base``'s."""
    spellings = (path, _resolve(base, path))
    return any(
        _unc(spelling)
        or _other_host(spelling, base)
        or _first_is(spelling, "network")
        or [name.lower() for name in _stack(spelling)] == ["net"]
        or _macos_root(spelling)
        for spelling in spellings
    )


def _unc(path: str) -> bool:
    """Whether ``path`` is a Windows network or device spelling (Node reads it as one anywhere)."""
    return bool(
        UNC.match(path) or DEVICE.match(path) or ("??" in path and DEVICE.match(ntpath.normpath(path)))
    )


def _stacks(path: str) -> Iterator[list[str]]:
    """The folders ``path`` (absolute) passes through, one list of names after each step, with
    ``.`` and ``..`` taken lexically as the CLI takes them."""
    if not path.startswith("/"):
        return
    names: list[str] = []
    for name in path.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if names:
                names.pop()
            continue
        names.append(name)
        yield list(names)


def _stack(path: str) -> list[str]:
    stacks = list(_stacks(path))
    return stacks[-1] if stacks else []


def _first_is(path: str, name: str) -> bool:
    return any(len(names) == 1 and names[0].lower() == name for names in _stacks(path))


def _macos_root(path: str) -> bool:
    return any(len(names) == 1 and MACOS_ROOTS.fullmatch(names[0]) for names in _stacks(path))


def _host(path: str) -> str | None:
    """The host of an automounted network path (``/net/<host>``, ``/Network/Servers/<host>``)."""
    for names in _stacks(path):
        folded = [INVISIBLE.sub("", name).lower() for name in names]
        if (len(names) == 2 and folded[0] == "net") or (
            len(names) == 3 and folded[:2] == ["network", "servers"]
        ):
            return re.sub("[A-Z]+", lambda upper: upper.group().lower(), names[-1])
    return None


def _other_host(path: str, home: str) -> bool:
    host = _host(path)
    return host is not None and host != _host(home)


def _kind(path: str) -> str:
    try:
        seen = os.lstat(path)
    except OSError as exc:
        return "absent" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else "other"
    if stat.S_ISLNK(seen.st_mode):
        return "symlink"
    if stat.S_ISREG(seen.st_mode):
        return "file"
    return "dir" if stat.S_ISDIR(seen.st_mode) else "special"


def _link_text(path: str) -> str | None:
    """A link's target, when it is text the CLI would follow (UTF-8, no NUL)."""
    try:
        raw = os.readlink(os.fsencode(path))
    except OSError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def _resolve(base: str, path: str) -> str:
    """``path`` made absolute against ``base`` and normalised, as Node's ``path.resolve`` does
    (which, unlike ``normpath``, keeps no leading ``//``)."""
    resolved = os.path.normpath(os.path.join(base, path))
    return "/" + resolved.lstrip("/") if resolved.startswith("//") else resolved
