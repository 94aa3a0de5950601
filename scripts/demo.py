"""A demo you can run without an API key: background work, live, through the official ACP client.

    uv sync --frozen && npm ci --prefix tests/client
    uv run --frozen python scripts/demo.py

What happens:

1. The scripted model (a stand-in Anthropic Messages API on 127.0.0.1, see
   ``claude_bg_acp.scripted_model``) starts in this process, and the real bundled Claude Code
   CLI is pointed at it with a scratch home and config dir (``offline_env``): nothing leaves
   the machine.
2. The official ACP client (``@agentclientprotocol/sdk`` 2.4.0, driven by
   ``tests/client/drive.mjs`` through ``tests/support/acp_client.run_client``) starts
   ``claude-bg-acp``, speaks protocol v2, and sends one prompt. The model answers it by starting
   a background shell that prints a line every 0.4 s.
3. The client waits for the turn to end (``state_update`` idle) while the shell keeps running,
   watches its output arrive as ``terminal_output_chunk`` updates, reads the ``background`` list,
   then stops exactly that shell with ``terminal/cancel`` and waits for its ``exitStatus`` and
   for the list to empty.

Every line between client and agent passes through a small relay (this script, started as
``demo.py --relay LOG -- claude-bg-acp``), which copies it unchanged and logs it; the demo prints
that log as a readable, timestamped transcript while it happens. At the end it prints what the
client itself assembled (its background list, the terminal's bytes and exit status) and whether
every message the agent wrote validated against the official v2 schema.

Trying it by hand in Zed, offline
---------------------------------
Zed speaks protocol v1: it shows the turn, the model's text and the Bash tool call (with the
shell's output on it when the client declares the ``_meta`` terminal-output extension), but no
background list and no per-item cancel (those are v2 only; see the README). In one shell::

    uv run --frozen python -m claude_bg_acp.scripted_model --scenario bg_from_prompt --port 8765

then add to Zed's ``settings.json`` (``zed: open settings``; use absolute paths)::

    {"agent_servers": {"Claude (background, offline)": {
        "type": "custom",
        "command": "/path/to/claude-bg-acp/.venv/bin/claude-bg-acp",
        "args": ["--log-file", "/tmp/claude-bg-acp.log", "--log-level", "DEBUG"],
        "env": {
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:8765",
            "ANTHROPIC_API_KEY": "sk-ant-offline-dummy",
            "CLAUDE_CONFIG_DIR": "/tmp/claude-offline-config",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1"}}}}

(older Zed builds take the same entry without ``"type": "custom"``). Open the agent panel, start
a thread with that agent and send e.g. ``Start <command>for i in $(seq 1 30); do echo tick $i;
sleep 1; done</command>``: every ``<command>...</command>`` becomes a background shell, and any
prompt without one gets a short text answer. ``dev: open acp logs`` shows the raw messages. The
scratch ``CLAUDE_CONFIG_DIR`` keeps your own Claude login and settings out of it; the CLI's
requests go only to ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
AGENT = Path(sys.executable).parent / "claude-bg-acp"
COMMAND = 'for i in $(seq 1 100); do echo "tick $i of 100"; sleep 0.4; done'
PROMPT = f"[scenario:bg_from_prompt] Count slowly in the background, please. <command>{COMMAND}</command>"


# --- the relay (runs as the agent process the client starts) -----------------------------------


def relay(log_path: Path, argv: list[str]) -> int:
    """Run ``argv``, copy stdin/stdout through unchanged, and log every line with its time."""
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    lock = threading.Lock()
    with log_path.open("a", buffering=1) as log:

        def note(direction: str, raw: bytes) -> None:
            try:
                message: Any = json.loads(raw)
            except ValueError:
                message = raw.decode(errors="replace")
            with lock:
                log.write(json.dumps({"t": time.monotonic(), "dir": direction, "msg": message}) + "\n")

        # Each line is logged before it is passed on, so the log keeps cause before effect.
        def pump_input(sink: IO[bytes]) -> None:
            for raw in sys.stdin.buffer:
                note("out", raw)
                sink.write(raw)
                sink.flush()
            sink.close()

        threading.Thread(target=pump_input, args=(child.stdin,), daemon=True).start()
        for raw in child.stdout:
            note("in", raw)
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
        return child.wait()


# --- the transcript ----------------------------------------------------------------------------


class Transcript:
    """Turns logged protocol lines into short, readable, timestamped lines."""

    def __init__(self, start: float, colour: bool) -> None:
        self.start = start
        self.colour = colour
        self.methods: dict[Any, str] = {}
        self.short: dict[str, str] = {}
        self.text = ""

    def paint(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def name(self, ident: str) -> str:
        """A short stable name for a long id (terminal / tool call)."""
        if ident not in self.short:
            self.short[ident] = ident if len(ident) <= 12 else f"{ident[:10]}…"
        return self.short[ident]

    def show(self, entry: dict[str, Any]) -> None:
        for line in self.describe(entry["dir"], entry["msg"]):
            stamp = self.paint("2", f"[{entry['t'] - self.start:7.3f}s]")
            arrow = (
                self.paint("36", "client → agent")
                if entry["dir"] == "out"
                else self.paint("33", "agent → client")
            )
            print(f"{stamp} {arrow}  {line}", flush=True)

    def describe(self, direction: str, message: Any) -> list[str]:
        if not isinstance(message, dict):
            return [f"(not JSON) {message!r}"]
        method = message.get("method")
        if direction == "out":
            return self._outgoing(message, method)
        if method is None:
            return self._answer(message)
        if method == "session/update":
            return self._update(message["params"]["update"])
        if method == "session/request_permission":
            params = message["params"]
            call = params.get("toolCall") or (params.get("subject") or {}).get("toolCall") or {}
            return [f"asks: {params.get('title') or call.get('title') or 'may this tool run?'}"]
        return [str(method)]

    def _outgoing(self, message: dict[str, Any], method: Any) -> list[str]:
        if method is None:
            outcome = (message.get("result") or {}).get("outcome") or {}
            return [f"answers the permission request: {outcome.get('optionId', outcome.get('outcome'))}"]
        self.methods[message.get("id")] = str(method)
        params = message.get("params") or {}
        if method == "initialize":
            return [f"initialize (protocol v{params.get('protocolVersion')})"]
        if method == "session/new":
            return [f"session/new in {params.get('cwd')}"]
        if method == "session/prompt":
            text = " ".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
            return [f"session/prompt {text!r}"]
        if method == "terminal/cancel":
            return [self.paint("1", f"terminal/cancel {self.name(params.get('terminalId', '?'))}")]
        return [str(method)]

    def _answer(self, message: dict[str, Any]) -> list[str]:
        method = self.methods.get(message.get("id"), "request")
        if "error" in message:
            return [f"{method} failed: {message['error'].get('message')}"]
        result = message.get("result") or {}
        if method == "initialize":
            info = result.get("info") or result.get("agentInfo") or {}
            return [
                f"initialize → {info.get('name')} {info.get('version')}, protocol "
                f"v{result.get('protocolVersion')}"
            ]
        if method == "session/new":
            return [f"session/new → session {result.get('sessionId')}"]
        if method == "session/prompt":
            return [f"session/prompt → accepted (messageId {result.get('messageId')})"]
        return [f"{method} → {json.dumps(result)}"]

    def _update(self, update: dict[str, Any]) -> list[str]:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.text += (update.get("content") or {}).get("text", "")
            return []
        lines = []
        if self.text:
            lines.append(f"Claude says: {self.text!r}")
            self.text = ""
        if kind == "state_update":
            state = update.get("state")
            reason = f" ({update['stopReason']})" if update.get("stopReason") else ""
            listed = ", ".join(
                f"{i.get('type')} {self.name(i.get('terminalId') or i.get('toolCallId', '?'))}"
                for i in update.get("background") or []
            )
            lines.append(self.paint("1", f"state {state}{reason}; background: [{listed}]"))
        elif kind == "terminal_update":
            ident = self.name(update["terminalId"])
            if "exitStatus" in update:
                lines.append(self.paint("1", f"terminal {ident} exited: {update['exitStatus']}"))
            elif "command" in update:
                lines.append(
                    f"terminal {ident} started: {update['command']!r} in {update.get('cwd')}"
                    f"{' (cancellable)' if update.get('capabilities') else ''}"
                )
            if update.get("output"):
                data = base64.b64decode(update["output"].get("data", ""))
                lines.append(f"terminal {ident} snapshot: {len(data)} bytes")
        elif kind == "terminal_output_chunk":
            text = base64.b64decode(update["data"]).decode(errors="replace")
            lines.append(f"terminal {self.name(update['terminalId'])} │ {text!r}")
        elif kind in ("tool_call", "tool_call_update"):
            title = f" {update['title']!r}" if update.get("title") else ""
            status = f" {update['status']}" if update.get("status") else ""
            lines.append(f"tool call {self.name(update['toolCallId'])}{title}{status}")
        elif kind == "user_message":
            lines.append("the prompt is in the conversation (user_message)")
        else:
            lines.append(str(kind))
        return lines


def follow(log_path: Path, transcript: Transcript, done: threading.Event) -> None:
    """Print the log as it grows until ``done`` is set and the log is read to its end."""
    while not log_path.exists() and not done.is_set():
        time.sleep(0.02)
    if not log_path.exists():
        return
    with log_path.open() as log:
        pending = ""
        while True:
            chunk = log.read()
            if chunk:
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    if line.strip():
                        transcript.show(json.loads(line))
            elif done.is_set():
                return
            else:
                time.sleep(0.02)


# --- the demo ----------------------------------------------------------------------------------


def demo() -> int:
    from claude_bg_acp.scripted_model import offline_env, serve_in_thread

    # The test helpers live in the repository, not in the installed package.
    sys.path.insert(0, str(ROOT))
    acp_client: Any = importlib.import_module("tests.support.acp_client")
    client_run, run_client = acp_client.ClientRun, acp_client.run_client

    if not AGENT.exists():
        print(f"{AGENT} is missing: run `uv sync --frozen` first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="claude-bg-acp-demo-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        workdir = root / "project"
        workdir.mkdir()
        log_path = root / "wire.jsonl"
        env = offline_env(model.base_url, root / "offline")
        unset: dict[str, str | None] = {name: None for name in os.environ if name not in env}
        script = {
            "agent": {
                "argv": [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--relay",
                    str(log_path),
                    "--",
                    str(AGENT),
                ],
                "env": {**unset, **env},
            },
            "client": "v2-unstable",
            "cwd": str(workdir),
            "steps": [
                {"op": "prompt", "text": PROMPT},
                {"op": "waitBackground", "contains": {"type": "terminal"}},
                {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
                {"op": "waitForTerminalBytes", "contains": "tick 8 of"},
                {"op": "snapshot", "id": "before-cancel"},
                {"op": "cancelTerminal", "id": "stop"},
                {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
                {"op": "waitBackground", "empty": True},
                {"op": "sleepMs", "ms": 200},
            ],
        }
        print(f"scripted model on {model.base_url}; agent {AGENT}; official ACP client, protocol v2")
        print(f"the model will start: {COMMAND}\n")
        transcript = Transcript(time.monotonic(), sys.stdout.isatty())
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def drive() -> None:
            try:
                outcome["run"] = run_client(script, timeout=60, check=False)
            except BaseException as exc:  # reported below
                outcome["run"] = exc
            finally:
                done.set()

        threading.Thread(target=drive, name="client", daemon=True).start()
        follow(log_path, transcript, done)
        run = outcome.get("run")
        if not isinstance(run, client_run):
            print(f"\nthe client run failed: {run!r}", file=sys.stderr)
            return 1
        return summarize(run)


def summarize(run: Any) -> int:
    print("\nWhat the official client assembled:")
    before = run.response("before-cancel")["sessions"]["main"]
    print(
        f"  background list before the cancel: {json.dumps(before.get('background'))}, "
        f"cancellable: {json.dumps(before.get('canCancelTerminal'))}"
    )
    print(f"  background list at the end:        {json.dumps(run.background)}")
    for terminal_id in run.terminal_ids:
        data = run.terminal_bytes(terminal_id)
        info = run.terminal_info(terminal_id)
        lines = data.decode(errors="replace").splitlines()
        print(
            f"  terminal {terminal_id}: {len(data)} bytes in {info.get('chunks')} chunks, "
            f"{len(lines)} lines ({lines[0]!r} … {lines[-1]!r}), exitStatus {info.get('exitStatus')}"
        )
    print(f"  terminal/cancel answered: {json.dumps(run.response('stop').get('result'))}")
    problems = run.problems()
    if problems:
        print("\nProblems:")
        for problem in problems[:20]:
            print(f"  - {problem}")
        return 1
    agent_messages = len([line for line in run.agent_lines if isinstance(line, dict)])
    print(
        f"\nAll {agent_messages} messages from the agent validated against the official ACP v2 schema; "
        f"the agent exited {run.exit_code} after stdin closed."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--relay"]:
        parser = argparse.ArgumentParser(prog="demo.py --relay")
        parser.add_argument("--relay", type=Path, required=True)
        parser.add_argument("command", nargs=argparse.REMAINDER)
        parsed = parser.parse_args(args)
        command = parsed.command[1:] if parsed.command[:1] == ["--"] else parsed.command
        return relay(parsed.relay, command)
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args(args)
    return demo()


if __name__ == "__main__":
    sys.exit(main())
