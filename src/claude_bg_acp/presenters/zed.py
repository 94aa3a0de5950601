"""v1 clients that draw terminals fed through a tool call's ``_meta`` (the extension Zed reads).

v1 has no agent-owned terminals. A client that declares ``clientCapabilities._meta.terminal_output``
draws display terminals instead, by these rules (Zed's, read from its source):

- a terminal exists once a ``tool_call`` (never a ``tool_call_update``) carries
  ``_meta.terminal_info {terminal_id}``; it is drawn where a tool call's content holds
  ``{type: "terminal", terminalId}``, and an update whose content names a terminal the client
  does not know is rejected whole;
- ``_meta.terminal_output {terminal_id, data}`` on a ``tool_call_update`` appends text to it
  (``terminal_output_delta`` instead, for a client that declares that key);
- ``_meta.terminal_exit {terminal_id, exit_code, signal}`` on a ``tool_call_update`` ends it (the
  first exit wins); until then the client shows it running.

So every shell tool call (Bash) is a terminal from its first ``tool_call``, with the tool use
id as the terminal id (it is known long before a task id), and its content stays that terminal
whatever else changes. A background shell that no tool call launched has no call to be drawn
in: it is not shown. A foreground command's output follows live from its output file once
Claude Code reports it as a task (after about two seconds: what it wrote before comes first),
its exit with its result (and its output too when it was too quick to be followed); a
background shell's output follows live from its output file, through the hand-off and after
the prompt's answer, until its exit. Every terminal the client was told of gets its exit.

The extension carries text: a background shell's bytes are decoded incrementally per terminal
(a UTF-8 sequence split across reads stays whole; bytes that are not UTF-8 show as U+FFFD). A
client that fell behind cannot be told to replace what it shows: it gets a note that output
was skipped, then the latest output.

Subagents: Zed declares ``subagents`` but reads only an earlier draft of child sessions
(``subagent_spawned``, not in the v1 schema), so this kind of client gets subagents' work in
the session that launched them (``presenters.choice`` says why).
"""

from __future__ import annotations

import codecs
from typing import Any, Literal

from claude_bg_acp.acp.updates import ToolCall
from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core.background_facts import (
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
)
from claude_bg_acp.core.effects import ClientEffect, Notify
from claude_bg_acp.core.foreground_shells import ShellOutput
from claude_bg_acp.core.tool_uses import (
    ToolCallCut,
    ToolCallFinished,
    ToolCallHandedOff,
    ToolCallRunning,
    ToolCallStarted,
)
from claude_bg_acp.presenters.base import exit_status
from claude_bg_acp.presenters.live_output import decoder
from claude_bg_acp.presenters.v1 import V1Presenter

OutputKey = Literal["terminal_output", "terminal_output_delta"]
SKIPPED = "\n[... output skipped: the editor fell behind; the latest follows ...]\n"


