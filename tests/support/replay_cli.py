#!/usr/bin/env python3
"""A stand-in for the Claude Code CLI that replays a recorded fixture to a live Agent SDK.

Point ``ClaudeAgentOptions.cli_path`` here and ``CLAUDE_BG_ACP_REPLAY_FIXTURE`` at a file
written by ``scripts/record_sdk_events.py``. The argv is ignored. The recording is walked in
order: an ``out`` frame (SDK -> CLI) is awaited on stdin, matched by type and control subtype
only; an ``in`` frame (CLI -> SDK) is written to stdout after its recorded gap to the frame
before it, times ``CLAUDE_BG_ACP_REPLAY_SPEED`` (default 1.0; 0 = no delay). Control
responses carry the request ids the live SDK used; after a CLI-initiated control request
(``can_use_tool``) the SDK's answer is awaited before anything else is written.

The agent must send what the recording has: a frame the recording does not expect (an
unrecorded control request, an extra interrupt, a frame after the recording ended) or one that
differs from the recorded one in what matters (a user message's text, the task a ``stop_task``
names) is a complaint, written as one JSON line to ``CLAUDE_BG_ACP_REPLAY_REPORT`` (and to
stderr), so that the test fails; an unrecorded control request is still answered with success
``{}`` so the run can end and show everything that went wrong. A read of Claude Code's
settings (``get_settings``), which changes nothing, is answered whenever it comes, with the
model the recording's first turn used (the recordings predate the agent's reads). Output files recorded as
``file`` lines are created (under ``CLAUDE_BG_ACP_REPLAY_ROOT`` in place of the recorder's
placeholder root, if set) just before the first frame that names their task. Stdin EOF ends
the replay with status 0. Standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import queue
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER = "/tmp/claude-bg-acp"
EOF_MARK = None
SETTINGS_READ = ("control_request", "get_settings")


class EndOfInput(Exception):
    """The SDK closed our stdin: the session is over."""


def warn(text: str) -> None:
    print(f"replay_cli: {text}", file=sys.stderr, flush=True)


def complain(text: str) -> None:
    """The agent sent something the recording does not have: the test must fail."""
    warn(text)
    report = os.environ.get("CLAUDE_BG_ACP_REPLAY_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"unexpected": text}) + "\n")


def _user_text(frame: dict[str, Any]) -> str:
    content = (frame.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def mismatch(recorded: dict[str, Any], live: dict[str, Any]) -> str | None:
    """How a live frame differs from the recorded one it stands for, in what the agent decides."""
    if recorded.get("type") == "user" and _user_text(recorded) != _user_text(live):
        return f"user message {_user_text(live)!r}, recorded {_user_text(recorded)!r}"
    request, got = recorded.get("request") or {}, live.get("request") or {}
    if request.get("subtype") == "stop_task" and request.get("task_id") != got.get("task_id"):
        return f"stop_task for {got.get('task_id')}, recorded for {request.get('task_id')}"
    return None


@dataclass
class OutputFile:
    path: str
    line: dict[str, Any]
    task_id: str
    written: bool = False

    def write(self) -> None:
        data = _file_bytes(self.line)
        self.written = True
        if data is None:
            warn(f"no content recorded for {self.path}; not created")
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "wb") as handle:
            handle.write(data)


def _file_bytes(line: dict[str, Any]) -> bytes | None:
    if "data_b64" in line:
        return base64.b64decode(line["data_b64"])
    if "data_zlib_b64" not in line:
        return None
    data = zlib.decompress(base64.b64decode(line["data_zlib_b64"]))
    if "sha256" in line and hashlib.sha256(data).hexdigest() != line["sha256"]:
        warn(f"sha256 mismatch for {line.get('path')}")
    return data


def _rebase(value: Any, root: str) -> Any:
    """``value`` with the recorder's placeholder root replaced by ``root``, in every string, and
    Claude Code's per-user temp folder (``claude-<uid>``: the recordings were made as root)
    named after this user, as the agent expects it (``CLAUDE_CODE_TMPDIR`` = ``root/tmp``)."""
    if isinstance(value, str):
        return value.replace(f"{PLACEHOLDER}/tmp/claude-0/", f"{root}/tmp/claude-{os.getuid()}/").replace(
            PLACEHOLDER, root
        )
    if isinstance(value, list):
        return [_rebase(item, root) for item in value]
    if isinstance(value, dict):
        return {key: _rebase(item, root) for key, item in value.items()}
    return value


def load_fixture(path: str, root: str) -> tuple[list[dict[str, Any]], list[OutputFile]]:
    frames: list[dict[str, Any]] = []
    files: list[OutputFile] = []
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            line = _rebase(json.loads(raw), root)
            if line.get("dir") == "file":
                stem = os.path.basename(line["path"]).rsplit(".", 1)[0]
                files.append(OutputFile(line["path"], line, stem))
            else:
                frames.append(line)
    return frames, files


def frame_key(frame: dict[str, Any]) -> tuple[str, str | None]:
    """What an SDK frame is matched on: its type and, for control requests, the subtype."""
    kind = str(frame.get("type"))
    if kind == "control_request":
        request = frame.get("request")
        return kind, str(request.get("subtype")) if isinstance(request, dict) else None
    return kind, None


def start_stdin_reader() -> queue.Queue[dict[str, Any] | None]:
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def pump() -> None:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            try:
                inbox.put(json.loads(raw))
            except ValueError:
                warn(f"unparsable frame from the SDK: {raw[:200]!r}")
        inbox.put(EOF_MARK)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return inbox


@dataclass
class Player:
    frames: list[dict[str, Any]]
    files: list[OutputFile]
    inbox: queue.Queue[dict[str, Any] | None]
    speed: float
    cursor: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)
    request_ids: dict[str, str] = field(default_factory=dict)
    consumed: set[int] = field(default_factory=set)

    def run(self) -> None:
        previous_dt = 0.0
        while self.cursor < len(self.frames):
            line = self.frames[self.cursor]
            if self.cursor not in self.consumed:
                if line["dir"] == "out":
                    self.expect(line["msg"])
                else:
                    self.pause(float(line["dt"]) - previous_dt)
                    self.play(line["msg"])
            previous_dt = float(line["dt"])
            self.cursor += 1
        for output in self.files:
            if not output.written:
                output.write()
        self.drain()

    # --- waiting on the SDK ---------------------------------------------------------------

    def next_from_sdk(self, timeout: float | None) -> dict[str, Any] | None:
        try:
            frame = self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if frame is EOF_MARK:
            raise EndOfInput
        return frame

    def pause(self, seconds: float) -> None:
        deadline = time.monotonic() + max(0.0, seconds) * self.speed
        while (remaining := deadline - time.monotonic()) > 0:
            frame = self.next_from_sdk(remaining)
            if frame is not None:
                self.receive(frame)

    def expect(self, recorded: dict[str, Any]) -> dict[str, Any]:
        wanted = frame_key(recorded)
        while True:
            for index, got in enumerate(self.pending):
                if frame_key(got) == wanted:
                    del self.pending[index]
                    self.bind(recorded, got)
                    if (difference := mismatch(recorded, got)) is not None:
                        complain(difference)
                    return got
            frame = self.next_from_sdk(None)
            if frame is not None:
                self.receive(frame)

    def receive(self, frame: dict[str, Any]) -> None:
        """Keep a frame the recording expects later; answer or drop anything else."""
        key = frame_key(frame)
        # Answers to our own control requests are always kept: a request waits on them.
        if key[0] == "control_response" or any(frame_key(line["msg"]) == key for line in self.upcoming_out()):
            self.pending.append(frame)
        elif key == SETTINGS_READ:
            self.answer(str(frame.get("request_id")), self.settings())
        elif key[0] == "control_request":
            complain(f"unrecorded control request {key[1]}: {json.dumps(frame)[:200]}")
            self.answer(str(frame.get("request_id")))
        else:
            complain(f"unrecorded frame from the SDK: {json.dumps(frame)[:200]}")

    def upcoming_out(self) -> list[dict[str, Any]]:
        return [
            line
            for index, line in enumerate(self.frames[self.cursor :], self.cursor)
            if line["dir"] == "out" and index not in self.consumed
        ]

    def bind(self, recorded: dict[str, Any], live: dict[str, Any]) -> None:
        if recorded.get("type") == "control_request":
            self.request_ids[str(recorded.get("request_id"))] = str(live.get("request_id"))

    def drain(self) -> None:
        while True:
            frame = self.next_from_sdk(None)
            if frame is None:
                continue
            if frame_key(frame) == SETTINGS_READ:
                self.answer(str(frame.get("request_id")), self.settings())
                continue
            complain(f"{frame_key(frame)} after the recording ended: {json.dumps(frame)[:200]}")
            if frame_key(frame)[0] == "control_request":
                self.answer(str(frame.get("request_id")))

    # --- speaking to the SDK ----------------------------------------------------------------

    def play(self, msg: dict[str, Any]) -> None:
        self.materialise_files(msg)
        if msg.get("type") == "control_response":
            msg = self.with_live_request_id(msg)
        write(msg)
        if msg.get("type") == "control_request":
            self.await_answer(str(msg.get("request_id")))

    def with_live_request_id(self, msg: dict[str, Any]) -> dict[str, Any]:
        response = dict(msg.get("response") or {})
        recorded = str(response.get("request_id"))
        response["request_id"] = self.request_ids.get(recorded, recorded)
        return {**msg, "response": response}

    def await_answer(self, request_id: str) -> None:
        """The SDK answers a CLI-initiated request before the recording goes on."""
        while True:
            got = self.expect({"type": "control_response"})
            answered = (got.get("response") or {}).get("request_id")
            self.consume_next_out("control_response")
            if answered == request_id:
                return
            complain(f"control response for {answered}, expected {request_id}")

    def consume_next_out(self, kind: str) -> None:
        for index in range(self.cursor + 1, len(self.frames)):
            line = self.frames[index]
            if line["dir"] == "out" and index not in self.consumed and line["msg"].get("type") == kind:
                self.consumed.add(index)
                return

    def materialise_files(self, msg: dict[str, Any]) -> None:
        text = json.dumps(msg)
        for output in self.files:
            if not output.written and (output.task_id in text or output.path in text):
                output.write()

    def settings(self) -> dict[str, Any]:
        init: dict[str, Any] = next(
            (
                line["msg"]
                for line in self.frames
                if line["dir"] == "in" and line["msg"].get("subtype") == "init"
            ),
            {},
        )
        return {"applied": {"model": init.get("model"), "effort": None}}

    def answer(self, request_id: str, response: dict[str, Any] | None = None) -> None:
        write(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response or {}},
            }
        )


def write(msg: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(msg, ensure_ascii=False).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def main() -> int:
    fixture = os.environ.get("CLAUDE_BG_ACP_REPLAY_FIXTURE")
    if not fixture:
        warn("CLAUDE_BG_ACP_REPLAY_FIXTURE is not set")
        return 2
    speed = float(os.environ.get("CLAUDE_BG_ACP_REPLAY_SPEED", "1.0"))
    root = os.environ.get("CLAUDE_BG_ACP_REPLAY_ROOT") or PLACEHOLDER
    frames, files = load_fixture(fixture, root)
    player = Player(frames, files, start_stdin_reader(), speed)
    # The SDK closing our stdin (or stdout) is the normal end of a session.
    with contextlib.suppress(EndOfInput, BrokenPipeError):
        player.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
