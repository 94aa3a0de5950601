"""The demo's transcript: each protocol message between client and agent as short, readable,
timestamped lines, printed as it happens.

Text the agent streams in chunks is gathered per message and shown as one line once something
else arrives. Terminal output is shown line by line as it comes. Long ids are shortened.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from typing import Any, TextIO

Message = dict[str, Any]
SHORT_ID = 12
FINAL = ("completed", "failed")
"""The statuses a tool call ends with."""


class Transcript:
    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.colour = out.isatty()
        self.start = time.monotonic()
        self._lock = threading.Lock()
        self._methods: dict[Any, str] = {}
        self._text: dict[str, str] = {}
        """Text streamed so far, per message, not shown yet."""

    # --- printing ----------------------------------------------------------------------------------

    def paint(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str = "") -> None:
        """A line of the demo's own."""
        with self._lock:
            self._print(text)

    def heading(self, text: str) -> None:
        self.say()
        self.say(self.paint("1", f"── {text} "))

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _line(self, direction: str, text: str) -> None:
        stamp = self.paint("2", f"[{self.elapsed():6.2f}s]")
        arrow = (
            self.paint("36", "client → agent") if direction == "out" else self.paint("33", "agent → client")
        )
        self._print(f"{stamp} {arrow}  {text}")

    def show(self, direction: str, message: Message) -> None:
        """Show one message (``out``: the client's, ``in``: the agent's)."""
        with self._lock:
            for text in self._describe(direction, message):
                self._line(direction, text)

    def flush(self) -> None:
        """Show the text still being gathered."""
        with self._lock:
            for text in self._said():
                self._line("in", text)

    # --- describing --------------------------------------------------------------------------------

    def _describe(self, direction: str, message: Message) -> list[str]:
        method = message.get("method")
        if direction == "out":
            return self._outgoing(message, method)
        if method == "session/update":
            return self._update(message["params"]["update"])
        said = self._said()
        if method is None:
            return [*said, self._answer(message)]
        if method == "session/request_permission":
            call = message["params"].get("toolCall") or message["params"].get("subject", {}).get(
                "toolCall", {}
            )
            return [*said, f"asks may {call.get('title') or 'this tool'!r} run? (the demo allows it once)"]
        return [*said, str(method)]

    def _outgoing(self, message: Message, method: Any) -> list[str]:
        if method is None:
            return []  # our answer to a permission question, announced with the question
        self._methods[message.get("id")] = str(method)
        params = message.get("params") or {}
        if method == "initialize":
            return [f"initialize (protocol v{params.get('protocolVersion')})"]
        if method == "session/new":
            return ["session/new"]
        if method == "session/prompt":
            text = " ".join(block.get("text", "") for block in params.get("prompt", []))
            return [f"session/prompt {text!r}"]
        if method == "terminal/cancel":
            return [self.paint("1", f"terminal/cancel {short(params.get('terminalId', '?'))}")]
        return [str(method)]

    def _answer(self, message: Message) -> str:
        method = self._methods.get(message.get("id"), "request")
        if "error" in message:
            return f"{method} failed: {message['error'].get('message')}"
        result = message.get("result") or {}
        if method == "initialize":
            info = result.get("agentInfo") or result.get("info") or {}
            version = result.get("protocolVersion")
            return f"initialize → {info.get('name')} {info.get('version')}, protocol v{version}"
        if method == "session/new":
            return f"session/new → session {short(result.get('sessionId', '?'))}"
        if method == "session/prompt" and "messageId" in result:
            return "session/prompt → accepted (v2 answers at once; the turn is followed through state_update)"
        if method == "session/prompt":
            return self.paint("1", f"session/prompt → {result.get('stopReason')} (the turn is over)")
        return f"{method} → {json.dumps(result)}"

    def _said(self) -> list[str]:
        said = [f"Claude says: {text.strip()!r}" for text in self._text.values() if text.strip()]
        self._text.clear()
        return said

    def _update(self, update: Message) -> list[str]:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            key = str(update.get("messageId"))
            self._text[key] = self._text.get(key, "") + (update.get("content") or {}).get("text", "")
            return []
        lines = self._said()
        if kind == "state_update":
            reason = f" ({update['stopReason']})" if update.get("stopReason") else ""
            listed = ", ".join(
                f"{item.get('type')} {short(ref(item))}" for item in update.get("background") or []
            )
            lines.append(self.paint("1", f"state {update.get('state')}{reason}; background: [{listed}]"))
        elif kind == "terminal_update":
            lines += self._terminal(update)
        elif kind == "terminal_output_chunk":
            text = base64.b64decode(update["data"]).decode(errors="replace")
            name = short(update["terminalId"])
            lines += [f"terminal {name} │ {line}" for line in text.splitlines() if line]
        elif kind in ("tool_call", "tool_call_update"):
            title = f" {update['title']!r}" if update.get("title") else ""
            status = f" {update['status']}" if update.get("status") else ""
            result = result_text(update) if update.get("status") in FINAL else ""
            said = f": {clipped(result)!r}" if result.strip() else ""
            if title or status:
                lines.append(f"tool call {short(update['toolCallId'])}{title}{status}{said}")
        elif kind == "user_message":
            lines.append("the prompt is in the conversation (user_message)")
        else:
            lines.append(str(kind))
        return lines

    def _terminal(self, update: Message) -> list[str]:
        name = short(update["terminalId"])
        if "exitStatus" in update:
            return [self.paint("1", f"terminal {name} exited: {json.dumps(update['exitStatus'])}")]
        if "command" in update:
            cancellable = " (cancellable)" if update.get("capabilities") else ""
            return [f"terminal {name} started: {update['command']!r}{cancellable}"]
        return [f"terminal {name} updated"]


def result_text(update: Message) -> str:
    """The text of a tool call update's content."""
    return "".join(
        str(item["content"].get("text", ""))
        for item in update.get("content") or []
        if item.get("type") == "content" and (item.get("content") or {}).get("type") == "text"
    )


def clipped(text: str, most: int = 80) -> str:
    """The first line of ``text``, at most ``most`` characters of it."""
    line = text.strip().splitlines()[0]
    return line if len(line) <= most else f"{line[: most - 1]}…"


def ref(item: Message) -> Any:
    """The id a ``background`` list entry names its item by."""
    return item.get("terminalId") or item.get("toolCallId") or item.get("sessionId")


def short(ident: Any) -> str:
    text = str(ident)
    return text if len(text) <= SHORT_ID else f"{text[: SHORT_ID - 2]}…"
