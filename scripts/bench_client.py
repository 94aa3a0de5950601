"""The benchmarks' client: an ACP agent as a subprocess, driven over its stdio, and measuring helpers.

:class:`BenchAgent` starts an agent (``claude-bg-acp`` by default, or any command speaking ACP
on stdio, such as the TypeScript adapter) with the package's client
(:mod:`claude_bg_acp.acp.client`), which stamps every line with ``time.monotonic_ns()`` as soon
as it is read, so that a benchmark that stamps its own writes with the same clock
(``CLOCK_MONOTONIC`` is system-wide) measures write -> client. It speaks v2 (terminals), or is
a plain v1 client (``PLAIN_V1``: what acpx declares; a background shell is then a tool call
whose content, replaced by each update, is the shell's latest output). The helpers read a
process's CPU time and RSS from ``/proc``.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from claude_bg_acp.acp.client import AgentProcess, AgentTimeout, Direction, Message
from claude_bg_acp.platform import PORTABLE_ENV

AGENT = Path(sys.executable).parent / "claude-bg-acp"
MIB = 1 << 20
JsonObject = dict[str, Any]
ChunkHook = Callable[[int, str, bytes, bool], None]
"""``(received_ns, terminal_id, data, replaces)``: ``replaces`` for a snapshot (``terminal_update``
with ``output``), whose data replaces everything before, else appended."""
WAIT = 60.0
PLAIN_V1: JsonObject = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
"""A plain v1 client's ``clientCapabilities`` (acpx's): no terminal extension of Zed's or AIR's."""
FINAL = ("completed", "failed")


# --- the client ---------------------------------------------------------------------------------


@dataclass
class TerminalView:
    """What the client knows of one terminal."""

    fields: JsonObject = field(default_factory=dict)
    chunks: int = 0
    bytes: int = 0
    snapshots: int = 0

    @property
    def exited(self) -> bool:
        return "exitStatus" in self.fields


@dataclass
class CallView:
    """What a plain v1 client knows of one tool call."""

    fields: JsonObject = field(default_factory=dict)
    updates: int = 0
    text_bytes: int = 0
    """Bytes of content text received for it, over all its updates."""

    @property
    def ended(self) -> bool:
        return self.fields.get("status") in FINAL


@dataclass(frozen=True)
class AgentCommand:
    """How to start an agent: its name in tables, its argv, and variables it needs on top of the
    offline environment."""

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


OURS = AgentCommand("claude-bg-acp", (str(AGENT),))
PORTABLE = AgentCommand("claude-bg-acp, portable mode", (str(AGENT),), ((PORTABLE_ENV, "1"),))
"""The agent as it runs on macOS: watchfiles, process groups (``claude_bg_acp.platform``)."""


def terminal_key(session_id: str, terminal_id: str) -> str:
    """How the client names a terminal: terminal ids need only be unique within a session (the
    TypeScript adapter uses tool use ids, which the scripted model repeats across sessions)."""
    return f"{session_id}/{terminal_id}"


class BenchAgent(AgentProcess):
    """An ACP agent as a subprocess (``claude-bg-acp`` unless ``command`` says otherwise), driven
    by the package's client as a trusting user with no capabilities, in a process group of its
    own (so that cleanup reaches the CLI too).

    It keeps only the answers to requests (``keep_all`` for every message), and what a benchmark
    looks at: the latest ``state_update``, ``background`` list and terminal fields, and (a plain
    v1 client) each tool call's fields. ``on_chunk`` (called on the reader thread) gets every
    ``terminal_output_chunk`` and every ``terminal_update`` snapshot (see :data:`ChunkHook`), and
    a plain v1 client's tool call content as a snapshot (the text replaces what came before);
    ``on_line`` gets ``(received_ns, message)`` of every line.
    """

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        args: list[str] | None = None,
        stderr: IO[bytes] | None = None,
        command: AgentCommand = OURS,
        keep_all: bool = False,
    ) -> None:
        self.command = command
        self.on_chunk: ChunkHook | None = None
        self.on_line: Callable[[int, JsonObject], None] | None = None
        self.state: JsonObject | None = None
        self.background: list[JsonObject] | None = None
        self.terminals: dict[str, TerminalView] = {}
        self.calls: dict[str, CallView] = {}
        self.version = 2
        super().__init__(
            [*command.argv, *(args or [])],
            {**env, **dict(command.env)},
            cwd=cwd,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            allow=True,
            keep_all=keep_all,
            on_message=self._watch,
        )

    # -- requests ------------------------------------------------------------------------------

    def timed_result(self, request_id: int, timeout: float = WAIT) -> tuple[Any, int]:
        """The result of a request, and when its answer was read (``monotonic_ns``)."""
        result = self.result(request_id, timeout)
        return result, self.received[self.wait_answer(request_id, 0)]

    def initialize_v2(self) -> Any:
        params = {"protocolVersion": 2, "info": {"name": "bench", "version": "0"}, "capabilities": {}}
        return self.result(self.ask("initialize", params), WAIT)

    def initialize_v1(self, capabilities: JsonObject | None = None) -> Any:
        self.version = 1
        info = {"name": "bench", "version": "0"}
        params = {"protocolVersion": 1, "clientInfo": info, "clientCapabilities": capabilities or {}}
        return self.result(self.ask("initialize", params), WAIT)

    def new_session(self, cwd: Path) -> str:
        result = self.result(self.ask("session/new", {"cwd": str(cwd), "mcpServers": []}), WAIT)
        return str(result["sessionId"])

    def prompt(self, session_id: str, text: str) -> int:
        """Send a prompt; its request id."""
        prompt = [{"type": "text", "text": text}]
        return self.ask("session/prompt", {"sessionId": session_id, "prompt": prompt})

    # -- waiting -------------------------------------------------------------------------------

    def wait_idle(self, timeout: float = WAIT) -> None:
        self.wait_until(lambda: (self.state or {}).get("state") == "idle", timeout, "idle")

    def wait_turn(self, prompt_id: int, timeout: float = WAIT) -> None:
        """The prompt's turn is over: v1 answers the prompt then, v2 reports ``idle``."""
        if self.version == 1:
            self.result(prompt_id, timeout)
        else:
            self.wait_idle(timeout)

    def wait_shells(self, count: int, timeout: float = WAIT) -> list[str]:
        """The first ``count`` background shells: v2 terminals, or a plain v1 client's shell tool
        calls (``execute``, still running)."""
        if self.version >= 2:
            return self.wait_terminals(count, timeout)

        def running() -> list[str]:
            return [
                key
                for key, view in list(self.calls.items())
                if view.fields.get("kind") == "execute" and view.fields.get("status") == "in_progress"
            ]

        self.wait_until(lambda: len(running()) >= count, timeout, f"{count} running shell tool calls")
        return running()[:count]

    def wait_shell_end(self, key: str, timeout: float = 120.0) -> JsonObject:
        """How a shell ended: a terminal's ``exitStatus``, or the final status and ``rawOutput``
        exit of a plain v1 client's tool call."""
        if self.version >= 2:
            return self.wait_exit(key, timeout)
        self.wait_until(lambda: self.calls[key].ended, timeout, f"end of {key}")
        fields = self.calls[key].fields
        raw = fields.get("rawOutput") or {}
        return {"status": fields["status"], "exitCode": raw.get("exitCode"), "signal": raw.get("signal")}

    def updates_of(self, key: str) -> int:
        """How many updates carried a shell's output (a plain v1 client's: its content)."""
        return self.terminals[key].chunks if self.version >= 2 else self.calls[key].updates

    def wait_terminals(self, count: int, timeout: float = WAIT) -> list[str]:
        self.wait_until(lambda: len(self.terminals) >= count, timeout, f"{count} terminals")
        return list(self.terminals)

    def wait_exit(self, terminal_id: str, timeout: float = 120.0) -> JsonObject:
        self.wait_until(lambda: self.terminals[terminal_id].exited, timeout, f"exit of {terminal_id}")
        return dict(self.terminals[terminal_id].fields["exitStatus"])

    # -- shutting down -------------------------------------------------------------------------

    def shut_down(self, grace: float = 20.0) -> None:
        """Close stdin (the agent then closes its sessions), stop whatever of its group is left
        (the agent too, if it did not exit within ``grace``), and let the reader finish."""
        with contextlib.suppress(AgentTimeout):
            self.close(grace)
        self.stop()
        self._reader.join(10)

    # -- the reader ----------------------------------------------------------------------------

    def _watch(self, direction: Direction, message: Message, received: int) -> None:
        if direction != "in":
            return
        if self.on_line is not None:
            self.on_line(received, message)
        if message.get("method") == "session/update":
            self._on_update(received, message["params"]["sessionId"], message["params"]["update"])

    def _on_update(self, received: int, session_id: str, update: JsonObject) -> None:
        kind = update.get("sessionUpdate")
        if kind == "terminal_output_chunk":
            terminal_id = terminal_key(session_id, update["terminalId"])
            data = base64.b64decode(update["data"])
            view = self.terminals.setdefault(terminal_id, TerminalView())
            view.chunks += 1
            view.bytes += len(data)
            if self.on_chunk is not None:
                self.on_chunk(received, terminal_id, data, False)
        elif kind == "terminal_update":
            terminal_id = terminal_key(session_id, update["terminalId"])
            view = self.terminals.setdefault(terminal_id, TerminalView())
            output = update.get("output")
            if output is not None:
                view.snapshots += 1
                if self.on_chunk is not None:
                    self.on_chunk(received, terminal_id, base64.b64decode(output["data"]), True)
            view.fields.update({k: v for k, v in update.items() if k != "output"})
        elif kind == "state_update":
            self.state = update
            if "background" in update:
                self.background = update["background"]
        elif kind in ("tool_call", "tool_call_update"):
            self._on_tool_call(received, session_id, update)

    def _on_tool_call(self, received: int, session_id: str, update: JsonObject) -> None:
        """A plain v1 client's tool call: the fields merged, and the content's text a snapshot."""
        key = terminal_key(session_id, update["toolCallId"])
        view = self.calls.setdefault(key, CallView())
        if update["sessionUpdate"] == "tool_call":
            view.fields = {}
        view.fields.update({k: v for k, v in update.items() if v is not None and k != "content"})
        texts = [
            item["content"]["text"]
            for item in update.get("content") or []
            if item.get("type") == "content" and item["content"].get("type") == "text"
        ]
        if not texts or view.fields.get("kind") != "execute":
            return
        data = "\n\n".join(texts).encode()
        view.updates += 1
        view.text_bytes += len(data)
        if self.on_chunk is not None:
            self.on_chunk(received, key, data, True)


