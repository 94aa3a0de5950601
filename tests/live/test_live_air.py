"""End to end for JetBrains AIR with the real CLI and the official v1 client: background work as
async tasks that can be stopped, and subagents in the draft form.

The official client does not know AIR's updates and drops them; the steps wait on the agent's
raw lines for those, and ``run_client`` checks them against AIR's contract while every other
message validates against the v1 schema (``tests.support.air``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.air import ASYNC_TASKS, NATIVE_SUBAGENTS, air_capabilities
from tests.support.processes import processes_with

pytestmark = pytest.mark.live

SLEEP = "sleep 600"


def run_air(
    live: LiveModel, workdir: Path, capabilities: list[str], steps: list[dict[str, Any]]
) -> ClientRun:
    script = {
        "agent": live.agent(),
        "client": "v1",
        "capabilities": air_capabilities(*capabilities),
        "cwd": str(workdir),
        "steps": steps,
    }
    return run_client(script, timeout=60)


class ProcessWatch:
    """Watches the agent's processes running ``SLEEP`` while the client runs (when each was
    seen last), so the test can tell when the background command went away."""

    def __init__(self, marker: str, seen: Path) -> None:
        self.marker = marker
        self.seen = seen
        """Made once the command was seen: the client waits for it before it stops the task, so
        a command stopped faster than a scan of a loaded machine is still seen running."""
        self.last_seen: float | None = None
        self.first_seen: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        # A scan takes a while on a loaded machine: a process it finds was alive when the scan
        # began or later, so the scan's start is the time it was seen first, its end the last.
        while not self._done.wait(0.01):
            began = time.time()
            if any(SLEEP in command for command in processes_with(self.marker).values()):
                if self.first_seen is None:
                    self.first_seen = began
                    self.seen.touch()
                self.last_seen = time.time()


def wall_time(run: ClientRun, t_ms: float) -> float:
    """A time of the run (ms since it started) as wall-clock seconds."""
    return (float(run.raw["startedAtEpochMs"]) + t_ms) / 1000


def test_a_background_sleep_is_an_async_task_that_stops(live: LiveModel, workdir: Path) -> None:
    marker = "CLAUDE_CODE_TMPDIR=" + live.env["CLAUDE_CODE_TMPDIR"]
    stop = {"sessionId": "$sessionId", "asyncTaskId": "$lastAsyncTask"}
    seen = workdir.parent / "command-seen"
    with ProcessWatch(marker, seen) as watch:
        run = run_air(
            live,
            workdir,
            [ASYNC_TASKS],
            [
                {"op": "prompt", "text": f"[scenario:bg_from_prompt] Wait. <command>{SLEEP}</command>"},
                {
                    "op": "waitFor",
                    "raw": True,
                    "update": "async_task_spawned",
                    "match": {"taskType": "shell"},
                },
                {"op": "waitForFile", "path": str(seen)},
                {"op": "request", "id": "stop", "method": "_session/async_task/stop", "params": stop},
                {
                    "op": "waitFor",
                    "raw": True,
                    "update": "async_task_state_update",
                    "match": {"state": "stopped"},
                },
                {"op": "request", "id": "again", "method": "_session/async_task/stop", "params": stop},
                # The agent goes on serving the session after the stop.
                {"op": "prompt", "id": "later", "text": "[scenario:text] Anything else?"},
            ],
        )
    updates = run.raw_updates()
    spawned = next(u for u in updates if u["sessionUpdate"] == "async_task_spawned")
    task_id = spawned["asyncTaskId"]
    assert spawned["canStop"] is True and spawned["description"] == "prompt command 1"
    bash = next(u for u in updates if u.get("rawInput", {}).get("command") == SLEEP)
    assert spawned["toolCallId"] == bash["toolCallId"]
    progress = next(u for u in updates if u["sessionUpdate"] == "async_task_progress")
    assert progress["asyncTaskId"] == task_id and progress["outputFilePath"].endswith(f"/{task_id}.output")
    states = [u for u in updates if u["sessionUpdate"] == "async_task_state_update"]
    assert [u["state"] for u in states] == ["stopped"] and states[0]["asyncTaskId"] == task_id
    assert run.response("stop")["result"] == {"stopped": True}
    assert run.response("again")["result"] == {"stopped": False}
    # The command ran, and was gone once the stop was confirmed, long before the agent exited.
    assert watch.first_seen is not None and watch.last_seen is not None
    stopped_at = wall_time(run, run.response("stop")["t"])
    later_at = wall_time(run, run.response("later")["t"])
    assert watch.first_seen < stopped_at, "the command ran before the stop"
    assert watch.last_seen < later_at, "the background command outlived its stop"
    # The Bash tool call says its work went on in the background.
    backgrounded = [u for u in updates if u.get("toolCallId") == bash["toolCallId"] and "_meta" in u]
    assert backgrounded[-1]["_meta"]["jetbrains"]["air"]["asyncTasks"] == {"backgrounded": True}


def test_subagents_in_the_draft_form(live: LiveModel, workdir: Path) -> None:
    run = run_air(
        live,
        workdir,
        [NATIVE_SUBAGENTS],
        [{"op": "prompt", "id": "p", "text": "[scenario:agent_bg] Delegate."}],
    )
    root = run.session_id()
    lines = [
        (line["params"]["sessionId"], line["params"]["update"])
        for line in run.agent_messages("session/update")
    ]
    spawned_at, spawned = next(
        (i, u) for i, (_, u) in enumerate(lines) if u["sessionUpdate"] == "subagent_spawned"
    )
    child = spawned["subagentSessionId"]
    assert lines[spawned_at][0] == root
    assert spawned["name"] == "background helper" and spawned["capabilities"] == {}
    assert spawned["prompt"] == spawned["task"] and "[subagent:one]" in spawned["prompt"]
    agent_call = next(u for _, u in lines if u.get("rawInput", {}).get("description") == "background helper")
    child_updates = [(i, u) for i, (session, u) in enumerate(lines) if session == child]
    assert child_updates and all(i > spawned_at for i, _ in child_updates), (
        "spawned before the child's traffic"
    )
    stamps = {u["_meta"]["claudeCode"]["parentToolUseId"] for _, u in child_updates}
    assert stamps == {agent_call["toolCallId"]}
    assert any("subagent one finished its work" in str(u.get("content")) for _, u in child_updates)
    ended = [u for session, u in lines if u["sessionUpdate"] == "subagent_state_update"]
    assert ended == [
        {"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "completed"}
    ]
    # No update in the RFD form, and the v1 prompt was held until the subagent finished.
    assert not [u for _, u in lines if u["sessionUpdate"] in ("subagent_update", "session_message")]
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    prompt_id = next(line["id"] for line in run.client_lines if line.get("method") == "session/prompt")
    answered = next(i for i, line in enumerate(run.agent_lines) if line.get("id") == prompt_id)
    assert answered > max(i for i, line in enumerate(run.agent_lines) if "subagent_state_update" in str(line))
