"""The other end of the wire: an ACP agent as a subprocess, and a minimal client on its stdio.

Used by the demo (``claude-bg-acp demo``), the tests that drive the agent over raw stdio and the
benchmarks; the agent itself never imports it. It needs nothing but the standard library, so
the demo runs from the wheel with neither Node.js nor the tests.

A reader thread takes each line the agent writes, stamps it with ``time.monotonic_ns()`` as
soon as it has it (a benchmark that stamps its own writes on the same clock measures write ->
client), parses it, shows it to ``on_message`` and keeps it in ``messages`` (with
``keep_all=False``, only the answers to requests, for runs whose output would not fit in
memory). With ``allow``, it answers the agent's requests as a trusting user of a client that
declared no capabilities would: a permission question with the first option that allows, any
other request with "method not found". A line that is not JSON is kept as
``{"unparsable": <the line>}`` and fails whoever waits past it.

Waiting is by looking at what was kept, under one condition: ``wait_for`` from a given index,
``next_message`` from just after the last message it returned (what it skips stays in
``messages``), ``wait_until`` for anything the hook keeps. ``pause_reading`` makes the client
stall (the agent's writes wait once the pipe is full), ``hang_up_stdout`` makes it go away
without closing the agent's stdin. ``close`` closes the agent's stdin, as an editor that goes
away does, and waits for it to exit; ``stop`` signals it (with ``own_group``, its whole process
group).
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

Message = dict[str, Any]
Direction = Literal["in", "out"]
OnMessage = Callable[[Direction, Message, int], None]
"""``(direction, message, monotonic_ns)``: ``in`` the agent wrote it (stamped when read), ``out``
the client wrote it."""
READ_BUFFER = 1 << 20
STOP_WAIT = 3.0
"""Seconds a stopped agent gets to exit after SIGTERM, before SIGKILL."""


class AgentError(Exception):
    """The agent did not do what was waited for; the message says what."""


class AgentExited(AgentError, EOFError):
    """The agent closed its stdout before what was waited for came."""


class AgentTimeout(AgentError, TimeoutError):
    """What was waited for did not come in time."""


def update_of(message: Message, kind: str | None = None) -> Message | None:
    """The update of a ``session/update`` (of ``kind``, if given), else None."""
    if message.get("method") != "session/update":
        return None
    update: Message = message["params"]["update"]
    return update if kind is None or update.get("sessionUpdate") == kind else None


class AgentProcess:
    """An ACP agent as a subprocess and a client on its stdio; see the module docstring.

    ``stderr``: where the agent's stderr goes; None keeps it (``stderr`` then reads it).
    ``own_group``: the agent leads a process group of its own, so that ``stop`` reaches
    everything it started.
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: Path | None = None,
        stderr: IO[bytes] | int | None = None,
        own_group: bool = True,
        allow: bool = False,
        keep_all: bool = True,
        on_message: OnMessage | None = None,
    ) -> None:
        self.allow = allow
        """Answer the agent's requests as a trusting user would (see the module docstring)."""
        self.on_message = on_message
        self._keep_all = keep_all
        self.messages: list[Message] = []
        self.received: list[int] = []
        """When each of ``messages`` was read (``time.monotonic_ns``)."""
        self.sent: list[Message] = []
        """Every JSON object the client wrote, in order."""
        self.lines_read = 0
        self.bytes_read = 0
        self._ids = itertools.count(1)
        self._asked: dict[int, tuple[int, str]] = {}
        """Per request of ``ask``: where its answer can be in ``messages`` from, and its method."""
        self._next = 0
        self._changed = threading.Condition()
        self._write_lock = threading.Lock()
        self._closed = False
        self._reading = threading.Event()
        self._reading.set()
        self._hanging_up = False
        self._stderr: list[bytes] = []
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr is None else stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            bufsize=READ_BUFFER,
            start_new_session=own_group,
        )
        self._own_group = own_group
        self._reader = threading.Thread(target=self._read, name="agent-stdout", daemon=True)
        self._reader.start()
        if stderr is None:
            threading.Thread(target=self._read_stderr, name="agent-stderr", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stderr(self) -> str:
        """What the agent wrote on its stderr so far, when it is kept (``stderr=None``)."""
        return b"".join(self._stderr).decode(errors="replace")

    # --- sending -----------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are; each line that is a JSON object is remembered as sent."""
        written: list[Message] = []
        for line in data.splitlines():
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(message, dict):
                written.append(message)
        assert self.proc.stdin is not None
        with self._write_lock:
            self.sent += written
            # Shown before it is written: the reader thread may get the answer before this one
            # returns from the write, and a transcript must have the request first.
            if self.on_message is not None:
                now = time.monotonic_ns()
                for message in written:
                    self.on_message("out", message, now)
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: Message) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def ask(self, method: str, params: Any) -> int:
        """Send a request with the next id of the client's own (1, 2, ...); that id."""
        request_id = next(self._ids)
        with self._changed:
            self._asked[request_id] = (len(self.messages), method)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def wait_answer(self, request_id: int, timeout: float) -> int:
        """The index in ``messages`` of the answer to ``ask``'s ``request_id``, waiting for it."""
        since, method = self._asked[request_id]
        return self.wait_for(
            lambda m: "method" not in m and m.get("id") == request_id,
            timeout,
            f"the answer to {method}",
            since,
        )

    def result(self, request_id: int, timeout: float) -> Any:
        """The result of ``ask``'s ``request_id``, waiting for it; an error answer raises."""
        answer = self.messages[self.wait_answer(request_id, timeout)]
        if "error" in answer:
            raise AgentError(f"{self._asked[request_id][1]} failed: {answer['error']}")
        return answer.get("result")

    # --- receiving ---------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._reading.wait()
            if self._hanging_up:
                break
            received = time.monotonic_ns()
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                message = {"unparsable": raw.decode(errors="replace")}
            if self.on_message is not None:
                self.on_message("in", message, received)
            if self.allow and "method" in message and "id" in message:
                self._answer_trustingly(message)
            with self._changed:
                self.lines_read += 1
                self.bytes_read += len(raw)
                if self._keep_all or "method" not in message:
                    self.messages.append(message)
                    self.received.append(received)
                self._changed.notify_all()
        if self._hanging_up:
            self.proc.stdout.close()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr.append(raw)

    def _answer_trustingly(self, request: Message) -> None:
        if request["method"] != "session/request_permission":
            error = {"code": -32601, "message": f"Method not found: {request['method']}"}
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
            return
        options = (request.get("params") or {}).get("options") or []
        allowing = (o["optionId"] for o in options if str(o.get("kind", "")).startswith("allow"))
        chosen = next(allowing, None)
        outcome = {"outcome": "selected", "optionId": chosen} if chosen else {"outcome": "cancelled"}
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}})

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

    # --- waiting -----------------------------------------------------------------------------------

    @property
    def seen(self) -> int:
        """How many messages were kept so far: a point to wait from."""
        with self._changed:
            return len(self.messages)

    def wait_for(
        self, match: Callable[[Message], bool], timeout: float, what: str = "a message", since: int = 0
    ) -> int:
        """The index of the first kept message from ``since`` on that matches, waiting up to
        ``timeout`` seconds for it."""
        found: list[int] = []
        scanned = since

        def check() -> bool:
            nonlocal scanned
            for at in range(scanned, len(self.messages)):
                message = self.messages[at]
                if "unparsable" in message:
                    raise AgentError(f"the agent wrote a line that is not JSON: {message['unparsable']!r}")
                if match(message):
                    found.append(at)
                    return True
            scanned = max(scanned, len(self.messages))
            return False

        self.wait_until(check, timeout, what)
        return found[0]

    def next_message(
        self, match: Callable[[Message], bool] = lambda _: True, timeout: float = 20.0
    ) -> Message:
        """The next message that matches, after the last one this returned (the ones between are
        skipped but stay in ``messages``)."""
        at = self.wait_for(match, timeout, "the next message that matches", self._next)
        self._next = at + 1
        return self.messages[at]

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Until ``check()`` holds (it is checked after each line read, under the lock)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not check():
                if self._closed:
                    raise AgentExited(f"the agent closed its stdout while the client waited for {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentTimeout(f"waited {timeout:.0f} s in vain for {what}")
                self._changed.wait(left)

    # --- the end -----------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> int:
        """Close the agent's stdin (the editor went away) and wait for the agent to exit; its exit
        code (negative: a signal). An agent that does not exit in time is stopped, and
        ``AgentTimeout`` raised."""
        assert self.proc.stdin is not None
        with self._write_lock, contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AgentTimeout(
                f"the agent did not exit within {timeout:.0f} s after its stdin closed"
            ) from None

    def outlived(self) -> bool:
        """Whether processes of the agent's group are still alive (``own_group``)."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def stop(self) -> None:
        """Stop the agent: SIGTERM, up to ``STOP_WAIT`` seconds for it to exit, then SIGKILL to
        whatever is left (with ``own_group``, of everything in its process group)."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self._own_group:
                    os.killpg(self.proc.pid, signum)
                elif self.proc.poll() is None:
                    self.proc.send_signal(signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(STOP_WAIT)
