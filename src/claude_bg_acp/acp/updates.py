"""The session updates we send (``session/update`` params), built on ``schema.WireModel``.

Most are ACP's own. The draft subagent form (``subagent_spawned``, ``subagent_state_update``,
read by Zed and JetBrains AIR) and AIR's async tasks (``async_task_*``) are not in the ACP
schema: only the presenters of the clients that read them send them.

The common shapes inside them (a location, a plan entry, a command, an exit status, ...) are
``TypedDict``s, typed where they are built, and taken by the models as they come (``Shaped``):
pydantic neither checks nor copies them, as it did not when they were plain dicts, so what a
presenter builds, in its order, is what the client reads.
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, TypedDict, TypeVar

from claude_bg_acp.acp.answers import ConfigOption
from claude_bg_acp.acp.jsonrpc import encode, notification_frame
from claude_bg_acp.acp.schema import ContentBlock, WireModel

Shape = TypeVar("Shape")
if TYPE_CHECKING:
    Shaped = Annotated[Shape, "as sent"]
    """A field holding a shape below: typed for mypy, taken as it comes at run time."""
else:

    class _AsSent:
        def __getitem__(self, shape: object) -> object:
            return Any  # pydantic takes it as it comes, as it took a ``dict[str, Any]``

    Shaped = _AsSent()


class Location(TypedDict):
    """A file a tool call reads or changes, and its first line there when one is known."""

    path: str
    line: NotRequired[int]


class ExitStatus(TypedDict, total=False):
    """How a terminal's command ended: ``{}`` when that is unknown."""

    exitCode: int | None
    signal: str | None


class CommandInput(TypedDict):
    type: NotRequired[str]
    """v2's: ``text``."""
    hint: str


class AvailableCommand(TypedDict):
    type: NotRequired[str]
    """v2's: ``command``, first."""
    name: str
    description: str
    input: NotRequired[CommandInput]


class PlanEntry(TypedDict):
    content: str
    priority: str
    status: str


class Plan(TypedDict):
    """v2's plan: its entries, by its id."""

    type: str
    planId: str
    entries: list[PlanEntry]


class Cost(TypedDict):
    amount: float
    currency: str


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class ContentChunk(WireModel):
    session_update: Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
    content: ContentBlock | TextContent
    message_id: str | None = None


class UserMessage(WireModel):
    session_update: Literal["user_message"] = "user_message"
    message_id: str
    content: list[ContentBlock] | None = None


class ToolCall(WireModel):
    """v1's creating ``tool_call`` and both versions' ``tool_call_update`` (an upsert in v2)."""

    session_update: Literal["tool_call", "tool_call_update"]
    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[dict[str, Any]] | None = None
    locations: Shaped[list[Location]] | None = None
    raw_input: Any = None
    raw_output: Any = None
    capabilities: dict[str, Any] | None = None


class ErrorObject(WireModel):
    code: int
    message: str
    data: Any = None


class StateUpdate(WireModel):
    session_update: Literal["state_update"] = "state_update"
    state: Literal["running", "idle", "requires_action", "unknown"]
    stop_reason: str | None = None
    error: ErrorObject | None = None
    usage: dict[str, Any] | None = None
    background: list[dict[str, Any]] | None = None


class TerminalUpdate(WireModel):
    session_update: Literal["terminal_update"] = "terminal_update"
    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: dict[str, Any] | None = None
    exit_status: Shaped[ExitStatus] | None = None
    capabilities: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class TerminalOutputChunk:
    """``terminal_output_chunk``: the next bytes of a terminal's output, base64 on the wire.

    Not a pydantic model: it is most of what goes over the wire, and valid by construction, so
    it is neither validated nor copied on the way; :func:`session_update_line` encodes it
    straight into its line.
    """

    terminal_id: str
    data: bytes

    def wire(self) -> dict[str, Any]:
        encoded = base64.b64encode(self.data).decode("ascii")
        return {"sessionUpdate": "terminal_output_chunk", "terminalId": self.terminal_id, "data": encoded}


class CurrentModeUpdate(WireModel):
    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


class SubagentUpdate(WireModel):
    session_update: Literal["subagent_update"] = "subagent_update"
    session_id: str
    title: str | None = None
    description: str | None = None
    capabilities: dict[str, Any] | None = None
    state: dict[str, Any] | None = None


