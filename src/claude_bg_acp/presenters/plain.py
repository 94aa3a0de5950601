"""Plain ACP v1 clients: background work as tool calls that live as long as the work.

A v1 client that declares neither Zed's terminal extension nor JetBrains AIR's (Toad, acpx, a
client built on the Python SDK, acp-client) reads tool calls and messages, and nothing else of
background work. So the work is shown as the tool call that started it, kept unfinished while
it runs, in the standard v1 form every one of them reads:

- A background shell is the Bash tool call that launched it (or, for a shell no tool call of
  the client's launched, a tool call of ours titled by its command). The hand-off does not end
  it: the call stays ``in_progress`` while the shell runs, through the prompt's answer and
  later turns, and its ``content`` is the shell's output as one text, replaced by every update
  as output arrives (the tailer hands output over a whole line at a time). It ends when the
  shell does: ``completed`` for exit 0, ``failed`` for any other exit, a signal or an end
  nobody knows (Claude Code gone); the final content is the output, followed for a failure by
  a line of ours that says how it ended (never Claude Code's closing line, which the tailer
  keeps out). ``rawOutput`` is ``{"output", "exitCode", "signal"}`` with the very text of the
  content (acpx prints it once).
- Output is decoded as UTF-8 per shell, incrementally (a character split between two reads
  stays whole); bytes that are not UTF-8 show as U+FFFD, as Zed's form shows them. Since a
  client replaces the content on every update, what is resent is bounded: the latest
  ``WINDOW`` bytes of text (from a line's start), after a note that earlier output was left
  out. A client that fell behind gets the latest output the same way.
- Every update repeats ``status``, ``title`` and ``kind``: a client that lost the call (acpx
  0.19.1 prints a later turn's update with a fresh printer, Toad prunes old cards) shows the
  title rather than an id, and a client that marked unfinished calls cancelled at the end of a
  turn (Zed does, on a cancelled one) takes it back.
- Work without a process (a Monitor, a workflow, a background subagent shown in the session
  that launched it) stays ``in_progress`` on its tool call (``paused`` is not v1's) until it
  ends, then ``completed`` or ``failed`` with Claude Code's summary as its content. Until
  its work says more, its call shows what it was asked to do (its description), never Claude
  Code's hand-off (words for the model, naming the task's id and its output file). What a
  subagent says while it works is its Agent tool call's content, never the agent's message
  (a client that ignores ``messageId`` would glue it to the next message), and its report
  (its last message, which Claude Code's summary repeats) is the call's final content. The
  same holds for a subagent working in the foreground, whose report is its tool result.
- A final status is never followed by another: a tool result or an end of turn that comes
  after the work ended its call, or while the shell it launched still runs, changes nothing.

Scheduled work (a wakeup, a cron job) ends at its tool result, as for every v1 client. With
``clientCapabilities.subagents`` a subagent is a child session (``V1Presenter``): its messages
are its own session's, and its Agent tool call completes at the hand-off.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.updates import ToolCall
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core.background_facts import (
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
from claude_bg_acp.core.effects import ClientEffect, Notify
from claude_bg_acp.core.presenting import Fact
from claude_bg_acp.core.schedules import ScheduleEnded
from claude_bg_acp.core.subagents import ChildRestated
from claude_bg_acp.core.tool_uses import (
    ToolCallCut,
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolCallStarted,
)
from claude_bg_acp.core.transcript import MessageChunk
from claude_bg_acp.presenters import tool_views
from claude_bg_acp.presenters.base import raw_output
from claude_bg_acp.presenters.live_output import Window, decoder
from claude_bg_acp.presenters.v1 import V1Presenter

UNKNOWN_EXIT = ExitInfo(None, None)


@dataclass
class Card:
    """A tool call that has no final status yet, as its client was last shown it."""

    session_id: str
    title: str
    kind: str
    said: Window | None = None
    """The text the work on it shows (None: the content the call was given stays)."""
    shell: codecs.IncrementalDecoder | None = None
    """The decoder of the background shell it launched, while the shell runs."""
    work: bool = False
    """Work without a process goes on on it."""
    subagent_message: str | None = None
    """The message of the last text its subagent said on it."""
    report: str = ""
    """The text of that message: the subagent's report once it is done (Claude Code's summary
    of a subagent is its last message, and the end of its task is told before the summary)."""

    @property
    def live(self) -> bool:
        """Work goes on on it (a tool result or an end of turn does not end it)."""
        return self.shell is not None or self.work


class PlainPresenter(V1Presenter):
    def __init__(self, subagents: bool, notices: bool = False) -> None:
        super().__init__(subagents, notices)
        self._cards: dict[str, Card] = {}
        """Tool calls without a final status, by id."""
        self._ended: set[str] = set()
        """Tool calls that the work they showed ended: their final status is given."""

    def render(self, fact: Fact) -> list[ClientEffect]:
        match fact:
            case MessageChunk(thought=False, launched_by=str(agent)) if self._shows_subagent(agent):
                return self._said(agent, fact)
            case ToolCallFinished() | ToolCallCut() | ToolCallHandedOff() if fact.tool_call_id in self._ended:
                return []  # the work it showed ended it already
            case ToolCallFinished() | ToolCallCut() if self._live(fact.tool_call_id):
                return []  # a turn cut short: the shell it launched still runs
        return super().render(fact)

    def _live(self, call: str) -> bool:
        card = self._cards.get(call)
        return card is not None and card.live

    # --- tool calls ---------------------------------------------------------------------------

    def tool_call(self, fact: ToolCallStarted | ToolCallRunning | ToolCallFinished | ToolCallCut) -> ToolCall:
        update = super().tool_call(fact)
        call = fact.tool_call_id
        if isinstance(fact, (ToolCallFinished, ToolCallCut)):
            self._cards.pop(call, None)
            return update
        card = self._cards.get(call)
        if card is None or not card.live:
            if isinstance(fact, ToolCallStarted) or fact.first:
                self._ended.discard(call)  # a new call, or one replayed to a client that forgot
                card = self._cards[call] = Card(fact.session_id, update.title or "", update.kind or "other")
            elif card is None:
                card = self._cards[call] = Card(fact.session_id, "", "other")
        if isinstance(fact, ToolCallRunning):  # its input names it (a call that began: its card)
            card.title, card.kind = update.title or card.title, update.kind or card.kind
            update.title, update.kind = card.title, card.kind
        if card.live or card.said is not None:
            # Its work runs already (its shell's task came first, or a replay): it stays so.
            update.title, update.kind, update.status = card.title, card.kind, "in_progress"
            if card.said is not None and card.said.text:
                update.content = self._content(card)
        return update

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        call = fact.tool_call_id
        card = self._cards.get(call)
        if fact.status == "pending" or card is None or not card.live:
            # Scheduled work ends at its result, as does a call whose work this client was not
            # shown.
            self._cards.pop(call, None)
            return super().handed_off(fact)
        if card.shell is not None:
            return []  # in progress since its input came, its content the shell's output
        if card.said is None:
            card.said = Window()  # what it was asked to do, until its work says more
            card.said.add(fact.text)
        return [self._update(call, card)]

    # --- background shells ----------------------------------------------------------------------

    def terminal(
        self, fact: TerminalOpened | TerminalOutput | TerminalReplaced | TerminalExited
    ) -> list[ClientEffect]:
        call = fact.tool_call_id
        card = self._cards.get(call)
        if isinstance(fact, TerminalOpened):
            self._ended.discard(call)
            created = card is None
            if card is None:
                # No tool call of the client's launched it: one of ours, titled by its command.
                title = tool_views.describe("Bash", {"command": fact.command}).title
                card = self._cards[call] = Card(fact.session_id, title, "execute")
            card.shell, card.said = decoder(), Window()
            return [self._update(call, card, "tool_call")] if created else []
        if card is None or card.shell is None or card.said is None:
            return []  # an exit corrected late: its final status was given
        match fact:
            case TerminalOutput():
                text = card.shell.decode(fact.data)
                if not text:
                    return []  # the start of a character, its end to come
                card.said.add(text)
            case TerminalReplaced():
                card.shell.reset()
                card.said.replace(card.shell.decode(fact.data), cut=True)
            case TerminalExited():
                card.said.add(card.shell.decode(b"", True))
                return [self._end_shell(call, card, card.said.shown(), fact.exit, fact.closed)]
        return [self._update(call, card)]

    def _end_shell(
        self, call: str, card: Card, output: str, exit: ExitInfo | None, closed: bool
    ) -> ClientEffect:
        code = exit.exit_code if exit is not None else None
        if exit is not None and code == 0:
            return self._end(call, card, "completed", output, exit)
        if closed:  # no crash: acpx closes the agent after each answer (the signal stays raw)
            how = "Stopped when the session closed."
        elif exit is None or (code is None and exit.signal is None):
            how = "Its exit is unknown."
        elif exit.signal is not None:
            how = f"Ended by signal {exit.signal}."
        else:
            how = f"Exited with code {code}."
        separator = "" if not output else "\n" if output.endswith("\n") else "\n\n"
        return self._end(call, card, "failed", output + separator + how, exit or UNKNOWN_EXIT)

    # --- work without a process ----------------------------------------------------------------

    def work(self, fact: WorkOpened | WorkStatus | WorkEnded | ScheduleEnded) -> list[ClientEffect]:
        call = fact.tool_call_id
        match fact:
            case WorkOpened(title=str(title)):
                # A tool call of our own: no call of the client's shows this work.
                self._ended.discard(call)
                self._cards[call] = Card(fact.session_id, title, "other", work=True)
                return [self._update(call, self._cards[call], "tool_call")]
            case WorkOpened():
                self._cards.setdefault(call, Card(fact.session_id, "Background work", "other")).work = True
            case WorkEnded() if self._live(call):
                card = self._cards[call]
                status = "completed" if fact.status == "completed" else "failed"
                shown = card.said.shown() if card.said is not None else ""
                return [self._end(call, card, status, fact.summary or card.report or shown, None)]
        return []  # v1 has no paused: a change of state shows nothing

    def restate(self, fact: TerminalRestated | WorkRestated | ChildRestated) -> list[ClientEffect]:
        """A client that re-attaches forgot the session: each tool call still at work is shown
        anew, as it is now (a child session, to a client that reads them, as ``V1Presenter``
        introduces it)."""
        if isinstance(fact, ChildRestated):
            return super().restate(fact)
        if not self._live(fact.tool_call_id):
            return []
        return [self._update(fact.tool_call_id, self._cards[fact.tool_call_id], "tool_call")]

    # --- subagents shown in the session that launched them --------------------------------------

    def _shows_subagent(self, agent: str) -> bool:
        """A subagent's text goes on its Agent tool call (subagents are no sessions here)."""
        return not self.policy.subagents_are_sessions and agent in self._cards

    def _said(self, agent: str, fact: MessageChunk) -> list[ClientEffect]:
        card = self._cards[agent]
        if card.said is None or card.subagent_message is None:
            card.said = Window()  # the subagent's words replace what the hand-off said
        elif card.subagent_message != fact.message_id:
            card.said.add("\n\n")
            card.report = ""
        card.subagent_message = fact.message_id
        card.said.add(fact.text)
        card.report += fact.text
        return [self._update(agent, card)]

    # --- the updates -----------------------------------------------------------------------------

    @staticmethod
    def _content(card: Card) -> list[dict[str, Any]]:
        return [tool_views.text_content(card.said.shown())] if card.said is not None else []

    def _update(self, call: str, card: Card, kind: str = "tool_call_update") -> ClientEffect:
        """The call as it is now, still at work: status, title and kind repeated."""
        update: dict[str, Any] = {
            "sessionUpdate": kind,
            "toolCallId": call,
            "status": "in_progress",
            "title": card.title,
            "kind": card.kind,
        }
        if card.said is not None and card.said.text:
            update["content"] = self._content(card)
        return Notify(card.session_id, ToolCall.model_validate(update))

    def _end(self, call: str, card: Card, status: str, text: str, exit: ExitInfo | None) -> ClientEffect:
        del self._cards[call]
        self._ended.add(call)
        update = ToolCall(
            session_update="tool_call_update",
            tool_call_id=call,
            status=status,
            title=card.title,
            kind=card.kind,
            content=[tool_views.text_content(text)] if text else [],
            raw_output=raw_output(text, exit),
        )
        return Notify(card.session_id, update)
