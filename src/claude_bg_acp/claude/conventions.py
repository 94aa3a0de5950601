"""Claude Code's conventions that the agent reads: text formats and file layouts, not API.

Each was observed on the Claude Code CLI 2.1.332 (bundled with claude-agent-sdk 0.2.189; see
the lock file). None is documented, so a CLI upgrade is reviewed here, in one file:

- the tools that run a shell command, and what a foreground one's result says of it;
- the hand-off of a tool result that sent work to the background;
- the exit code in a task notification's summary;
- the closing line appended to a background shell's output file, and the signal it implies;
- where task output files and stored conversations live;
- Claude Code's own messages in a stored conversation (task notifications, command echoes ...);
- a compaction's boundary as the transcript keeps it, and the messages it kept as they were;
- the commands that start a new conversation under another session id;
- what the task tools' results say (a stored conversation has only their text);
- the error an assistant message reports when Claude Code is not logged in.

Standard library only: the core and the edges both import it.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.platform import host

OBSERVED_ON = "2.1.332"
"""The Claude Code CLI version every convention below was observed on."""

# --- a foreground shell's tool result ----------------------------------------------------------

SHELL_TOOLS = ("Bash",)
"""The tools that run a shell command: their output is terminal output."""

NO_OUTPUT = "(Bash completed with no output)"
"""The whole result of a command that succeeded and printed nothing."""

_EXIT_LINE = re.compile(r"Exit code (-?\d+)(?:\n|$)")
"""The first line of a failed command's result, e.g. ``"Exit code 3\\nout-line\\nerr-line"``."""


def shell_result(text: str, is_error: bool) -> tuple[str, int | None]:
    """The output and exit code of a foreground command, from its tool result.

    The result is the command's output (stderr merged into it, the final newline stripped),
    after an ``Exit code N`` line when the command failed. An error without that line did not
    come from the command (it was denied, or never ran): its text, and no exit code.
    """
    if not is_error:
        return ("" if text == NO_OUTPUT else text), 0
    match = _EXIT_LINE.match(text)
    if match is None:
        return text, None
    return text[match.end() :], int(match[1])


# --- the hand-off -----------------------------------------------------------------------------

HANDOFF = re.compile(
    r"running in background with ID: ([A-Za-z0-9_-]+)\.? Output is being written to: (\S+?)\.?(?:\s|$)"
)
"""The text of a Bash tool result that backgrounded its command, e.g. ``Command running in
background with ID: bash01. Output is being written to: /tmp/.../bash01.output``."""


@dataclass(frozen=True)
class HandOff:
    task_id: str
    output_file: str


def hand_off(tool_input: dict[str, Any], text: str, is_error: bool, structured: Any) -> HandOff | None:
    """The background task a tool result hands its work to, if it does.

    The words alone prove nothing: a foreground command can print them (with a path of its
    choosing). Claude Code's structured form of the result decides when it is known (its
    ``backgroundTaskId`` names the task; a stored conversation keeps it as ``toolUseResult``);
    without one (a subagent's result, one of several in a message) the tool use must have asked
    for the background (``run_in_background``).
    """
    match = HANDOFF.search(text)
    if match is None or is_error:
        return None
    handed = HandOff(match[1], match[2])
    if isinstance(structured, dict):
        return handed if structured.get("backgroundTaskId") == handed.task_id else None
    return handed if tool_input.get("run_in_background") is True else None


def agent_launched(structured: Any) -> HandOff | None:
    """The background subagent an Agent tool result launched: its stored form says
    ``status: async_launched`` and names the agent (its task id), the words do not match
    ``HANDOFF``."""
    if not isinstance(structured, dict) or structured.get("status") != "async_launched":
        return None
    agent, output = structured.get("agentId"), structured.get("outputFile")
    return HandOff(agent, output if isinstance(output, str) else "") if isinstance(agent, str) else None


LAUNCH_NOTE = "Running in the background."
"""What a launch shows when its tool input has no description."""


def launch_note(tool_input: Mapping[str, Any]) -> str:
    """What a tool call that sent its work to the background shows in place of Claude Code's
    hand-off: what it was asked to do (its description). The hand-off's words are for the model
    (an Agent's says itself it is internal metadata not to be shown): they name the task's id
    and the absolute path of its output file, and tell the model how to wait."""
    description = tool_input.get("description")
    return description if isinstance(description, str) and description.strip() else LAUNCH_NOTE


