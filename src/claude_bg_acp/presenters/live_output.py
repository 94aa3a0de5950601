"""A running command's text as a client that replaces a tool call's content is shown it.

Such a client (every v1 client without Zed's terminals, and v2 for a foreground command) is
sent the whole text with every update, so it is kept to a window: the latest ``WINDOW`` bytes,
from a line's start, after a note that earlier output was left out. Bytes are decoded as UTF-8
per command, incrementally (a character split between two reads stays whole; bytes that are
not UTF-8 show as U+FFFD).
"""

from __future__ import annotations

import codecs

from claude_bg_acp.acp.updates import ToolCall
from claude_bg_acp.core.effects import Notify
from claude_bg_acp.core.foreground_shells import ShellOutput
from claude_bg_acp.presenters import tool_views

WINDOW = 64 * 1024
"""The most text (UTF-8 bytes, the note included) one update shows of a tool call's work.

A client replaces a tool call's content with each update, so every update carries all of it:
64 KiB is about a thousand lines of a build log, far more than acpx prints (28 lines) or a
card shows without scrolling, and small enough that resending it with each line costs the
agent a fraction of a core at thousands of lines a second (BENCHMARKS.md)."""
LEFT_OUT = "[... earlier output left out ...]\n"


class Window:
    """The latest text of some work, at most ``WINDOW`` bytes of UTF-8 as shown."""

    def __init__(self) -> None:
        self.text = ""
        self.cut = False
        """Earlier text was left out."""

    def add(self, text: str) -> None:
        self.text += text
        self._bound()

    def replace(self, text: str, cut: bool) -> None:
        self.text, self.cut = text, cut
        self._bound()

    def shown(self) -> str:
        return LEFT_OUT + self.text if self.cut else self.text

    def _bound(self) -> None:
        budget = WINDOW - len(LEFT_OUT)
        if len(self.text) * 4 <= budget:
            return  # short enough whatever its characters
        encoded = self.text.encode()
        if len(encoded) <= budget:
            return
        kept = encoded[-budget:].decode("utf-8", "ignore")
        start = kept.find("\n") + 1  # from a line's start, when a line starts in it
        self.text, self.cut = (kept[start:] if 0 < start < len(kept) else kept), True


def decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


class LiveOutput:
    """The text each running foreground command has shown so far, by tool call."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[codecs.IncrementalDecoder, Window]] = {}

    def update(self, fact: ShellOutput) -> Notify:
        """The tool call's content with ``fact``'s bytes added (or, ``replaced``, as its text)."""
        decode, window = self._shown.setdefault(fact.tool_call_id, (decoder(), Window()))
        if fact.replaced:
            decode.reset()
            window.replace(decode.decode(fact.data), cut=True)
        else:
            window.add(decode.decode(fact.data))
        update = ToolCall(
            session_update="tool_call_update",
            tool_call_id=fact.tool_call_id,
            content=[tool_views.text_content(window.shown())],
        )
        return Notify(fact.session_id, update)

    def end(self, tool_call_id: str) -> None:
        self._shown.pop(tool_call_id, None)
