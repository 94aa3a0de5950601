"""What a user of a plain v1 client sees: tool calls and messages, as Toad and the Python SDK's
clients keep them.

A plain v1 client (no extension of Zed's or AIR's) reads no terminals and no background list:
only tool calls and messages. ``PlainView`` applies the agent's messages the way those clients'
source does (Toad 0.6.20 ``toad/acp/agent.py`` ``rpc_session_update``; the Python SDK 0.12.1
``acp/contrib/session_state.py`` ``SessionAccumulator``; read for ``notes/clients-v1.md``):

- no ``sessionId`` filter and no notion of a turn: an update that arrives after the prompt's
  answer, or during a later turn, is applied like any other;
- ``tool_call`` stores the call whole; ``tool_call_update`` merges every key it carries that is
  not null into the stored call (``content`` replaces the whole list, ``status`` the status);
  an update for a call never announced makes a new card (Toad titles it "Tool call"), which
  the view also keeps in ``problems``: the agent must announce a call first;
- nothing marks an unfinished call at the end of a turn;
- agent text is appended to the agent's message, whatever its ``messageId`` (Toad, acpx and
  acp-client ignore it: two messages in a row are glued).

Each card keeps every state it was shown in, with the time the update arrived, so a test can
say what the user saw while the work ran, not only at the end. ``problems`` also lists what a
strict reader of the form would trip on: a status after a final one, a ``rawOutput`` that is
not an object, a final ``rawOutput.output`` that is not the content's text (acpx prints both
unless they are the same).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.views import requests_of, stamped

FINAL = ("completed", "failed")
JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Shown:
    """A card as one update left it: when, its status and the text of its content."""

    t: float
    status: str
    text: str


@dataclass
class Card:
    tool_call_id: str
    fields: JsonObject = field(default_factory=dict)
    shown: list[Shown] = field(default_factory=list)

    @property
    def title(self) -> str:
        return str(self.fields.get("title") or "Tool call")

    @property
    def status(self) -> str:
        return str(self.fields.get("status") or "pending")

    @property
    def text(self) -> str:
        """The text its content shows (text items, joined as the clients show them)."""
        return content_text(self.fields.get("content"))

    @property
    def raw_output(self) -> Any:
        return self.fields.get("rawOutput")


@dataclass
class PlainView:
    cards: dict[str, Card] = field(default_factory=dict)
    """Every tool call of every session (ids are unique across them), in the order announced."""
    agent_text: str = ""
    """The agent's messages of the sessions, glued as these clients glue them."""
    prompt_answers: list[tuple[float, JsonObject]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _requests: dict[Any, str] = field(default_factory=dict)

    @classmethod
    def replay(
        cls,
        agent_lines: Iterable[Any],
        client_lines: Iterable[Any] = (),
        times: Iterable[float] | None = None,
    ) -> PlainView:
        """Apply the agent's messages in order (``times``: when each arrived, in seconds)."""
        view = cls()
        view._requests = requests_of(client_lines)
        for line, t in stamped(agent_lines, times):
            view.see(line, t)
        return view

    @classmethod
    def of_run(cls, run: Any) -> PlainView:
        """The view of a ``tests.support.acp_client.ClientRun`` (times in seconds)."""
        return cls.replay(run.agent_lines, run.client_lines, [t / 1000 for t in run.agent_line_times])

    def see(self, message: Any, t: float = 0.0) -> None:
        if not isinstance(message, Mapping):
            return
        if message.get("method") == "session/update":
            self._update((message.get("params") or {}).get("update") or {}, t)
        elif "method" not in message and self._requests.get(message.get("id")) == "session/prompt":
            self.prompt_answers.append((t, dict(message)))

    def _update(self, update: Mapping[str, Any], t: float) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content") or {}
            self.agent_text += str(content.get("text", "")) if content.get("type") == "text" else ""
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_call(kind, update, t)

    def _tool_call(self, kind: str, update: Mapping[str, Any], t: float) -> None:
        call_id = str(update["toolCallId"])
        card = self.cards.get(call_id)
        if card is not None and card.status in FINAL and update.get("status") is not None:
            self.problems.append(f"{call_id}: status {update['status']} after its final {card.status}")
        if card is None:
            if kind == "tool_call_update":
                self.problems.append(f"{call_id}: an update for a tool call never announced")
            card = self.cards[call_id] = Card(call_id)
        if kind == "tool_call":
            card.fields = {}
        card.fields.update({key: value for key, value in update.items() if value is not None})
        raw = update.get("rawOutput")
        if raw is not None and not isinstance(raw, dict):
            self.problems.append(f"{call_id}: rawOutput that is not an object: {raw!r}")
        if card.status in FINAL and isinstance(raw, dict) and "output" in raw and raw["output"] != card.text:
            self.problems.append(f"{call_id}: rawOutput.output is not the content's text")
        card.shown.append(Shown(t, card.status, card.text))

    # --- what a test asks ---------------------------------------------------------------------------

    def calls(self, title: str | None = None) -> list[Card]:
        return [card for card in self.cards.values() if title is None or card.title == title]

    def call(self, title: str) -> Card:
        (card,) = self.calls(title)
        return card


def content_text(content: Any) -> str:
    """The text of a tool call's content items (acpx joins them with a blank line; one item is
    its own text)."""
    texts = [
        str(item["content"].get("text", ""))
        for item in content or []
        if isinstance(item, Mapping) and isinstance(item.get("content"), Mapping)
        if item["content"].get("type") == "text"
    ]
    return "\n\n".join(texts)
