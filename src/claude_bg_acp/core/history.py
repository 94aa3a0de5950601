"""A stored conversation replayed as the facts a live session reports (``session/load``, and
``session/resume`` with replay).

Theory of operation. Claude Code keeps a conversation's messages in its transcript, and each
subagent's beside it; of the work that ran in the background it keeps only traces: the tool
result that handed the work off, the ``<task-notification>`` it wrote when the work ended, and
the shell's output file while it lasts. Replaying runs the messages through the parts a live
session uses (a ``Transcript`` per session, ``ToolUses``, ``Subagents``) into the same facts, in
the order they happened, which the session's presenter renders as it renders live ones. Only
what history cannot say differs:

- a background shell is a terminal that has ended: opened, what is left of its output, and its
  exit (the file's closing line, else the notification; unknown when neither says). The replay
  waits at it (``awaited``) while its file is read, piece by piece (``OutputRecalled``: as
  live output, a snapshot past the backlog limit), and goes on after the last; work
  without a process (a Monitor; a subagent shown in its parent) is handed off as live, and
  ends with the status and summary (a subagent's: its report) its notification gives, where
  that notification comes: what a background subagent did comes between its launch and its
  notification, as it happened live, not before the message that launched it. Work went to
  the background when Claude Code says so (``conventions.hand_off``, ``agent_launched``),
  never by the words of a result: a foreground command that prints the hand-off sentence is an
  ordinary tool call;
- a child is announced without controls (``cancel`` belongs to live children), its own
  messages follow, and it ends as its notification says, or idle with no stop reason when
  nothing does (it is not running: the Claude Code that ran it is gone); then its replay's end
  is marked on it. Its first message is the prompt its announcement carries; a later one (its
  task continued, ``SendMessage``) is a message it received, from a sender history does not
  name (never the user's prompt);
- a tool call with no result stays as history leaves it, unfinished: a missing result proves
  no end (the Subagent Sessions RFD: nothing is made a failure or a cancellation for want of a
  final update);
- what history lacks is said once the replay is over (``HistoryIncomplete``): a subagent whose
  conversation is not stored, a shell whose output file is gone;
- the todo and task tools are the plan, as live (a subagent's, shown in its parent, stay tool
  calls);
- a compaction is the tool call it was live (``compaction``), completed where its boundary is
  stored, with the tokens before and after it; Claude Code keeps only the latest one's (what
  came before it is in its summary, which is not replayed);
- what still runs in this process (a client re-attaching) is left to the live session: its
  terminals are not opened, its tool calls and children not ended; the session core restates
  them after the replay.

A long conversation comes in parts, as it is read (``replay`` each in order, then
``incomplete``): what the whole replay needs from the start comes with the first part (every
task notification, every subagent's conversation), a shell's output with the part that hands
it off; what a part leaves open (a tool call whose result comes later) is carried to the next.

Claude Code's own messages (task notifications, local command output, interruption markers,
compaction summaries) are not shown as the user's; a prompt keeps the id it is stored under,
which is the ``messageId`` it had live. With children hidden from the client, a subagent's
messages show in the session that launched it, as they did live (but for those it received
after its first: the client sees no session they could be addressed to).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from claude_agent_sdk.types import AssistantMessage, SystemMessage, UserMessage

from claude_bg_acp.claude import conventions
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core.attaching import ReplayCompleted
from claude_bg_acp.core.background_facts import (
    TOOL_STATUS,
    FinalStatus,
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    WorkEnded,
    WorkOpened,
)
from claude_bg_acp.core.compaction import Compaction, as_tool_call
from claude_bg_acp.core.events import (
    OutputRecalled,
    StoredChild,
    StoredConversation,
    StoredMessage,
    StoredOutput,
)
from claude_bg_acp.core.plan import PLAN_TOOLS, Plan, PlanChanged
from claude_bg_acp.core.prompts import from_claude_content
from claude_bg_acp.core.subagents import ChildAnnounced, ChildFact, Subagents
from claude_bg_acp.core.tasks import EndStatus, Task, TaskPhase
from claude_bg_acp.core.terminals import exit_of
from claude_bg_acp.core.tool_uses import (
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolUse,
    ToolUses,
)
from claude_bg_acp.core.transcript import MessageChunk, ToolInput, ToolResulted, Transcript, TranscriptFact

NOTE_STATUSES: dict[str, EndStatus] = {
    "completed": "completed",
    "failed": "failed",
    "killed": "killed",
    "stopped": "stopped",
}
"""The end statuses a task notification names."""


@dataclass(frozen=True)
class PromptRecalled:
    """A prompt of the stored conversation, under the id it is stored with."""

    session_id: str
    message_id: str
    content: list[dict[str, Any]]


@dataclass(frozen=True)
class ChildMessageRecalled:
    """A message a child received after its first (its task continued), under the id it is
    stored with; the transcript does not say who sent it."""

    session_id: str
    message_id: str
    content: list[dict[str, Any]]


@dataclass(frozen=True)
class HistoryIncomplete:
    """What the replayed history lacks, one line each (said on the session once it is over)."""

    session_id: str
    missing: tuple[str, ...]


@dataclass(frozen=True)
class Live:
    """What of the session runs in this process now, left to the live session."""

    tasks: frozenset[str] = frozenset()
    children: frozenset[str] = frozenset()


HistoryFact = (
    PromptRecalled
    | ChildMessageRecalled
    | MessageChunk
    | ToolCallRunning
    | ToolCallFinished
    | ToolCallHandedOff
    | TerminalOpened
    | TerminalOutput
    | TerminalReplaced
    | TerminalExited
    | ChildFact
    | ReplayCompleted
    | PlanChanged
    | WorkOpened
    | WorkEnded
)


class History:
    """One replay: the parts of a stored conversation, in order (``replay``), then what it
    lacked (``incomplete``)."""

    def __init__(self, root_id: str, cwd: str, children_shown: bool, live: Live) -> None:
        self.root_id = root_id
        self.cwd = cwd
        self.children_shown = children_shown
        self.live = live
        self.tool_uses = ToolUses()
        self.subagents = Subagents(root_id)
        self.ended: dict[str, Task] = {}
        self.plans: dict[str, Plan] = {}
        self.compaction = Compaction()
        self._outputs: dict[str, StoredOutput] = {}
        """Those not yet shown (a child's are shown when its Agent tool use comes)."""
        self._children: dict[str, StoredChild] = {}
        self._root = Transcript(root_id)
        self._missing: list[str] = []
        self._until_noted: dict[str, list[_Step]] = {}
        """By task id: what of background work happened while it ran (a subagent's messages,
        its end), told where Claude Code's notification of its end comes."""
        self._rest: deque[_Step] = deque()
        """What the replay came to and did not tell yet: from the output file it waits at on."""

    def replay(self, part: StoredConversation | OutputRecalled) -> list[HistoryFact]:
        """The facts of a part of the conversation (the first has the notes and the children),
        or of the next piece of the output file it waits at, up to the next it waits at."""
        if isinstance(part, OutputRecalled):
            return self._piece(part)
        self._outputs |= part.outputs
        self._children |= {child.tool_use_id: child for child in part.children}
        for note in part.notes:
            self.ended[note.task_id] = _ended_task(note)
        self._rest.extend(self._messages(self._root, part.messages, child=False))
        return self._until_awaited()

    @property
    def awaited(self) -> StoredOutput | None:
        """The output file the replay waits at: its pieces come next (``OutputRecalled``)."""
        head = self._rest[0] if self._rest else None
        return head.output if isinstance(head, _Awaited) else None

    def unnoted(self) -> list[HistoryFact]:
        """What waits for a notification the replay did not come to (before its end), and what a
        replay that stopped short did not come to; a shell's output is no longer read then."""
        steps = [*self._rest, *(step for waiting in self._until_noted.values() for step in waiting)]
        self._rest.clear()
        self._until_noted.clear()
        return [fact for step in steps for fact in _unread(step)]

    def _until_awaited(self) -> list[HistoryFact]:
        facts: list[HistoryFact] = []
        while self._rest and not isinstance(step := self._rest[0], _Awaited):
            facts.append(step)
            self._rest.popleft()
        return facts

    def _piece(self, piece: OutputRecalled) -> list[HistoryFact]:
        """A piece of the output file the replay waits at: shown as live output is; after the
        last, the shell's hand-off and its exit, and the replay goes on."""
        head = self._rest[0] if self._rest else None
        if not isinstance(head, _Awaited) or head.output.task_id != piece.task_id:
            return []
        opened = head.opened
        ids = (opened.session_id, opened.terminal_id, opened.tool_call_id)
        facts: list[HistoryFact] = []
        if piece.replaced:
            facts.append(TerminalReplaced(*ids, piece.data))
        elif piece.data:
            facts.append(TerminalOutput(*ids, piece.data))
        if piece.end:
            self._rest.popleft()
            facts += head.ended(piece.exit)
            facts += self._until_awaited()
        return facts

    def incomplete(self) -> list[HistoryIncomplete]:
        """What the replay lacked, once it is over."""
        return [HistoryIncomplete(self.root_id, tuple(self._missing))] if self._missing else []

    def _messages(self, transcript: Transcript, messages: list[StoredMessage], child: bool) -> list[_Step]:
        """One session's messages; a child's first prompt came with its announcement, the
        later ones are messages it received (not shown with children hidden: see the module
        docstring)."""
        session_id = transcript.session_id
        prompted = not child
        facts: list[_Step] = []
        for stored in messages:
            message = stored.message
            if isinstance(message, AssistantMessage):
                for fact in transcript.assistant(message):
                    facts += self._assistant(
                        session_id, fact, planned=not child or session_id != self.root_id
                    )
            elif isinstance(message, SystemMessage):
                facts += as_tool_call(
                    session_id, self.compaction.system(message.subtype, message.data), self.tool_uses
                )
            elif isinstance(message, UserMessage):
                facts += self._noted(stored.content)
                results = transcript.tool_results(message)
                for result in results:
                    facts += self._result(session_id, result)
                prompt = None if results else _prompt(stored.content)
                if prompt is not None and not child:
                    facts.append(PromptRecalled(session_id, stored.uuid, prompt))
                elif prompt is not None and prompted and session_id != self.root_id:
                    facts.append(ChildMessageRecalled(session_id, stored.uuid, prompt))
                prompted = prompted or prompt is not None
        return facts

    def _assistant(self, session_id: str, fact: TranscriptFact, planned: bool) -> list[_Step]:
        """``planned``: the session's plan tools are its plan (not a subagent's in its parent)."""
        if isinstance(fact, MessageChunk):
            return [fact]
        if not isinstance(fact, ToolInput):
            return []
        if planned and fact.name in PLAN_TOOLS:
            self.plans.setdefault(session_id, Plan(session_id)).input_known(
                fact.tool_use_id, fact.name, fact.tool_input
            )
            return []
        facts: list[_Step] = []
        facts += self.tool_uses.input_known(
            session_id, fact.tool_use_id, fact.name, fact.tool_input, None, fact.message
        )
        child = self._children.get(fact.tool_use_id)
        use = self.tool_uses.get(fact.tool_use_id)
        if child is not None and use is not None:
            facts += self._child(child, use)
        return facts

    def _child(self, child: StoredChild, tool: ToolUse) -> list[_Step]:
        """A child's conversation; a background one's after its launch, when it ended
        (``_until_noted``), as it happened."""
        later = (
            tool.tool_input.get("run_in_background") is True
            and child.agent_id in self.ended
            and child.agent_id not in self.live.children
        )
        if not self.children_shown:
            said = self._messages(Transcript(self.root_id), child.messages, child=True)
            return self._when_noted(child.agent_id, said) if later else said
        task = self.ended.get(child.agent_id) or Task(child.agent_id, "local_agent")
        task.tool_use_id = child.tool_use_id
        announced = self.subagents.announce(task, tool)
        if announced is None:
            return []  # its parent is not known: never guessed
        facts: list[_Step] = [
            replace(fact, cancellable=False) if isinstance(fact, ChildAnnounced) else fact
            for fact in announced
        ]
        work = self._messages(Transcript(child.agent_id), child.messages, child=True)
        if child.agent_id not in self.live.children:
            work += self.subagents.ended(task)
        work.append(ReplayCompleted(child.agent_id))
        return facts + (self._when_noted(child.agent_id, work) if later else work)

    def _when_noted(self, task_id: str, facts: list[_Step]) -> list[_Step]:
        self._until_noted.setdefault(task_id, []).extend(facts)
        return []

    def _noted(self, content: Any) -> list[_Step]:
        """What waited for the notifications a message of Claude Code's brings."""
        notes = conventions.task_notes(content) if isinstance(content, str) else []
        return [fact for note in notes for fact in self._until_noted.pop(note.task_id, [])]

    def _result(self, session_id: str, result: ToolResulted) -> list[_Step]:
        plan = self.plans.get(session_id)
        if plan is not None and plan.owns(result.tool_use_id):
            return list(plan.result(result.tool_use_id, result.is_error, result.text, result.structured))
        use = self.tool_uses.get(result.tool_use_id)
        if use is None or use.final:
            return []
        self._child_kept(use, result)
        handed = conventions.hand_off(use.tool_input, result.text, result.is_error, result.structured)
        launched = conventions.agent_launched(result.structured)
        if handed is None and not result.is_error and not self.children_shown:
            # A subagent shown in its parent works on its Agent call (a child session's call
            # ends at the launch).
            handed = launched
        # A launch shows what it was asked to do, never the hand-off's words (as live).
        note = conventions.launch_note(use.tool_input)
        if handed is None:
            text = note if launched is not None else result.text
            return list(
                self.tool_uses.result(use, result.is_error, text, result.images, False, result.structured)
            )
        self.tool_uses.finish(use.call_id)
        task = self.ended.get(handed.task_id)
        live = handed.task_id in self.live.tasks
        if not use.shell:
            handoff = ToolCallHandedOff(session_id, use.call_id, note, None, "in_progress")
            if live:
                return [handoff]
            if task is not None:  # it ends where its notification comes, as it did live
                end = WorkEnded(session_id, use.call_id, _final(task), task.summary)
                self._when_noted(handed.task_id, [end])
                return [WorkOpened(session_id, use.call_id, "in_progress"), handoff]
            return [ToolCallFinished(session_id, use.call_id, False, note)]
        handoff = ToolCallHandedOff(session_id, use.call_id, note, handed.task_id, "in_progress")
        if live:
            return [handoff]
        return self._ended_terminal(session_id, use, handed.task_id, task, handoff)

    def _ended_terminal(
        self, session_id: str, use: ToolUse, task_id: str, task: Task | None, handoff: ToolCallHandedOff
    ) -> list[_Step]:
        command = use.tool_input.get("command")
        opened = TerminalOpened(session_id, task_id, use.call_id, str(command or ""), self.cwd, False)
        output = self._outputs.pop(task_id, None)
        if output is not None:
            return [opened, _Awaited(output, opened, handoff, task)]
        self._missing.append(f"the output of background command {task_id} (`{opened.command}`)")
        return [opened, *_shell_end(opened, handoff, task, None)]

    def _child_kept(self, use: ToolUse, result: ToolResulted) -> None:
        """A subagent's launch (its result names the agent): its conversation must be stored,
        unless it still runs here (the live session introduces it)."""
        structured = result.structured if isinstance(result.structured, dict) else {}
        agent_id = structured.get("agentId")
        if (
            not isinstance(agent_id, str)
            or use.tool_use_id in self._children
            or agent_id in self.live.children
        ):
            return
        description = use.tool_input.get("description")
        about = f" ({description})" if isinstance(description, str) and description else ""
        self._missing.append(f"the conversation of subagent {agent_id}{about}")


@dataclass(frozen=True)
class _Awaited:
    """Where a replayed shell's output goes: the replay waits here while its file is read
    (``History.awaited``); its hand-off and its exit follow the last piece."""

    output: StoredOutput
    opened: TerminalOpened
    handoff: ToolCallHandedOff
    task: Task | None

    def ended(self, exit: ExitInfo | None) -> list[HistoryFact]:
        """Its hand-off and its exit (``exit``: its closing line's; None: no longer read)."""
        return _shell_end(self.opened, self.handoff, self.task, exit)


def _shell_end(
    opened: TerminalOpened, handoff: ToolCallHandedOff, task: Task | None, exit: ExitInfo | None
) -> list[HistoryFact]:
    """A replayed shell's hand-off, then its exit: its file's closing line's, else its
    notification's (unknown when neither says)."""
    ids = (opened.session_id, opened.terminal_id, opened.tool_call_id)
    return [handoff, TerminalExited(*ids, exit_of(task, exit))]


_Step = HistoryFact | _Awaited
"""What the replay comes to, in order: a fact, or an output file it waits at."""


def _unread(step: _Step) -> list[HistoryFact]:
    """``step``'s facts, its shell's output no longer read."""
    return step.ended(None) if isinstance(step, _Awaited) else [step]


def _ended_task(note: conventions.TaskNote) -> Task:
    """A subagent's summary is its report, as the live notification's (``summary_is_report``)."""
    summary = note.result or note.summary
    task = Task(note.task_id, tool_use_id=note.tool_use_id, summary=summary, phase=TaskPhase.ENDED)
    task.status = NOTE_STATUSES.get(note.status or "", task.status)
    return task


def _final(task: Task) -> FinalStatus:
    return TOOL_STATUS.get(task.end_status or "", "completed")


def _prompt(content: Any) -> list[dict[str, Any]] | None:
    """What the user sent, or None for a message Claude Code wrote itself."""
    blocks = from_claude_content(content) if isinstance(content, (str, list)) else []
    if not blocks:
        return None
    if blocks[0]["type"] == "text":
        said = conventions.user_text(blocks[0]["text"])
        if said is None:
            return None
        blocks[0] = {"type": "text", "text": said}
    return blocks
