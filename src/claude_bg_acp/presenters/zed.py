"""v1 clients that read shell output from a tool call's ``_meta`` (the extension Zed speaks).

v1 has no agent-owned terminals. Clients such as Zed take command output on a tool call's
``_meta`` instead, when they declare ``clientCapabilities._meta.terminal_output``:
``terminal_info`` on the tool call names a display terminal, ``terminal_output_delta`` appends
text to it (``terminal_output`` replaces it, for clients that did not declare
``terminal_output_delta``), and ``terminal_exit`` ends it with the exit code or signal. Only
background shells launched by a tool call are shown that way (the output rides on the call).

The extension carries text, so the bytes are decoded incrementally per terminal: a UTF-8
sequence split across reads stays whole, and bytes that are not UTF-8 show as U+FFFD. Output
read before the tool call names its terminal (the file is tailed from the task's start, the
hand-off comes a little later) is kept and sent along with ``terminal_info``. The text kept
per terminal is bounded to its last ``REPLACE_LIMIT`` characters.
"""

from __future__ import annotations

import codecs
from typing import Any, Literal

from claude_bg_acp.acp.updates import ToolCall
from claude_bg_acp.core.background import (
    TerminalExited,
    TerminalOpened,
    TerminalOutput,
    TerminalReplaced,
    Visibility,
)
from claude_bg_acp.core.effects import ClientEffect, Notify
from claude_bg_acp.core.tool_uses import ToolCallHandedOff
from claude_bg_acp.presenters import tool_views
from claude_bg_acp.presenters.base import exit_status
from claude_bg_acp.presenters.v1 import V1Presenter

OutputStyle = Literal["delta", "replace"]
"""How output is sent: appended (``terminal_output_delta``) or as the whole text so far."""
REPLACE_LIMIT = 1 << 20


class ZedPresenter(V1Presenter):
    def __init__(self, subagents: bool, style: OutputStyle) -> None:
        super().__init__(subagents)
        self.visibility = Visibility(terminals="with_tool_call", detached_work=False, children=subagents)
        self.style = style
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}
        self._text: dict[str, str] = {}
        self._unshown: dict[str, str] = {}

    def handed_off(self, fact: ToolCallHandedOff) -> list[ClientEffect]:
        if fact.terminal_id is None:
            return super().handed_off(fact)
        update = ToolCall.model_validate(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": fact.tool_call_id,
                "status": "completed",
                "content": [tool_views.text_content(fact.text)],
                "_meta": self._info(fact.terminal_id),
            }
        )
        return [Notify(fact.session_id, update)]

    def terminal(
        self, fact: TerminalOpened | TerminalOutput | TerminalReplaced | TerminalExited
    ) -> list[ClientEffect]:
        match fact:
            case TerminalOpened():
                self._decoders[fact.terminal_id] = codecs.getincrementaldecoder("utf-8")(errors="replace")
                self._text[fact.terminal_id] = ""
                self._unshown[fact.terminal_id] = ""
                return []
            case TerminalOutput():
                return self._output(fact.session_id, fact.tool_call_id, fact.terminal_id, fact.data)
            case TerminalReplaced():
                return self._replace(fact)
            case TerminalExited(corrected=True):
                return []  # the client has its exit already; v1 has no way to amend it
            case TerminalExited():
                return self._exited(fact)

    def _info(self, terminal_id: str) -> dict[str, Any]:
        """The ``_meta`` that makes a tool call show the terminal (with what it printed so far)."""
        meta: dict[str, Any] = {"terminal_info": {"terminal_id": terminal_id}}
        early = self._unshown.pop(terminal_id, "")
        if early:
            key = "terminal_output_delta" if self.style == "delta" else "terminal_output"
            meta[key] = {
                "terminal_id": terminal_id,
                "data": self._text[terminal_id] if key == "terminal_output" else early,
            }
        return meta

    def _output(
        self, session_id: str, tool_call_id: str, terminal_id: str, data: bytes, final: bool = False
    ) -> list[ClientEffect]:
        decoder = self._decoders.get(terminal_id)
        if decoder is None:
            return []
        text = decoder.decode(data, final)
        if not text:
            return []
        self._text[terminal_id] = (self._text[terminal_id] + text)[-REPLACE_LIMIT:]
        if terminal_id in self._unshown:
            self._unshown[terminal_id] = (self._unshown[terminal_id] + text)[-REPLACE_LIMIT:]
            return []
        if self.style == "delta":
            return [_update(session_id, tool_call_id, "terminal_output_delta", terminal_id, data=text)]
        return [
            _update(session_id, tool_call_id, "terminal_output", terminal_id, data=self._text[terminal_id])
        ]

    def _replace(self, fact: TerminalReplaced) -> list[ClientEffect]:
        """The client fell behind: show the latest output instead of everything."""
        decoder = self._decoders.get(fact.terminal_id)
        if decoder is None:
            return []
        decoder.reset()
        self._text[fact.terminal_id] = decoder.decode(fact.data)[-REPLACE_LIMIT:]
        text = self._text[fact.terminal_id]
        return [_update(fact.session_id, fact.tool_call_id, "terminal_output", fact.terminal_id, data=text)]

    def _exited(self, fact: TerminalExited) -> list[ClientEffect]:
        terminal_id = fact.terminal_id
        effects = self._output(fact.session_id, fact.tool_call_id, terminal_id, b"", final=True)
        status = exit_status(fact.exit)
        exit_fields = {
            "terminal_id": terminal_id,
            "exit_code": status.get("exitCode"),
            "signal": status.get("signal"),
        }
        # A shell that ended before its hand-off is shown, with its output, as it ends.
        meta = self._info(terminal_id) if terminal_id in self._unshown else {}
        meta["terminal_exit"] = exit_fields
        self._decoders.pop(terminal_id, None)
        self._text.pop(terminal_id, None)
        update = ToolCall.model_validate(
            {"sessionUpdate": "tool_call_update", "toolCallId": fact.tool_call_id, "_meta": meta}
        )
        return [*effects, Notify(fact.session_id, update)]


def _update(session_id: str, tool_call_id: str, key: str, terminal_id: str, **fields: Any) -> Notify:
    meta = {key: {"terminal_id": terminal_id, **fields}}
    update = ToolCall.model_validate(
        {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "_meta": meta}
    )
    return Notify(session_id, update)
