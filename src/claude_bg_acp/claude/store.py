"""Claude Code's stored conversations: find, read, search, fork and delete them (``listing``
lists them).

Claude Code writes each conversation to ``projects/<cwd>/<session id>.jsonl`` under its config
directory (``conventions.projects_dir``) once the first prompt is sent, and each subagent's
beside it. The SDK's session functions read and change those files. They are plain blocking
file I/O, so each call here runs in a worker thread; and they find the files through
``CLAUDE_CONFIG_DIR`` in this process's environment, which is the environment the CLI gets too.

What it reads of the store it reads only from regular files (``store_files``): a FIFO, a device
or a link named as a conversation is refused (``Unreadable``) before an SDK reader opens it,
and its work runs in the store's own bounded threads (``store_files.run``).

It knows nothing of ACP nor of the core: it answers with sessions (id, cwd, title, last
change) and with a conversation's transcript entries, which ``session.replay`` makes into the
form the core replays.

Whether a conversation holds a given user message (``holds_prompt``, a prompt's retry after
the agent restarted) is told from its own transcript alone, streamed: only the lines that name
the message's id are decoded, and the message must be stored under it, not merely named.

Which messages are the conversation (``conversation_entries``) is known only once the whole
transcript is read: a prompt edited or rewound starts a branch, and the conversation is the
branch of its latest message (the SDK's chain, whose functions find it; it starts at the
latest compaction's boundary, which is kept, where the compaction happened, with the messages
the compaction kept as they were put back before it, as Claude Code links them back when it
resumes the conversation). So the transcript's
lines are decoded first, as the bytes they are (by pydantic's JSON parser, in a third of the
time ``json`` takes, and a line that is not UTF-8 skipped like one that is not JSON: Claude
Code resumes the same conversation meanwhile, and the CPU is better left to it).
"""

from __future__ import annotations

import contextlib
import gc
import glob
import json
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic_core import from_json

from claude_bg_acp.claude import store_files
from claude_bg_acp.claude.conventions import (
    TaskNote,
    compacted_by,
    preserved,
    projects_dir,
    stored_compaction,
    task_notes,
)
from claude_bg_acp.claude.listing import StoredSession, described, timestamp
from claude_bg_acp.claude.sdk_private import (
    TRANSCRIPT_ENTRY_TYPES,
    build_conversation_chain,
    delete_session,
    fork_session,
    get_session_info,
    is_visible_message,
    resolve_session_file,
    validate_uuid,
)

Entry = dict[str, Any]
"""A decoded line of a transcript."""


class NotStored(LookupError):
    """Claude Code has no conversation by that id."""


class Unreadable(LookupError):
    """The transcript exists but holds no conversation Claude Code could go on with."""


async def find(session_id: str) -> StoredSession:
    """The stored session of that id, in whichever project it is; raises ``NotStored`` or
    ``Unreadable``."""
    return await store_files.run(lambda: _find(session_id))


async def exists(session_id: str, cwd: str) -> bool:
    return await store_files.run(lambda: _info(session_id, cwd) is not None)


async def holds_prompt(session_id: str, cwd: str, message_id: str) -> bool:
    """Whether the conversation's transcript holds the user message ``message_id`` (on whichever
    branch); raises ``OSError`` when the transcript is there but cannot be read."""
    return await store_files.run(lambda: _holds_prompt(session_id, cwd, message_id))


async def title(session_id: str, cwd: str) -> tuple[str | None, bool, str | None]:
    """The conversation's title as a listing shows it, whether it is Claude Code's own (a
    rename, an AI title) rather than its first prompt's, and when its transcript last changed."""
    return await store_files.run(lambda: _title(session_id, cwd))


async def fork(session_id: str, cwd: str) -> str:
    """Copy the conversation under a new id (Claude Code titles it "<title> (fork)")."""
    try:
        return await store_files.run(lambda: _fork(session_id, cwd))
    except FileNotFoundError:
        raise NotStored(session_id) from None


