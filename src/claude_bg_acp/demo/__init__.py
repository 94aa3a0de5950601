"""``claude-bg-acp demo``: background work, watched offline, in well under a minute.

No API key, no editor and no Node.js. The scripted model (a stand-in Anthropic Messages API
on 127.0.0.1, ``claude_bg_acp.scripted_model``) runs in this process; the agent runs as a
subprocess (``python -m claude_bg_acp``) with the real Claude Code CLI of the SDK pointed at
it, with a scratch home and config dir (``offline_env``), so nothing leaves the machine. The
package's small ACP client (``claude_bg_acp.acp.client``) drives it through two scenes, and
every message is printed as a timestamped transcript while it happens (``transcript``):

1. ACP v2. The prompt makes Claude Code start a background shell that prints ``tick N`` every
   0.4 s. Claude Code ends its turn at once; the shell goes on as an agent-owned terminal whose
   lines arrive live, listed in the session's ``background`` list. The client stops exactly
   that shell with ``terminal/cancel`` and sees its exit status, then the list empty.
2. ACP v1. The prompt makes Claude Code delegate a job to a background subagent and end its
   turn. A v1 client stops listening at the prompt's answer, so the agent holds the answer
   until the subagent finished: its report (the result of its Agent tool call, as a v1 client
   without child sessions gets it) and Claude's follow-up arrive first.

Each agent exits when its stdin closes, as when the editor goes away. The demo exits 0 when
everything happened as it should, 1 (saying what did not) otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from claude_bg_acp import __version__
from claude_bg_acp.acp.client import AgentError, AgentProcess, Message, update_of
from claude_bg_acp.demo.transcript import Transcript, result_text, short
from claude_bg_acp.scripted_model import offline_env, serve_in_thread
from claude_bg_acp.scripted_model.scenarios import ACK, DELEGATED, REPORTED

WAIT = 30.0
"""Seconds any one step may take (the first one starts Claude Code)."""
INFO = {"name": "claude-bg-acp demo", "version": __version__}
COMMAND = 'for i in $(seq 1 100); do echo "tick $i of 100"; sleep 0.4; done'
SHELL_PROMPT = (
    f"[scenario:bg_from_prompt] Count slowly in the background, please. <command>{COMMAND}</command>"
)
STOP_AFTER = "tick 5 of"
SUBAGENT_PROMPT = "[scenario:agent_bg] Please have a helper do a small job in the background."
LOG_TAIL = 3000
EXIT_WAIT = 20.0
"""Seconds the agent gets to close its sessions and exit after its stdin closed."""


class DemoError(Exception):
    """The demo did not go as it should; the message says what was expected."""


def run() -> int:
    transcript = Transcript()
    with tempfile.TemporaryDirectory(prefix="claude-bg-acp-demo-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        env = offline_env(model.base_url, root / "offline")
        workdir = root / "project"
        workdir.mkdir()
        transcript.say(f"claude-bg-acp {__version__} demo: the scripted model is on {model.base_url};")
        transcript.say("the agent runs the real Claude Code CLI against it, offline. Every message follows.")
        log_path = root / "agent.log"
        with log_path.open("wb") as log:
            try:
                with agent(env, workdir, log, transcript) as client:
                    background_shell(client, transcript, workdir)
                with agent(env, workdir, log, transcript) as client:
                    held_prompt(client, transcript, workdir)
            except (DemoError, AgentError) as error:
                transcript.say()
                transcript.say(transcript.paint("31", f"The demo failed: {error}"))
                transcript.say(
                    f"The agent's log ends with:\n{log_path.read_text(errors='replace')[-LOG_TAIL:]}"
                )
                return 1
            except KeyboardInterrupt:
                transcript.say("(interrupted; the agent was stopped)")
                return 130
    transcript.say()
    transcript.say("Done: both scenes went as they should, and both agents exited.")
    return 0


@contextlib.contextmanager
def agent(
    env: dict[str, str], workdir: Path, log: IO[bytes], transcript: Transcript
) -> Iterator[AgentProcess]:
    """The agent as a subprocess, stopped whatever happens; a clean end is an exit with 0, and
    nothing it started outlives it (its process group is empty)."""
    client = AgentProcess(
        [sys.executable, "-m", "claude_bg_acp"],
        env,
        cwd=workdir,
        stderr=log,
        allow=True,
        on_message=lambda direction, message, _at: transcript.show(direction, message),
    )
    try:
        yield client
        transcript.flush()
        code = client.close(EXIT_WAIT)
        if client.outlived():
            raise DemoError("processes the agent started outlived it")
    except BaseException:
        client.stop()
        raise
    transcript.say(
        f"(the client closed the agent's stdin; the agent closed its session and exited with {code})"
    )
    if code != 0:
        raise DemoError(f"the agent exited with {code}")


def says(message: Message, text: str) -> bool:
    update = update_of(message, "agent_message_chunk")
    return update is not None and text in (update.get("content") or {}).get("text", "")


def reports(message: Message, text: str) -> bool:
    """A tool call ends with ``text`` in its result: a v1 client without child sessions gets a
    background subagent's report as its Agent tool call's final content."""
    update = update_of(message, "tool_call_update")
    return update is not None and update.get("status") == "completed" and text in result_text(update)


def open_session(client: AgentProcess, initialize: Message, workdir: Path) -> str:
    """``initialize``, then ``session/new`` in ``workdir``: the session's id."""
    client.result(client.ask("initialize", initialize), WAIT)
    return str(
        client.result(client.ask("session/new", {"cwd": str(workdir), "mcpServers": []}), WAIT)["sessionId"]
    )