@contextlib.contextmanager
def model_process(scenario: str) -> Iterator[str]:
    """The scripted model in a process of its own (so that serving many Claude Codes never
    holds up the client's reading in this one); its base URL."""
    command = [sys.executable, "-m", "claude_bg_acp.scripted_model", "--scenario", scenario]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as model:
        try:
            assert model.stdout is not None
            listening = model.stdout.readline().split()
            if listening[:1] != ["listening"]:
                raise RuntimeError(f"the scripted model did not start: {listening}")
            yield listening[1]
        finally:
            model.terminate()


# --- measuring helpers --------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def vm_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid: int) -> int:
    """utime + stime of one process, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


class RssSampler:
    """Samples a process's VmRSS on a thread; ``baseline`` is the first sample."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.baseline = vm_rss_kib(pid)
        self.peak = self.baseline
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak = max(self.peak, vm_rss_kib(self.pid))

    def stop(self) -> float:
        """Peak growth over the baseline, in MiB."""
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, vm_rss_kib(self.pid))
        return (self.peak - self.baseline) / 1024


def open_fifo_for_writing(path: Path, timeout: float = 60.0) -> int:
    """Open ``path`` for writing once its reader (the background ``cat``) has opened it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
            continue
        os.set_blocking(fd, True)
        return fd


# --- numbered lines: written by the benchmark, timed whole at the client ------------------------


def numbered_line(shell: int, seq: int, pad: int = 40) -> bytes:
    """``<shell> <seq> xxx...\\n``: what the line benchmarks write, so the client can tell each
    line (and its shell) from its bytes alone, whatever terminal or chunking carries it."""
    return b"%d %d %s\n" % (shell, seq, b"x" * pad)


class LineArrivals:
    """An ``on_chunk`` hook that records when each numbered line arrived WHOLE (its newline too).

    Chunks are appended per terminal and snapshots replace (the TypeScript adapter sends its
    first output as a snapshot). A line is ``(shell, seq)``; the first time it is seen complete
    counts. ``out_of_order`` counts lines that did not come right after the previous one of their
    shell (a gap or a repeat; a snapshot repeating lines already seen is not counted). Lines that
    are not numbered (a placeholder text, a closing line that leaked) are counted in ``foreign``.
    """

    def __init__(self) -> None:
        self.arrived: dict[tuple[int, int], int] = {}
        self.out_of_order = 0
        self.foreign = 0
        self._next: dict[int, int] = {}
        self._buffers: dict[str, bytearray] = {}

    def __call__(self, received: int, terminal_id: str, data: bytes, replaces: bool) -> None:
        buffer = self._buffers.setdefault(terminal_id, bytearray())
        if replaces:
            buffer.clear()
        buffer += data
        end = buffer.rfind(b"\n")
        if end < 0:
            return
        for line in bytes(buffer[:end]).split(b"\n"):
            self._line(received, line)
        del buffer[: end + 1]

    def _line(self, received: int, line: bytes) -> None:
        fields = line.split(b" ", 2)
        try:
            key = (int(fields[0]), int(fields[1]))
        except (ValueError, IndexError):
            self.foreign += 1
            return
        if key in self.arrived:
            return
        self.arrived[key] = received
        shell, seq = key
        if seq != self._next.get(shell, 0):
            self.out_of_order += 1
        self._next[shell] = seq + 1


def latencies_ms(written: dict[tuple[int, int], int], arrived: dict[tuple[int, int], int]) -> list[float]:
    """write -> whole line at the client, in ms, of every written line that arrived."""
    return [(arrived[key] - at) / 1e6 for key, at in written.items() if key in arrived]
