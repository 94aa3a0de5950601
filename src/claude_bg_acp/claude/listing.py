"""Claude Code's stored conversations listed a page at a time, the latest change first.

A listing reads only what its page needs. The transcripts of the project directory (of every
project, for a listing without a directory) are only stat'ed first: a session's place in the
order is its transcript's modification time (what the SDK dates it by) and its id, both known
without opening the file. Then, from the page's start on, the sessions are taken in that order
until the page is full and one more is listable (it tells that a next page exists).

What a transcript says of its session (its directory, its title, and whether it is one to list
at all: a sidechain or a transcript without a prompt is not) is read as the SDK's own
``list_sessions`` reads it, from the file's head and tail (64 KiB each), by the SDK's own
functions, so a listing shows the sessions the SDK's would; a file that cannot be read or holds
no conversation is left out, as the SDK leaves it out. The title is the thread's as the core
tells it live (``core.titles``): Claude Code's own, else the one the first prompt makes, read
from the prompt as stored (the SDK's listing keeps 200 characters of it on one line). That
summary is kept (``summaries``: in this process, and on disk for the next) under the
transcript's size and modification time: a transcript that has not changed since is not
opened again, and one that has (Claude Code in a terminal went on with the conversation,
renamed it) is read again and listed with its new title and time.

Memory: the name, size and time of every transcript of the directory (the order needs them
all), the head and tail of one transcript at a time, and the summaries kept (a bounded number).

Only regular files are read, none through a link (``store_files``): a FIFO or a link named like
a transcript is left out. ``listed`` reads in a thread of the store's (plain blocking file I/O).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from claude_bg_acp.claude import store_files, summaries
from claude_bg_acp.claude.conventions import OWN_MESSAGES
from claude_bg_acp.claude.prompt_text import from_prompt, short
from claude_bg_acp.claude.sdk_private import (
    LITE_READ_BUF_SIZE,
    canonicalize_path,
    extract_first_prompt_from_head,
    extract_json_string_field,
    extract_last_json_string_field,
    find_project_dir,
    get_projects_dir,
    validate_uuid,
)

Position = tuple[str, str]
"""Where a session stands in the order: ``(updated_at, session_id)``, the latest first."""


@dataclass(frozen=True)
class StoredSession:
    session_id: str
    cwd: str
    title: str | None
    """Claude Code's name for it, else the one its first prompt makes (``core.titles``)."""
    updated_at: str
    """When its transcript last changed (RFC 3339, UTC)."""


@dataclass(frozen=True)
class _Candidate:
    path: str
    session_id: str
    mtime_ms: int
    """The SDK's own rounding of the time, so that both date a session alike."""
    key: summaries.Key
    project: str | None
    """The directory the listing asked for: the session's, if its transcript names none (as the
    SDK's listing has it)."""

    @property
    def updated_at(self) -> str:
        return timestamp(self.mtime_ms)

    @property
    def position(self) -> Position:
        return (self.updated_at, self.session_id)


@dataclass
class _Window:
    """The head or the tail of a transcript, as bytes, decoded only when it must be searched."""

    raw: bytes
    _text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.raw.decode("utf-8", errors="replace")
        return self._text

    def last(self, key: str) -> str | None:
        """The SDK's ``_extract_last_json_string_field``; at once None when the key's name is
        not in the bytes (an ASCII string decodes to itself, whatever surrounds it)."""
        return extract_last_json_string_field(self.text, key) if f'"{key}"'.encode() in self.raw else None


NOT_LISTED = summaries.Summary(False, None, None)


async def listed(cwd: str | None, after: Position | None, count: int) -> list[StoredSession]:
    """``page``, in a worker thread."""
    return await store_files.run(lambda: page(cwd, after, count))


def page(cwd: str | None, after: Position | None, count: int) -> list[StoredSession]:
    """At most ``count`` of the sessions stored for ``cwd`` (every one when None) that come after
    ``after`` in the order, latest change first."""
    summaries.refresh()
    found = list(islice(_sessions(cwd, after), count))
    summaries.save()
    return found


def _sessions(cwd: str | None, after: Position | None) -> Iterator[StoredSession]:
    """Each transcript is looked at as its session's turn comes."""
    wanted = os.path.realpath(cwd) if cwd else None
    candidates = sorted(_candidates(cwd), key=lambda c: (c.mtime_ms, c.session_id), reverse=True)
    skipped: dict[str, list[_Candidate]] = {}
    decided: set[str] = set()
    for candidate in candidates:
        if after is not None and candidate.position >= after:
            skipped.setdefault(candidate.session_id, []).append(candidate)
            continue
        if candidate.session_id in decided:
            continue
        # Listed without a directory, a session whose transcript is in two projects is the one
        # of its latest listable transcript, as the SDK's listing has it (which may be the one
        # of an earlier page).
        if any(_summary(earlier).listable for earlier in skipped.pop(candidate.session_id, [])):
            decided.add(candidate.session_id)
            continue
        summary = _summary(candidate)
        if not summary.listable:
            continue
        decided.add(candidate.session_id)
        session_cwd = summary.cwd or candidate.project
        if session_cwd and (wanted is None or os.path.realpath(session_cwd) == wanted):
            yield StoredSession(candidate.session_id, session_cwd, summary.title, candidate.updated_at)


def timestamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _candidates(cwd: str | None) -> Iterator[_Candidate]:
    """Every transcript the SDK's listing would look at, stat'ed and not opened."""
    if cwd:
        canonical = canonicalize_path(cwd)
        project_dir = find_project_dir(canonical)
        if project_dir is not None:
            yield from _transcripts(project_dir, canonical)
        return
    try:
        projects = [entry for entry in get_projects_dir().iterdir() if _directory(entry)]
    except OSError:
        return
    for project_dir in projects:
        yield from _transcripts(project_dir, None)


def _transcripts(project_dir: Path, project: str | None) -> Iterator[_Candidate]:
    try:
        entries = list(os.scandir(project_dir))
    except OSError:
        return
    for entry in entries:
        session_id = validate_uuid(entry.name[:-6]) if entry.name.endswith(".jsonl") else None
        if session_id is None:
            continue
        try:
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not S_ISREG(stat.st_mode):
            continue  # a FIFO would block its reader, a link lead anywhere
        key = (stat.st_size, stat.st_mtime_ns)
        yield _Candidate(entry.path, session_id, int(stat.st_mtime * 1000), key, project)


def _directory(path: Path) -> bool:
    try:
        return S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _summary(candidate: _Candidate) -> summaries.Summary:
    """What the transcript says, unless it is kept."""
    kept = summaries.get(candidate.path, candidate.key)
    if kept is not None:
        return kept
    summary = described(candidate.path)
    summaries.put(candidate.path, candidate.key, summary)
    return summary


def described(path: str) -> summaries.Summary:
    """What the transcript's head and tail say, as the SDK's listing reads them
    (``_read_session_lite``, ``_parse_session_info_from_lite``), of what a listing shows: each
    field by the SDK's own function, and none that a listing does not show (the git branch, the
    tag, the time of the first message). The title is Claude Code's own (``_own_title``), else
    the one the first prompt makes (``prompt_text.from_prompt``)."""
    try:
        with os.fdopen(store_files.open_regular(path), "rb") as file:
            size = os.fstat(file.fileno()).st_size
            head = _Window(file.read(LITE_READ_BUF_SIZE))
            if size > LITE_READ_BUF_SIZE:
                file.seek(size - LITE_READ_BUF_SIZE)
            tail = _Window(file.read(LITE_READ_BUF_SIZE)) if size > LITE_READ_BUF_SIZE else head
    except OSError:
        return NOT_LISTED
    first_line = head.raw.split(b"\n", 1)[0]
    if not head.raw or b'"isSidechain":true' in first_line or b'"isSidechain": true' in first_line:
        return NOT_LISTED
    own = _own_title(head, tail)
    first_prompt = extract_first_prompt_from_head(head.text)
    if not (own or first_prompt or tail.last("lastPrompt") or tail.last("summary")):
        return NOT_LISTED  # metadata only
    title = short(own) if own else _first_prompt_title(head.text) if first_prompt else None
    return summaries.Summary(True, extract_json_string_field(head.text, "cwd"), title, bool(own and title))


def _own_title(head: _Window, tail: _Window) -> str | None:
    """Claude Code's title: a rename wins over an AI title (as in the SDK's listing), and either
    over a summary entry (only a ``summary`` record's: the key is common in tool inputs)."""
    return (
        tail.last("customTitle")
        or head.last("customTitle")
        or tail.last("aiTitle")
        or head.last("aiTitle")
        or _summary_entry(tail)
        or _summary_entry(head)
    )


def _summary_entry(window: _Window) -> str | None:
    if b'"type":"summary"' not in window.raw:
        return None
    lines = (line for line in reversed(window.text.split("\n")) if line.startswith('{"type":"summary"'))
    return next(
        (summary for line in lines if (summary := extract_last_json_string_field(line, "summary"))), None
    )


def _first_prompt_title(head: str) -> str | None:
    """The title of the first prompt, found by the SDK's rules (its first prompt is the first
    line it finds one in), made from the prompt as stored (the SDK's has lost its lines). A
    command is no prompt here (the SDK falls back to its name), nor a message Claude Code wrote
    itself (a task's end): the person's prompt after it is."""
    for line in head.split("\n"):
        found = extract_first_prompt_from_head(line) if "<command-name>" not in line else ""
        if found and not found.startswith(OWN_MESSAGES):
            # The SDK found a user entry with a message in it.
            return from_prompt(json.loads(line)["message"].get("content") or "")
    return None
