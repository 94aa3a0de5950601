"""A stored conversation read back in the form the core replays (``StoredConversation``).

``claude.store`` finds the conversation's transcript entries (the branch of its latest
message) in Claude Code's terms; this makes the core's parts of them: the SDK's own parser
makes typed messages of the stored ones, with Claude Code's structured form of each tool
result (``toolUseResult``, which the SDK's readers leave out) kept, and of a compaction's
boundary the message Claude Code sent of it live (``conventions.stored_compaction``). A
background shell's output file is read back while it is still there, all of it, piece by
piece, as the live tailer reads one (``output.tail.recalled``: its backlog and closing-line
rules; opened under ``output.task_output``'s), once the replay comes to the shell
(``output``: the core waits there, ``History.awaited``), from this conversation's own task
directory only: a shell is a
background one when Claude Code's structured result or the tool use says so
(``conventions.hand_off``), never by the words of its output, and its file is the task's own
there, never a path the words name.

The conversation is read in parts (``conversation``), for the core to replay each as it comes:
the messages are made ``PART_SIZE`` at a time, each part with the output files of the shells
its messages hand off. The first part also has what the whole replay needs from the start: the
subagents' conversations (each replayed where its Agent tool use is) and the task
notifications (a shell's end is told at its hand-off, before the notification that says it).
Each part is made in the store's own bounded threads (``store_files.run``), reading only
regular files.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncGenerator, Generator, Iterator
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import AssistantMessage, ToolUseBlock, UserMessage

from claude_bg_acp.claude import store, store_files
from claude_bg_acp.claude.conventions import (
    TaskNote,
    hand_off,
    output_file,
    stored_compaction,
    tasks_base,
    tasks_root,
)
from claude_bg_acp.claude.sdk_private import (
    MessageParseError,
    build_subagent_chain,
    collect_agent_files,
    parent_ids_from_agent_metadata,
    parse_message,
    read_agent_metadata_sidecar,
    resolve_subagents_dir,
    validate_uuid,
)
from claude_bg_acp.core.events import (
    OutputRecalled,
    StoredChild,
    StoredConversation,
    StoredMessage,
    StoredOutput,
)
from claude_bg_acp.core.transcript import Transcript
from claude_bg_acp.output import tail
from claude_bg_acp.output.task_output import recalled

log = logging.getLogger(__name__)

PART_SIZE = 200
"""Messages per part of a conversation read back: the core replays a part and the client is
sent it while the next is made, and no more of it is held at a time."""


async def conversation(session_id: str, cwd: str) -> AsyncGenerator[StoredConversation, None]:
    """The stored conversation in parts, in order, each read in a worker thread when asked for."""
    parts = _parts(session_id, cwd)
    while (part := await store_files.run(lambda: next(parts, None))) is not None:
        yield part


# --- in the worker thread ---


def _parts(session_id: str, cwd: str, size: int = PART_SIZE) -> Generator[StoredConversation, None, None]:
    """The conversation ``size`` messages at a time; the first part (there is always one) has
    the children and the notes. Its decoded transcript is kept out of the cycle collector's
    passes meanwhile."""
    entries = deque(store.conversation_entries(session_id, cwd))
    children, notes = _children(session_id, cwd)
    with store.spared_by_collector():
        notes = store.notes_in(entries) + notes
        outputs = _Outputs(session_id, cwd)
        messages = _messages(entries, size)
        yield StoredConversation(messages, children, outputs.left_by(messages, children), notes)
        while entries:
            messages = _messages(entries, size)
            yield StoredConversation(messages, [], outputs.left_by(messages, []), [])


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
            for entry in build_subagent_chain(store.transcript_entries(content))
            if entry.get("type") in ("user", "assistant")
        ]
        if launched_by is not None and chain:
            messages = [message for entry in chain if (message := _stored(entry, launched_by)) is not None]
            children.append(StoredChild(agent_id, launched_by, messages))
            notes += store.notes_in(chain)
    return children, notes


def _messages(entries: deque[store.Entry], size: int) -> list[StoredMessage]:
    """The next ``size`` entries as messages (those the SDK cannot parse left out)."""
    taken = [entries.popleft() for _ in range(min(size, len(entries)))]
    return [message for entry in taken if (message := _stored(entry)) is not None]


def _stored(entry: store.Entry, launched_by: str | None = None) -> StoredMessage | None:
    """The SDK's typed message of a transcript entry, with Claude Code's structured form of its
    tool result; ``launched_by``: the Agent tool use whose subagent wrote it. A compaction's
    boundary is the message Claude Code sent of it live (``system``, ``compact_boundary``)."""
    message = entry.get("message")
    uuid = entry.get("uuid", "")
    ids = {"uuid": uuid, "session_id": entry.get("sessionId", "")}
    compaction = stored_compaction(entry)
    frame = (
        {"type": "system", "subtype": "compact_boundary", **ids, "compact_metadata": compaction}
        if compaction is not None
        else {
            "type": "user" if entry.get("type") == "user" else "assistant",
            "message": message,
            **ids,
            "parent_tool_use_id": launched_by,
            "tool_use_result": entry.get("toolUseResult"),
        }
    )
    try:
        parsed = parse_message(frame)
    except MessageParseError as exc:
        log.warning("skipped a stored message the SDK cannot parse (%s)", exc)
        return None
    if parsed is None:
        return None
    content = message.get("content") if isinstance(message, dict) else None
    return StoredMessage(uuid, parsed, content)


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
                    fd = recalled(path, self._base)
                    if fd is not None:
                        os.close(fd)  # it is read when the replay comes to it (``output``)
                        outputs[handed.task_id] = StoredOutput(handed.task_id, path, self._base)
        return outputs


# --- a shell's output, once the replay waits at it ---


async def output(stored: StoredOutput, options: tail.TailerOptions) -> AsyncGenerator[OutputRecalled, None]:
    """The pieces of a shell's output file, each read in a worker thread when asked for: no
    more of it in memory at a time than a piece."""
    pieces = output_pieces(stored, options)
    try:
        while (piece := await store_files.run(lambda: next(pieces, None))) is not None:
            yield piece
    finally:
        with contextlib.suppress(ValueError):  # still being read, when cancelled: it ends alone
            pieces.close()


def output_pieces(
    stored: StoredOutput, options: tail.TailerOptions | None = None
) -> Generator[OutputRecalled, None, None]:
    """All of a shell's output file, read as the live tailer with ``options`` reads one
    (``tail.recalled``), its last piece with how it exited; only that end (exit unknown) should
    it be gone by now."""
    fd = recalled(stored.path, stored.root)
    if fd is None:
        yield OutputRecalled(stored.task_id, b"", end=True)
        return
    try:
        yield from _pieces(fd, stored.task_id, options)
    finally:
        os.close(fd)


def _pieces(fd: int, task_id: str, options: tail.TailerOptions | None) -> Iterator[OutputRecalled]:
    try:
        for event in tail.recalled(fd, task_id, options):
            match event:
                case tail.Chunk(_, data):
                    yield OutputRecalled(task_id, data)
                case tail.Snapshot(_, data):
                    yield OutputRecalled(task_id, data, replaced=True)
                case tail.Final(_, remaining, exit_info):
                    yield OutputRecalled(task_id, remaining, end=True, exit=exit_info)
    except OSError:
        log.warning("cannot read output file of %s", task_id, exc_info=True)
        yield OutputRecalled(task_id, b"", end=True)
