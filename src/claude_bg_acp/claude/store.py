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

It knows nothing of ACP: it answers with sessions (id, cwd, title, last change) and with
conversations in the form the core replays (``StoredConversation``), the SDK's own parser
having made typed messages of the stored ones, with Claude Code's structured form of each tool
result (``toolUseResult``, which the SDK's readers leave out) kept. A background shell's output
file is read back (its latest ``RECALL_LIMIT`` bytes, through the closing-line rule) while it is
still there, under the rules the live tailer reads it by (``task_output``), from this
conversation's own task directory only: a shell is a background one when Claude Code's
structured result or the tool use says so (``conventions.hand_off``), never by the words of its
output, and its file is the task's own there, never a path the words name.

Whether a conversation holds a given user message (``holds_prompt``, a prompt's retry after
the agent restarted) is told from its own transcript alone, streamed: only the lines that name
the message's id are decoded, and the message must be stored under it, not merely named.

A conversation is read in parts (``conversation``), for the core to replay each as it comes.
Which messages are the conversation is known only once the whole transcript is read: a prompt
edited or rewound starts a branch, and the conversation is the branch of its latest message
(the SDK's chain, whose functions find it). So the transcript's lines are decoded first, as
the bytes they are (by pydantic's JSON parser, in a third of the time ``json`` takes, and a
line that is not UTF-8 skipped like one that is not JSON: Claude Code resumes the same
conversation meanwhile, and the CPU is better left to it), and
the messages are then made ``PART_SIZE`` at a time, each part with the output files of the
shells its messages hand off. The first part also has what the whole replay needs from the
start: the subagents' conversations (each replayed where its Agent tool use is) and the task
notifications (a shell's end is told at its hand-off, before the notification that says it).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Iterable, Iterator
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import AssistantMessage, ToolUseBlock, UserMessage
from pydantic_core import from_json

from claude_bg_acp.claude import store_files
from claude_bg_acp.claude.conventions import (
    TaskNote,
    hand_off,
    output_file,
    projects_dir,
    task_notes,
    tasks_base,
    tasks_root,
)
from claude_bg_acp.claude.listing import StoredSession, described, timestamp
from claude_bg_acp.claude.sdk_private import (
    TRANSCRIPT_ENTRY_TYPES,
    MessageParseError,
    build_conversation_chain,
    build_subagent_chain,
    collect_agent_files,
    delete_session,
    fork_session,
    get_session_info,
    is_visible_message,
    parent_ids_from_agent_metadata,
    parse_message,
    read_agent_metadata_sidecar,
    resolve_session_file,
    resolve_subagents_dir,
    validate_uuid,
)
from claude_bg_acp.core.events import StoredChild, StoredConversation, StoredMessage, StoredOutput
from claude_bg_acp.core.transcript import Transcript
from claude_bg_acp.output.closing_line import TrailerGate
from claude_bg_acp.output.task_output import recall

log = logging.getLogger(__name__)

RECALL_LIMIT = 256 * 1024
PART_SIZE = 200
"""Messages per part of a conversation read back: the core replays a part and the client is
sent it while the next is made, and no more of it is held at a time."""

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


async def conversation(session_id: str, cwd: str) -> AsyncGenerator[StoredConversation, None]:
    """The stored conversation in parts, in order, each read in a worker thread when asked for."""
    parts = _parts(session_id, cwd)
    while (part := await store_files.run(lambda: next(parts, None))) is not None:
        yield part


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


def _parts(session_id: str, cwd: str, size: int = PART_SIZE) -> Iterator[StoredConversation]:
    """The conversation ``size`` messages at a time; the first part (there is always one) has
    the children and the notes."""
    entries = deque(_conversation_entries(session_id, cwd))
    children, notes = _children(session_id, cwd)
    notes = _notes(entries) + notes
    outputs = _Outputs(session_id, cwd)
    messages = _messages(entries, size)
    yield StoredConversation(messages, children, outputs.left_by(messages, children), notes)
    while entries:
        messages = _messages(entries, size)
        yield StoredConversation(messages, [], outputs.left_by(messages, []), [])


def _conversation_entries(session_id: str, cwd: str) -> list[Entry]:
    """The conversation's messages as its transcript holds them, in order (what the SDK's
    ``get_session_messages`` reads, with every field kept)."""
    if not validate_uuid(session_id):
        return []
    _only_regular(session_id)
    path = resolve_session_file(session_id, cwd)
    try:
        content = store_files.read_regular(str(path)) if path is not None else b""
    except FileNotFoundError:
        return []  # deleted meanwhile: nothing is stored
    return [entry for entry in build_conversation_chain(_entries(content)) if is_visible_message(entry)]


def _entries(content: bytes) -> list[Entry]:
    """The transcript lines that are messages, as the SDK's ``_parse_transcript_entries`` takes
    them (an object of a message's type, with a uuid; a line that is not JSON, or not UTF-8,
    skipped). The lines are decoded as they are read, bytes, in a third less time than as text."""
    entries: list[Entry] = []
    for line in content.splitlines():
        entry = _decoded(line.strip())
        if (
            isinstance(entry, dict)
            and entry.get("type") in TRANSCRIPT_ENTRY_TYPES
            and isinstance(entry.get("uuid"), str)
        ):
            entries.append(entry)
    return entries


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


def _children(session_id: str, cwd: str) -> tuple[list[StoredChild], list[TaskNote]]:
    """The subagents' conversations (what the SDK's ``get_subagent_messages`` reads, with every
    field kept), each with the Agent tool use that launched it; and their task notifications."""
    subagents = resolve_subagents_dir(session_id, cwd) if validate_uuid(session_id) else None
    found: dict[str, Path] = {}
    for agent_id, path in collect_agent_files(subagents) if subagents is not None else []:
        found.setdefault(agent_id, path)
    children: list[StoredChild] = []
    notes: list[TaskNote] = []
    for agent_id, path in found.items():
        try:
            content = store_files.read_regular(str(path))
            sidecar = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
            meta = read_agent_metadata_sidecar(path) if store_files.regular(str(sidecar)) else None
        except OSError:
            continue
        launched_by, _ = parent_ids_from_agent_metadata(meta)
        chain = [
            entry
            for entry in build_subagent_chain(_entries(content))
            if entry.get("type") in ("user", "assistant")
        ]
        if launched_by is not None and chain:
            messages = [message for entry in chain if (message := _stored(entry, launched_by)) is not None]
            children.append(StoredChild(agent_id, launched_by, messages))
            notes += _notes(chain)
    return children, notes


def _messages(entries: deque[Entry], size: int) -> list[StoredMessage]:
    """The next ``size`` entries as messages (those the SDK cannot parse left out)."""
    taken = [entries.popleft() for _ in range(min(size, len(entries)))]
    return [message for entry in taken if (message := _stored(entry)) is not None]


def _stored(entry: Entry, launched_by: str | None = None) -> StoredMessage | None:
    """The SDK's typed message of a transcript entry, with Claude Code's structured form of its
    tool result; ``launched_by``: the Agent tool use whose subagent wrote it."""
    message = entry.get("message")
    frame = {
        "type": "user" if entry.get("type") == "user" else "assistant",
        "message": message,
        "uuid": entry.get("uuid", ""),
        "session_id": entry.get("sessionId", ""),
        "parent_tool_use_id": launched_by,
        "tool_use_result": entry.get("toolUseResult"),
    }
    try:
        parsed = parse_message(frame)
    except MessageParseError as exc:
        log.warning("skipped a stored message the SDK cannot parse (%s)", exc)
        return None
    if parsed is None:
        return None
    content = message.get("content") if isinstance(message, dict) else None
    return StoredMessage(frame["uuid"], parsed, content)


def _notes(entries: Iterable[Entry]) -> list[TaskNote]:
    """The task notifications among a conversation's messages, read from their entries (before
    their messages are made)."""
    notes: list[TaskNote] = []
    for entry in entries:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "user" and isinstance(content, str):
            notes += task_notes(content)
    return notes


class _Outputs:
    """What each background shell of the conversation left in its output file: the task's own
    file in this conversation's task directory (never a path a tool result names), read under
    the live tailer's rules from Claude Code's temp directory down."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self._session_id = session_id
        self._root = tasks_root(cwd)
        self._base = tasks_base()
        self._transcript = Transcript(session_id)
        self._inputs: dict[str, dict[str, Any]] = {}
        """Every tool use's input so far, by its id (a result needs it, a part or more later)."""

    def left_by(self, messages: list[StoredMessage], children: list[StoredChild]) -> dict[str, StoredOutput]:
        """The outputs of the shells that ``messages`` and ``children`` hand off."""
        outputs: dict[str, StoredOutput] = {}
        for stored in messages + [m for child in children for m in child.messages]:
            message = stored.message
            if isinstance(message, AssistantMessage):
                self._inputs |= {b.id: b.input for b in message.content if isinstance(b, ToolUseBlock)}
            elif isinstance(message, UserMessage):
                for result in self._transcript.tool_results(message):
                    tool_input = self._inputs.get(result.tool_use_id, {})
                    handed = hand_off(tool_input, result.text, result.is_error, result.structured)
                    if handed is None:
                        continue
                    path = output_file(self._root, self._session_id, handed.task_id)
                    # Claude Code removes a conversation's task directory when it ends: one look
                    # spares the walk down to a file that is not there (nothing is read on it).
                    if not os.path.isdir(os.path.dirname(path)):
                        continue
                    latest = recall(path, self._base, RECALL_LIMIT)
                    if latest is not None:
                        outputs[handed.task_id] = _output(*latest)
        return outputs


def _output(data: bytes, whole: bool) -> StoredOutput:
    """What a finished shell printed (its closing line withheld), and how it exited."""
    gate = TrailerGate(at_start=whole)
    shown = gate.feed(data)
    rest, exit_info = gate.close()
    return StoredOutput(shown + rest, exit_info)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
