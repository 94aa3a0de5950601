"""Everything that can happen to a session, as the core's inputs.

``SessionCore.handle(event, now)`` takes one of these at a time and returns the effects to
perform. They are small immutable values, grouped by where they come from:

- the client: a prompt and its withdrawal, ``session/cancel`` (of the session or of a child),
  per-item cancels, a stop by task id, a permission-mode switch, a config option's choice, a
  permission answer, the close and its timeout (with how the processes the agent stopped
  itself ended), a client (re)attaching to the session (``session/load``,
  ``session/resume``): that it asked for a replay, the stored conversation to replay (part by
  part, each output file it waits at piece by piece, then its end), and the request for the
  current state, and having the answer that tells it of the session;
- Claude Code: that it starts on the stored conversation, its start (what it offers), what it
  has in effect, a message, a permission question, a question it stopped waiting for, its death
  (with how the processes it left running ended, once the agent stopped them), the
  conversation's title as its stored session names it, and whether its stored conversation
  holds a prompt;
- the output tailer: bytes of a task's output file, a snapshot of it, and its end;
- the clock: a tick at the core's next deadline.

A client request the core refuses (unknown terminal, unknown mode ...) raises ``Refused``
from ``handle`` before anything changes; otherwise the request is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.claude.conventions import ExitInfo, TaskNote
from claude_bg_acp.claude.server_info import Applied, McpServerState, ServerInfo
from claude_bg_acp.core.effects import ControlMcp, Ticket

if TYPE_CHECKING:
    # Only named here: the agent imports the events before the SDK is needed (see ``agent``).
    from claude_agent_sdk.types import Message, PermissionUpdate

# --- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """``session/prompt``; answered through ``ticket``."""

    ticket: Ticket
    content: list[ContentBlock]
    key: str | None = None
    """Its ``idempotencyKey`` (v2): the same on every attempt of one submission."""


@dataclass(frozen=True)
class WithdrawPrompt:
    """``$/cancel_request`` for a prompt: refused (-32800) unless it was inserted already."""

    ticket: Ticket


@dataclass(frozen=True)
class CancelTurn:
    """``session/cancel`` on the session: end the foreground turn; background work stays."""


@dataclass(frozen=True)
class CancelChild:
    """``session/cancel`` naming a subagent's session: stop that child's work only."""

    session_id: str


@dataclass(frozen=True)
class CancelTerminal:
    """``terminal/cancel`` of a terminal of ``session_id`` (the session or one of its children)."""

    session_id: str
    terminal_id: str


@dataclass(frozen=True)
class CancelToolCall:
    """``tool_call/cancel`` of a tool call of ``session_id`` (the session or one of its children)."""

    session_id: str
    tool_call_id: str


@dataclass(frozen=True)
class CancelTask:
    """Stop one background task (not a subagent) by its task id, as JetBrains AIR's
    ``_session/async_task/stop`` asks; answered through ``ticket`` with whether it sent a stop."""

    ticket: Ticket
    task_id: str


@dataclass(frozen=True)
class ChooseMode:
    """``session/set_mode``: one of Claude Code's permission modes."""

    mode_id: str


@dataclass(frozen=True)
class ChooseOption:
    """``session/set_config_option``; answered through ``ticket`` with the options."""

    ticket: Ticket
    config_id: str
    value: Any


@dataclass(frozen=True)
class AnswerWritten:
    """The client has the answer that told it of the session (``session/new``, load, resume):
    from now on it is told what changes."""


@dataclass(frozen=True)
class PermissionAnswered:
    """The client's answer to a permission question; ``option_id`` None when it cancelled it."""

    ticket: Ticket
    option_id: str | None


@dataclass(frozen=True)
class QuestionsAnswered:
    """The user's answers to Claude's questions: the input to allow the call with, or None when
    the user declined."""

    ticket: Ticket
    updated_input: dict[str, Any] | None


@dataclass(frozen=True)
class Close:
    """Closing starts: questions are withdrawn, the turn ends, every background task is stopped."""


@dataclass(frozen=True)
class CloseTimedOut:
    """The close waited long enough: finalize whatever did not confirm its end."""

    stopped: Mapping[str, ExitInfo] = field(default_factory=dict)
    """Tasks whose processes the agent stopped itself once Claude Code was gone: how each ended."""


@dataclass(frozen=True)
class StoredMessage:
    """One message of a stored conversation, as Claude Code's transcript keeps it."""

    uuid: str
    message: Message
    """The SDK's ``UserMessage`` or ``AssistantMessage``; a compaction's boundary, the
    ``SystemMessage`` Claude Code sent of it live."""
    content: Any
    """The raw content of a user message (the parsed one drops images)."""


@dataclass(frozen=True)
class StoredChild:
    """A subagent's stored conversation, and the Agent tool use that launched it."""

    agent_id: str
    tool_use_id: str
    messages: list[StoredMessage]


@dataclass(frozen=True)
class StoredOutput:
    """A background shell's output file that is still there: the task's own, below ``root``
    (Claude Code's temp directory). The replay waits at its terminal while it is read
    (``OutputRecalled``)."""

    task_id: str
    path: str
    root: str


@dataclass(frozen=True)
class OutputRecalled:
    """The next piece of the output file a replay waits at, read as the live tailer reads one:
    ``data`` to append, or (``replaced``) the latest bytes, which replace what came before; the
    last one (``end``) says how the shell exited (its closing line, withheld)."""

    task_id: str
    data: bytes
    replaced: bool = False
    end: bool = False
    exit: ExitInfo | None = None