# --- 1. a background shell ---------------------------------------------------------------------


def background_shell(client: AgentProcess, transcript: Transcript, workdir: Path) -> None:
    transcript.heading("1. A background shell, live (ACP v2)")
    session = open_session(client, {"protocolVersion": 2, "info": INFO, "capabilities": {}}, workdir)
    client.result(client.ask("session/prompt", {"sessionId": session, "prompt": [text(SHELL_PROMPT)]}), WAIT)
    opened = client.wait_for(lambda m: bool(update_of(m, "terminal_update")), WAIT, "a terminal")
    terminal = client.messages[opened]["params"]["update"]["terminalId"]

    def ended_turn(message: Message) -> bool:
        update = update_of(message, "state_update")
        return update is not None and update.get("state") == "idle" and update.get("stopReason") == "end_turn"

    client.wait_for(ended_turn, WAIT, "the end of the turn")
    output = Output(terminal)
    client.wait_for(lambda m: STOP_AFTER in output.add(m), WAIT, f"{STOP_AFTER!r} in the terminal")
    transcript.say(
        f"(the turn is over, the shell goes on; the client stops exactly that shell: {short(terminal)})"
    )
    since = client.seen
    client.result(client.ask("terminal/cancel", {"sessionId": session, "terminalId": terminal}), WAIT)

    def exited(message: Message) -> bool:
        update = update_of(message, "terminal_update")
        return update is not None and "exitStatus" in update

    exit_at = client.wait_for(exited, WAIT, "the terminal's exit", since)
    exit_status = client.messages[exit_at]["params"]["update"]["exitStatus"]

    def emptied(message: Message) -> bool:
        update = update_of(message, "state_update")
        return update is not None and update.get("background") == []

    client.wait_for(emptied, WAIT, "an empty background list", exit_at)
    lines = [line for line in output.text().splitlines() if line]
    transcript.say(
        f"(the client assembled {len(lines)} lines, {lines[0]!r} … {lines[-1]!r}; exit status {exit_status})"
    )


class Output:
    """A terminal's bytes as the client assembles them from ``terminal_output_chunk``."""

    def __init__(self, terminal_id: str) -> None:
        self.terminal_id = terminal_id
        self.data = b""

    def add(self, message: Message) -> str:
        update = update_of(message, "terminal_output_chunk")
        if update is not None and update["terminalId"] == self.terminal_id:
            self.data += base64.b64decode(update["data"])
        return self.text()

    def text(self) -> str:
        return self.data.decode(errors="replace")


# --- 2. a held v1 prompt -----------------------------------------------------------------------


def held_prompt(client: AgentProcess, transcript: Transcript, workdir: Path) -> None:
    transcript.heading("2. A held v1 prompt while a background subagent finishes (ACP v1)")
    session = open_session(
        client, {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": INFO}, workdir
    )
    prompt = client.ask("session/prompt", {"sessionId": session, "prompt": [text(SUBAGENT_PROMPT)]})
    delegated = client.wait_for(lambda m: says(m, DELEGATED), WAIT, "Claude's word that it delegated")
    transcript.flush()
    transcript.say(
        "(Claude Code ended its turn; the answer waits for the background subagent that turn started)"
    )
    outcome = client.result(prompt, WAIT)
    # In order: the end of the turn, the subagent's report, Claude's follow-up, the answer.
    order = [
        delegated,
        client.wait_for(lambda m: reports(m, REPORTED), 0, "the subagent's report"),
        client.wait_for(lambda m: says(m, ACK), 0, "Claude's follow-up"),
        client.wait_for(lambda m: m.get("id") == prompt and "method" not in m, 0, "the answer"),
    ]
    if order != sorted(order) or outcome.get("stopReason") != "end_turn":
        raise DemoError(f"the prompt was answered {outcome} before the subagent's report and the follow-up")
    held = (client.received[order[-1]] - client.received[delegated]) / 1e9
    transcript.say(
        f"(answered {held:.1f} s after the turn ended, once the subagent had reported: "
        "a v1 client sees all of it inside the turn)"
    )


def text(words: str) -> dict[str, str]:
    return {"type": "text", "text": words}
