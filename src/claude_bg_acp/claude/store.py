"""Claude Code's stored conversations: find, list, read, fork and delete them.

Claude Code writes each conversation to ``projects/<cwd>/<session id>.jsonl`` under its config
directory (``conventions.projects_dir``) once the first prompt is sent, and each subagent's
beside it. The SDK's session functions read and change those files. They are plain blocking
file I/O (listing reads the head and tail of every file of a project), so each call here runs
in a worker thread; and they find the files through ``CLAUDE_CONFIG_DIR`` in this process's
environment, which is the environment the CLI gets too.

It knows nothing of ACP: it answers with sessions (id, cwd, title, last change) and with
conversations in the form the core replays (``StoredConversation``), the SDK's own parser
having made typed messages of the stored ones, with Claude Code's structured form of each tool
result (``toolUseResult``, which those readers leave out) put back. A background shell's output
file is read back (its latest ``RECALL_LIMIT`` bytes, through the closing-line rule) while it is
still there, under the rules the live tailer reads it by (``task_output``), from this
conversation's own task directory only: a shell is a background one when Claude Code's
structured result or the tool use says so (``conventions.hand_off``), never by the words of its
output, and its file is the task's own there, never a path the words name.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from claude_agent_sdk._errors import MessageParseError
from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk._internal.session_mutations import delete_session, fork_session
from claude_agent_sdk._internal.sessions import (
    _collect_agent_files,
    _resolve_session_file_path,
    _resolve_subagents_dir,
    get_session_info,
    get_session_messages,
    get_subagent_messages,
    list_sessions,
    list_subagents,
)
from claude_agent_sdk.types import AssistantMessage, SessionMessage, ToolUseBlock, UserMessage

from claude_bg_acp.claude.conventions import hand_off, output_file, projects_dir, tasks_base, tasks_root
from claude_bg_acp.closing_line import TrailerGate
from claude_bg_acp.core.events import StoredChild, StoredConversation, StoredMessage, StoredOutput
from claude_bg_acp.core.transcript import Transcript
from claude_bg_acp.task_output import recall

log = logging.getLogger(__name__)

RECALL_LIMIT = 256 * 1024
TITLE_LIMIT = 256


@dataclass(frozen=True)
class StoredSession:
    session_id: str
    cwd: str
    title: str | None
    """Claude Code's name for it, else its first prompt (on one line, cut to ``TITLE_LIMIT``)."""
    updated_at: str
    """When its transcript last changed (RFC 3339, UTC)."""


class NotStored(LookupError):
    """Claude Code has no conversation by that id."""


class Unreadable(LookupError):
    """The transcript exists but holds no conversation Claude Code could go on with."""


async def find(session_id: str) -> StoredSession:
    """The stored session of that id, in whichever project it is; raises ``NotStored`` or
    ``Unreadable``."""
    return await anyio.to_thread.run_sync(_find, session_id)


async def listed(cwd: str | None) -> list[StoredSession]:
    """The sessions stored for ``cwd`` (every one when None), the latest change first."""
    return await anyio.to_thread.run_sync(_listed, cwd)


async def exists(session_id: str, cwd: str) -> bool:
    return await anyio.to_thread.run_sync(lambda: get_session_info(session_id, directory=cwd) is not None)


async def conversation(session_id: str, cwd: str) -> StoredConversation:
    return await anyio.to_thread.run_sync(_conversation, session_id, cwd)


async def title(session_id: str, cwd: str) -> tuple[str | None, str | None]:
    """The title Claude Code gave the conversation (a rename or an AI title), and when its
    transcript last changed."""
    info = await anyio.to_thread.run_sync(lambda: get_session_info(session_id, directory=cwd))
    if info is None:
        return None, None
    return info.custom_title, _timestamp(info.last_modified)


async def fork(session_id: str, cwd: str) -> str:
    """Copy the conversation under a new id (Claude Code titles it "<title> (fork)")."""
    try:
        result = await anyio.to_thread.run_sync(lambda: fork_session(session_id, directory=cwd))
    except FileNotFoundError:
        raise NotStored(session_id) from None
    return result.session_id


async def delete(session_id: str) -> bool:
    """Delete the conversation and its subagents' transcripts; False when none was stored."""
    try:
        await anyio.to_thread.run_sync(lambda: delete_session(session_id))
    except (FileNotFoundError, ValueError):
        return False
    return True


# --- in the worker thread -----------------------------------------------------------------------


