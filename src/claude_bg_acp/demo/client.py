"""A small ACP client for the demo: it starts the agent as a subprocess and speaks JSON-RPC with
it, one JSON object per line on the agent's stdin and stdout.

A reader thread takes each line the agent writes, shows it (``on_message``), answers a
permission question with the option that allows the tool once (as a trusting user would), and
keeps it. ``wait_for`` waits for a message that matches, by looking at every message that came
since a given point, so nothing that arrives before the wait begins is missed. ``close`` closes
the agent's stdin, as an editor that goes away does, and waits for the agent to exit; an agent
that does not exit in time has its process group stopped.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]
EXIT_WAIT = 20.0
"""Seconds the agent gets to close its sessions and exit after its stdin closed."""


class DemoError(Exception):
    """The demo did not go as it should; the message says what was expected."""


class Client:
    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        log: IO[bytes],
        on_message: Callable[[str, Message], None],
    ) -> None:
        """``on_message(direction, message)`` shows each message; direction ``out`` is ours."""
        self._on_message = on_message
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self.messages: list[Message] = []
        self.received: list[float] = []
        """When each of ``messages`` came (``time.monotonic``)."""
        self._closed = False
        # A session of its own, so that a stuck agent can be stopped with everything it started.
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        threading.Thread(target=self._read, name="agent-reader", daemon=True).start()

    # --- sending -----------------------------------------------------------------------------------

    def _send(self, message: Message) -> None:
        assert self.proc.stdin is not None
        self._on_message("out", message)
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Message) -> int:
        request_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def call(self, method: str, params: Message, timeout: float) -> Any:
        """Send a request and wait for its result (an error answer raises ``DemoError``)."""
        return self.result(self.request(method, params), timeout, method)

    def result(self, request_id: int, timeout: float, what: str) -> Any:
        answer = self.messages[
            self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout, what)
        ]
        if "error" in answer:
            raise DemoError(f"{what} failed: {answer['error']}")
        return answer.get("result")

    # --- receiving ---------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                message = {"unparsable": raw.decode(errors="replace")}
            self._on_message("in", message)
            if message.get("method") == "session/request_permission":
                self._allow_once(message)
            with self._lock:
                self.messages.append(message)
                self.received.append(time.monotonic())
                self._lock.notify_all()
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def _allow_once(self, question: Message) -> None:
        options = question.get("params", {}).get("options", [])
        chosen = next((o["optionId"] for o in options if o.get("kind") == "allow_once"), None)
        outcome = {"outcome": "selected", "optionId": chosen} if chosen else {"outcome": "cancelled"}
        self._send({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": outcome}})

    @property
    def seen(self) -> int:
        """How many messages came so far: a point to wait from."""
        with self._lock:
            return len(self.messages)

    def wait_for(self, match: Callable[[Message], bool], timeout: float, what: str, since: int = 0) -> int:
        """The index of the first message from ``since`` on that matches, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        index = since
        with self._lock:
            while True:
                for at in range(index, len(self.messages)):
                    if match(self.messages[at]):
                        return at
                index = len(self.messages)
                left = deadline - time.monotonic()
                if self._closed:
                    raise DemoError(f"the agent exited while the demo waited for {what}")
                if left <= 0:
                    raise DemoError(f"no {what} within {timeout:.0f} s")
                self._lock.wait(left)

    # --- the end -----------------------------------------------------------------------------------

    def close(self) -> int:
        """Close the agent's stdin and wait for it to exit; its exit code (negative: a signal).

        Whatever the agent started must be gone with it (its process group is empty)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            code = self.proc.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.stop()
            raise DemoError(
                f"the agent did not exit within {EXIT_WAIT:.0f} s after its stdin closed"
            ) from None
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return code
        self.stop()
        raise DemoError("processes the agent started outlived it")

    def stop(self) -> None:
        """Stop the agent and whatever it started that is still in its process group."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signum)
            try:
                self.proc.wait(3.0)
                return
            except subprocess.TimeoutExpired:
                continue
