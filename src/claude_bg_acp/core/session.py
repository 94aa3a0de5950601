"""One ACP session's core: events in, effects out; the only place where its parts meet.

``SessionCore.handle(event, now)`` is the one way in (``events``); what comes out are
``effects``. Inside, each concept keeps its own lifecycle and reports what happened as facts;
routers carry them between the parts, and never let the parts call each other. Each event goes
to the one that owns its concern:

- Claude Code's messages of the main conversation go to the root ``Transcript``
  (``message_routing``); messages of a subagent go to that child's (``child_routing``). Their
  tool facts go to ``ToolUses``, which owns every tool call's lifecycle; a tool result may hand
  its work to ``Background`` or ``Schedules``.
- Task events, a task's tailed output and the stops a client asks for go to
  ``task_routing``, which routes them to ``Subagents``, ``Background``, ``ForegroundShells``
  and the ``Foreground``, and publishes the ``background`` lists.
- Results and ``session_state_changed`` drive the ``Foreground``; a task that ended by itself
  owes it a follow-up turn, which that turn's result (naming the task's run) pays;
  ``can_use_tool`` becomes a permission question (``permission_requests``).
- A client attaching gets the stored conversation replayed, then the current state
  (``attach_routing``).
- The title comes from a new conversation's first prompt as Claude Code gets it, and from the
  stored session (``Title``): read when Claude Code announces a rename, after turns while
  Claude Code has named none, and by the host when a client attaches (before its answer).
- A prompt that would make Claude Code start a new conversation under another id (``/clear``)
  is refused: the session id is Claude Code's, and must stay so.
- A prompt that is one of the agent's own commands (``/tasks``, ``/stop``) waits its turn as
  any prompt; when it comes (``CommandDue``), ``TaskList`` answers it from ``Background``'s
  items, as the agent's message, a stop it chose goes out as a cancel would send it, and the
  turn ends at once: nothing reaches Claude Code.
- What Claude Code offers and has in effect (its start, ``system/init`` and ``status``, the
  settings read after switches and turns, a mode switch it refused) goes to ``Config`` and
  ``PermissionModes`` (the config options; the modes offered follow what ``Config`` read of the
  settings and the model) and to ``Commands``; streamed usage and results go to ``Usage``; what
  Claude Code says of a compaction goes to ``Compaction``, which makes a tool call of it (in
  ``ToolUses``); a ``/mcp`` prompt is done through the SDK's control requests, right before
  Claude Code has it, and their answer replaces Claude Code's (``McpCommands``).

Every fact meant for the client goes through the ``Presenter`` chosen for the client kind at
``session/new``: it alone decides how the session looks on the wire, and what its client is not
shown. The facts are the same for every client; the core behaves differently by client kind
only where its ``Policy`` says (``core.policy``: held turns, subagents as sessions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, assert_never

from claude_agent_sdk.types import (
    AssistantMessage,
    ConversationResetMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
)

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.core import stopping
from claude_bg_acp.core.attach_routing import AttachRouting
from claude_bg_acp.core.attaching import Attach
from claude_bg_acp.core.background import Background, Kind
from claude_bg_acp.core.child_routing import ChildRouting
from claude_bg_acp.core.commands import Commands
from claude_bg_acp.core.compaction import Compaction, as_tool_call
from claude_bg_acp.core.config import Config, Options
from claude_bg_acp.core.config_routing import ConfigRouting
from claude_bg_acp.core.effects import (
    Effect,
    Fail,
    FindPrompt,
    FinishTail,
    Interrupt,
    Log,
    Query,
    ReadTitle,
    Tail,
)
from claude_bg_acp.core.errors import Failing, Failure, Refusal, Refused
from claude_bg_acp.core.foreground import Foreground, TurnPhase
from claude_bg_acp.core.foreground_facts import CommandDue, ForegroundOut, WaitingPrompt
from claude_bg_acp.core.foreground_shells import ForegroundShells, ShellOut
from claude_bg_acp.core.mcp_command import McpCommands, command_of
from claude_bg_acp.core.message_routing import MessageRouting
from claude_bg_acp.core.permission_modes import PermissionModes
from claude_bg_acp.core.permission_requests import PermissionRequests
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Fact, Presenter
from claude_bg_acp.core.prompts import to_claude_content
from claude_bg_acp.core.questions import Questions
from claude_bg_acp.core.routes import Parts
from claude_bg_acp.core.schedules import Schedules
from claude_bg_acp.core.subagents import Subagents
from claude_bg_acp.core.task_list import OWN_COMMANDS, TaskList, own_command
from claude_bg_acp.core.task_routing import TaskRouting
from claude_bg_acp.core.titles import Title
from claude_bg_acp.core.tool_uses import ToolUses
from claude_bg_acp.core.transcript import MessageChunk
from claude_bg_acp.core.turn_outcome import outcome_of
from claude_bg_acp.core.usage import Usage


class SessionCore:
    def __init__(
        self,
        session_id: str,
        presenter: Presenter,
        policy: Policy,
        cwd: str = "/",
        tasks_root: str | None = None,
        allow_bypass: bool = True,
        instance: str = "",
    ) -> None:
        """``policy``: what the core does differently for the client kind (``core.policy``),
        chosen with ``presenter``. ``tasks_root``: where Claude Code keeps task output files, up
        to its session id (``conventions.tasks_root``). ``allow_bypass``: whether the
        bypassPermissions mode is offered (Claude Code refuses it to root). ``instance``: this
        host of the session, among the processes that may host it in turn (see ``Foreground``)."""
        self.session_id = session_id
        self.presenter = presenter
        self.policy = policy
        self.foreground = Foreground(session_id, policy.answers_wait_for_subagents, instance)
        self.background = Background(session_id, cwd)
        self.shells = ForegroundShells()
        self.subagents = Subagents(session_id)
        self.schedules = Schedules()
        self.tool_uses = ToolUses()
        self.modes = PermissionModes(session_id, allow_bypass)
        self.title = Title(session_id)
        self.config = Config(session_id)
        self.commands = Commands(session_id, OWN_COMMANDS)
        self.usage = Usage(session_id)
        self.compaction = Compaction()
        self.mcp = McpCommands(session_id)
        self.attach = Attach()
        self.questions = Questions()
        parts = Parts(
            session_id,
            presenter,
            policy,
            self.foreground,
            self.background,
            self.shells,
            self.subagents,
            self.schedules,
            self.tool_uses,
            self.questions,
            self.modes,
        )
        self.children = ChildRouting(session_id, policy, self.subagents, self)
        self.settings = ConfigRouting(self.config, self.modes, self.commands, self.usage, self)
        self.permissions = PermissionRequests(parts, self.settings.closed_modes, self.children, self)
        self.tasks = TaskRouting(parts, tasks_root, self.children, self.permissions, self)
        self.messages = MessageRouting(parts, self.children, self.permissions, self.tasks, self)
        self.attaching = AttachRouting(parts, self.attach, self.messages.plans, self.tasks, self)
        self._wakeup_fired = False
        """The running turn was taken for a wakeup firing (at its start)."""
        self._turn_error: str | None = None
        """The API error an assistant message of this turn reported (e.g. ``max_output_tokens``)."""
        self.task_list = TaskList()
        self._now = 0.0
        """When the event being handled came (an agent command answered on the way needs it)."""

    # --- the one way in ------------------------------------------------------------------------

    def handle(self, event: ev.Event, now: float) -> list[Effect]:
        self._now = now
        effects = self._handle(event, now)
        if isinstance(event, ev.Attaching | ev.Recall | ev.Recalled):
            return effects
        return self.attach.holding(effects)

    def _handle(self, event: ev.Event, now: float) -> list[Effect]:
        match event:
            case ev.Prompt():
                return self._prompt(event)
            case ev.WithdrawPrompt(ticket):
                return self.foreground_out(self.foreground.withdraw(ticket))
            case ev.CancelTurn():
                return self._cancel_turn()
            case ev.CancelChild(session_id):
                return list(self.subagents.cancel(session_id))
            case ev.CancelTerminal(session_id, terminal_id):
                return self.tasks.cancel("terminal", terminal_id, session_id, now)
            case ev.CancelToolCall(session_id, tool_call_id):
                return self.tasks.cancel("tool_call", tool_call_id, session_id, now)
            case ev.CancelTask(ticket, task_id):
                return self.tasks.stop(ticket, task_id, now)
            case ev.ChooseMode(mode_id):
                return self.settings.switch(mode_id)
            case ev.ModeRefused(mode_id):
                return self.settings.refused(mode_id)
            case ev.ChooseOption(ticket, config_id, value):
                return self.settings.choose(ticket, config_id, value)
            case ev.AnswerWritten():
                return self._answer_written()
            case ev.ClaudeResuming():
                return self._resuming()
            case ev.ClaudeStarted():
                return self.settings.started(event)
            case ev.SettingsRead(applied):
                return self.settings.read(applied)
            case ev.PermissionAnswered(ticket, option_id):
                return self.permissions.answered(ticket, option_id)
            case ev.QuestionsAnswered(ticket, updated_input):
                return self.permissions.questions_answered(ticket, updated_input)
            case ev.Close():
                return self._close(now)
            case ev.CloseTimedOut(stopped):
                return self.tasks.abandon(now, stopped)
            case ev.Attaching():
                return self.attaching.hold()
            case ev.Recall(conversation):
                return self.attaching.recall(conversation)
            case ev.Recalled(complete):
                return self.attaching.recalled(complete)
            case ev.Resync():
                return self.attaching.resync()
            case ev.TitleRead(title, own, updated_at):
                return self.present(self.title.read(title, own, updated_at))
            case ev.McpAnswered(command, servers, failure):
                return self.present([self.mcp.answered(command, servers, failure)])
            case ev.PromptLookedUp(key, stored):
                return self.foreground_out(self.foreground.looked_up(key, stored))
            case ev.ClaudeMessage(message):
                return self._claude_message(message, now)
            case ev.PermissionAsked():
                return self.permissions.asked(event)
            case ev.PermissionAbandoned(ticket):
                return self.permissions.abandoned(ticket)
            case ev.ClaudeDied(reason, fatal, stopped):
                return self._claude_died(reason, fatal, stopped, now)
            case ev.OutputRead(task_id, data):
                return self.tasks.output(task_id, data, now)
            case ev.OutputReplaced(task_id, data):
                return self.tasks.replaced(task_id, data, now)
            case ev.OutputEnded(task_id, rest, exit_info):
                return self.tasks.drained(task_id, rest, exit_info, now)
            case ev.Tick():
                return self.tasks.tick(now)
            case _:
                assert_never(event)

    # --- read-only views for the host ----------------------------------------------------------

    @property
    def settled(self) -> bool:
        """Every background item has its final status (what a close waits for)."""
        return self.background.settled

    def next_deadline(self) -> float | None:
        candidates = (
            self.tasks.next_deadline(),
            self.foreground.next_deadline(),
            self.tool_uses.next_deadline(),
        )
        deadlines = [d for d in candidates if d is not None]
        return min(deadlines) if deadlines else None

    def has_child(self, session_id: str) -> bool:
        return session_id in self.subagents.children

    @property
    def awaited_output(self) -> ev.StoredOutput | None:
        """The output file a replay waits at (its pieces come next, ``Recall``), if any."""
        history = self.attaching.history
        return history.awaited if history is not None else None

    def options(self) -> Options:
        """The session's config options as they are now."""
        return self.settings.options()

    def answer(self) -> Options:
        """The options for an answer that tells the client of the session (``session/new``,
        load, resume); changes after it go out once the client has it (``AnswerWritten``)."""
        return self.settings.answer()

    # --- client requests -------------------------------------------------------------------------

    def _prompt(self, prompt: ev.Prompt) -> list[Effect]:
        wire = [block.wire() for block in prompt.content]
        text = _first_text(wire)
        if conventions.starts_new_conversation(text):
            raise Refused(
                Refusal.INVALID,
                "/clear would go on under another Claude Code session id; start a new session instead",
                "prompt",
            )
        local = own_command(text) is not None
        waiting = WaitingPrompt(prompt.ticket, wire, to_claude_content(wire), prompt.key, local=local)
        return self.foreground_out(self.foreground.submit(waiting))

    def _answer_written(self) -> list[Effect]:
        confirmed = self.subagents.confirmed() if self.attach.answered() else []
        return self.present([*self.settings.answer_written(), *confirmed])

    def _cancel_turn(self) -> list[Effect]:
        effects = self.foreground_out(self.foreground.cancel())
        return effects + self.permissions.withdraw_all("The user cancelled the turn", foreground=True)

    def _close(self, now: float) -> list[Effect]:
        """Closing starts: withdraw questions, end the turn and its tool calls, and stop every
        background task.

        The tasks' own end events finalize them (``settled`` tells when); ``CloseTimedOut``
        finalizes whatever did not confirm in time.
        """
        effects = self.permissions.withdraw_all("The session was closed")
        effects += self.shells_out(self.shells.results(self.tool_uses.cut_all(failed=False)))
        effects += self.foreground_out(self.foreground.close())
        return effects + self.tasks.stop_all(now)

    # --- Claude Code -------------------------------------------------------------------------------

    def _resuming(self) -> list[Effect]:
        self.foreground.resuming()
        self.title.stored()
        return []

    def _claude_message(self, message: Message, now: float) -> list[Effect]:
        parent = getattr(message, "parent_tool_use_id", None)
        if parent:
            return self.children.message(parent, message, now)
        if isinstance(message, ResultMessage):
            return self._result(message, now)
        if isinstance(message, ConversationResetMessage):
            return [Log("Claude Code started a new conversation; this session stays with the old one")]
        if isinstance(message, SystemMessage):
            if message.subtype == "session_state_changed":
                return self._turn(self.foreground.cli_state, str(message.data.get("state")), now)
            if message.subtype == "session_title_changed":
                return [ReadTitle()]
            effects = self._compaction(message.subtype, message.data)
            effects += self.settings.reported(message.subtype, message.data)
            return effects + self.tasks.system(message.subtype, message.data, now)
        if isinstance(message, StreamEvent):
            self.usage.stream_event(message.event)
        effects = self._turn(lambda _: self.foreground.work_seen(), "", now)
        if isinstance(message, AssistantMessage) and self.mcp.replaced(message.model):
            return effects  # the agent answered the command
        if isinstance(message, AssistantMessage) and message.error is not None:
            self._turn_error = str(message.error)
            if message.error == conventions.NOT_LOGGED_IN:
                return effects  # the turn's error says it, and how to log in
        return effects + self.messages.translate(self.session_id, message, now)

    def _compaction(self, subtype: str, data: dict[str, Any]) -> list[Effect]:
        """A compaction's tool call: opened and ended as Claude Code reports it."""
        return self.present(
            as_tool_call(self.session_id, self.compaction.system(subtype, data), self.tool_uses)
        )

    def _turn(self, step: Callable[[str], list[ForegroundOut]], state: str, now: float) -> list[Effect]:
        """A foreground step; a turn Claude Code starts by itself, unexpected, when a wakeup is
        due, is that wakeup firing: its tool call is done from now on."""
        was = self.foreground.phase
        effects = self.foreground_out(step(state))
        if was is TurnPhase.IDLE and self.foreground.phase is TurnPhase.CLAUDE_TURN:
            fired = self.schedules.due(now)
            self._wakeup_fired = bool(fired)
            effects += self.tasks.schedules_ended(fired)
        return effects

    def _result(self, message: ResultMessage, now: float) -> list[Effect]:
        origin: dict[str, Any] = dict(message.origin or {})
        uuids = set(message.user_message_uuids or [])
        if message.user_message_uuid:
            uuids.add(message.user_message_uuid)
        follow_up = not self.foreground.answers_prompt(uuids, str(origin.get("kind", "human")))
        effects: list[Effect] = []
        if origin.get("subkind") == "scheduled-trigger" and not self._wakeup_fired:
            # A wakeup that fired started this turn (unseen at its start): its tool call is done.
            effects += self.tasks.schedules_ended(self.schedules.fired())
        self._wakeup_fired = False
        self.mcp.turn_ended()
        errors = message.errors or ([message.result] if message.is_error and message.result else [])
        reported = (message.subtype, message.stop_reason, message.usage, message.is_error, errors)
        outcome = outcome_of(self.foreground.cancelled, *reported, self._turn_error)
        self._turn_error = None
        if message.subtype != "success":
            # What the turn left unfinished ends with it: cancelled, or failed with the turn.
            failed = outcome.stop_reason != "cancelled"
            effects += self.shells_out(self.shells.results(self.tool_uses.cut(self.session_id, failed)))
        if not self.foreground.unseen:  # a turn the client does not see has no usage to show
            effects += self.present(self.usage.result(message.model_usage, message.total_cost_usd))
        run = origin.get("runId")  # the task run a follow-up turn is about
        effects += self.foreground_out(
            self.foreground.result(outcome, follow_up, now, run if isinstance(run, str) else None)
        )
        # A turn may have switched the model or the effort (``/model``, ``/effort``, a fallback).
        effects += self.config.confirm()
        return effects + ([ReadTitle()] if self.title.wanted else [])

    def _claude_died(
        self, reason: str, fatal: bool, stopped: Mapping[str, ExitInfo], now: float
    ) -> list[Effect]:
        """Claude Code died. Its turn and the turn's tool calls end with an error, and what it ran
        is gone with it (the processes it left running were stopped: ``stopped`` says how its
        terminals ended).

        Unless ``fatal``, the session goes on with a new Claude Code: waiting prompts stay.
        """
        self.mcp.turn_ended()
        effects = self.permissions.withdraw_all("Claude Code stopped")
        effects += self.children.present(self.subagents.lost(reason)) + self.tasks.abandon(now, stopped)
        effects += self.shells_out(self.shells.results(self.tool_uses.cut_all()))
        self.tasks.forget()
        error = Failure(Failing.ERROR, reason)
        return effects + self.foreground_out(
            self.foreground.fail(error) if fatal else self.foreground.crashed(error)
        )

    # --- routing facts -------------------------------------------------------------------------

    def present(self, facts: Sequence[Fact]) -> list[Effect]:
        effects: list[Effect] = []
        for fact in facts:
            effects += self.presenter.render(fact)
        return effects

    def foreground_out(self, outs: list[ForegroundOut]) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            if isinstance(out, Query):
                effects += self.present(self.title.prompted(out.content))
            if isinstance(out, Query) and (command := command_of(out.content)) is not None:
                effects.append(command)  # done before Claude Code has the prompt
            if isinstance(out, (Fail, Interrupt, Query, FindPrompt)):
                effects.append(out)
            elif isinstance(out, CommandDue):
                effects += self._own_command(out)
            else:
                effects += self.presenter.render(out)
        return effects

    def _own_command(self, due: CommandDue) -> list[Effect]:
        """The agent answers its own command (``task_list``): its text, the stop it chose (as
        ``terminal/cancel``, ``tool_call/cancel`` or a child's ``session/cancel`` stops it), then
        the turn's end."""
        command = own_command(_first_text(due.content))
        assert command is not None, "only an agent command's prompt is inserted as one"
        items = self.background.items.values()
        answer = self.task_list.answer(command, items, self.tool_uses.get, self._now)
        reply = MessageChunk(self.session_id, f"{due.message_id}-answer", False, answer.text)
        effects = self.present([reply])
        if answer.stop is not None and answer.stop.kind is Kind.SUBAGENT:
            effects += self.subagents.cancel(answer.stop.ref)
        elif answer.stop is not None:
            effects += self.tasks.background_out(stopping.stop_item(answer.stop, self._now), self._now)
        return effects + self.foreground_out(self.foreground.answered(self._now))

    def shells_out(self, outs: list[ShellOut]) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            effects += [out] if isinstance(out, Tail | FinishTail) else self.presenter.render(out)
        return effects

    def translate(self, session_id: str, message: Message, now: float) -> list[Effect]:
        return self.messages.translate(session_id, message, now)

    def exposed(self, now: float) -> list[Effect]:
        return self.tasks.exposed(now)


def _first_text(content: list[dict[str, Any]]) -> str:
    """A prompt's first text (where a slash command is)."""
    return next((str(block["text"]) for block in content if block["type"] == "text"), "")