def _find(session_id: str) -> StoredSession:
    if not _is_uuid(session_id):
        raise NotStored(session_id)
    info = get_session_info(session_id)
    if info is not None and info.cwd:
        return StoredSession(
            info.session_id,
            info.cwd,
            _title(info.custom_title or info.first_prompt),
            _timestamp(info.last_modified),
        )
    files = glob.glob(os.path.join(glob.escape(projects_dir()), "*", f"{session_id}.jsonl"))
    if files:
        raise Unreadable(files[0])
    raise NotStored(session_id)


def _listed(cwd: str | None) -> list[StoredSession]:
    infos = (
        list_sessions(directory=cwd, include_worktrees=False)
        if cwd
        else list_sessions(include_worktrees=False)
    )
    wanted = os.path.realpath(cwd) if cwd else None
    infos = [i for i in infos if i.cwd and (wanted is None or os.path.realpath(i.cwd) == wanted)]
    infos.sort(key=lambda i: (i.last_modified, i.session_id), reverse=True)
    return [
        StoredSession(
            i.session_id, str(i.cwd), _title(i.custom_title or i.first_prompt), _timestamp(i.last_modified)
        )
        for i in infos
    ]


def _conversation(session_id: str, cwd: str) -> StoredConversation:
    structured = _tool_use_results(session_id, cwd)
    messages = _stored(get_session_messages(session_id, directory=cwd), structured)
    children: list[StoredChild] = []
    for agent_id in list_subagents(session_id, directory=cwd):
        raw = get_subagent_messages(session_id, agent_id, directory=cwd)
        launched_by = next((m.parent_tool_use_id for m in raw if m.parent_tool_use_id), None)
        if launched_by is not None:
            children.append(StoredChild(agent_id, launched_by, _stored(raw, structured)))
    everything = messages + [m for child in children for m in child.messages]
    return StoredConversation(messages, children, _outputs(everything, session_id, cwd))


def _stored(messages: list[SessionMessage], structured: dict[str, Any]) -> list[StoredMessage]:
    """``structured``: Claude Code's structured form of tool results, by message uuid."""
    stored: list[StoredMessage] = []
    for message in messages:
        frame = {
            "type": message.type,
            "message": message.message,
            "uuid": message.uuid,
            "session_id": message.session_id,
            "parent_tool_use_id": message.parent_tool_use_id,
            "tool_use_result": structured.get(message.uuid),
        }
        try:
            parsed = parse_message(frame)
        except MessageParseError as exc:
            log.warning("skipped a stored message the SDK cannot parse (%s)", exc)
            continue
        if parsed is not None:
            content = message.message.get("content") if isinstance(message.message, dict) else None
            stored.append(StoredMessage(message.uuid, parsed, content))
    return stored


def _tool_use_results(session_id: str, cwd: str) -> dict[str, Any]:
    """Claude Code's structured form of each stored tool result (its ``toolUseResult``), by
    message uuid, from the transcripts the SDK's readers read (and leave it out of)."""
    paths = [_resolve_session_file_path(session_id, cwd)]
    subagents = _resolve_subagents_dir(session_id, cwd)
    if subagents is not None:
        paths += [path for _, path in _collect_agent_files(subagents)]
    found: dict[str, Any] = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8") if path is not None else ""
        except OSError:
            continue
        for line in text.splitlines():
            if '"toolUseResult"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
                found[entry["uuid"]] = entry.get("toolUseResult")
    return found


def _outputs(messages: list[StoredMessage], session_id: str, cwd: str) -> dict[str, StoredOutput]:
    """What each background shell of the conversation left in its output file: the task's own
    file in this conversation's task directory (never a path a tool result names), read under
    the live tailer's rules from Claude Code's temp directory down."""
    inputs: dict[str, dict[str, Any]] = {}
    outputs: dict[str, StoredOutput] = {}
    for stored in messages:
        message = stored.message
        if isinstance(message, AssistantMessage):
            inputs |= {block.id: block.input for block in message.content if isinstance(block, ToolUseBlock)}
        elif isinstance(message, UserMessage):
            for result in Transcript(session_id).tool_results(message):
                tool_input = inputs.get(result.tool_use_id, {})
                handed = hand_off(tool_input, result.text, result.is_error, result.structured)
                if handed is None:
                    continue
                path = output_file(tasks_root(cwd), session_id, handed.task_id)
                latest = recall(path, tasks_base(), RECALL_LIMIT)
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


def _title(text: str | None) -> str | None:
    if not text:
        return None
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LIMIT else line[: TITLE_LIMIT - 1] + "…"


def _timestamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
