"""One ACP session's core: events in, effects out; the only place where its parts meet.

``SessionCore.handle(event, now)`` is the one way in (``events``); what comes out are
``effects``. Inside, each concept keeps its own lifecycle and reports what happened as facts;
this module routes them and never lets the parts call each other:

- Claude Code's messages of the main conversation go to the root ``Transcript``; messages of a
  subagent (``parent_tool_use_id`` naming the Agent tool use that launched it) go to that
  child's transcript once the child is exposed, and wait in a bounded buffer until then (when
  subagents are sessions; else to the root's, as they come).
  Their tool facts go to ``ToolUses``, which owns every tool call's lifecycle; a tool result
  may hand its work to ``Background`` or ``Schedules``.
- Task events go to the ``TaskRegistry``; each change it reports goes to ``Subagents`` (a
  subagent that is a child session), to ``Background`` (everything else) and, for
  subagents, to the ``Foreground`` (held turns).
- Results and ``session_state_changed`` drive the ``Foreground``; a task that ended by itself
  owes it a follow-up turn, which that turn's result (naming the task's run) pays;
  ``can_use_tool`` becomes a permission question (``Questions``), asked under the session the
  tool use belongs to (under the root for a child not exposed yet: the tool call it shows then
  stays the root's, never moved).
- After task changes, the ``background`` lists go to the children and the foreground, which
  report them with their states.
- A client attaching to a stored or live session gets the stored conversation replayed by
  ``History`` (apart from everything live; part by part as it is read, other events may come
  in between, and what they say waits for the replay's end: ``attaching``), its end marked,
  and then the current state: each listed item and each child it must know of restated by its
  owner, and the state snapshot; after a replay, the working children's current state and
  ``cancel`` once it has the answer.
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
  settings and the model) and to ``Commands``; streamed usage and results go to ``Usage``; the todo and
  task tools go to the session's ``Plan`` instead of becoming tool calls; what Claude Code says
  of a compaction goes to ``Compaction``, which makes a tool call of it (in ``ToolUses``); a
  ``/mcp`` prompt is done through the SDK's control requests, right before Claude Code has it,
  and their answer replaces Claude Code's (``McpCommands``).

Every fact meant for the client goes through the ``Presenter`` chosen for the client kind at
``session/new``: it alone decides how the session looks on the wire, and what its client is not
shown. The facts are the same for every client; the core behaves differently by client kind
only where its ``Policy`` says (``core.policy``: held turns, subagents as sessions).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, assert_never

from claude_agent_sdk.types import (
    AssistantMessage,
    ConversationResetMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
)

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.claude.server_info import read_commands
from claude_bg_acp.core import events as ev
from claude_bg_acp.core import user_questions
from claude_bg_acp.core.attaching import Attach, ReplayCompleted
from claude_bg_acp.core.background import (
    Background,
    BackgroundOut,
    ChildEnded,
    FollowUpExpected,
    Kind,
    Listed,
    TaskChanged,
    TaskEnded,
    TaskOpened,
    TaskStopAnswered,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    ToolCallDetached,
    WorkEnded,
    WorkOpened,
    WorkRestated,
    WorkStatus,
)
from claude_bg_acp.core.commands import Commands
from claude_bg_acp.core.compaction import COMPACT, Compaction, CompactionOpened
from claude_bg_acp.core.config import MODE, Config, Introduction, Options, offered
from claude_bg_acp.core.effects import (
    AskPermission,
    AskQuestions,
    Decide,
    DecideAnswered,
    Effect,
    Fail,
    FindPrompt,
    FinishTail,
    Interrupt,
    Log,
    Query,
    ReadTitle,
    SetPermissionMode,
    StopTask,
    Tail,
    Ticket,
    WithdrawPermission,
)
from claude_bg_acp.core.errors import Failing, Failure, Refusal, Refused
from claude_bg_acp.core.foreground import (
    CommandDue,
    Foreground,
    ForegroundOut,
    TurnPhase,
    WaitingPrompt,
)
from claude_bg_acp.core.foreground_shells import ForegroundShells, ShellOut
from claude_bg_acp.core.history import History, Live
from claude_bg_acp.core.mcp_command import McpCommands, command_of
from claude_bg_acp.core.permission_modes import ModeChanged, PermissionModes, closed_modes
from claude_bg_acp.core.permission_options import choices
from claude_bg_acp.core.plan import PLAN_TOOLS, Plan
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Fact, Presenter
from claude_bg_acp.core.prompts import to_claude_content
from claude_bg_acp.core.questions import Questions, QuestionTrigger
from claude_bg_acp.core.schedules import ScheduleEnded, Schedules, schedules_work
from claude_bg_acp.core.subagents import ChildAnnounced, ChildFact, Subagents
from claude_bg_acp.core.task_list import OWN_COMMANDS, TaskList, own_command
from claude_bg_acp.core.tasks import Change, Task, TaskChange, TaskRegistry
from claude_bg_acp.core.titles import Title
from claude_bg_acp.core.tool_uses import ToolCallHandedOff, ToolUses
from claude_bg_acp.core.transcript import (
    MessageChunk,
    ToolInput,
    ToolResulted,
    ToolStreamed,
    Transcript,
    TranscriptFact,
)
from claude_bg_acp.core.usage import Usage

BUFFER_LIMIT = 1000
"""Messages kept per subagent that is not exposed yet (its parent is unknown)."""


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
        self._tasks_root = tasks_root
        self.foreground = Foreground(session_id, policy.answers_wait_for_subagents, instance)
        self.background = Background(session_id, cwd)
        self.shells = ForegroundShells()
        self.subagents = Subagents(session_id)
        self.schedules = Schedules()
        self.registry = TaskRegistry()
        self.tool_uses = ToolUses()
        self.modes = PermissionModes(session_id, allow_bypass)
        self.title = Title(session_id)
        self.config = Config(session_id)
        self.commands = Commands(session_id, OWN_COMMANDS)
        self.usage = Usage(session_id)
        self.compaction = Compaction()
        self.mcp = McpCommands(session_id)
        self.plans: dict[str, Plan] = {}
        self.history: History | None = None
        """The replay under way, between its first part and its end."""
        self.attach = Attach()
        self.transcripts = {session_id: Transcript(session_id)}
        self.questions = Questions()
        self._buffered: defaultdict[str, list[Message]] = defaultdict(list)
        self._asked_in: dict[str, str] = {}
        """Tool uses a permission question showed (as its tool call) before their transcript did,
        and the session it was asked in: the tool call stays there (an issued interaction is
        never moved)."""
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
            case ev.Prompt(ticket, content, key):
                wire = [block.wire() for block in content]
                text = _first_text(wire)
                if conventions.starts_new_conversation(text):
                    raise Refused(
                        Refusal.INVALID,
                        "/clear would go on under another Claude Code session id; start a new session "
                        "instead",
                        "prompt",
                    )
                local = own_command(text) is not None
                waiting = WaitingPrompt(ticket, wire, to_claude_content(wire), key, local=local)
                return self._foreground(self.foreground.submit(waiting))
            case ev.WithdrawPrompt(ticket):
                return self._foreground(self.foreground.withdraw(ticket))
            case ev.CancelTurn():
                return self._cancel_turn()
            case ev.CancelChild(session_id):
                return list(self.subagents.cancel(session_id))
            case ev.CancelTerminal(session_id, terminal_id):
                return self._background(self.background.cancel("terminal", terminal_id, session_id, now), now)
            case ev.CancelToolCall(session_id, tool_call_id):
                return self._background(
                    self.background.cancel("tool_call", tool_call_id, session_id, now), now
                )
            case ev.CancelTask(ticket, task_id):
                outs, stopped = self.background.stop(task_id, now)
                return self._background(outs, now) + self._present([TaskStopAnswered(ticket, stopped)])
            case ev.ChooseMode(mode_id):
                commands, changed = self.modes.choose(mode_id, self._closed_modes)
                return self._switched(commands, changed)
            case ev.ModeRefused(mode_id):
                return self._present(self.modes.refused(mode_id)) + self._settings_changed()
            case ev.ChooseOption(ticket, config_id, value):
                return self._choose(ticket, config_id, value)
            case ev.AnswerWritten():
                opened = self.config.answer_written(self.options())
                confirmed = self.subagents.confirmed() if self.attach.answered() else []
                return self._present([*opened, *self.commands.tell(again=True), *confirmed])
            case ev.ClaudeResuming():
                self.foreground.resuming()
                self.title.stored()
                return []
            case ev.ClaudeStarted(info, applied):
                self.config.started(info.models, applied)
                changed = self.modes.started(info.permission_mode, self.config.settled)
                self.commands.listed(info.commands)
                # Before the client has the answer, the answer itself says which mode it is.
                told = self.config.introduction is Introduction.OPEN
                return (self._present(changed) if told else []) + self._settings_changed()
            case ev.SettingsRead(applied):
                self.config.read(applied)
                changed = self.modes.settled() if self.config.settled else []
                return self._present(changed) + self._settings_changed()
            case ev.PermissionAnswered(ticket, option_id):
                return self._answered(ticket, option_id)
            case ev.QuestionsAnswered(ticket, updated_input):
                return self._questions_answered(ticket, updated_input)
            case ev.Close():
                return self._close(now)
            case ev.CloseTimedOut(stopped):
                return self._abandon(now, stopped)
            case ev.Attaching():
                self.attach.hold()
                return []
            case ev.Recall(conversation):
                return self._recall(conversation)
            case ev.Recalled(complete):
                return self._recalled(complete)
            case ev.Resync():
                return self._resync()
            case ev.TitleRead(title, own, updated_at):
                return self._present(self.title.read(title, own, updated_at))
            case ev.McpAnswered(command, servers, failure):
                return self._present([self.mcp.answered(command, servers, failure)])
            case ev.PromptLookedUp(key, stored):
                return self._foreground(self.foreground.looked_up(key, stored))
            case ev.ClaudeMessage(message):
                return self._claude_message(message, now)
            case ev.PermissionAsked():
                return self._asked(event)
            case ev.PermissionAbandoned(ticket):
                return (
                    self._withdraw(ticket, "Claude Code withdrew the question")
                    if ticket in self.questions
                    else []
                )
            case ev.ClaudeDied(reason, fatal, stopped):
                return self._claude_died(reason, fatal, stopped, now)
            case ev.OutputRead(task_id, data) if self.shells.knows(task_id):
                return self._shells(self.shells.output(task_id, data))
            case ev.OutputRead(task_id, data):
                return self._background(self.background.output(task_id, data), now)
            case ev.OutputReplaced(task_id, data) if self.shells.knows(task_id):
                return self._shells(self.shells.output(task_id, data, replaced=True))
            case ev.OutputReplaced(task_id, data):
                return self._background(self.background.replaced(task_id, data), now)
            case ev.OutputEnded(task_id, rest, _) if self.shells.knows(task_id):
                return self._shells(self.shells.drained(task_id, rest))
            case ev.OutputEnded(task_id, rest, exit_info):
                return (
                    self._background(self.background.drained(task_id, rest, exit_info, now), now)
                    + self._publish()
                )
            case ev.Tick():
                return self._tick(now)
            case _:
                assert_never(event)

    # --- read-only views for the host ----------------------------------------------------------

    @property
    def settled(self) -> bool:
        """Every background item has its final status (what a close waits for)."""
        return self.background.settled

    def next_deadline(self) -> float | None:
        live = self.registry.live()
        candidates = (
            self.registry.next_deadline(),
            self.background.next_deadline(live),
            self.foreground.next_deadline(),
        )
        deadlines = [d for d in candidates if d is not None]
        return min(deadlines) if deadlines else None

    def has_child(self, session_id: str) -> bool:
        return session_id in self.subagents.children

    def options(self) -> Options:
        """The session's config options as they are now."""
        return self.config.options(self.modes.available(self._closed_modes), self.modes.current)

    @property
    def _closed_modes(self) -> frozenset[str]:
        return closed_modes(self.config.disabled_modes, self.config.runs_auto)

    def answer(self) -> Options:
        """The options for an answer that tells the client of the session (``session/new``,
        load, resume); changes after it go out once the client has it (``AnswerWritten``)."""
        return self.config.answer(self.options())

    # --- client requests -------------------------------------------------------------------------

    def _cancel_turn(self) -> list[Effect]:
        effects = self._foreground(self.foreground.cancel())
        for ticket in self.questions.tickets(foreground=True):
            effects += self._withdraw(ticket, "The user cancelled the turn")
        return effects

    def _choose(self, ticket: Ticket, config_id: str, value: object) -> list[Effect]:
        """``session/set_config_option``: the switch goes to Claude Code, the answer carries the
        options (a mode switch also shows in the v1 modes)."""
        if config_id == MODE:
            shut = self._closed_modes
            offered(MODE, value, [mode["id"] for mode in self.modes.available(shut)])
            commands, changed = self.modes.choose(str(value), shut)
            effects: list[Effect] = [*commands, *(self.config.confirm() if commands else [])]
            effects += self._present(changed)
        else:
            effects = [*self.config.choose(config_id, value, self.options())]
        return effects + self._present([self.config.answered(ticket, self.options())])

    def _switched(self, commands: list[SetPermissionMode], changed: list[ModeChanged]) -> list[Effect]:
        """A mode switch of the client's own (``session/set_mode``)."""
        effects: list[Effect] = [*commands, *(self.config.confirm() if commands else [])]
        return effects + self._present(changed) + self._settings_changed()

    def _settings_changed(self) -> list[Effect]:
        """What the client is told after the options or the commands may have changed."""
        facts: list[Fact] = [*self.config.changed(self.options())]
        if self.config.introduction is Introduction.OPEN:
            facts += self.commands.tell()
        return self._present(facts)

    def _close(self, now: float) -> list[Effect]:
        """Closing starts: withdraw questions, end the turn and its tool calls, and stop every
        background task.

        The tasks' own end events finalize them (``settled`` tells when); ``CloseTimedOut``
        finalizes whatever did not confirm in time.
        """
        effects: list[Effect] = []
        for ticket in self.questions.tickets():
            effects += self._withdraw(ticket, "The session was closed")
        effects += self._shells(self.shells.results(self.tool_uses.cut_all(failed=False)))
        effects += self._foreground(self.foreground.close())
        return effects + self._background(self.background.stop_all(self.registry.live(), now), now)

    def _abandon(self, now: float, stopped: Mapping[str, ExitInfo]) -> list[Effect]:
        """Finalize whatever did not confirm its end in time, so nothing stays listed (a terminal
        whose process the agent stopped, once its file is read to the end)."""
        effects = self._present(self.schedules.cancel_all())
        return effects + self._background(self.background.abandon(now, stopped), now) + self._publish()

    # --- Claude Code -------------------------------------------------------------------------------

    def _claude_message(self, message: Message, now: float) -> list[Effect]:
        parent = getattr(message, "parent_tool_use_id", None)
        if parent:
            return self._child_message(parent, message, now)
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
            effects += self._settings(message.subtype, message.data)
            changes = self.registry.system(message.subtype, message.data, now)
            return effects + (self._task_changes(changes, now) + self._flush(now) if changes else [])
        if isinstance(message, StreamEvent):
            self.usage.stream_event(message.event)
        effects = self._turn(lambda _: self.foreground.work_seen(), "", now)
        if isinstance(message, AssistantMessage) and self.mcp.replaced(message.model):
            return effects  # the agent answered the command
        if isinstance(message, AssistantMessage) and message.error is not None:
            self._turn_error = str(message.error)
            if message.error == conventions.NOT_LOGGED_IN:
                return effects  # the turn's error says it, and how to log in
        return effects + self._translate(self.session_id, message, now)

    def _settings(self, subtype: str, data: dict[str, Any]) -> list[Effect]:
        """What Claude Code says of its settings and commands by itself."""
        changed: list[ModeChanged] = []
        if subtype == "init":
            if isinstance(data.get("model"), str):
                self.config.model_reported(data["model"])
            if isinstance(data.get("permissionMode"), str):
                changed = self.modes.reported(data["permissionMode"], self.config.settled)
            terminal = data.get("terminal_slash_commands")
            self.commands.terminal_only(
                [n for n in terminal if isinstance(n, str)] if isinstance(terminal, list) else []
            )
        elif subtype == "status" and isinstance(data.get("permissionMode"), str):
            changed = self.modes.reported(data["permissionMode"], self.config.settled)
        elif subtype == "commands_changed":
            self.commands.listed(read_commands(data.get("commands")))
        elif subtype == "compact_boundary" and isinstance(data.get("compact_metadata"), dict):
            self.usage.compacted(data["compact_metadata"])
            return []
        else:
            return []
        return self._present(changed) + self._settings_changed()

    def _compaction(self, subtype: str, data: dict[str, Any]) -> list[Effect]:
        """A compaction's tool call: opened and ended as Claude Code reports it."""
        facts: list[Fact] = []
        for step in self.compaction.system(subtype, data):
            if isinstance(step, CompactionOpened):
                facts += self.tool_uses.input_known(
                    self.session_id, step.tool_use_id, COMPACT, step.tool_input, None, None
                )
            elif (use := self.tool_uses.get(step.tool_use_id)) is not None:
                facts += self.tool_uses.result(use, step.failed, step.text)
        return self._present(facts)

    def _turn(self, step: Callable[[str], list[ForegroundOut]], state: str, now: float) -> list[Effect]:
        """A foreground step; a turn Claude Code starts by itself, unexpected, when a wakeup is
        due, is that wakeup firing: its tool call is done from now on."""
        was = self.foreground.phase
        effects = self._foreground(step(state))
        if was is TurnPhase.IDLE and self.foreground.phase is TurnPhase.CLAUDE_TURN:
            fired = self.schedules.due(now)
            self._wakeup_fired = bool(fired)
            effects += self._schedules_ended(fired)
        return effects

    def _translate(self, session_id: str, message: Message, now: float) -> list[Effect]:
        transcript = self.transcripts[session_id]
        facts: Sequence[TranscriptFact]
        if isinstance(message, StreamEvent):
            facts = transcript.stream_event(message.event)
        elif isinstance(message, AssistantMessage):
            facts = transcript.assistant(message)
        elif isinstance(message, UserMessage):
            facts = transcript.tool_results(message)
        else:
            return []
        effects: list[Effect] = []
        for fact in facts:
            effects += self._transcript_fact(session_id, fact, now)
        return effects

    def _transcript_fact(self, session_id: str, fact: TranscriptFact, now: float) -> list[Effect]:
        match fact:
            case MessageChunk() if session_id == self.session_id and self.foreground.muted:
                return []  # the answer of a cancelled turn
            case MessageChunk():
                return self._present([fact])
            case ToolStreamed(tool_use_id, name) if name in PLAN_TOOLS:
                return []
            case ToolStreamed(tool_use_id, name):
                owner = self._asked_in.get(tool_use_id, session_id)
                return self._present(self.tool_uses.streaming(owner, tool_use_id, name))
            case ToolInput(tool_use_id, name, tool_input, launched_by) if name in PLAN_TOOLS and (
                launched_by is None or session_id != self.session_id
            ):
                self._plan(session_id).input_known(tool_use_id, name, tool_input)
                return []
            case ToolResulted(tool_use_id, text, is_error) if self._plan(session_id).owns(tool_use_id):
                return self._present(
                    self._plan(session_id).result(tool_use_id, is_error, text, fact.structured)
                )
            case ToolInput(tool_use_id, name, tool_input, launched_by, message):
                # Work that is only scheduled is pending from the start, never in progress.
                pending = schedules_work(name, tool_input)
                owner = self._asked_in.pop(tool_use_id, session_id)
                running = self.tool_uses.input_known(
                    owner, tool_use_id, name, tool_input, launched_by, message, pending
                )
                return self._present(running)
            case ToolResulted():
                return self._tool_result(fact, now)
            case _:
                assert_never(fact)

    def _plan(self, session_id: str) -> Plan:
        return self.plans.setdefault(session_id, Plan(session_id))

    def _child_message(self, parent_tool_use_id: str, message: Message, now: float) -> list[Effect]:
        if not self.policy.subagents_are_sessions:
            # Subagents' work shows in the session that launched them, as the official adapter
            # shows it.
            return self._translate(self.session_id, message, now)
        child = self.subagents.child_launched_by(parent_tool_use_id)
        if child is not None:
            return self._translate(child, message, now)
        # Its child is not exposed yet: never guess where it belongs, wait.
        pending = self._buffered[parent_tool_use_id]
        if len(pending) < BUFFER_LIMIT:
            pending.append(message)
        return []

    def _flush(self, now: float) -> list[Effect]:
        """Send what waited for a child that is exposed now, and show the work it launched (a
        subagent among it that was shown as work of ours is its child session now)."""
        effects: list[Effect] = []
        for tool_use_id in list(self._buffered):
            child = self.subagents.child_launched_by(tool_use_id)
            if child is not None and tool_use_id in self._buffered:  # not sent by a nested flush
                for message in self._buffered.pop(tool_use_id):
                    effects += self._translate(child, message, now)
                for task in self.registry.live():
                    placed = self._place(task, now)
                    if placed is not None:
                        effects += placed
                    elif not self.background.knows(task.task_id) and self.tool_uses.get(task.tool_use_id):
                        effects += self._consider(task, now)
        return effects

    def _waiting_for(self, tool_use_id: str) -> bool:
        """Whether a buffered message of a child not exposed yet holds this tool use."""
        return any(
            isinstance(message, AssistantMessage)
            and any(isinstance(block, ToolUseBlock) and block.id == tool_use_id for block in message.content)
            for messages in self._buffered.values()
            for message in messages
        )

    def _result(self, message: ResultMessage, now: float) -> list[Effect]:
        origin: dict[str, Any] = dict(message.origin or {})
        uuids = set(message.user_message_uuids or [])
        if message.user_message_uuid:
            uuids.add(message.user_message_uuid)
        follow_up = not self.foreground.answers_prompt(uuids, str(origin.get("kind", "human")))
        effects: list[Effect] = []
        if origin.get("subkind") == "scheduled-trigger" and not self._wakeup_fired:
            # A wakeup that fired started this turn (unseen at its start): its tool call is done.
            effects += self._schedules_ended(self.schedules.fired())
        self._wakeup_fired = False
        self.mcp.turn_ended()
        errors = message.errors or ([message.result] if message.is_error and message.result else [])
        outcome = self.foreground.outcome_of(
            message.subtype, message.stop_reason, message.usage, message.is_error, errors, self._turn_error
        )
        self._turn_error = None
        if message.subtype != "success":
            # What the turn left unfinished ends with it: cancelled, or failed with the turn.
            failed = outcome.stop_reason != "cancelled"
            effects += self._shells(self.shells.results(self.tool_uses.cut(self.session_id, failed)))
        if not self.foreground.unseen:  # a turn the client does not see has no usage to show
            effects += self._present(self.usage.result(message.model_usage, message.total_cost_usd))
        run = origin.get("runId")  # the task run a follow-up turn is about
        effects += self._foreground(
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
        effects: list[Effect] = []
        self.mcp.turn_ended()
        for ticket in self.questions.tickets():
            effects += self._withdraw(ticket, "Claude Code stopped")
        effects += self._children(self.subagents.lost(reason)) + self._abandon(now, stopped)
        effects += self._shells(self.shells.results(self.tool_uses.cut_all()))
        self.background.forget()
        self.registry = TaskRegistry()
        error = Failure(Failing.ERROR, reason)
        return effects + self._foreground(
            self.foreground.fail(error) if fatal else self.foreground.crashed(error)
        )

    # --- a client attaching ----------------------------------------------------------------------

    def _recall(self, conversation: ev.StoredConversation | ev.OutputRecalled) -> list[Effect]:
        """A part of the stored conversation (or a piece of an output file it waits at); the
        first says what runs here now (left to the live session), as of the replay's start."""
        self.attach.hold()
        if self.history is None:
            live = Live(
                tasks=self.background.unfinished() | {task.task_id for task in self.registry.live()},
                children=self.subagents.working(),
            )
            self.history = History(
                self.session_id, self.background.cwd, self.policy.subagents_are_sessions, live
            )
        return self._present(self.history.replay(conversation))

    def _recalled(self, complete: bool) -> list[Effect]:
        """The replay's end, marked when all of it was sent; then the working children it did
        not announce, what it lacked, and what was said live meanwhile."""
        history, self.history = self.history, None
        facts: list[Fact] = [*history.unnoted()] if history is not None else []
        facts += [ReplayCompleted(self.session_id)] if complete else []
        if history is not None:
            for session_id, plan in history.plans.items():
                self.plans.setdefault(session_id, plan)  # the task tools fold into what is known
            facts += self._unreplayed(history, complete)
            facts += history.incomplete() if complete else []
        return self._present(facts) + list(self.attach.replayed(complete))

    def _unreplayed(self, history: History, marked: bool) -> list[Fact]:
        """The children working when the replay began that it did not announce (their
        conversation is not stored yet), with their ancestors: announced before anything live
        of theirs that was held, not cancellable (what the client hears before the answer is
        history), parents first."""
        wanted: set[str] = set()
        for working in history.live.children:
            child = self.subagents.children.get(working)
            while child is not None and child.session_id not in history.subagents.children:
                wanted.add(child.session_id)
                child = self.subagents.children.get(child.parent_id)
        facts: list[Fact] = []
        for child_id in self.subagents.children:  # in the order they were announced
            if child_id in wanted:
                facts.append(self.subagents.restate(child_id, cancellable=False))
                facts += [ReplayCompleted(child_id)] if marked else []
        return facts

    def _resync(self) -> list[Effect]:
        """Each listed item and each child the client must know of as it is now, then the state
        with the list (RFD: resume restores it)."""
        restated = self._restated(self.session_id, cancellable=not self.attach.synced())
        return self._present(restated) + self._present([self.foreground.snapshot()])

    def _restated(self, session_id: str, cancellable: bool) -> list[Fact]:
        """What ``session_id`` lists, each as it is now, and its children that the client must
        know of; a child is introduced before its own work is restated, and its state (with its
        own list) follows that. Scheduled work cannot be cancelled (``schedules``)."""
        facts: list[Fact] = list(self.background.restate(session_id, self.tool_uses.get))
        for ref in self.schedules.listed(session_id):
            use = self.tool_uses.get(ref)
            name, tool_input = (use.name, use.tool_input) if use is not None else (None, {})
            facts.append(
                WorkRestated(session_id, ref, "pending", None if use else ref, name, tool_input, False)
            )
        for child in self._restating(session_id):
            facts += [
                self.subagents.restate(child, cancellable),
                *self._restated(child, cancellable),
                self.subagents.snapshot(child),
            ]
        return facts

    def _restating(self, session_id: str) -> list[str]:
        """The children of ``session_id`` a client (re)attaching must know of: those it lists,
        those working (a foreground child is not listed, and its traffic goes on), and those on
        the way to one (a child is never heard of before its parent)."""
        listed = {entry.ref for entry in self.background.listed(session_id) if entry.kind == "subagent"}
        working = self.subagents.working()
        return [
            child.session_id
            for child in self.subagents.children.values()
            if child.parent_id == session_id
            and (
                child.session_id in listed or child.session_id in working or self._restating(child.session_id)
            )
        ]

    # --- tool results ---------------------------------------------------------------------------

    def _tool_result(self, fact: ToolResulted, now: float) -> list[Effect]:
        use = self.tool_uses.get(fact.tool_use_id)
        if use is None or use.final or use.handed_off:
            return []
        effects: list[Effect] = []
        handed = conventions.hand_off(use.tool_input, fact.text, fact.is_error, fact.structured)
        if handed is not None:
            changes = self.registry.learned(handed.task_id, fact.tool_use_id, handed.output_file, now)
            effects += self._task_changes(changes, now)
        output_file = handed.output_file if handed else None
        outs, target = self.background.hand_off(fact.tool_use_id, use.call_id, output_file)
        effects += self._background(outs, now)
        if target is not None:
            use.handed_off = True
            if target.terminal_id is not None:
                self.tool_uses.finish(use.call_id)
            note = conventions.launch_note(use.tool_input)  # never the hand-off's words
            handoff = ToolCallHandedOff(
                use.session_id, use.call_id, note, target.terminal_id, target.status, fact.is_error
            )
            return effects + self._present([handoff])
        if not fact.is_error:
            scheduled, ended = self.schedules.tool_result(use, fact.text, now)
            effects += self._schedules_ended(ended, publish=not scheduled)
            if scheduled:
                use.handed_off = True
                self.tool_uses.detach(use.call_id)
                handoff = ToolCallHandedOff(use.session_id, use.call_id, fact.text, None, "pending")
                return effects + self._present([handoff]) + self._publish()
        launched = handed is not None or conventions.agent_launched(fact.structured) is not None
        text = conventions.launch_note(use.tool_input) if launched else fact.text
        finished = self.tool_uses.result(
            use, fact.is_error, text, fact.images, handed is not None, fact.structured
        )
        return effects + self._shells(self.shells.results(finished))

    def _schedules_ended(self, ended: list[ScheduleEnded], publish: bool = True) -> list[Effect]:
        for end in ended:
            self.tool_uses.finish(end.tool_call_id)
        return self._present(ended) + (self._publish() if ended and publish else [])

    # --- background work ----------------------------------------------------------------------------

    def _task_changes(self, changes: list[TaskChange], now: float) -> list[Effect]:
        effects: list[Effect] = []
        for change in changes:
            effects += self._task_change(change, now)
        # A child that ended, or went to the background, no longer blocks what waited on it.
        return effects + self._publish() + self._blocking()

    def _task_change(self, change: TaskChange, now: float) -> list[Effect]:
        task = change.task
        if change.kind is Change.AMBIENT:
            return self._background(self.background.withdrawn(task, now), now)
        if change.kind is Change.RESUMED:
            self.background.resumed(task)
        if change.kind in (Change.ENDED, Change.CORRECTED):
            effects = self._shells(self.shells.ended(task.task_id))
            effects += self._background(self.background.ended(task, now), now)
            if task.is_subagent:
                effects += self._foreground(
                    self.foreground.subagent_ended(task.task_id, task.end_status, now)
                )
            return effects
        if task.is_subagent:
            self.foreground.subagent_started(task.task_id)
        placed = self._place(task, now)
        if placed is not None:
            effects = placed
        elif self.background.knows(task.task_id):
            effects = self._background(self.background.changed(task), now)
        else:
            effects = self._consider(task, now)
        sender = self.tool_uses.get(task.run_tool_use_id)
        return effects + self._children(self.subagents.messaged(task, sender))

    def _consider(self, task: Task, now: float, force: bool = False) -> list[Effect]:
        """Show a live task once we know enough to say what it is."""
        if task.ended or not (force or task.started or task.tool_use_id):
            return []
        tool = self.tool_uses.get(task.tool_use_id)
        if tool is None and task.tool_use_id and self._waiting_for(task.tool_use_id):
            return []  # launched in a child not exposed yet: considered when its messages are
        if task.is_subagent and self.policy.subagents_are_sessions:
            announced = self.subagents.announce(task, tool)
            if announced is not None:
                self.background.open_child(task, self.subagents.children[task.task_id].parent_id)
                return self._children(announced)
            return self._background(self.background.unplaced(task), now) if force else []
        output_file = None
        if self._tasks_root is not None and self.registry.cli_session_id is not None:
            output_file = conventions.output_file(
                self._tasks_root, self.registry.cli_session_id, task.task_id
            )
        if task.backgrounded is False:
            return self._shells(self.shells.follow(task, tool, output_file))
        self.shells.backgrounded(task.task_id)
        return self._background(self.background.consider(task, tool, output_file, force), now)

    def _place(self, task: Task, now: float) -> list[Effect] | None:
        """A subagent shown as work of ours while its parent was unknown is the child session it
        is once its parent is known: that tool call ends (its work goes on in the child), the
        child is announced, and what it said meanwhile follows. None while it stays as it is."""
        if not self.background.stands_in(task.task_id):  # only where subagents are sessions
            return None
        announced = self.subagents.announce(task, self.tool_uses.get(task.tool_use_id))
        if announced is None:
            return None
        effects = self._background(self.background.placed(task, now), now)
        self.background.open_child(task, self.subagents.children[task.task_id].parent_id)
        return effects + self._children(announced) + self._flush(now) + self._publish()

    def _tick(self, now: float) -> list[Effect]:
        effects = self._task_changes(self.registry.tick(now), now)
        for task in self.background.due(self.registry.live(), now):
            effects += self._consider(task, now, force=True)
            self.background.stall(task)
        effects += self._background(self.background.overdue(now), now) + self._publish()
        return effects + self._foreground(self.foreground.tick(now)) + self._flush(now)

    def _publish(self) -> list[Effect]:
        """The ``background`` lists: each child's (the newest, so the most nested, first), then
        the root's, so a child's own list empties before its parent's list drops it."""
        effects: list[Effect] = []
        for child in reversed(list(self.subagents.children)):
            effects += self._children(self.subagents.listing(child, self._listed(child)))
        return effects + self._foreground(self.foreground.set_background(self._listed(self.session_id)))

    def _listed(self, session_id: str) -> list[Listed]:
        scheduled = [Listed("tool_call", ref) for ref in self.schedules.listed(session_id)]
        return self.background.listed(session_id) + scheduled

    # --- permission questions ------------------------------------------------------------------

    def _asked(self, asked: ev.PermissionAsked) -> list[Effect]:
        session_id = self.subagents.session_of_agent(asked.agent_id)
        foreground = asked.agent_id is None
        modes = [mode["id"] for mode in self.modes.available(self._closed_modes)]
        offered = tuple(choices(asked.tool_name, asked.suggestions, modes))
        self.questions.ask(asked.ticket, session_id, foreground, offered)
        known = self.tool_uses.get(asked.tool_use_id)
        if known is None and asked.tool_use_id:
            self._asked_in[asked.tool_use_id] = session_id  # a child's not exposed yet: the root
        tool_call_id = known.call_id if known else asked.tool_use_id or f"permission-{asked.ticket}"
        # Claude Code asks about some tools with an empty input (ExitPlanMode: its plan), though
        # the model's call had one: the person deciding should see what the model asked for.
        tool_input = asked.tool_input or (known.tool_input if known else {})
        self.subagents.asking(session_id, opened=True)
        questions = user_questions.read(asked.tool_name, tool_input)
        if questions is not None:
            where = (session_id, tool_call_id, known is not None)
            forms = self.policy.questions_as_forms

            def ask(session: str, call: str, tool: str, given: dict[str, Any], shown: bool) -> dict[str, Any]:
                return self.presenter.permission_request(session, call, tool, given, (), shown)

            asking = user_questions.asking(tool_input, questions, forms, where, ask)
            if not asking.asks:  # none the client can be asked: all left to the model
                return self._questions_answered(asked.ticket, user_questions.answered(asking, []))
            return [AskQuestions(asked.ticket, asking), *self._blocking()]
        params = self.presenter.permission_request(
            session_id, tool_call_id, asked.tool_name, tool_input, offered, known is not None, asked.replaced
        )
        return [AskPermission(asked.ticket, params), *self._blocking()]

    def _answered(self, ticket: Ticket, option_id: str | None) -> list[Effect]:
        """``option_id`` is None when the client cancelled the question."""
        if ticket not in self.questions:
            return []
        choice = self.questions.chosen(ticket, option_id)
        if choice is None or not choice.allows:
            decision = Decide(ticket, False, message="The user rejected this tool use")
        else:
            decision = Decide(ticket, True, choice.updates)
        return [decision, *self._forget_question(ticket, QuestionTrigger.ANSWER)]

    def _questions_answered(self, ticket: Ticket, updated_input: dict[str, Any] | None) -> list[Effect]:
        """Claude's questions answered (``updated_input``) or declined (None)."""
        if ticket not in self.questions:
            return []
        decision = (
            Decide(ticket, False, message=user_questions.DECLINED)
            if updated_input is None
            else DecideAnswered(ticket, True, updated_input=updated_input)
        )
        return [decision, *self._forget_question(ticket, QuestionTrigger.ANSWER)]

    def _withdraw(self, ticket: Ticket, why: str) -> list[Effect]:
        # Withdraw first: once decided, the host forgets the question and its request id.
        return [
            WithdrawPermission(ticket),
            Decide(ticket, False, message=why, interrupt=True),
            *self._forget_question(ticket, QuestionTrigger.WITHDRAW),
        ]

    def _forget_question(self, ticket: Ticket, how: QuestionTrigger) -> list[Effect]:
        question = self.questions.decide(ticket, how)
        self.subagents.asking(question.session_id, opened=False)
        return self._blocking()

    def _blocking(self) -> list[Effect]:
        """Whose foreground work is blocked on user action now: each child's (``Subagents``),
        then the root's: a question of the main conversation is open, or the turn waits on
        synchronous children that all are blocked."""
        effects = self._children(self.subagents.blocked())
        blocked = self.questions.blocking or self.subagents.waits_blocked(self.session_id)
        if blocked is not self.foreground.blocked:
            effects += self._foreground(self.foreground.set_blocked(blocked))
        return effects

    # --- routing facts -------------------------------------------------------------------------

    def _present(self, facts: Sequence[Fact]) -> list[Effect]:
        effects: list[Effect] = []
        for fact in facts:
            effects += self.presenter.render(fact)
        return effects

    def _foreground(self, outs: list[ForegroundOut]) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            if isinstance(out, Query):
                effects += self._present(self.title.prompted(out.content))
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
        effects = self._present([reply])
        if answer.stop is not None and answer.stop.kind is Kind.SUBAGENT:
            effects += self.subagents.cancel(answer.stop.ref)
        elif answer.stop is not None:
            effects += self._background(self.background.stop_item(answer.stop, self._now), self._now)
        return effects + self._foreground(self.foreground.answered(self._now))

    def _children(self, facts: list[ChildFact]) -> list[Effect]:
        for fact in facts:
            if isinstance(fact, ChildAnnounced):
                self.transcripts[fact.child_id] = Transcript(fact.child_id)
        return self._present(facts)

    def _shells(self, outs: list[ShellOut]) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            effects += [out] if isinstance(out, Tail | FinishTail) else self.presenter.render(out)
        return effects

    def _background(self, outs: list[BackgroundOut], now: float) -> list[Effect]:
        effects: list[Effect] = []
        for out in outs:
            match out:
                case Tail() | FinishTail() | StopTask() | Log():
                    effects.append(out)
                case ToolCallDetached(call_id):
                    self.tool_uses.detach(call_id)
                case FollowUpExpected(run):
                    self.foreground.expect_follow_up(run, now)
                case ChildEnded(task):
                    effects += self._children(self.subagents.ended(task))
                case WorkEnded():
                    self.tool_uses.finish(out.tool_call_id)
                    effects += self.presenter.render(out)
                case TerminalOpened() | TerminalOutput() | TerminalReplaced() | TerminalExited():
                    effects += self.presenter.render(out)
                case WorkOpened() | WorkStatus():
                    effects += self.presenter.render(out)
                case TaskOpened() | TaskChanged() | TaskEnded():
                    effects += self.presenter.render(out)
                case _:
                    assert_never(out)
        return effects


def _first_text(content: list[dict[str, Any]]) -> str:
    """A prompt's first text (where a slash command is)."""
    return next((str(block["text"]) for block in content if block["type"] == "text"), "")
