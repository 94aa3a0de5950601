"""What stored transcripts say of their sessions, kept so that a listing need not read them again.

A summary (whether the transcript is a session to list, the directory and the title it names)
is kept under the transcript's path with the file's size and modification time (ns) when it
was read: it stands for the file only while both are still the file's (``get``). At most
``KEPT`` are kept, the least recently used going first.

They are kept in this process and, for the next agent process (an editor starts one each time
it starts), in ``claude-bg-acp/session-summaries.json`` in Claude Code's config directory, next
to its store. That file is only ever an aid: read when it changed since this process last saw
it (``refresh``), written whole after a listing read transcripts (``save``) to a temporary file
then renamed over it (a reader sees the old one or the new one, never half of one), mode 0600
as Claude Code's transcripts are, in ASCII. It is read and written under the store's rules
(``store_files``): read only if it is a regular file (no FIFO, device or link) of at most
``MAX_FILE`` bytes, written only in a directory that is not a link. A file that cannot be read,
is not this one's format, or holds a malformed entry is ignored (entry by entry); one that
cannot be written is not written.
Another agent process may write it meanwhile: the last writer's summaries stay, and a summary
lost that way is read again from its transcript.

Plain blocking file I/O: call it in a worker thread. Thread-safe.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.claude import store_files
from claude_bg_acp.claude.conventions import projects_dir

log = logging.getLogger(__name__)

KEPT = 4096
"""Summaries kept: pages of many directories, at about 200 bytes each (on disk too)."""
FORMAT = 2
MAX_FILE = 16 << 20
"""Bytes the file may hold: ``KEPT`` summaries with long paths and titles. A larger one is no
file of ours (or no longer worth its reading): it is not read, and the next save replaces it."""

Key = tuple[int, int]
"""``(size, mtime_ns)`` of a transcript."""


@dataclass(frozen=True)
class Summary:
    listable: bool
    """A session to list (not a sidechain, and it has a prompt or a title)."""
    cwd: str | None
    """The directory its transcript names, if any."""
    title: str | None
    own: bool = False
    """The title is Claude Code's own (a rename, an AI title, a summary), not the first prompt's."""


_kept: OrderedDict[str, tuple[Key, Summary]] = OrderedDict()
_lock = threading.Lock()
_seen: dict[str, int | None] = {}
"""By file: its mtime (ns) when this process last read or wrote it."""
_changed = False
"""Summaries were put since the file was last written."""


def get(path: str, key: Key) -> Summary | None:
    with _lock:
        kept = _kept.get(path)
        if kept is None or kept[0] != key:
            return None
        _kept.move_to_end(path)
        return kept[1]


def put(path: str, key: Key, summary: Summary) -> None:
    global _changed
    with _lock:
        _changed = True
        _kept[path] = (key, summary)
        _kept.move_to_end(path)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)


def refresh() -> None:
    """Take in what the file keeps, if it changed since this process last saw it (the summaries
    this process has are newer than any the file has of the same transcript)."""
    path = file()
    mtime = _mtime(path)
    if mtime is None or _seen.get(path) == mtime:
        return
    try:
        content = json.loads(store_files.read_regular(path, MAX_FILE))
    except (OSError, ValueError):
        log.warning("session summaries in %s not read (they are made again)", path, exc_info=True)
        with _lock:
            _seen[path] = mtime
        return
    entries = (
        content.get("summaries") if isinstance(content, dict) and content.get("format") == FORMAT else None
    )
    with _lock:
        _seen[path] = mtime
        # Put first, so that they go first: what this process used is worth more. The file has
        # the least recently used first.
        for transcript, entry in reversed((entries if isinstance(entries, dict) else {}).items()):
            read = _entry(entry)
            if len(_kept) >= KEPT:
                break
            if read is not None and transcript not in _kept:
                _kept[transcript] = read
                _kept.move_to_end(transcript, last=False)


def save() -> None:
    """Write every summary this process keeps to the file, for the next process, if some were
    put since it was last written."""
    global _changed
    path = file()
    with _lock:
        if not _changed:
            return
        _changed = False
        entries = {
            transcript: [*key, summary.listable, summary.cwd, summary.title, summary.own]
            for transcript, (key, summary) in _kept.items()
        }
    # ASCII: a lone surrogate (a prompt can hold one) is escaped, as JSON allows, not refused.
    data = json.dumps({"format": FORMAT, "summaries": entries}, ensure_ascii=True).encode()
    try:
        store_files.write_atomically(os.path.dirname(path), os.path.basename(path), data)
    except OSError:
        log.warning("session summaries not written to %s", path, exc_info=True)
        return
    with _lock:
        _seen[path] = _mtime(path)


def file(environ: dict[str, str] | None = None) -> str:
    """Where the summaries are kept on disk (for ``environ``, this process's by default)."""
    return os.path.join(os.path.dirname(projects_dir(environ)), "claude-bg-acp", "session-summaries.json")


def _entry(entry: Any) -> tuple[Key, Summary] | None:
    """A summary as the file has it, if it is well formed."""
    if not (isinstance(entry, list) and len(entry) == 6):
        return None
    size, mtime, listable, cwd, title, own = entry
    if not (
        type(size) is int and type(mtime) is int and isinstance(listable, bool) and isinstance(own, bool)
    ):
        return None
    if not all(value is None or isinstance(value, str) for value in (cwd, title)):
        return None
    return (size, mtime), Summary(listable, cwd, title, own)


def _mtime(path: str) -> int | None:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return None