class ZedPresenter(V1Presenter):
    def __init__(self, output_key: OutputKey, notices: bool = False) -> None:
        super().__init__(subagents=False, notices=notices)
        self.output_key = output_key
        self._open: dict[str, codecs.IncrementalDecoder] = {}
        """The terminals not exited yet, by tool call id (also their terminal id), with the
        decoder of their shell's bytes."""
        self._followed: set[str] = set()
        """Terminals of foreground commands whose output came from their file."""

    # --- shell tool calls -----------------------------------------------------------------------

    def tool_call(self, fact: ToolCallStarted | ToolCallRunning | ToolCallFinished | ToolCallCut) -> ToolCall:
        match fact:
            case ToolCallStarted(shell=True) | ToolCallRunning(shell=True, first=True):
                announced = fact.tool_call_id in self._open  # its shell's task came first
                self._open.setdefault(fact.tool_call_id, decoder())
                update = super().tool_call(fact)
                update.content = _drawn(fact.tool_call_id)
                if not announced:
                    update.meta = {"terminal_info": {"terminal_id": fact.tool_call_id}}
                return update
            case ToolCallFinished() if fact.tool_call_id in self._open:
                rest = self._open.pop(fact.tool_call_id).decode(b"", True)
                update = super().tool_call(fact)
                update.content = _drawn(fact.tool_call_id)
                ended = fact.command
                if fact.tool_call_id in self._followed:
                    self._followed.discard(fact.tool_call_id)
                    output = self._output_meta(fact.tool_call_id, rest)  # its file told the rest
                else:
                    output = self._output_meta(fact.tool_call_id, ended.output if ended else "")
                update.meta = output | _exit_meta(fact.tool_call_id, ended.exit if ended else None)
                return update
            case ToolCallCut() if fact.tool_call_id in self._open:
                del self._open[fact.tool_call_id]
                self._followed.discard(fact.tool_call_id)
                update = super().tool_call(fact)
                update.meta = _exit_meta(fact.tool_call_id, None)
                return update
        return super().tool_call(fact)

    def call_fields(
        self, tool_call_id: str, name: str, tool_input: dict[str, Any], replaced: str | None = None
    ) -> dict[str, Any]:
        fields = super().call_fields(tool_call_id, name, tool_input, replaced)
        if tool_call_id in self._open:
            fields["content"] = _drawn(tool_call_id)  # content replaces: the terminal must stay
        return fields

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        if fact.terminal_id is None:
            return super().handed_off(fact)
        # Its shell goes on in the background: the terminal the call draws keeps its output.
        update = ToolCall(
            session_update="tool_call_update",
            tool_call_id=fact.tool_call_id,
            status="completed",
            content=_drawn(fact.tool_call_id),
        )
        return [Notify(fact.session_id, update)]

    def shell_output(self, fact: ShellOutput) -> list[ClientEffect]:
        call = fact.tool_call_id
        decode = self._open.get(call)
        if decode is None:
            return []
        self._followed.add(call)
        text = _skipped(decode, fact.data) if fact.replaced else decode.decode(fact.data)
        return self._update(fact.session_id, call, self._output_meta(call, text))

    # --- background shells ----------------------------------------------------------------------

    def terminal(
        self, fact: TerminalOpened | TerminalOutput | TerminalReplaced | TerminalExited
    ) -> list[ClientEffect]:
        call = fact.tool_call_id
        match fact:
            case TerminalOpened(launched_by_tool=False):
                return []  # no tool call of the client's to draw it in: not shown
            case TerminalOpened() if call not in self._open:
                # A shell whose tool call the client was never shown: show it now, as a terminal.
                self._open[call] = decoder()
                created = ToolCall(
                    session_update="tool_call",
                    tool_call_id=call,
                    title=fact.command,
                    kind="execute",
                    status="in_progress",
                    content=_drawn(call),
                )
                created.meta = {"terminal_info": {"terminal_id": call}}
                return [Notify(fact.session_id, created)]
            case TerminalOutput() if call in self._open:
                text = self._open[call].decode(fact.data)
                return self._update(fact.session_id, call, self._output_meta(call, text))
            case TerminalReplaced() if call in self._open:
                text = _skipped(self._open[call], fact.data)
                return self._update(fact.session_id, call, self._output_meta(call, text))
            case TerminalExited(corrected=False) if call in self._open:
                rest = self._open.pop(call).decode(b"", True)
                return self._update(
                    fact.session_id, call, self._output_meta(call, rest) | _exit_meta(call, fact.exit)
                )
        return []

    # --- the _meta keys -------------------------------------------------------------------------

    def _output_meta(self, terminal_id: str, text: str) -> dict[str, Any]:
        return {self.output_key: {"terminal_id": terminal_id, "data": text}} if text else {}

    @staticmethod
    def _update(session_id: str, tool_call_id: str, meta: dict[str, Any]) -> list[ClientEffect]:
        if not meta:
            return []
        update = ToolCall(session_update="tool_call_update", tool_call_id=tool_call_id)
        update.meta = meta
        return [Notify(session_id, update)]


def _skipped(decode: codecs.IncrementalDecoder, data: bytes) -> str:
    """The latest output, after a note that what came before it was skipped."""
    decode.reset()
    return SKIPPED + decode.decode(data)


def _drawn(terminal_id: str) -> list[dict[str, Any]]:
    return [{"type": "terminal", "terminalId": terminal_id}]


def _exit_meta(terminal_id: str, exit: ExitInfo | None) -> dict[str, Any]:
    status = exit_status(exit)
    return {
        "terminal_exit": {
            "terminal_id": terminal_id,
            "exit_code": status.get("exitCode"),
            "signal": status.get("signal"),
        }
    }