async def delete(session_id: str) -> bool:
    """Delete the conversation and its subagents' transcripts; False when none was stored."""
    try:
        await store_files.run(lambda: delete_session(session_id))
    except (FileNotFoundError, ValueError):
        return False
    return True


# --- in the worker thread -----------------------------------------------------------------------


def _only_regular(session_id: str) -> None:
    """Raise ``Unreadable`` when a file named as the conversation in the store is not a regular
    file (a FIFO would block the SDK's readers, a link lead anywhere); nothing is opened. An id
    that is none names no file (the SDK refuses it)."""
    if not validate_uuid(session_id):
        return
    for path in _named(session_id):
        if not store_files.regular(path):
            raise Unreadable(path)


def _named(session_id: str) -> list[str]:
    """Every file of the store named as the conversation, in any project."""
    return glob.glob(os.path.join(glob.escape(projects_dir()), "*", f"{session_id}.jsonl"))


def _info(session_id: str, cwd: str | None) -> Any:
    _only_regular(session_id)
    return get_session_info(session_id, directory=cwd)


def _fork(session_id: str, cwd: str) -> str:
    _only_regular(session_id)
    return fork_session(session_id, directory=cwd).session_id


def _find(session_id: str) -> StoredSession:
    if not _is_uuid(session_id):
        raise NotStored(session_id)
    info = _info(session_id, None)
    if info is not None and info.cwd:
        title, _, _ = _title(session_id, info.cwd)
        return StoredSession(info.session_id, info.cwd, title, timestamp(info.last_modified))
    files = _named(session_id)
    if files:
        raise Unreadable(files[0])
    raise NotStored(session_id)


def _title(session_id: str, cwd: str) -> tuple[str | None, bool, str | None]:
    path = resolve_session_file(session_id, cwd) if validate_uuid(session_id) else None
    try:
        modified = os.stat(path).st_mtime if path is not None else None
    except OSError:
        modified = None
    if path is None or modified is None:
        return None, False, None
    summary = described(str(path))
    return summary.title, summary.own, timestamp(int(modified * 1000))


def _holds_prompt(session_id: str, cwd: str, message_id: str) -> bool:
    path = resolve_session_file(session_id, cwd) if validate_uuid(session_id) else None
    if path is None:
        return False  # nothing is stored before the first prompt
    named = message_id.encode()
    try:
        with os.fdopen(store_files.open_regular(str(path)), "rb") as transcript:
            for line in transcript:
                if named not in line:
                    continue
                entry = _decoded(line.decode("utf-8", "replace").strip())
                if (
                    isinstance(entry, dict)
                    and entry.get("type") == "user"
                    and entry.get("uuid") == message_id
                ):
                    return True
    except FileNotFoundError:
        return False  # deleted meanwhile: nothing is stored
    return False


def conversation_entries(session_id: str, cwd: str) -> list[Entry]:
    """The conversation's messages as its transcript holds them, in order (what the SDK's
    ``get_session_messages`` reads, with every field kept), with those its compaction kept as
    they were (``_preserved_put_back``), and the boundary of its compaction where the compaction
    happened (``_compaction_in_place``)."""
    if not validate_uuid(session_id):
        return []
    _only_regular(session_id)
    path = resolve_session_file(session_id, cwd)
    try:
        content = store_files.read_regular(str(path)) if path is not None else b""
    except FileNotFoundError:
        return []  # deleted meanwhile: nothing is stored
    entries = transcript_entries(content)
    chain = _preserved_put_back(build_conversation_chain(entries), entries)
    kept = [entry for entry in chain if is_visible_message(entry) or stored_compaction(entry) is not None]
    return _compaction_in_place(kept)


