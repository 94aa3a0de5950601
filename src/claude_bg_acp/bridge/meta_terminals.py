"""Background shell output for v1 clients, through the ``_meta`` terminal extension.

v1 has no agent-owned terminals. Clients such as Zed take command output on a tool call's
``_meta`` instead, when they declare ``clientCapabilities._meta.terminal_output``:
``terminal_info`` on the tool call names a display terminal, ``terminal_output_delta`` appends
text to it (``terminal_output`` replaces it, for clients that did not declare
``terminal_output_delta``), and ``terminal_exit`` ends it with the exit code or signal.

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
from claude_bg_acp.bridge.effects import Notify

Mode = Literal["delta", "replace"]
REPLACE_LIMIT = 1 << 20


class MetaTerminals:
    def __init__(self, session_id: str, mode: Mode) -> None:
        self.session_id = session_id
        self.mode = mode
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}
        self._text: dict[str, str] = {}
        self._unshown: dict[str, str] = {}

    def open(self, terminal_id: str) -> None:
        self._decoders[terminal_id] = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text[terminal_id] = ""
        self._unshown[terminal_id] = ""

    def info(self, terminal_id: str) -> dict[str, Any]:
        """The ``_meta`` that makes a tool call show the terminal (with what it printed so far)."""
        meta: dict[str, Any] = {"terminal_info": {"terminal_id": terminal_id}}
        early = self._unshown.pop(terminal_id, "")
        if early:
            key = "terminal_output_delta" if self.mode == "delta" else "terminal_output"
            meta[key] = {
                "terminal_id": terminal_id,
                "data": self._text[terminal_id] if key == "terminal_output" else early,
            }
        return meta

    def output(self, tool_call_id: str, terminal_id: str, data: bytes, final: bool = False) -> list[Notify]:
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
        if self.mode == "delta":
            return [self._update(tool_call_id, "terminal_output_delta", terminal_id, data=text)]
        return [self._update(tool_call_id, "terminal_output", terminal_id, data=self._text[terminal_id])]

    def replace(self, tool_call_id: str, terminal_id: str, data: bytes) -> list[Notify]:
        """The client fell behind: show the latest output instead of everything."""
        if terminal_id not in self._decoders:
            return []
        self._decoders[terminal_id].reset()
        text = self._decoders[terminal_id].decode(data)
        self._text[terminal_id] = text[-REPLACE_LIMIT:]
        return [self._update(tool_call_id, "terminal_output", terminal_id, data=self._text[terminal_id])]

    def exited(self, tool_call_id: str, terminal_id: str, status: dict[str, Any]) -> list[Notify]:
        effects = self.output(tool_call_id, terminal_id, b"", final=True)
        exit_fields = {
            "terminal_id": terminal_id,
            "exit_code": status.get("exitCode"),
            "signal": status.get("signal"),
        }
        # A shell that ended before its hand-off is shown, with its output, as it ends.
        meta = self.info(terminal_id) if terminal_id in self._unshown else {}
        meta["terminal_exit"] = exit_fields
        self._decoders.pop(terminal_id, None)
        self._text.pop(terminal_id, None)
        update = ToolCall.model_validate(
            {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "_meta": meta}
        )
        return [*effects, Notify(self.session_id, update)]

    def _update(self, tool_call_id: str, key: str, terminal_id: str, **fields: Any) -> Notify:
        meta = {key: {"terminal_id": terminal_id, **fields}}
        update = ToolCall.model_validate(
            {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "_meta": meta}
        )
        return Notify(self.session_id, update)