class ReplayComplete(WireModel):
    """v2: the end of a replay on a session (the v2 Preview's Session Replay Complete RFD; no
    npm release of the schema has it yet)."""

    session_update: Literal["replay_complete"] = "replay_complete"


class Notice(WireModel):
    """Information for the user that is not part of the session's history."""

    session_update: Literal["notice"] = "notice"
    severity: Literal["info", "warning", "error"]
    title: str
    description: str | None = None


class SessionInfoUpdate(WireModel):
    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None


class SessionMessage(WireModel):
    session_update: Literal["session_message"] = "session_message"
    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    content: list[dict[str, Any]] | None = None


class SubagentSpawned(WireModel):
    """A child session, in the draft form, announced on its parent."""

    session_update: Literal["subagent_spawned"] = "subagent_spawned"
    subagent_session_id: str
    name: str
    task: str
    prompt: str | None = None
    capabilities: dict[str, Any]


class SubagentStateUpdate(WireModel):
    """The end of a child session, in the draft form, on its parent."""

    session_update: Literal["subagent_state_update"] = "subagent_state_update"
    subagent_session_id: str
    state: Literal["completed", "failed", "cancelled", "disconnected"]


class AsyncTaskSpawned(WireModel):
    session_update: Literal["async_task_spawned"] = "async_task_spawned"
    async_task_id: str
    name: str
    task_type: str
    description: str
    show_in_transcript: bool
    can_stop: bool
    tool_call_id: str | None = None
    output_file_path: str | None = None


class AsyncTaskProgress(WireModel):
    session_update: Literal["async_task_progress"] = "async_task_progress"
    async_task_id: str
    tool_call_id: str | None = None
    output_file_path: str | None = None


class AsyncTaskStateUpdate(WireModel):
    session_update: Literal["async_task_state_update"] = "async_task_state_update"
    async_task_id: str
    state: Literal["running", "paused", "completed", "failed", "stopped"]
    summary: str | None = None


class ConfigOptionUpdate(WireModel):
    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[ConfigOption]


class AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: Shaped[list[AvailableCommand]]


class UsageUpdate(WireModel):
    session_update: Literal["usage_update"] = "usage_update"
    used: int
    size: int
    cost: Shaped[Cost] | None = None


class PlanEntries(WireModel):
    """v1's ``plan``: the whole plan."""

    session_update: Literal["plan"] = "plan"
    entries: Shaped[list[PlanEntry]]


class PlanUpdate(WireModel):
    """v2's ``plan_update``: the whole content of one plan, by its id."""

    session_update: Literal["plan_update"] = "plan_update"
    plan: Shaped[Plan]


SessionUpdate = (
    ContentChunk
    | UserMessage
    | ToolCall
    | StateUpdate
    | TerminalUpdate
    | TerminalOutputChunk
    | SubagentUpdate
    | SessionMessage
    | ReplayComplete
    | Notice
    | SessionInfoUpdate
    | CurrentModeUpdate
    | SubagentSpawned
    | SubagentStateUpdate
    | AsyncTaskSpawned
    | AsyncTaskProgress
    | AsyncTaskStateUpdate
    | ConfigOptionUpdate
    | AvailableCommandsUpdate
    | UsageUpdate
    | PlanEntries
    | PlanUpdate
)


@functools.lru_cache(maxsize=1024)
def _output_head(session_id: str, terminal_id: str) -> bytes:
    """A terminal's output notification up to its data (the same for all its chunks)."""
    return b"".join(
        (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":',
            json.dumps(session_id).encode(),
            b',"update":{"sessionUpdate":"terminal_output_chunk","terminalId":',
            json.dumps(terminal_id).encode(),
            b',"data":"',
        )
    )


def session_update_line(session_id: str, update: SessionUpdate) -> bytes:
    """The ``session/update`` notification for ``update``, encoded as one line.

    Terminal output is most of what goes over the wire and its data is base64, which JSON
    needs no escaping for, so that one is spliced together from the bytes instead of being
    encoded by ``json`` (encoding dominated the cost of relaying a shell's output).
    """
    if isinstance(update, TerminalOutputChunk):
        return b"".join(
            (_output_head(session_id, update.terminal_id), base64.b64encode(update.data), b'"}}}\n')
        )
    return encode(notification_frame("session/update", {"sessionId": session_id, "update": update.wire()}))
