"""Drive the installed ``claude-bg-acp`` process over raw stdio, for tests that need to send
what no well-behaved client would (malformed JSON, unknown methods, huge lines).

A reader thread collects every line the agent writes; ``next_message`` waits on it with a
deadline. ``pause_reading`` makes it stop reading (a client that stalls), ``resume_reading``
go on. Every line the agent wrote is kept in ``lines`` so the test can validate them all
against the official schema at the end.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

AGENT = shutil.which("claude-bg-acp", path=str(Path(sys.executable).parent)) or "claude-bg-acp"


class StdioAgent:
    def __init__(
        self, env: dict[str, str] | None = None, args: list[str] | None = None, allow: bool = False
    ) -> None:
        """``allow``: answer every permission request with allow_once, as a trusting user would."""
        self._allow = allow
        self.proc = subprocess.Popen(
            [AGENT, *(args or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else dict(os.environ),
        )
        self.lines: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._hanging_up = False
        self._reading = threading.Event()
        self._reading.set()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr.append(raw)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._reading.wait()
            if self._hanging_up:
                break
            message = json.loads(raw)  # a line that is not JSON fails the test here
            self.lines.append(message)
            if self._allow and message.get("method") == "session/request_permission":
                outcome = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": outcome})
            self._inbox.put(message)
        if self._hanging_up:
            self.proc.stdout.close()
        self._inbox.put(None)

    def pause_reading(self) -> None:
        """Stop reading the agent's stdout (after the line being read): once the pipe is full,
        the agent's writes wait, as they do for a client that stalls."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def hang_up_stdout(self) -> None:
        """Stop reading the agent's stdout and close our end, when the next line comes: the
        agent's writes fail from then on (a client that went away without closing stdin)."""
        self._hanging_up = True

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are; a line that is a JSON object is remembered as sent."""
        for line in data.splitlines():
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(message, dict):
                self.sent.append(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def request(self, request_id: int | str, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def next_message(
        self, match: Callable[[dict[str, Any]], bool] = lambda _: True, timeout: float = 20.0
    ) -> dict[str, Any]:
        """The next message that matches (earlier ones are skipped but stay in ``lines``)."""
        while True:
            message = self._inbox.get(timeout=timeout)
            if message is None:
                raise EOFError("the agent closed its stdout")
            if match(message):
                return message

    def response(self, request_id: int | str | None, timeout: float = 20.0) -> dict[str, Any]:
        return self.next_message(lambda m: "method" not in m and m.get("id") == request_id, timeout)

    def call(self, request_id: int, method: str, params: Any, timeout: float = 20.0) -> dict[str, Any]:
        self.request(request_id, method, params)
        return self.response(request_id, timeout)

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin (the editor went away) and wait for the process to exit."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return code
