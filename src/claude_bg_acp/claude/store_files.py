"""The files of Claude Code's store and of the summary cache, under the rules the tailer keeps.

Anything that can create a file in the store (the model's own Bash, say) can put there a FIFO,
a device or a link named like a conversation. So what is read is read only if it is a regular
file reached without following a link at its own place: ``regular`` looks before a reader of
the SDK's opens the path, and ``open_regular`` opens without blocking (``O_NONBLOCK``: a FIFO
opens at once) and without following a link (``O_NOFOLLOW``), then checks the type of what it
opened. A path swapped between a look and the SDK's ``open`` can still block that thread; that
is what ``run`` bounds.

``run`` is how the store's work leaves the event loop: in threads of its own, at most
``THREADS`` at a time, each a daemon (a thread blocked for ever in ``open`` neither holds the
worker threads every other session needs nor keeps the agent from exiting), and waited for
``BOUND`` seconds at most (then ``StoreTimeout``). A thread that never returns keeps its place
until it does: the store's own work waits for one, nothing else does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

T = TypeVar("T")

THREADS = 4
BOUND = 120.0
"""Seconds a piece of the store's work may take: reading the longest conversation takes a few."""


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, a device, a directory or a link)."""


class StoreTimeout(OSError):
    """The store's work did not end within ``BOUND`` seconds (a file that never answers)."""


def regular(path: str) -> bool:
    """Whether ``path`` is a regular file itself, not a link to one (nothing is opened)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def holds_something(path: str) -> bool:
    """Whether ``path`` is a regular file itself (not a link) with something in it."""
    try:
        seen = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(seen.st_mode) and seen.st_size > 0


def open_regular(path: str, flags: int = os.O_RDONLY, dir_fd: int | None = None, follow: bool = False) -> int:
    """A descriptor on the regular file at ``path``, opened without blocking or following a
    link (``follow``: through one, for a file its owner may link, as Claude Code reads it);
    ``NotRegular`` for anything else. Blocking is switched back on for reading."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    nofollow = 0 if follow else getattr(os, "O_NOFOLLOW", 0)
    careful = nofollow | nonblock | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | careful, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "a symbolic link", path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, "not a regular file", path)
    if nonblock:
        os.set_blocking(fd, True)
    return fd


def read_regular(path: str, limit: int | None = None, follow: bool = False) -> bytes:
    """The whole regular file at ``path``; with ``limit``, only if it holds at most that many
    bytes (else ``NotRegular``: too large to be what it claims)."""
    fd = open_regular(path, follow=follow)
    with os.fdopen(fd, "rb") as file:
        if limit is None:
            return file.read()
        if os.fstat(fd).st_size > limit:
            raise NotRegular(errno.EFBIG, f"larger than {limit} bytes", path)
        return file.read(limit)


def write_atomically(directory: str, name: str, data: bytes) -> None:
    """Write ``name`` in ``directory`` whole or not at all (a temporary file, mode 0600, renamed
    over it), and only if ``directory`` is a directory and not a link (``NotRegular``)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    if not hasattr(os, "O_DIRECTORY"):  # Windows: no directory descriptors
        if os.path.islink(directory):
            raise NotRegular(errno.ELOOP, "a symbolic link", directory)
        _write_in(None, os.path.join(directory, name), data, os.path.join(directory, "." + name))
        return
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotRegular(exc.errno, "a symbolic link", directory) from None
        raise
    try:
        _write_in(dir_fd, name, data, f".{name}-{secrets.token_hex(8)}")
    finally:
        os.close(dir_fd)


def _write_in(dir_fd: int | None, name: str, data: bytes, temporary: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    fd = os.open(temporary, flags | getattr(os, "O_BINARY", 0), 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        os.unlink(temporary, dir_fd=dir_fd)
        raise


_limiters: dict[object, anyio.CapacityLimiter] = {}


def _limiter() -> anyio.CapacityLimiter:
    """This event loop's limiter (tests run many loops in one process)."""
    token = anyio.lowlevel.current_token()
    key = getattr(token, "native_token", token)
    limiter = _limiters.get(key)
    if limiter is None:
        _limiters.clear()  # a limiter of a loop that ended is no use to this one
        limiter = _limiters[key] = anyio.CapacityLimiter(THREADS)
    return limiter


async def run(work: Callable[[], T], bound: float = BOUND) -> T:
    """``work()`` in a daemon thread of the store's own; see the module docstring."""
    limiter = _limiter()
    token = anyio.lowlevel.current_token()
    place = object()
    done = anyio.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def finished() -> None:
        limiter.release_on_behalf_of(place)
        done.set()

    def in_thread() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the waiting task
            failure.append(exc)
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits
            anyio.from_thread.run_sync(finished, token=token)

    with anyio.move_on_after(bound) as scope:
        await limiter.acquire_on_behalf_of(place)
        try:
            threading.Thread(target=in_thread, name="claude-bg-acp store", daemon=True).start()
        except BaseException:
            limiter.release_on_behalf_of(place)
            raise
        await done.wait()
    if scope.cancelled_caught:
        raise StoreTimeout(errno.ETIMEDOUT, f"the store did not answer within {bound:g} s")
    if failure:
        raise failure[0]
    return outcome[0]
