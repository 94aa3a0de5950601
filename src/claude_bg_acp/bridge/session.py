"""One ACP session's core: SDK messages and client requests in, effects out.

``SessionCore`` routes everything that happens in one Claude Code session:

- messages of the main conversation go to the root ``Transcript``; messages of a subagent
  (``parent_tool_use_id`` naming the Agent tool use that launched it) go to that child's
  transcript once the child is exposed, and wait in a bounded buffer until then;
- results and ``session_state_changed`` drive the foreground lifecycle (``turns``); task
  events drive background work (``background``, ``tasks``, ``subagents``);
- ``can_use_tool`` becomes a permission question, asked under the session the tool use
  belongs to and answered through ``Decide``.

Every method takes ``now`` (seconds, monotonic) so that timers stay testable.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, UserMessage
from claude_agent_sdk.types import Message, StreamEvent

from claude_bg_acp.acp.jsonrpc import INTERNAL_ERROR, RpcError
from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.bridge import tools
from claude_bg_acp.bridge.background import Background
from claude_bg_acp.bridge.effects import AskPermission, Decide, Effect, Ticket, WithdrawPermission
from claude_bg_acp.bridge.meta_terminals import MetaTerminals, Mode
from claude_bg_acp.bridge.modes import Modes
from claude_bg_acp.bridge.prompts import to_claude_content
from claude_bg_acp.bridge.subagents import Subagents
from claude_bg_acp.bridge.tools import ToolUse
from claude_bg_acp.bridge.transcript import Transcript
from claude_bg_acp.bridge.turns import Foreground, PendingPrompt, Version
from claude_bg_acp.output import ExitInfo

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"
PERMISSION_OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow", "kind": "allow_always"},
    {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
]
BUFFER_LIMIT = 1000
"""Messages kept per subagent that is not exposed yet (its parent is unknown)."""


@dataclass
class Question:
    tool_use_id: str | None
    foreground: bool


@dataclass
class SessionCore:
    session_id: str
    version: Version
    cwd: str = "/"
    tasks_root: str | None = None
    """Where Claude Code keeps task output files, up to the CLI's session id (see claude.paths)."""
    expose_subagents: bool | None = None
    """Subagents as child sessions: always in v2; in v1 when the client declared them."""
    terminal_meta: Mode | None = None
    """v1 only: the client reads shell output from ``_meta`` (see ``meta_terminals``)."""
    allow_bypass: bool = True
    """Whether the bypassPermissions mode is offered (Claude Code refuses it to root)."""
    foreground: Foreground = field(init=False)
    background: Background = field(init=False)
    subagents: Subagents = field(init=False)
    root: Transcript = field(init=False)
    modes: Modes = field(init=False)
    tool_uses: dict[str, ToolUse] = field(default_factory=dict)
    questions: dict[Ticket, Question] = field(default_factory=dict)
    buffered: defaultdict[str, list[Message]] = field(default_factory=lambda: defaultdict(list))
    turn_error: str | None = None
    """The API error an assistant message of this turn reported (e.g. ``max_output_tokens``)."""

    def __post_init__(self) -> None:
        exposed = self.version == 2 if self.expose_subagents is None else self.expose_subagents
        self.foreground = Foreground(self.session_id, self.version)
        self.subagents = Subagents(self.session_id, self.version, exposed, self.tool_uses, self._transcript)
        self.background = Background(
            self.session_id,
            self.cwd,
            self.version,
            self.foreground,
            self.tool_uses,
            self.subagents,
            self.tasks_root,
            MetaTerminals(self.session_id, self.terminal_meta) if self.terminal_meta else None,
        )
        self.root = self._transcript(self.session_id)
        self.modes = Modes(self.session_id, self.allow_bypass)

    def _transcript(self, session_id: str) -> Transcript:
        # Called for the root once the background exists, and for each child when it is exposed.
        return Transcript(session_id, self.version, self.tool_uses, self.background)

    # --- client requests ----------------------------------------------------------------------

    def prompt(self, ticket: Ticket, content: list[ContentBlock], now: float) -> list[Effect]:
        wire = [block.wire() for block in content]
        return self.foreground.submit(PendingPrompt(ticket, wire, to_claude_content(wire)))

    def cancel(self, now: float) -> list[Effect]:
        effects = self.foreground.cancel()
        for ticket in [t for t, q in self.questions.items() if q.foreground]:
            effects += self._withdraw(ticket, "The user cancelled the turn")
        return effects

    def withdraw(self, ticket: Ticket, now: float) -> list[Effect]:
        """A prompt request the client cancelled: answered -32800 unless it was inserted."""
        return self.foreground.withdraw(ticket)

    def set_mode(self, mode_id: str, now: float) -> list[Effect]:
        """``session/set_mode``: raises -32602 for a mode we do not offer."""
        return self.modes.set(mode_id)

    def cancel_child(self, session_id: str, now: float) -> list[Effect]:
        """``session/cancel`` naming a subagent: stop that child's work only."""
        return self.subagents.cancel(session_id)

    def close(self, now: float) -> list[Effect]:
        """Closing starts: withdraw questions, end the turn, and stop every background task.

        The tasks' own end events finalize them (``settled`` tells when); ``abandon`` finalizes
        whatever did not confirm in time.
        """
        effects: list[Effect] = []
        for ticket in list(self.questions):
            effects += self._withdraw(ticket, "The session was closed")
        return effects + self.foreground.close() + self.background.stop_all(now)

    @property
    def settled(self) -> bool:
        return self.background.settled

    def abandon(self, now: float) -> list[Effect]:
        return self.background.abandon(now)

    # --- Claude Code ---------------------------------------------------------------------------

    def sdk_message(self, message: Message, now: float) -> list[Effect]:
        parent = getattr(message, "parent_tool_use_id", None)
        if parent:
            return self._child_message(parent, message, now)
        if isinstance(message, ResultMessage):
            return self._result(message)
        if isinstance(message, SystemMessage):
            if message.subtype == "session_state_changed":
                return self.foreground.cli_state(str(message.data.get("state")))
            return self.background.system(message.subtype, message.data, now) + self._flush(now)
        if isinstance(message, AssistantMessage) and message.error is not None:
            self.turn_error = str(message.error)
        return self.foreground.work_seen() + self._translate(self.root, message, now)

    def _translate(self, transcript: Transcript, message: Message, now: float) -> list[Effect]:
        if isinstance(message, StreamEvent):
            return transcript.stream_event(message.event)
        if isinstance(message, AssistantMessage):
            return transcript.assistant(message)
        if isinstance(message, UserMessage):
            return transcript.tool_results(message, now)
        return []

    def _child_message(self, parent_tool_use_id: str, message: Message, now: float) -> list[Effect]:
        if not self.subagents.exposed:
            # A client that does not know child sessions sees subagents' work in the session
            # that launched them, as the official adapter shows it.
            return self._translate(self.root, message, now)
        transcript = self.subagents.transcript_for(parent_tool_use_id)
        if transcript is not None:
            return self._translate(transcript, message, now)
        # Its child is not exposed yet: never guess where it belongs, wait.
        pending = self.buffered[parent_tool_use_id]
        if len(pending) < BUFFER_LIMIT:
            pending.append(message)
        return []

    def _flush(self, now: float) -> list[Effect]:
        """Send what waited for a child that is exposed now."""
        effects: list[Effect] = []
        for tool_use_id in list(self.buffered):
            transcript = self.subagents.transcript_for(tool_use_id)
            if transcript is not None:
                for message in self.buffered.pop(tool_use_id):
                    effects += self._translate(transcript, message, now)
        return effects

    def _result(self, message: ResultMessage) -> list[Effect]:
        origin: dict[str, Any] = dict(message.origin or {})
        uuids = set(message.user_message_uuids or [])
        if message.user_message_uuid:
            uuids.add(message.user_message_uuid)
        follow_up = not self.foreground.answers_prompt(uuids, str(origin.get("kind", "human")))
        # A wakeup that fired started this turn: its pending tool call is done.
        effects = self.background.schedule_fired() if origin.get("subkind") == "scheduled-trigger" else []
        if message.subtype != "success":
            effects += self.root.close_tool_calls("cancelled")
        errors = message.errors or ([message.result] if message.is_error and message.result else [])
        outcome = self.foreground.outcome_of(
            message.subtype, message.stop_reason, message.usage, message.is_error, errors, self.turn_error
        )
        self.turn_error = None
        return effects + self.foreground.result(outcome, follow_up)

    # --- background work ---------------------------------------------------------------------------

    def cancel_terminal(self, terminal_id: str, now: float) -> list[Effect]:
        return self.background.cancel_terminal(terminal_id, now)

    def cancel_tool_call(self, tool_call_id: str, now: float) -> list[Effect]:
        return self.background.cancel_tool_call(tool_call_id, now)

    def terminal_output(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        return self.background.output(task_id, data)

    def terminal_snapshot(self, task_id: str, data: bytes, now: float) -> list[Effect]:
        return self.background.snapshot(task_id, data)

    def terminal_drained(
        self, task_id: str, rest: bytes, exit_info: ExitInfo | None, now: float
    ) -> list[Effect]:
        return self.background.drained(task_id, rest, exit_info, now)

    def tick(self, now: float) -> list[Effect]:
        return self.background.tick(now) + self.foreground.tick(now) + self._flush(now)

    def next_deadline(self) -> float | None:
        deadlines = [
            d for d in (self.background.next_deadline(), self.foreground.next_deadline()) if d is not None
        ]
        return min(deadlines) if deadlines else None

    # --- permission questions ------------------------------------------------------------------

    def permission_requested(
        self,
        ticket: Ticket,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        agent_id: str | None,
        now: float,
    ) -> list[Effect]:
        session_id = self.subagents.session_of_agent(agent_id)
        foreground = agent_id is None
        self.questions[ticket] = Question(tool_use_id, foreground)
        call = self.root.tool_call_fields(tool_use_id or f"permission-{ticket}", tool_name, tool_input)
        call["status"] = "pending"
        view = tools.describe(tool_name, tool_input)
        if self.version == 1:
            params: dict[str, Any] = {"toolCall": call}
        else:
            params = {"title": f"Allow {view.title}?", "subject": {"type": "tool_call", "toolCall": call}}
        params.update(sessionId=session_id, options=PERMISSION_OPTIONS)
        effects: list[Effect] = [AskPermission(ticket, params)]
        if foreground:
            effects += self.foreground.set_blocked(True)
        return effects

    def permission_answered(self, ticket: Ticket, option_id: str | None, now: float) -> list[Effect]:
        """``option_id`` is None when the client cancelled the question."""
        if ticket not in self.questions:
            return []
        allow = option_id in (ALLOW_ONCE, ALLOW_ALWAYS)
        message = "" if allow else "The user rejected this tool use"
        decision = Decide(ticket, allow, always=option_id == ALLOW_ALWAYS, message=message)
        return [decision, *self._forget_question(ticket)]

    def question_abandoned(self, ticket: Ticket, now: float) -> list[Effect]:
        """Claude Code no longer waits for this answer."""
        return self._withdraw(ticket, "Claude Code withdrew the question") if ticket in self.questions else []

    def sdk_failed(self, reason: str, now: float, fatal: bool = True) -> list[Effect]:
        """Claude Code died. Its turn ends with an error and what it ran is gone with it.

        Unless ``fatal``, the session goes on with a new Claude Code: waiting prompts stay.
        """
        effects: list[Effect] = []
        for ticket in list(self.questions):
            effects += self._withdraw(ticket, "Claude Code stopped")
        effects += self.subagents.lost() + self.background.reset(now)
        error = RpcError(INTERNAL_ERROR, reason)
        return effects + (self.foreground.fail(error) if fatal else self.foreground.crashed(error))

    def _withdraw(self, ticket: Ticket, why: str) -> list[Effect]:
        # Withdraw first: once decided, the driver forgets the question and its request id.
        return [
            WithdrawPermission(ticket),
            Decide(ticket, False, message=why, interrupt=True),
            *self._forget_question(ticket),
        ]

    def _forget_question(self, ticket: Ticket) -> list[Effect]:
        question = self.questions.pop(ticket)
        if question.foreground and not any(q.foreground for q in self.questions.values()):
            return self.foreground.set_blocked(False)
        return []
