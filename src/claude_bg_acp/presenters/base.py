"""What every client kind renders alike, and the dispatch of facts to their renderings.

``BasePresenter.render`` matches each fact to one method; the presenters of the client kinds
override the methods whose wire form differs. Agent text, tool calls, permission questions,
the answer to a stop by task id, the session's title, usage and the config options (but for
the key that names an option) look alike in every version, and a replayed prompt is a user
message chunk unless a kind says otherwise; what a replay lacks is a ``notice`` for a kind that
takes notices (``notices``); state, prompts' answers, terminals, background tool calls, tasks,
child sessions (and the messages they received) and restating them to a client that
re-attaches, the end of a replay, the modes, commands and the plan are each kind's own
business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, assert_never

from claude_bg_acp.acp.answers import ConfigOption, SessionFields
from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.acp.updates import (
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentChunk,
    ExitStatus,
    Notice,
    PlanEntry,
    SessionInfoUpdate,
    SessionUpdate,
    TerminalOutputChunk,
    TextContent,
    ToolCall,
    UsageUpdate,
)
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.claude.server_info import SlashCommand
from claude_bg_acp.core.attaching import ReplayCompleted
from claude_bg_acp.core.background import (
    TaskChanged,
    TaskEnded,
    TaskOpened,
    TaskStopAnswered,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    TerminalRestated,
    WorkEnded,
    WorkOpened,
    WorkRestated,
    WorkStatus,
)
from claude_bg_acp.core.commands import CommandsChanged
from claude_bg_acp.core.config import EFFORT, FAST, MODE, MODEL, Options, OptionsAnswered, OptionsChanged
from claude_bg_acp.core.effects import ClientEffect, Notify, Reply
from claude_bg_acp.core.foreground import (
    PromptAnswered,
    PromptCancelled,
    PromptFact,
    PromptInserted,
    PromptRetried,
    StateReported,
)
from claude_bg_acp.core.foreground_shells import ShellOutput
from claude_bg_acp.core.history import ChildMessageRecalled, HistoryIncomplete, PromptRecalled
from claude_bg_acp.core.permission_modes import ModeChanged
from claude_bg_acp.core.permission_options import Choice
from claude_bg_acp.core.plan import PlanChanged
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Fact
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.subagents import (
    ChildAnnounced,
    ChildConfirmed,
    ChildMessaged,
    ChildRestated,
    ChildStateChanged,
)
from claude_bg_acp.core.titles import TitleChanged
from claude_bg_acp.core.tool_uses import (
    ToolCallCut,
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolCallStarted,
)
from claude_bg_acp.core.transcript import MessageChunk
from claude_bg_acp.core.usage import UsageReported
from claude_bg_acp.presenters import diffs, tool_views
from claude_bg_acp.presenters.live_output import LiveOutput

CANCEL: dict[str, Any] = {"cancel": {}}
EFFORT_NAMES = {"xhigh": "Extra high"}
HISTORY_INCOMPLETE = "Part of this session's history is not stored"


class BasePresenter:
    policy: Policy
    creating: ClassVar[Literal["tool_call", "tool_call_update"]]
    """The update that creates a tool call (v1 has its own; in v2 the first update creates)."""
    cut_status: ClassVar[Literal["cancelled", "failed"]]
    """A tool call whose turn was cancelled (v1 has no ``cancelled``)."""
    option_key: ClassVar[Literal["id", "configId"]]
    """The key that names a config option."""
    shows_scheduled: ClassVar[bool]
    """A tool call that only schedules work is ``pending`` from its start (clients that follow
    scheduled work; to the others it runs until its result)."""
    notices: bool
    """The client takes ``notice`` updates (v2's all do; a v1 one that declares them)."""
    live: LiveOutput
    """What each running foreground command showed of its output."""
    folder: str = ""
    """The session's folder: tool call titles name paths relative to it (``presenter_for``)."""
    diff_form = staticmethod(diffs.v1)
    """How a change to a file shows (v2 has its own)."""
    booleans: bool = False
    """The client takes boolean config options (v2's all do; a v1 one that declares
    ``session.configOptions.boolean``); the others get a toggle as an on/off select."""

    def render(self, fact: Fact) -> list[ClientEffect]:
        match fact:
            case MessageChunk():
                return [self.chunk(fact)]
            case ToolCallFinished() | ToolCallCut():
                self.live.end(fact.tool_call_id)
                return [Notify(fact.session_id, self.tool_call(fact))]
            case ToolCallStarted() | ToolCallRunning():
                return [Notify(fact.session_id, self.tool_call(fact))]
            case ToolCallHandedOff():
                return self.handed_off(fact)
            case ShellOutput():
                return self.shell_output(fact)
            case TerminalOpened() | TerminalOutput() | TerminalReplaced() | TerminalExited():
                return self.terminal(fact)
            case WorkOpened() | WorkStatus() | WorkEnded() | ScheduleEnded():
                return self.work(fact)
            case TaskOpened() | TaskChanged() | TaskEnded():
                return self.task(fact)
            case TaskStopAnswered():
                return [Reply(fact.ticket, {"stopped": fact.stopped})]
            case ChildAnnounced() | ChildStateChanged() | ChildMessaged():
                return self.child(fact)
            case ChildConfirmed():
                return self.confirmed(fact)
            case ChildMessageRecalled():
                return self.child_message(fact)
            case ReplayCompleted():
                return self.replay_completed(fact)
            case HistoryIncomplete():
                return self.incomplete(fact) if self.notices else []
            case StateReported():
                return self.state(fact)
            case PromptInserted() | PromptRetried() | PromptAnswered() | PromptCancelled():
                return self.prompt(fact)
            case PromptRecalled():
                return self.recalled(fact)
            case TerminalRestated() | WorkRestated() | ChildRestated():
                return self.restate(fact)
            case ModeChanged():
                return self.mode(fact)
            case TitleChanged():
                return [Notify(fact.session_id, title_update(fact))]
            case OptionsChanged():
                update = ConfigOptionUpdate(config_options=self.config_options(fact.options))
                return [Notify(fact.session_id, update)]
            case OptionsAnswered():
                return [Reply(fact.ticket, {"configOptions": self.config_options(fact.options)})]
            case CommandsChanged():
                commands = [self.command(command) for command in fact.commands]
                return [Notify(fact.session_id, AvailableCommandsUpdate(available_commands=commands))]
            case UsageReported():
                return [Notify(fact.session_id, usage_update(fact))]
            case PlanChanged():
                return [Notify(fact.session_id, self.plan(fact))]
            case _:
                assert_never(fact)

    # --- alike in every kind --------------------------------------------------------------------

    def chunk(self, fact: MessageChunk) -> Notify:
        kind: Literal["agent_thought_chunk", "agent_message_chunk"] = (
            "agent_thought_chunk" if fact.thought else "agent_message_chunk"
        )
        chunk = ContentChunk(
            session_update=kind, content=TextContent(text=fact.text), message_id=fact.message_id
        )
        return Notify(fact.session_id, chunk)

    def tool_call(self, fact: ToolCallStarted | ToolCallRunning | ToolCallFinished | ToolCallCut) -> ToolCall:
        update: ToolCall
        match fact:
            case ToolCallStarted():
                view = tool_views.describe(fact.name, {}, self.folder)
                update = ToolCall(
                    session_update=self.creating,
                    tool_call_id=fact.tool_call_id,
                    title=view.title,
                    kind=view.kind,
                    status="pending",
                )
            case ToolCallRunning():
                fields = self.call_fields(fact.tool_call_id, fact.name, fact.tool_input)
                kind = self.creating if fact.first else "tool_call_update"
                status = "pending" if fact.pending and self.shows_scheduled else "in_progress"
                update = ToolCall.model_validate({"sessionUpdate": kind, **fields, "status": status})
            case ToolCallFinished():
                update = ToolCall(
                    session_update="tool_call_update",
                    tool_call_id=fact.tool_call_id,
                    status="failed" if fact.failed else "completed",
                )
                exit_info = fact.command.exit if fact.command is not None else None
                if fact.text or exit_info is not None:
                    update.raw_output = raw_output(fact.text, exit_info)
                content = [tool_views.text_content(fact.text)] if fact.text else []
                if fact.review is not None:
                    # A file tool's card shows the file (an edit's change, never its sentence).
                    content, update.locations = tool_views.reviewed(fact.review, self.diff_form)
                content += [tool_views.image_content(image) for image in fact.images]
                if content:
                    update.content = content
            case ToolCallCut():
                status = "failed" if fact.failed else self.cut_status
                update = ToolCall(
                    session_update="tool_call_update", tool_call_id=fact.tool_call_id, status=status
                )
            case _:
                assert_never(fact)
        return update

    def recalled(self, fact: PromptRecalled) -> list[ClientEffect]:
        return [
            Notify(
                fact.session_id,
                ContentChunk(
                    session_update="user_message_chunk",
                    content=ContentBlock.model_validate(block),
                    message_id=fact.message_id,
                ),
            )
            for block in fact.content
        ]

    def incomplete(self, fact: HistoryIncomplete) -> list[ClientEffect]:
        lines = "\n".join(f"- {missing}" for missing in fact.missing)
        description = f"Claude Code no longer keeps:\n{lines}"
        notice = Notice(severity="info", title=HISTORY_INCOMPLETE, description=description)
        return [Notify(fact.session_id, notice)]

    def permission_request(
        self,
        session_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        choices: Sequence[Choice],
        shown: bool,
        replaced: str | None = None,
    ) -> dict[str, Any]:
        call = self.call_fields(tool_call_id, tool_name, tool_input, replaced)
        if not shown:
            # A client applies the request's tool call as an update: one that ran already stays
            # as it is (statuses never go back to pending); a first-seen one is created pending.
            call["status"] = "pending"
        options = [{"optionId": c.option_id, "name": c.name, "kind": c.kind} for c in choices]
        return self.question(session_id, call, call["title"], options)

    def question(
        self, session_id: str, call: dict[str, Any], title: str, options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        params = self.permission_subject(call, title)
        params.update(sessionId=session_id, options=options)
        return params

    def call_fields(
        self, tool_call_id: str, name: str, tool_input: dict[str, Any], replaced: str | None = None
    ) -> dict[str, Any]:
        """What a tool call shows once its input is known (and what a permission question shows;
        ``replaced``: the text of the file a ``Write`` overwrites)."""
        view = tool_views.describe(name, tool_input, self.folder, replaced, self.diff_form)
        fields: dict[str, Any] = {
            "toolCallId": tool_call_id,
            "title": view.title,
            "kind": view.kind,
            "rawInput": tool_input,
        }
        if view.locations is not None:
            fields["locations"] = view.locations
        if view.content is not None:
            fields["content"] = view.content
        return fields

    def answer_fields(self, options: Options) -> SessionFields:
        return {"configOptions": self.config_options(options)}

    def config_options(self, options: Options) -> list[ConfigOption]:
        """The mode, the model once Claude Code said which it uses, the effort when it has one."""
        modes = [
            {"value": m["id"], "name": m["name"], "description": m["description"]} for m in options.modes
        ]
        selects = [self._select(MODE, "Mode", "mode", options.mode, modes)]
        if options.model is not None:
            models = [
                {"value": m.value, "name": m.name} | ({"description": m.description} if m.description else {})
                for m in options.models
            ]
            selects.append(self._select(MODEL, "Model", "model", options.model, models))
        if options.effort is not None:
            efforts = [{"value": e, "name": EFFORT_NAMES.get(e, e.capitalize())} for e in options.efforts]
            selects.append(self._select(EFFORT, "Effort", "thought_level", options.effort, efforts))
        if options.fast is not None:
            selects.append(self._toggle(FAST, "Fast mode", options.fast))
        return selects

    def _toggle(self, config_id: str, name: str, on: bool) -> dict[str, Any]:
        """A boolean option, or for a client without those a select of on and off."""
        if not self.booleans:
            choices = [{"value": "on", "name": "On"}, {"value": "off", "name": "Off"}]
            return self._select(config_id, name, "model_config", "on" if on else "off", choices)
        return {
            self.option_key: config_id,
            "name": name,
            "category": "model_config",
            "type": "boolean",
            "currentValue": on,
        }

    def _select(
        self, config_id: str, name: str, category: str, current: str, choices: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            self.option_key: config_id,
            "name": name,
            "category": category,
            "type": "select",
            "currentValue": current,
            "options": choices,
        }

    # --- each kind's own ------------------------------------------------------------------------

    def mode(self, fact: ModeChanged) -> list[ClientEffect]:
        """The mode changed: what a client with session modes is told besides the options."""
        return []

    def command(self, command: SlashCommand) -> AvailableCommand:
        raise NotImplementedError

    def plan(self, fact: PlanChanged) -> SessionUpdate:
        raise NotImplementedError

    def permission_subject(self, call: dict[str, Any], title: str) -> dict[str, Any]:
        raise NotImplementedError

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        """A client that does not follow the work sees the call end with its result, as any
        other."""
        ended = ToolCallFinished(fact.session_id, fact.tool_call_id, fact.failed, fact.text)
        return [Notify(fact.session_id, self.tool_call(ended))]

    def shell_output(self, fact: ShellOutput) -> list[ClientEffect]:
        """A running foreground command's output: its tool call's content, as it grows (its
        result replaces it)."""
        return [self.live.update(fact)]

    def terminal(
        self, fact: TerminalOpened | TerminalOutput | TerminalReplaced | TerminalExited
    ) -> list[ClientEffect]:
        return []

    def work(self, fact: WorkOpened | WorkStatus | WorkEnded | ScheduleEnded) -> list[ClientEffect]:
        return []

    def task(self, fact: TaskOpened | TaskChanged | TaskEnded) -> list[ClientEffect]:
        return []

    def child(self, fact: ChildAnnounced | ChildStateChanged | ChildMessaged) -> list[ClientEffect]:
        return []

    def confirmed(self, fact: ChildConfirmed) -> list[ClientEffect]:
        return []

    def child_message(self, fact: ChildMessageRecalled) -> list[ClientEffect]:
        return []

    def replay_completed(self, fact: ReplayCompleted) -> list[ClientEffect]:
        return []

    def state(self, fact: StateReported) -> list[ClientEffect]:
        return []

    def prompt(self, fact: PromptFact) -> list[ClientEffect]:
        return []

    def restate(self, fact: TerminalRestated | WorkRestated | ChildRestated) -> list[ClientEffect]:
        return []


def title_update(fact: TitleChanged) -> SessionInfoUpdate:
    update = SessionInfoUpdate(title=fact.title)
    if fact.updated_at is not None:
        update.updated_at = fact.updated_at
    return update


def usage_update(fact: UsageReported) -> UsageUpdate:
    update = UsageUpdate(used=fact.used, size=fact.size)
    if fact.cost is not None:
        update.cost = {"amount": fact.cost, "currency": "USD"}
    return update


def plan_entries(fact: PlanChanged) -> list[PlanEntry]:
    """Claude Code's lists have no priorities: every entry is ``medium``."""
    return [{"content": e.content, "priority": "medium", "status": e.status} for e in fact.entries]


def raw_output(text: str, exit_info: ExitInfo | None = None) -> dict[str, Any]:
    """A tool call's ``rawOutput``: an object, as strictly typed clients (Toad) require, whose
    ``output`` is the text its content shows, the same to the character (acpx prints the text
    under ``output`` and leaves it out only when it repeats the content exactly); a command's
    exit beside it, under keys acpx does not print."""
    raw: dict[str, Any] = {"output": text}
    if exit_info is not None:
        raw |= exit_status(exit_info)
    return raw


def exit_status(exit_info: ExitInfo | None) -> ExitStatus:
    """A terminal's ``exitStatus``: ``{}`` when how it ended is unknown."""
    if exit_info is None:
        return {}
    return {"exitCode": exit_info.exit_code, "signal": exit_info.signal}


def with_meta(effect: ClientEffect, key: str, entries: dict[str, Any]) -> ClientEffect:
    """``effect`` with ``entries`` added to its update's ``_meta[key]``; an effect that is no
    update, or is terminal output (a v2 form without ``_meta``), as it is."""
    if not isinstance(effect, Notify) or isinstance(effect.update, TerminalOutputChunk):
        return effect
    meta = dict(effect.update.meta or {})
    meta[key] = {**meta.get(key, {}), **entries}
    return Notify(effect.session_id, effect.update.model_copy(update={"meta": meta}))
