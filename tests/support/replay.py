"""Replay a recorded fixture through the SDK's own parser into the sans-IO core.

No subprocess: each frame the real CLI sent is parsed by ``claude_agent_sdk``'s
``parse_message`` and fed to ``SessionCore`` at its recorded time. The tailer's part is played
from the output files the recorder kept: when the core finishes a terminal, the file's bytes go
through the same closing-line rule the tailer applies, then back to the core. What the SDK sent is turned
back into the client request that causes it: the user message is a ``session/prompt``, an
``interrupt`` a ``session/cancel``; a ``can_use_tool`` question is answered as the recording
answered it. The effects come out as JSON, one per line, ready to compare with a golden file
and to wrap as JSON-RPC messages for schema validation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from claude_agent_sdk._internal.message_parser import parse_message

from claude_bg_acp.acp.schema import ContentBlock
from claude_bg_acp.bridge.effects import AskPermission, Effect, Fail, FinishTail, Notify, Reply, Tail
from claude_bg_acp.bridge.meta_terminals import Mode
from claude_bg_acp.bridge.session import ALLOW_ONCE, REJECT_ONCE, SessionCore
from claude_bg_acp.bridge.turns import Version
from claude_bg_acp.output import TrailerGate

FIXTURES = Path(__file__).parent.parent / "fixtures"
SESSION_ID = "session-replay"
DIGEST_OVER = 4096
CWD = "/tmp/claude-bg-acp/work"
"""The session's cwd as the recorder's normalisation writes it."""


def load_frames(scenario: str) -> list[dict[str, Any]]:
    path = FIXTURES / "sdk_events" / f"{scenario}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Replay:
    def __init__(
        self, version: Version, expose_subagents: bool | None = None, terminal_meta: Mode | None = None
    ) -> None:
        self.core = SessionCore(
            SESSION_ID, version, CWD, expose_subagents=expose_subagents, terminal_meta=terminal_meta
        )
        self.effects: list[Effect] = []
        self._tickets = 0
        self._questions: dict[str, int] = {}
        self._paths: dict[str, str] = {}
        self._files: dict[str, bytes] = {}

    def run(self, frames: list[dict[str, Any]]) -> list[Effect]:
        self._files = {frame["path"]: _file_bytes(frame) for frame in frames if frame["dir"] == "file"}
        for frame in frames:
            now = float(frame.get("dt", 0.0))
            if frame["dir"] == "out":
                self.effects += self._edges(self._sent(frame["msg"], now), now)
            elif frame["dir"] == "in":
                self.effects += self._edges(self._received(frame["msg"], now), now)
        return self.effects

    def _edges(self, effects: list[Effect], now: float) -> list[Effect]:
        """The effects, each followed by what the tailer would answer to it."""
        answered: list[Effect] = []
        for effect in effects:
            answered.append(effect)
            if isinstance(effect, Tail):
                self._paths[effect.task_id] = effect.path
            elif isinstance(effect, FinishTail):
                answered += self._edges(self._drain(effect.task_id, now), now)
        return answered

    def _drain(self, task_id: str, now: float) -> list[Effect]:
        gate = TrailerGate()
        shown = gate.feed(self._files.get(self._paths.get(task_id, ""), b""))
        rest, exit_info = gate.close()
        return self.core.terminal_output(task_id, shown, now) + self.core.terminal_drained(
            task_id, rest, exit_info, now
        )

    def _ticket(self) -> int:
        self._tickets += 1
        return self._tickets

    def _sent(self, msg: dict[str, Any], now: float) -> list[Effect]:
        if msg.get("type") == "user" and not msg.get("parent_tool_use_id"):
            return self.core.prompt(self._ticket(), _acp_content(msg["message"]["content"]), now)
        request = msg.get("request") or {}
        if msg.get("type") == "control_request" and request.get("subtype") == "interrupt":
            return self.core.cancel(now)
        if msg.get("type") == "control_request" and request.get("subtype") == "stop_task":
            return self._stop(str(request.get("task_id")), now)
        if msg.get("type") == "control_response":
            return self._answered(msg["response"], now)
        return []

    def _stop(self, task_id: str, now: float) -> list[Effect]:
        """The recorder stopped a task: the client's per-item cancel does the same."""
        item = self.core.background.items.get(task_id)
        if item is None or item.kind not in ("terminal", "tool_call"):
            return []  # v1 has no per-item cancel
        if item.kind == "terminal":
            return self.core.cancel_terminal(item.ref, now)
        return self.core.cancel_tool_call(item.ref, now)

    def _received(self, msg: dict[str, Any], now: float) -> list[Effect]:
        if msg.get("type") == "control_request":
            return self._asked(msg, now)
        if msg.get("type") in ("control_response", "control_cancel_request"):
            return []
        parsed = parse_message(msg)
        return self.core.sdk_message(parsed, now) if parsed is not None else []

    def _asked(self, msg: dict[str, Any], now: float) -> list[Effect]:
        request = msg["request"]
        if request.get("subtype") != "can_use_tool":
            return []
        ticket = self._questions[msg["request_id"]] = self._ticket()
        return self.core.permission_requested(
            ticket,
            request["tool_name"],
            request.get("input") or {},
            request.get("tool_use_id"),
            request.get("agent_id"),
            now,
        )

    def _answered(self, response: dict[str, Any], now: float) -> list[Effect]:
        ticket = self._questions.pop(str(response.get("request_id")), None)
        if ticket is None:
            return []
        behavior = (response.get("response") or {}).get("behavior")
        option = ALLOW_ONCE if behavior == "allow" else REJECT_ONCE
        return self.core.permission_answered(ticket, option, now)