# --- the summary of a task notification -------------------------------------------------------

_EXIT_CODE = re.compile(r"exit code (-?\d+)")
"""``"... completed (exit code 0)"``, ``"... failed with exit code 3"``."""


def summary_exit_code(summary: str | None) -> int | None:
    match = _EXIT_CODE.search(summary or "")
    return int(match[1]) if match else None


# --- the closing line of a background shell's output file -------------------------------------


@dataclass(frozen=True, slots=True)
class ExitInfo:
    """How the command ended: an exit code, or the signal that stopped it (never both)."""

    exit_code: int | None
    signal: str | None


STOPPED = frozenset({"killed", "stopped"})
"""The end statuses of a task whose process was killed: its closing line is ``[killed]``."""


@dataclass(frozen=True, slots=True)
class ShellEnd:
    """What Claude Code said of a shell task's end: its final status (None: it said nothing,
    as when the agent stopped the process itself) and the exit code its summary names."""

    status: str | None = None
    exit_code: int | None = None

    def confirms(self, exit_info: ExitInfo) -> bool:
        """Whether a closing line saying ``exit_info`` is the one this end had Claude Code write
        (``[killed]`` for a stopped task, ``[exited with code N]`` for the others)."""
        if self.status is None:
            return False
        if exit_info.signal is not None:
            return self.status in STOPPED
        if self.status in STOPPED:
            return False
        if self.exit_code is not None:
            return exit_info.exit_code == self.exit_code
        return (exit_info.exit_code == 0) == (self.status == "completed")


KILLED_SIGNAL = "SIGKILL"
"""The signal reported for ``[killed]``: the line names none; the CLI stops a task by killing
its process group, and its group kill defaults to SIGKILL."""

KILLED_LINE = b"[killed]\n"
EXITED_PREFIX = b"[exited with code "
CODE_END = b"]\n"
UNKNOWN_CODE = b"unknown"
"""The code written when the process ended without one."""
MAX_CODE_DIGITS = 20
"""Bounds the closing line's length; no real exit code comes close."""

CLOSING_LINE = re.compile(
    rb"\[(?:(?P<killed>killed)|exited with code (?P<code>-?[0-9]{1,%d}|unknown))\]\n" % MAX_CODE_DIGITS
)
"""A whole closing line, without its leading newline."""
MAX_CLOSING_LINE = 1 + len(EXITED_PREFIX) + 1 + MAX_CODE_DIGITS + len(CODE_END)
"""The longest closing line, its leading newline included. Claude Code appends
``"\\n[exited with code N]\\n"`` or ``"\\n[killed]\\n"`` with ONE ``write()``, some 20 ms
after the command ended, having opened the file by path with ``O_WRONLY | O_APPEND | O_NOFOLLOW``
and no ``O_CREAT`` (seen with strace): so a deleted output file gets no closing line, and a
symbolic link put in its place gets none either."""

# --- where task output files live -------------------------------------------------------------

OUTPUT_SUFFIX = ".output"


def tasks_base(environ: Mapping[str, str] | None = None) -> str:
    """``<Claude Code's temp directory>/claude-<uid>``: every task output file of this user is
    below it.

    The temp directory is ``$CLAUDE_CODE_TMPDIR``, else the runtime's ``os.tmpdir()``: on POSIX
    ``$TMPDIR``, ``$TMP``, ``$TEMP``, else ``/tmp`` (macOS sets ``TMPDIR`` for every user, to a
    folder of its own); on Windows ``%TEMP%``, ``%TMP%``, else ``%SystemRoot%\\temp``. The uid
    is 0 where there is none (Windows).
    """
    env = os.environ if environ is None else environ
    getuid = getattr(os, "getuid", None)
    return os.path.join(env.get("CLAUDE_CODE_TMPDIR") or _tmpdir(env), f"claude-{getuid() if getuid else 0}")


def _tmpdir(env: Mapping[str, str]) -> str:
    if host().posix:
        return env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    system_root = env.get("SystemRoot") or env.get("windir") or ""
    return env.get("TEMP") or env.get("TMP") or f"{system_root}\\temp"