def _preserved_put_back(chain: list[Entry], entries: list[Entry]) -> list[Entry]:
    """The chain with the messages its compaction kept as they were (``conventions.preserved``)
    put back ahead of its boundary, where they were stored and happened. The SDK's chain starts
    at the boundary, so it has them not; Claude Code, resuming, links them back after the
    summary, so they are in the conversation it goes on with. One the chain holds already (a
    transcript Claude Code wrote them into again) is not put back twice."""
    if not chain or stored_compaction(chain[0]) is None:
        return chain
    by_uuid = {entry["uuid"]: entry for entry in entries}
    held = {entry["uuid"] for entry in chain}
    kept = [by_uuid[uuid] for uuid in preserved(chain[0], by_uuid) if uuid not in held]
    return [*kept, *chain]


def _compaction_in_place(entries: list[Entry]) -> list[Entry]:
    """A ``/compact``'s boundary after the command's echo: Claude Code writes the boundary and
    the summary ahead of it, though the command came first. (The SDK's chain starts at the
    latest boundary: it follows no ``logicalParentUuid``, what came before is the summary's.)"""
    placed = list(entries)
    for boundary in [entry for entry in entries if stored_compaction(entry) is not None]:
        at = placed.index(boundary)
        after = (n for n in range(at + 1, len(placed)) if not placed[n].get("isCompactSummary"))
        echo = next(after, None)
        if echo is not None and compacted_by(placed[echo]):
            placed.insert(echo, placed.pop(at))  # right after the echo, which moved up by one
    return placed


def transcript_entries(content: bytes) -> list[Entry]:
    """The transcript lines that are messages, as the SDK's ``_parse_transcript_entries`` takes
    them (an object of a message's type, with a uuid; a line that is not JSON, or not UTF-8,
    skipped). The lines are decoded as they are read, bytes, in a third less time than as text,
    with Python's cycle collector paused (``_collector_paused``)."""
    entries: list[Entry] = []
    with _collector_paused():
        for line in content.splitlines():
            entry = _decoded(line.strip())
            if (
                isinstance(entry, dict)
                and entry.get("type") in TRANSCRIPT_ENTRY_TYPES
                and isinstance(entry.get("uuid"), str)
            ):
                entries.append(entry)
    return entries


_pauses = 0
_freezes = 0
_pauses_lock = threading.Lock()
_collector_was_on = False


@contextlib.contextmanager
def spared_by_collector() -> Iterator[None]:
    """What exists now is left out of the cycle collector's passes until every such block is
    over (``gc.freeze``): a replay holds its conversation's decoded transcript meanwhile, which
    one full pass of the collector took a quarter of a second of a busy machine to scan."""
    global _freezes
    with _pauses_lock:
        _freezes += 1
        gc.freeze()
    try:
        yield
    finally:
        with _pauses_lock:
            _freezes -= 1
            if _freezes == 0:
                gc.unfreeze()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cycle collection while transcripts are decoded (in any thread): what is decoded is
    kept, so the collector would only scan it again and again, and the whole heap at each full
    pass: it took a third of the CPU of replaying a conversation of 800 prompts."""
    global _pauses, _collector_was_on
    with _pauses_lock:
        if _pauses == 0:
            _collector_was_on = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses -= 1
            if _pauses == 0 and _collector_was_on:
                gc.enable()


def _decoded(line: str | bytes) -> Any:
    """The line's JSON value (None for an empty line or one that is not JSON); ``json`` decodes
    what pydantic's parser refuses but ``json`` takes (the escape of a lone surrogate)."""
    if not line:
        return None
    try:
        return from_json(line)
    except ValueError:
        pass
    try:
        return json.loads(line)
    except ValueError:
        return None


def notes_in(entries: Iterable[Entry]) -> list[TaskNote]:
    """The task notifications among a conversation's messages, read from their entries (before
    their messages are made)."""
    notes: list[TaskNote] = []
    for entry in entries:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "user" and isinstance(content, str):
            notes += task_notes(content)
    return notes


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