def _acp_content(content: str | list[dict[str, Any]]) -> list[ContentBlock]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return [ContentBlock.model_validate(block) for block in blocks]


def effect_json(effect: Effect) -> dict[str, Any]:
    if isinstance(effect, Notify):
        session = "root" if effect.session_id == SESSION_ID else effect.session_id
        return {"notify": _digested(effect.update.wire()), "session": session}
    if isinstance(effect, Fail):
        return {"fail": {"ticket": effect.ticket, "error": effect.error.to_wire()}}
    return {type(effect).__name__: asdict(effect)}


def as_jsonrpc(effects: list[Effect]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent's lines and the client requests they answer, as they would go over stdio."""
    agent: list[dict[str, Any]] = []
    client: list[dict[str, Any]] = []
    for effect in effects:
        if isinstance(effect, Notify):
            params = {"sessionId": effect.session_id, "update": effect.update.wire()}
            agent.append({"jsonrpc": "2.0", "method": "session/update", "params": params})
        elif isinstance(effect, Reply):
            client.append({"jsonrpc": "2.0", "id": effect.ticket, "method": "session/prompt"})
            agent.append({"jsonrpc": "2.0", "id": effect.ticket, "result": effect.result})
        elif isinstance(effect, Fail):
            client.append({"jsonrpc": "2.0", "id": effect.ticket, "method": "session/prompt"})
            agent.append({"jsonrpc": "2.0", "id": effect.ticket, "error": effect.error.to_wire()})
        elif isinstance(effect, AskPermission):
            agent.append(
                {
                    "jsonrpc": "2.0",
                    "id": f"ask-{effect.ticket}",
                    "method": "session/request_permission",
                    "params": effect.params,
                }
            )
    return agent, client


def _file_bytes(line: dict[str, Any]) -> bytes:
    """A recorded output file (stored plainly, or compressed when large)."""
    if "data_b64" in line:
        return base64.b64decode(line["data_b64"])
    if "data_zlib_b64" in line:
        return zlib.decompress(base64.b64decode(line["data_zlib_b64"]))
    return b""


def _digested(value: Any) -> Any:
    """``value`` with long strings (terminal output of a burst) replaced by their digest, so a
    golden file stays reviewable and small while still pinning every byte."""
    if isinstance(value, str) and len(value) > DIGEST_OVER:
        return f"sha256:{hashlib.sha256(value.encode()).hexdigest()} ({len(value)} chars)"
    if isinstance(value, dict):
        return {key: _digested(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_digested(item) for item in value]
    return value
