"""End to end for the agent's own ``/tasks`` and ``/stop``: the real CLI starts two background
shells for the scripted model (``bg_from_prompt``), and a client lists them and stops one, by
number and by text, with no model request (the scripted model counts them).

A Zed-like client (Zed's capabilities, its transcript read by Zed's rules: ``ZedView``) drives
the agent over raw stdio (``StdioAgent``), so that the test can look at the process table
between the steps: the stopped shell's process is gone, the other runs on. The official client
plays a v2 client (the command's own ``running`` and ``idle``) and a plain v1 one (the stopped
shell's card ends as a stopped shell's does: ``PlainView``). Every message is valid against the
official schema of its version (and, v1, Toad's rules).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import run_client
from tests.support.driver import PLAIN_CAPABILITIES
from tests.support.plain import PlainView
from tests.support.processes import processes_with
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, ZedView

pytestmark = pytest.mark.live

ALPHA = "for i in $(seq 1 600); do echo alpha-$i; sleep 0.2; done"
BETA = "for i in $(seq 1 600); do echo beta-$i; sleep 0.2; done"
TWO_SHELLS = f"[scenario:bg_from_prompt] Start <command>{ALPHA}</command> and <command>{BETA}</command>."
LISTED = re.compile(r"^(\d+)\. shell: (.*?) — running", re.MULTILINE)


def numbers_of(listing: str) -> dict[str, int]:
    """The number ``/tasks`` gave each command."""
    return {command: int(number) for number, command in LISTED.findall(listing)}


def requests(live: LiveModel) -> int:
    return len(live.model.messages_requests())


# --- a Zed-like client ---------------------------------------------------------------------------


class Zed:
    """Zed's side of one session over raw stdio: prompts, their answers and what the agent said."""

    def __init__(self, live: LiveModel, workdir: Path) -> None:
        self.agent = StdioAgent(env=live.env, allow=True)
        init = {"protocolVersion": 1, "clientCapabilities": ZED_CAPABILITIES, "clientInfo": ZED_CLIENT_INFO}
        self.agent.call(0, "initialize", init)
        new = self.agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []}, timeout=30)
        self.session_id: str = new["result"]["sessionId"]
        self._ids = iter(range(2, 100))

    def prompt(self, text: str) -> tuple[dict[str, Any], str]:
        """The prompt's answer, and the agent's text before it."""
        request_id = next(self._ids)
        seen = len(self.agent.lines)
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
        answer = self.agent.call(request_id, "session/prompt", params, timeout=60)
        said = "".join(
            line["params"]["update"]["content"]["text"]
            for line in self.agent.lines[seen:]
            if line.get("method") == "session/update"
            and line["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        return answer, said

    def wait_output(self, text: str) -> None:
        def shows(line: dict[str, Any]) -> bool:
            meta = line.get("params", {}).get("update", {}).get("_meta") or {}
            return text in str(meta.get("terminal_output", {}).get("data", ""))

        self.agent.next_message(shows, timeout=30)

    def wait_exit(self) -> None:
        def exited(line: dict[str, Any]) -> bool:
            meta = line.get("params", {}).get("update", {}).get("_meta") or {}
            return "terminal_exit" in meta

        self.agent.next_message(exited, timeout=30)

    def view(self) -> ZedView:
        view = ZedView.replay(self.session_id, self.agent.lines, self.agent.sent)
        assert not view.problems(), "\n".join(view.problems())
        return view


def shells(live: LiveModel, word: str) -> list[int]:
    marker = "CLAUDE_CODE_TMPDIR=" + live.env["CLAUDE_CODE_TMPDIR"]
    return [pid for pid, cmd in processes_with(marker).items() if f"echo {word}-" in cmd]


def wait_gone(live: LiveModel, word: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while shells(live, word):
        assert time.monotonic() < deadline, f"the {word} shell still runs"
        time.sleep(0.05)  # polling another process's table: there is no event to await


def test_a_zed_user_lists_the_shells_and_stops_them_one_at_a_time(live: LiveModel, workdir: Path) -> None:
    zed = Zed(live, workdir)
    answer, _ = zed.prompt(TWO_SHELLS)
    assert answer["result"]["stopReason"] == "end_turn"
    zed.wait_output("alpha-3")
    zed.wait_output("beta-3")
    assert shells(live, "alpha") and shells(live, "beta")
    before = requests(live)

    answer, listing = zed.prompt("/tasks")
    assert answer["result"] == {"stopReason": "end_turn"}
    numbers = numbers_of(listing)
    assert set(numbers) == {ALPHA, BETA} and len(set(numbers.values())) == 2, listing

    answer, said = zed.prompt(f"/stop {numbers[ALPHA]}")
    assert answer["result"] == {"stopReason": "end_turn"} and said.startswith(f"Stopping {numbers[ALPHA]}.")
    zed.wait_exit()
    wait_gone(live, "alpha")
    assert shells(live, "beta"), "the other shell runs on"

    for refused, why in [
        (f"/stop {numbers[ALPHA]}", "No background work numbered"),
        ("/stop gamma", "No running"),
    ]:
        answer, said = zed.prompt(refused)
        assert answer["result"] == {"stopReason": "end_turn"} and said.startswith(why), said
    answer, said = zed.prompt("/stop beta-$i")
    assert said.startswith(f"Stopping {numbers[BETA]}.")
    zed.wait_exit()
    wait_gone(live, "beta")
    assert requests(live) == before, "no model request for the agent's own commands"

    assert zed.agent.close() == 0
    violations = validate_transcript(zed.agent.lines, zed.agent.sent, 1)
    assert not violations, "\n".join(violations)
    updates = [line["params"] for line in zed.agent.lines if line.get("method") == "session/update"]
    check_updates(((params["sessionId"], params["update"]) for params in updates), 1)
    view = zed.view()
    for command in (ALPHA, BETA):
        (call,) = view.calls(command)
        (terminal,) = view.drawn(call)
        assert terminal.exit == (None, "SIGKILL"), "its card ends as a stopped shell's does"


# --- the official client: v2 and plain v1 ------------------------------------------------------


def test_a_v2_client_gets_the_commands_own_running_and_idle(live: LiveModel, workdir: Path) -> None:
    run = run_client(
        {
            "agent": live.agent(),
            "client": "v2-unstable",
            "cwd": str(workdir),
            "steps": [
                {"op": "prompt", "text": TWO_SHELLS},
                {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
                {"op": "waitBackground", "length": 2},
                {"op": "prompt", "id": "list", "text": "/tasks"},
                {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
                {"op": "prompt", "id": "stop", "text": "/stop alpha"},
                {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
                {"op": "waitBackground", "length": 1},
                {"op": "closeSession"},
            ],
        },
        timeout=60,
    )
    assert "messageId" in run.response("list")["result"] and "messageId" in run.response("stop")["result"]
    updates = run.raw_updates()
    asked = [i for i, u in enumerate(updates) if u["sessionUpdate"] == "user_message"]
    assert len(asked) == 3
    command_turns = [
        (u["state"], u.get("stopReason"))
        for u in updates[asked[1] - 1 :]
        if u["sessionUpdate"] == "state_update"
    ]
    assert command_turns[:4] == [("running", None), ("idle", "end_turn")] * 2, command_turns
    listing = "".join(
        u["content"]["text"]
        for u in updates[asked[1] : asked[2]]
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert set(numbers_of(listing)) == {ALPHA, BETA}
    assert len(live.model.messages_requests()) == 2, "the shells' turn (its call, its text) and nothing more"


def test_a_plain_client_sees_the_stopped_shells_card_end_as_stopped(live: LiveModel, workdir: Path) -> None:
    running = {"status": "in_progress", "content": "$present"}
    run = run_client(
        {
            "agent": live.agent(),
            "client": "v1",
            "capabilities": PLAIN_CAPABILITIES,
            "clientInfo": {"name": "acpx"},
            "cwd": str(workdir),
            "steps": [
                {"op": "prompt", "text": TWO_SHELLS},
                {
                    "op": "waitFor",
                    "update": "tool_call_update",
                    "match": {**running, "title": BETA},
                    "count": 2,
                },
                {"op": "prompt", "id": "stop", "text": "/stop beta"},
                {"op": "waitFor", "update": "tool_call_update", "match": {"status": "failed", "title": BETA}},
                {
                    "op": "waitFor",
                    "update": "tool_call_update",
                    "match": {**running, "title": ALPHA},
                    "fresh": True,
                },
                {"op": "closeSession"},
            ],
        },
        timeout=60,
    )
    assert run.stop_reasons() == ["end_turn", "end_turn"]
    view = PlainView.of_run(run)
    assert not view.problems, view.problems
    beta = view.call(BETA)
    assert beta.text.endswith("\n\nEnded by signal SIGKILL.") and beta.raw_output["signal"] == "SIGKILL"
    assert re.search(r"Stopping \d\. shell: " + re.escape(BETA), view.agent_text), view.agent_text
    assert len(live.model.messages_requests()) == 2
