"""Opening a task's output file: the one way the live tailer and a replay both read it.

Only a task's own output is read for a client. :func:`open_output` opens the file at a path
only if that path lies below ``root`` (Claude Code's temp directory, ``conventions.tasks_base``),
and then only by walking down from ``root`` one component at a time, each opened relative to
the one before and none followed if it is a symbolic link (Claude Code links a subagent's
transcript at its task's path; a link in a directory's place would lead out); a ``..`` counts
where it stands in the path, so it never leads above ``root``. The file itself is opened only
if it is a regular file: its type is looked at before it is opened (a FIFO, a device, a socket
or a directory is refused without being opened, so nothing blocks and nothing happens on open)
and checked again on the descriptor (the path may have changed in between); it is opened
non-blocking all the same. (Windows has neither ``O_NOFOLLOW`` nor directory descriptors:
there the path is looked at without following a link, opened, and the file opened must be the
one looked at.) Which path is the task's is the caller's to say: the tailer follows
the one Claude Code names in a hand-off or derives from its task, a replay only the task's own
file in its session's task directory.

:func:`latest` reads the end of an open file; :func:`recalled` opens one for a replay.
"""

from __future__ import annotations

import errno
import logging
import os
import stat

from claude_bg_acp.platform import host

log = logging.getLogger(__name__)


# Looked up when used: Windows has none of these flags.
def _directory_flags() -> int:
    return os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _file_flags() -> int:
    return os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotOutput(OSError):
    """The path does not hold a task's own output; it is not read."""


def open_output(path: str, root: str | None) -> int:
    """A read-only descriptor on the task output file at ``path``; see the module doc.

    Raises ``FileNotFoundError`` (or ``NotADirectoryError``) while it does not exist, and
    :class:`NotOutput` for what is not a regular file below ``root``. ``root`` None: anywhere
    (the directories on the way are then followed, the file itself is not).
    """
    if not host().posix:
        return _open_checked(path, root)
    dir_fd, name = _parent(path, root)
    try:
        _check(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode, path)
        try:
            fd = os.open(name, _file_flags(), dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # it became a link since the look
                raise NotOutput(exc.errno, _LINK, path) from None
            raise
    finally:
        os.close(dir_fd)
    try:
        _check(os.fstat(fd).st_mode, path)
    except NotOutput:
        os.close(fd)
        raise
    return fd


def latest(fd: int, limit: int) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of the open file, and whether they start it."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    return read_at(fd, size - start, start), start == 0


def read_at(fd: int, length: int, offset: int) -> bytes:
    """Up to ``length`` bytes at ``offset`` (Windows has no ``pread``: a seek, then a read, which
    is the same as long as one task reads the descriptor, as here)."""
    if host().posix:
        return os.pread(fd, length, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, length)


def recalled(path: str, root: str) -> int | None:
    """:func:`open_output` for a replay: None when there is none to read (gone, or not a task's
    own output, which is logged)."""
    try:
        return open_output(path, root)
    except NotOutput as exc:
        log.warning("not reading %s: %s", path, exc.strerror)
    except OSError:
        pass
    return None


_LINK = "a symbolic link (a subagent's transcript, say)"


def _open_checked(path: str, root: str | None) -> int:
    """Windows: the path is looked at, opened, and the file opened must be the one looked at."""
    if root is not None and _below(os.path.realpath(path), root) is None:
        raise NotOutput(errno.EACCES, f"outside Claude Code's task directory {root}", path)
    seen = os.lstat(path)
    reparse_tag: int = getattr(seen, "st_reparse_tag", 0)  # a junction, say
    if stat.S_ISLNK(seen.st_mode) or reparse_tag:
        raise NotOutput(errno.ELOOP, _LINK, path)
    _check(seen.st_mode, path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0))
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise NotOutput(errno.EACCES, "replaced while it was opened", path)
    return fd


def _check(mode: int, path: str) -> None:
    if stat.S_ISLNK(mode):
        raise NotOutput(errno.ELOOP, _LINK, path)
    if not stat.S_ISREG(mode):
        raise NotOutput(errno.EINVAL, "not a regular file", path)


def _parent(path: str, root: str | None) -> tuple[int, str]:
    """A descriptor on the directory that holds ``path``'s file, reached from ``root``, and the
    file's name."""
    full = os.path.abspath(path)
    if root is None:
        directory, name = os.path.split(full)
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), name
    below = _below(full, root)
    if below is None:
        raise NotOutput(errno.EACCES, f"outside Claude Code's task directory {root}", path)
    top, parts = below
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            fd, parent = _subdirectory(fd, part, path), fd
            os.close(parent)
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _below(full: str, root: str) -> tuple[str, list[str]] | None:
    """``root`` as ``full`` names it (as given, or resolved: Claude Code names its files from
    the resolved directory), and the components of ``full`` below it; None when outside."""
    for top in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        prefix = top.rstrip(os.sep) + os.sep
        if full.startswith(prefix):
            return top, full[len(prefix) :].split(os.sep)
    return None


def _subdirectory(dir_fd: int, name: str, path: str) -> int:
    try:
        return os.open(name, _directory_flags(), dir_fd=dir_fd)
    except OSError as exc:
        # Linux says ENOTDIR for a link opened as a directory without following it; others ELOOP.
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and stat.S_ISLNK(
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        ):
            raise NotOutput(errno.ELOOP, "a symbolic link on the way", path) from None
        raise
