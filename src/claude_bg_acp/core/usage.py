"""Usage: how full the context window is, how big it is, and what the session has cost.

After each turn of the main conversation the client gets one ``UsageReported``:

- ``used``: the tokens of the latest model request of the main conversation (its input, cache
  reads and writes, and its output), from the streamed ``message_start`` and
  ``message_delta``; after a compaction, the size Claude Code reports the context shrank to;
- ``size``: the context window of that request's model, from the result's ``modelUsage``
  (each model's ``contextWindow``); the last one known when a result lists none (a local
  command's);
- ``cost``: the session's cumulative cost (``total_cost_usd``: Claude Code keeps it across a
  resume).

Nothing is reported before a size is known. A subagent's requests are its own context, not
the session's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UsageReported:
    session_id: str
    used: int
    size: int
    cost: float | None


class Usage:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.used = 0
        self.size: int | None = None
        self._model: str | None = None
        self._input = 0

    def stream_event(self, event: dict[str, Any]) -> None:
        """A streamed event of the main conversation."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            usage = message.get("usage") or {}
            self._model = message.get("model") or self._model
            self._input = sum(
                _count(usage, key)
                for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
            self.used = self._input + _count(usage, "output_tokens")
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            self.used = self._input + _count(event["usage"], "output_tokens")

    def compacted(self, metadata: dict[str, Any]) -> None:
        """``system/compact_boundary``: the context now holds ``post_tokens``."""
        if isinstance(metadata.get("post_tokens"), int):
            self.used = metadata["post_tokens"]

    def result(self, model_usage: dict[str, Any] | None, cost: float | None) -> list[UsageReported]:
        windows = {
            model: usage["contextWindow"]
            for model, usage in (model_usage or {}).items()
            if isinstance(usage, dict) and isinstance(usage.get("contextWindow"), int)
        }
        if windows:
            self.size = windows.get(self._model or "", max(windows.values()))
        if self.size is None:
            return []
        return [UsageReported(self.session_id, self.used, self.size, cost)]


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0
