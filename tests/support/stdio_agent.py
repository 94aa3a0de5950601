"""Drive the installed ``claude-bg-acp`` process over raw stdio, for tests that need to send
what no well-behaved client would (malformed JSON, unknown methods, huge lines).

``StdioAgent`` is the package's client (``claude_bg_acp.acp.client.AgentProcess``) with the
test's own request ids: ``request``, ``response`` and ``call`` take them, and ``response``
waits from just after the last message it or ``next_message`` returned. Every line the agent
wrote is kept in ``lines`` and every object the test wrote in ``sent``, so the test can validate
them all against the official schema at the end; a line that is not JSON fails the test where
it waits past it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from claude_bg_acp.acp.client import AgentProcess, Message

AGENT = shutil.which("claude-bg-acp", path=str(Path(sys.executable).parent)) or "claude-bg-acp"


ANSWER_BOUND = 60.0
"""How long an answer may take (seconds), as long as a client script may run (``run_client``): on
a loaded machine, with tests on parallel workers, starting the agent and then Claude Code for a
``session/new`` took longer than 20 s; a bound costs nothing while the answer comes."""


class StdioAgent(AgentProcess):
    def __init__(
        self, env: dict[str, str] | None = None, args: list[str] | None = None, allow: bool = False
    ) -> None:
        """``allow``: answer every permission request with the first option that allows (this
        agent's allow_once), as a trusting user would. The agent's stderr is kept (``stderr``);
        it stays in the test's process group."""
        env = env if env is not None else dict(os.environ)
        super().__init__([AGENT, *(args or [])], env, own_group=False, allow=allow)

    @property
    def lines(self) -> list[Message]:
        return self.messages

    def request(self, request_id: int | str, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def response(self, request_id: int | str | None, timeout: float = ANSWER_BOUND) -> Message:
        return self.next_message(lambda m: "method" not in m and m.get("id") == request_id, timeout)

    def call(self, request_id: int, method: str, params: Any, timeout: float = ANSWER_BOUND) -> Message:
        self.request(request_id, method, params)
        return self.response(request_id, timeout)
