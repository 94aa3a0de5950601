"""A hand-written stand-in ACP agent, used ONLY to test the test harness itself.

This is NOT the product and must never be used to test the product. It exists so that
``tests/client/drive.mjs`` (the official ACP client driver) and the schema validator in
``tests/support/schema.py`` can be exercised before and independently of ``claude_bg_acp``.
It is stdlib-only, single-threaded and deliberately tiny.

Run it as ``python tests/support/echo_agent.py``. It speaks JSON-RPC 2.0, one JSON object a
line, on stdin/stdout, and logs nothing to stdout.

Protocol version: the answer to ``initialize`` is ``min(requested, 2)`` (v1 shape for 1, v2
shape for 2); a requested version below 1 gets ``-32022``.

Behaviour on ``session/prompt`` (by keywords in the prompt text):

- always: echo the text back (v1: ``agent_message_chunk`` then ``{"stopReason": "end_turn"}``;
  v2: ``{"messageId"}`` response, ``user_message``, ``state_update`` running,
  ``agent_message_chunk`` with a ``messageId``, ``state_update`` idle with
  ``stopReason: "end_turn"`` and a ``background`` list).
- ``permission``: first asks ``session/request_permission`` and echoes the outcome.
- ``terminal`` (v2 only): starts a fake background terminal that advertises
  ``capabilities.cancel``, sends two output chunks (a UTF-8 character split across them and a
  raw ``0xff`` byte) and lists it in ``background`` until ``terminal/cancel`` stops it.
- ``subagent`` (v1 only): sends a ``subagent_update`` for a child session and one update in
  the child session.
- ``hold`` (v1 only): does not answer the prompt until ``session/cancel``, then answers
  ``{"stopReason": "cancelled"}``.

The environment variable ``ECHO_AGENT_INVALID`` makes it send one deliberately schema-invalid
(or non-strict) message during a prompt, to prove that violations are reported:

- ``bad_state``: a v2 ``state_update`` with ``"state": 42`` (the client drops it).
- ``unknown_state``: a v2 ``state_update`` with ``"state": "finished"`` (valid against the
  schema's forward-compatible fallback, but not a known state; only strict validation flags it).
- ``no_message_id``: a v2 ``agent_message_chunk`` without ``messageId``.
- ``unknown_update``: a ``session/update`` with ``"sessionUpdate": "bogus_update"``.
- ``no_stop_reason``: a v1 prompt response ``{}``.
- ``stdout_noise``: a non-JSON line on stdout.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable
from typing import Any

JsonObject = dict[str, Any]

TERMINAL_ID = "term_echo_1"
CHILD_SESSION_SUFFIX = "_child"


class EchoAgent:
    def __init__(self) -> None:
        self.version = 1
        self.invalid = os.environ.get("ECHO_AGENT_INVALID", "")
        self.session_count = 0
        self.session_cwd: dict[str, str] = {}
        self.message_count = 0
        self.request_count = 0
        # Continuations for our own requests to the client, keyed by request id.
        self.pending: dict[Any, Callable[[JsonObject], None]] = {}
        # v1 prompts held until session/cancel: session id -> prompt request id.
        self.held: dict[str, Any] = {}
        # v2 background terminal state per session: session id -> terminal id (live only).
        self.live_terminals: dict[str, str] = {}

    # -- output -----------------------------------------------------------------------------

    def send(self, message: JsonObject) -> None:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def respond(self, request_id: Any, result: JsonObject) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def update(self, session_id: str, update: JsonObject) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": update},
            }
        )

    def request(self, method: str, params: JsonObject, then: Callable[[JsonObject], None]) -> None:
        self.request_count += 1
        request_id = self.request_count
        self.pending[request_id] = then
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def next_message_id(self, prefix: str) -> str:
        self.message_count += 1
        return f"{prefix}_{self.message_count}"

    def background(self, session_id: str) -> list[JsonObject]:
        terminal = self.live_terminals.get(session_id)
        return [] if terminal is None else [{"type": "terminal", "terminalId": terminal}]

    # -- input ------------------------------------------------------------------------------

    def handle_line(self, line: str) -> None:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:
            then = self.pending.pop(message.get("id"), None)
            if then is not None:
                then(message)
            return
        params = message.get("params") or {}
        if "id" not in message:
            self.handle_notification(method, params)
            return
        self.handle_request(message["id"], method, params)

    def handle_notification(self, method: str, params: JsonObject) -> None:
        if method == "session/cancel":
            session_id = params.get("sessionId", "")
            held = self.held.pop(session_id, None)
            if held is not None:
                self.respond(held, {"stopReason": "cancelled"})

    def handle_request(self, request_id: Any, method: str, params: JsonObject) -> None:
        if method == "initialize":
            self.initialize(request_id, params)
        elif method == "session/new":
            self.session_count += 1
            session_id = f"sess_echo_{self.session_count}"
            self.session_cwd[session_id] = str(params.get("cwd", "/"))
            self.respond(request_id, {"sessionId": session_id})
        elif method == "session/prompt":
            self.prompt(request_id, params)
        elif method == "session/close":
            self.respond(request_id, {})
        elif method == "terminal/cancel" and self.version >= 2:
            self.cancel_terminal(request_id, params)
        else:
            self.error(request_id, -32601, f"Method not found: {method}")

    def initialize(self, request_id: Any, params: JsonObject) -> None:
        requested = params.get("protocolVersion")
        if not isinstance(requested, int) or requested < 1:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"supportedVersions": [1, 2]},
                    },
                }
            )
            return
        self.version = min(requested, 2)
        info = {"name": "echo-agent", "title": "Harness stand-in", "version": "0.0.0"}
        if self.version >= 2:
            self.respond(request_id, {"protocolVersion": 2, "info": info, "capabilities": {}})
        else:
            self.respond(
                request_id,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": False},
                    "agentInfo": info,
                    "authMethods": [],
                },
            )

    # -- prompts ----------------------------------------------------------------------------

    def prompt(self, request_id: Any, params: JsonObject) -> None:
        session_id = str(params.get("sessionId", ""))
        blocks = params.get("prompt") or []
        text = "".join(str(block.get("text", "")) for block in blocks if isinstance(block, dict))
        if self.version >= 2:
            self.prompt_v2(request_id, session_id, blocks, text)
        else:
            self.prompt_v1(request_id, session_id, text)

    def prompt_v1(self, request_id: Any, session_id: str, text: str) -> None:
        def finish(reply: str) -> None:
            if self.invalid == "stdout_noise":
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
            if self.invalid == "unknown_update":
                self.update(session_id, {"sessionUpdate": "bogus_update"})
            self.update(
                session_id,
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}},
            )
            if "subagent" in text:
                child = session_id + CHILD_SESSION_SUFFIX
                self.update(
                    session_id,
                    {"sessionUpdate": "subagent_update", "sessionId": child, "title": "child"},
                )
                self.update(
                    child,
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "from the child"},
                    },
                )
            if "hold" in text:
                self.held[session_id] = request_id
                return
            self.respond(request_id, {} if self.invalid == "no_stop_reason" else {"stopReason": "end_turn"})

        if "permission" in text:
            self.ask_permission(session_id, lambda outcome: finish(f"permission: {outcome}"))
        else:
            finish(f"echo: {text}")

    def prompt_v2(self, request_id: Any, session_id: str, blocks: list[Any], text: str) -> None:
        user_message_id = self.next_message_id("msg_user")
        self.respond(request_id, {"messageId": user_message_id})
        self.update(
            session_id,
            {"sessionUpdate": "user_message", "messageId": user_message_id, "content": blocks},
        )
        running: JsonObject = {
            "sessionUpdate": "state_update",
            "state": "running",
            "background": self.background(session_id),
        }
        if self.invalid == "bad_state":
            running["state"] = 42
        elif self.invalid == "unknown_state":
            running["state"] = "finished"
        self.update(session_id, running)

        def finish(reply: str) -> None:
            agent_message_id = self.next_message_id("msg_agent")
            chunk: JsonObject = {
                "sessionUpdate": "agent_message_chunk",
                "messageId": agent_message_id,
                "content": {"type": "text", "text": reply},
            }
            if self.invalid == "no_message_id":
                del chunk["messageId"]
            if self.invalid == "unknown_update":
                self.update(session_id, {"sessionUpdate": "bogus_update"})
            self.update(session_id, chunk)
            if "terminal" in text:
                self.start_terminal(session_id)
            self.update(
                session_id,
                {
                    "sessionUpdate": "state_update",
                    "state": "idle",
                    "stopReason": "end_turn",
                    "background": self.background(session_id),
                },
            )

        if "permission" in text:
            self.ask_permission(session_id, lambda outcome: finish(f"permission: {outcome}"))
        else:
            finish(f"echo: {text}")

    def ask_permission(self, session_id: str, then: Callable[[str], None]) -> None:
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        params: JsonObject = {"sessionId": session_id, "options": options}
        if self.version >= 2:
            params["title"] = "Run the echo tool?"
        else:
            params["toolCall"] = {"toolCallId": "call_echo_permission", "title": "Echo tool"}

        def on_answer(message: JsonObject) -> None:
            outcome = (message.get("result") or {}).get("outcome") or {}
            if outcome.get("outcome") == "selected":
                then(str(outcome.get("optionId")))
            else:
                then(str(outcome.get("outcome", "error")))

        self.request("session/request_permission", params, on_answer)

    # -- v2 background terminal ---------------------------------------------------------------

    def start_terminal(self, session_id: str) -> None:
        self.live_terminals[session_id] = TERMINAL_ID
        self.update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": TERMINAL_ID,
                "command": "echo-background",
                "cwd": self.session_cwd.get(session_id, "/"),
                "capabilities": {"cancel": {}},
            },
        )
        for chunk in (b"price: \xe2\x82", b"\xac 5\xff\n"):
            self.update(
                session_id,
                {
                    "sessionUpdate": "terminal_output_chunk",
                    "terminalId": TERMINAL_ID,
                    "data": base64.b64encode(chunk).decode("ascii"),
                },
            )

    def cancel_terminal(self, request_id: Any, params: JsonObject) -> None:
        session_id = str(params.get("sessionId", ""))
        terminal_id = params.get("terminalId")
        if self.live_terminals.get(session_id) != terminal_id:
            self.error(request_id, -32602, "Unknown, finished or non-cancellable terminal")
            return
        self.respond(request_id, {})
        del self.live_terminals[session_id]
        self.update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": terminal_id,
                "exitStatus": {"exitCode": None, "signal": "SIGTERM"},
                "capabilities": None,
            },
        )
        self.update(
            session_id,
            {"sessionUpdate": "state_update", "state": "idle", "background": []},
        )


def main() -> int:
    agent = EchoAgent()
    for raw in sys.stdin:
        line = raw.strip()
        if line:
            agent.handle_line(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