@dataclass(frozen=True)
class StoredConversation:
    """A stored conversation, or a part of one (a long one is read and replayed in parts)."""

    messages: list[StoredMessage]
    children: list[StoredChild]
    outputs: dict[str, StoredOutput]
    """By task id, for the background shells whose output file is still there that these
    messages (or children) hand off."""
    notes: list[TaskNote] = field(default_factory=list)
    """The task notifications of the whole conversation (a part after the first has none):
    a task's end is told where it was handed off, before its notification comes."""


@dataclass(frozen=True)
class Attaching:
    """A client asked to re-attach with a replay (v1 ``session/load``, v2 ``session/resume``
    with ``replayFrom``): from now on, what the session says live waits for the replay's end."""


@dataclass(frozen=True)
class Recall:
    """Replay a stored conversation, or its next part, to the client, before it hears anything
    current, or the next piece of the output file the replay waits at; ``Recalled`` follows
    the last."""

    conversation: StoredConversation | OutputRecalled


@dataclass(frozen=True)
class Recalled:
    """The replay ended: ``complete`` once all of it was sent, not when it stopped short (the
    conversation could not be read, Claude Code could not resume it, the request failed)."""

    complete: bool = True


@dataclass(frozen=True)
class Resync:
    """A client (re)attaches: tell it the current state, and what each listed item is now."""


# --- Claude Code ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeResuming:
    """Claude Code is starting on the stored conversation, which another Claude Code left (an
    earlier agent process, or one that crashed): it may first replay what that one left."""


@dataclass(frozen=True)
class ClaudeStarted:
    """Claude Code runs: what it offers, and what it has in effect (None if it could not say)."""

    info: ServerInfo
    applied: Applied | None


@dataclass(frozen=True)
class SettingsRead:
    """Claude Code's answer to ``ReadSettings`` (None when it could not say)."""

    applied: Applied | None


@dataclass(frozen=True)
class ModeRefused:
    """Claude Code refused to switch to the permission mode ``mode_id``."""

    mode_id: str


@dataclass(frozen=True)
class ClaudeMessage:
    message: Message


@dataclass(frozen=True)
class PermissionAsked:
    """Claude Code's ``can_use_tool``; decided through ``ticket``."""

    ticket: Ticket
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None
    agent_id: str | None
    """The subagent asking, or None for the main conversation."""
    replaced: str | None = None
    """The text of the file a ``Write`` would overwrite (None: a new file, or one the agent
    may not read for the client)."""
    suggestions: tuple[PermissionUpdate, ...] = ()
    """What Claude Code suggests applying so as not to ask again."""


@dataclass(frozen=True)
class PermissionAbandoned:
    """Claude Code no longer waits for the answer to this question."""

    ticket: Ticket


@dataclass(frozen=True)
class TitleRead:
    """The title the stored session has now (None: none yet), and when it last changed."""

    title: str | None
    own: bool
    """Claude Code's own title (a rename, an AI title), not its first prompt's."""
    updated_at: str | None


@dataclass(frozen=True)
class McpAnswered:
    """What ``ControlMcp`` did: ``failure`` says why its action was not done, ``servers`` each
    server's state after it (None when it could not be read)."""

    command: ControlMcp
    servers: tuple[McpServerState, ...] | None
    failure: str | None


@dataclass(frozen=True)
class PromptLookedUp:
    """Whether the stored conversation holds the prompt of ``key`` (``FindPrompt``); None when
    it could not be read."""

    key: str
    stored: bool | None


@dataclass(frozen=True)
class ClaudeDied:
    """Claude Code is gone. Unless ``fatal``, another one takes over the conversation."""

    reason: str
    fatal: bool = True
    stopped: Mapping[str, ExitInfo] = field(default_factory=dict)
    """Tasks whose processes it left running, which the agent stopped: how each ended."""


# --- the output tailer ------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputRead:
    """The next bytes of a task's output, exactly as the file holds them."""

    task_id: str
    data: bytes


@dataclass(frozen=True)
class OutputReplaced:
    """The client fell behind (or the file restarted): these bytes replace everything sent."""

    task_id: str
    data: bytes


@dataclass(frozen=True)
class OutputEnded:
    """The file was read to its end after the task ended: the rest, and how it exited."""

    task_id: str
    rest: bytes
    exit: ExitInfo | None


# --- the clock --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tick:
    """The core's next deadline (``SessionCore.next_deadline``) has passed."""


Event = (
    Prompt
    | WithdrawPrompt
    | CancelTurn
    | CancelChild
    | CancelTerminal
    | CancelToolCall
    | CancelTask
    | ChooseMode
    | ChooseOption
    | AnswerWritten
    | PermissionAnswered
    | QuestionsAnswered
    | Close
    | CloseTimedOut
    | Attaching
    | Recall
    | Recalled
    | Resync
    | ClaudeResuming
    | ClaudeStarted
    | SettingsRead
    | ModeRefused
    | ClaudeMessage
    | PermissionAsked
    | PermissionAbandoned
    | ClaudeDied
    | TitleRead
    | McpAnswered
    | PromptLookedUp
    | OutputRead
    | OutputReplaced
    | OutputEnded
    | Tick
)