def tasks_root(cwd: str, environ: Mapping[str, str] | None = None) -> str:
    """``tasks_base()/<cwd, each non-alphanumeric character as ->``.

    Below it: ``<CLI session id>/tasks/<task id>.output`` (see :func:`output_file`), a regular
    file for a shell. A subagent's file there is a symbolic link to its transcript (a JSONL file
    elsewhere), not terminal output.
    """
    return os.path.join(tasks_base(environ), _dashed(cwd))


def _dashed(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def output_file(root: str, cli_session_id: str, task_id: str) -> str:
    return f"{root}/{cli_session_id}/tasks/{task_id}{OUTPUT_SUFFIX}"


def task_of_output_file(root: str, path: str) -> str | None:
    """The task whose output file ``path`` is, if it is one below ``root`` (see ``output_file``)."""
    if not path.startswith(root + "/"):
        return None
    parts = path[len(root) + 1 :].split("/")
    if len(parts) != 3 or parts[1] != "tasks" or not parts[2].endswith(OUTPUT_SUFFIX):
        return None
    return parts[2].removesuffix(OUTPUT_SUFFIX) or None


# --- where stored conversations live ----------------------------------------------------------


def projects_dir(environ: dict[str, str] | None = None) -> str:
    """``$CLAUDE_CONFIG_DIR/projects`` (default ``~/.claude/projects``).

    Below it: ``<cwd, each non-alphanumeric character as ->/<session id>.jsonl`` (a cwd longer
    than 200 characters is cut and hashed), and the subagents' transcripts in
    ``<session id>/subagents/``.
    """
    env = os.environ if environ is None else environ
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(config, "projects")


def transcript_file(session_id: str, cwd: str) -> str | None:
    """Where Claude Code keeps the conversation of a session started in ``cwd`` (resolved, as
    Claude Code names it), if that name is plain: None for a long one (Claude Code cuts and
    hashes it) or a session id that is not a bare uuid."""
    project = _dashed(unicodedata.normalize("NFC", os.path.realpath(cwd)))
    if len(project) > MAX_PROJECT_NAME or not _UUID.fullmatch(session_id):
        return None
    return os.path.join(projects_dir(), project, f"{session_id}.jsonl")


MAX_PROJECT_NAME = 200
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# --- Claude Code's own messages in a stored conversation ---------------------------------------

_NOTIFICATION = re.compile(r"<task-notification>(.*?)</task-notification>", re.DOTALL)
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
OWN_MESSAGES = (
    "<task-notification>",
    "<local-command-",
    "<system-reminder>",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
)
"""How user messages that Claude Code wrote itself begin: a task's end, the output of a local
command, a reminder, the marker of an interrupted turn, the summary that replaces a compacted
conversation."""


@dataclass(frozen=True)
class TaskNote:
    """A ``<task-notification>`` Claude Code wrote into the conversation when a task ended."""

    task_id: str
    tool_use_id: str | None
    status: str | None
    summary: str | None
    result: str | None = None
    """A subagent's report (its last message; the ``summary`` only names the agent)."""


def task_notes(text: str) -> list[TaskNote]:
    notes = []
    for block in _NOTIFICATION.findall(text):
        task_id = _tag(block, "task-id")
        if task_id:
            notes.append(
                TaskNote(
                    task_id,
                    _tag(block, "tool-use-id"),
                    _tag(block, "status"),
                    _tag(block, "summary"),
                    _tag(block, "result"),
                )
            )
    return notes


def _tag(block: str, name: str) -> str | None:
    match = re.search(rf"<{name}>(.*?)</{name}>", block, re.DOTALL)
    return match[1].strip() if match else None


def user_text(text: str) -> str | None:
    """A stored user text as the user typed it; None when Claude Code wrote it itself.

    A slash command is stored as ``<command-message>…<command-name>/x</command-name>
    <command-args>y</command-args>``: the user typed ``/x y``.
    """
    stripped = text.lstrip()
    if stripped.startswith(("<command-message>", "<command-name>")):
        command = _COMMAND.search(text)
        if command:
            args = _ARGS.search(text)
            return f"{command[1].strip()} {args[1].strip() if args else ''}".strip()
    return None if stripped.startswith(OWN_MESSAGES) else text


# --- a compaction, as the transcript keeps it ---------------------------------------------------

_STREAMED_METADATA = {"trigger": "trigger", "preTokens": "pre_tokens", "postTokens": "post_tokens"}
"""A stored compaction's metadata (``compactMetadata``) by the names its live message gives them."""


def stored_compaction(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """A compaction's metadata, as its live message (``system``, ``compact_boundary``) has it
    (``trigger``, ``pre_tokens``, ``post_tokens``), from the transcript record of its boundary:
    ``type`` ``system``, ``subtype`` ``compact_boundary``, ``compactMetadata`` with ``trigger``
    (``manual`` or ``auto``), ``preTokens``, ``postTokens`` (and more); None for any other record.

    The boundary starts the conversation anew: it has no ``parentUuid`` (its
    ``logicalParentUuid`` is the message before it), and the summary that replaces what came
    before follows it (a user message, ``isCompactSummary``). A ``/compact``'s boundary and
    summary are written ahead of the command's echo (``compacted_by``), which came first."""
    if entry.get("type") != "system" or entry.get("subtype") != "compact_boundary":
        return None
    stored = entry.get("compactMetadata")
    stored = stored if isinstance(stored, dict) else {}
    return {streamed: stored[key] for key, streamed in _STREAMED_METADATA.items() if key in stored}


def preserved(boundary: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The messages a compaction kept as they were (ids, in order), which Claude Code stores
    before its boundary and, resuming the conversation, links back after its summary: the
    boundary's ``compactMetadata.preservedMessages.uuids``, or else its ``preservedSegment`` walked
    by ``parentUuid`` from ``tailUuid`` up to ``headUuid`` among the ``stored`` records (by uuid).
    Empty when there are none, or when one is not stored: Claude Code then links none back.

    Claude Code keeps those of the turn a compaction interrupts (a tool call and its result, not
    the prompt, which the summary covers) and, for ``/compact``, the answer before it."""
    metadata = boundary.get("compactMetadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    listed = metadata.get("preservedMessages")
    segment = metadata.get("preservedSegment")
    if isinstance(listed, dict) and isinstance(listed.get("uuids"), list):
        uuids = [uuid for uuid in listed["uuids"] if isinstance(uuid, str)]
        return uuids if all(uuid in stored for uuid in uuids) else []
    if not isinstance(segment, dict):
        return []
    walked: list[str] = []
    uuid = segment.get("tailUuid")
    while isinstance(uuid, str) and uuid in stored and uuid not in walked:
        walked.append(uuid)
        if uuid == segment.get("headUuid"):
            return walked[::-1]
        uuid = stored[uuid].get("parentUuid")
    return []


def compacted_by(entry: Mapping[str, Any]) -> bool:
    """Whether a transcript record is the echo of a ``/compact`` command (with or without
    instructions)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    said = user_text(content) if entry.get("type") == "user" and isinstance(content, str) else None
    return said is not None and said.split(maxsplit=1)[:1] == ["/compact"]


# --- commands that start another conversation -------------------------------------------------

NEW_CONVERSATION_COMMANDS = ("/clear", "/reset", "/new")
"""``/clear`` and its aliases: Claude Code goes on under a NEW session id (``conversation_reset``),
so the ACP session would no longer name Claude Code's conversation."""


def starts_new_conversation(text: str) -> bool:
    words = text.split(maxsplit=1)
    return bool(words) and words[0] in NEW_CONVERSATION_COMMANDS


# --- the task tools' results ---------------------------------------------------------------------

_TASK_CREATED = re.compile(r"^Task #(\S+) created")
"""``TaskCreate``: ``"Task #1 created successfully: Write the parser"``."""
_TASK_LINE = re.compile(r"^#(\S+) \[([a-z_]+)\] (.*)$", re.MULTILINE)
"""A line of ``TaskList``: ``"#1 [in_progress] Write the parser"``."""


def created_task(text: str) -> str | None:
    match = _TASK_CREATED.match(text)
    return match[1] if match else None


def listed_tasks(text: str) -> list[dict[str, str]]:
    """The tasks a ``TaskList`` result lists, in the shape of its structured form."""
    return [{"id": m[1], "status": m[2], "subject": m[3]} for m in _TASK_LINE.finditer(text)]


# --- logging in ---------------------------------------------------------------------------------

NOT_LOGGED_IN = "authentication_failed"
"""``AssistantMessage.error`` of Claude Code's own message when it has no valid credentials (no
key or login: "Not logged in · Please run /login"; a key the API refuses: "Invalid API key")."""
