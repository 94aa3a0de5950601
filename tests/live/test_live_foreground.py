"""End to end: the real bundled Claude Code CLI, the scripted local model, our agent over
stdio, and the official ACP client (v1 and v2). Every agent line is schema-checked and the
client must report no dropped notification (``run_client`` asserts both)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.scripted_model.scenarios import ACK
from tests.conftest import LiveModel
from tests.support.acp_client import run_client
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

pytestmark = pytest.mark.live


def script(live: LiveModel, client: str, workdir: Path, steps: list[dict[str, object]]) -> dict[str, object]:
    return {"agent": live.agent(), "client": client, "cwd": str(workdir), "steps": steps}


def test_v2_text_turn(live: LiveModel, workdir: Path) -> None:
    run = run_client(
        script(
            live,
            "v2",
            workdir,
            [
                {"op": "prompt", "id": "p", "text": "[scenario:text] Say hello."},
                {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
            ],
        )
    )
    message_id = run.response("p")["result"]["messageId"]
    # The session's commands come before the turn (see test_live_surface).
    turn = [u for u in run.raw_updates() if u["sessionUpdate"] != "available_commands_update"]
    assert turn[0]["sessionUpdate"] == "state_update" and turn[0]["state"] == "running"
    assert {"sessionUpdate": "user_message", "messageId": message_id}.items() <= next(
        u for u in turn if u["sessionUpdate"] == "user_message"
    ).items()
    assert "Hello from the scripted model." in run.agent_text()
    chunks = [u for u in turn if u["sessionUpdate"] == "agent_message_chunk"]
    assert all(c.get("messageId") for c in chunks)
    final = turn[-1]
    assert final["sessionUpdate"] == "state_update" and final["state"] == "idle"
    assert final["stopReason"] == "end_turn" and final["background"] == []


def test_v1_text_turn(live: LiveModel, workdir: Path) -> None:
    run = run_client(script(live, "v1", workdir, [{"op": "prompt", "id": "p", "text": "[scenario:text] Hi"}]))
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    assert "Hello from the scripted model." in run.agent_text()
    assert not [u for u in run.raw_updates() if u["sessionUpdate"] == "state_update"]


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_foreground_bash_tool_call(live: LiveModel, workdir: Path, client: str) -> None:
    steps: list[dict[str, object]] = [{"op": "prompt", "id": "p", "text": "[scenario:fg_bash] Run echo."}]
    if client == "v2":
        steps.append({"op": "waitIdle", "match": {"stopReason": "end_turn"}})
    run = run_client(script(live, client, workdir, steps))
    calls = [u for u in run.raw_updates() if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert calls[0]["status"] == "pending"
    # Its input: still pending (ended within the grace that shows a call asked nothing running).
    given = next(u for u in calls if "rawInput" in u)
    assert given["title"] == "echo hello-fg" and given["kind"] == "execute"
    assert given["rawInput"]["command"] == "echo hello-fg"
    done = calls[-1]
    assert done["status"] == "completed"
    assert "hello-fg" in done["content"][0]["content"]["text"]
    assert len({c["toolCallId"] for c in calls}) == 1


@pytest.mark.parametrize(("policy", "status"), [("allow_once", "completed"), ("reject_once", "failed")])
def test_permission_request(live: LiveModel, workdir: Path, policy: str, status: str) -> None:
    steps: list[dict[str, object]] = [
        {"op": "prompt", "id": "p", "text": "[scenario:permission] Touch a file."},
        {"op": "waitIdle"},
    ]
    run = run_client({**script(live, "v2", workdir, steps), "permission": policy})
    (request,) = run.permission_requests
    assert request["params"]["subject"]["toolCall"]["rawInput"]["command"] == "touch perm-test.txt"
    states = [u["state"] for u in run.state_updates()]
    assert states[:3] == ["running", "requires_action", "running"]
    final_call = [u for u in run.raw_updates() if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final_call["status"] == status
    assert (workdir / "perm-test.txt").exists() == (status == "completed")


def test_cancel_ends_the_turn_as_cancelled(live: LiveModel, workdir: Path) -> None:
    steps: list[dict[str, object]] = [
        {"op": "prompt", "id": "p", "text": "[scenario:permission] Touch a file."},
        {"op": "waitForPermission"},
        {"op": "cancel"},
        {"op": "waitIdle", "match": {"stopReason": "cancelled"}},
    ]
    run = run_client({**script(live, "v2", workdir, steps), "permission": "hold"})
    assert [m for m in run.agent_messages("$/cancel_request")]
    assert not (workdir / "perm-test.txt").exists()


def test_a_waiting_prompt_can_be_withdrawn(live: LiveModel, workdir: Path) -> None:
    """A v2 prompt sent during a turn waits; ``$/cancel_request`` for it answers -32800."""
    steps: list[dict[str, object]] = [
        {"op": "prompt", "id": "first", "text": "[scenario:permission] Touch a file."},
        {"op": "waitForPermission"},
        {"op": "prompt", "id": "second", "text": "[scenario:text] And then?", "await": False},
        {"op": "cancelRequest", "step": "second"},
        {"op": "awaitResponse", "step": "second", "expectError": -32800},
        {"op": "answerPermission", "policy": "allow_once"},
        {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
    ]
    run = run_client({**script(live, "v2", workdir, steps), "permission": "hold"})
    inserted = [u for u in run.raw_updates() if u["sessionUpdate"] == "user_message"]
    assert len(inserted) == 1, "the withdrawn prompt was never inserted"


def test_v2_a_prompt_sent_during_claude_codes_own_turn_waits_for_its_idle(
    live: LiveModel, workdir: Path
) -> None:
    """A prompt sent while Claude Code's follow-up turn runs (its answer held until the client
    has sent the prompt) waits: that turn ends with an idle (consecutive turns have an idle
    boundary), then the prompt is inserted and runs; a client waiting for its prompt's idle
    gets the one after its answer."""
    release = workdir / "prompt-sent"
    steps: list[dict[str, object]] = [
        {"op": "prompt", "text": f"[scenario:bg_slow_follow_up] [release:{release}] Run a quick job."},
        {"op": "waitFor", "id": "exit", "update": "terminal_update", "match": {"exitStatus": "$present"}},
        {"op": "prompt", "id": "next", "text": "[scenario:text] Anything else?"},
        {"op": "touch", "path": str(release)},
        {"op": "waitIdle", "id": "done", "match": {"stopReason": "end_turn"}},
    ]
    run = run_client(script(live, "v2", workdir, steps))
    entries = run.update_entries()
    message_id = run.response("next")["result"]["messageId"]
    [inserted] = [
        i
        for i, e in enumerate(entries)
        if e["update"].get("messageId") == message_id and e["update"]["sessionUpdate"] == "user_message"
    ]
    states = [
        e["update"]["state"] for e in entries[:inserted] if e["update"]["sessionUpdate"] == "state_update"
    ]
    assert states[-2:] == ["idle", "running"], "the follow-up turn ends, then the prompt's turn begins"
    answer = [e["t"] for e in entries[inserted:] if e["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert answer and max(answer) <= run.response("done")["matched"]["t"]
    assert "Hello from the scripted model." in run.agent_text()


BURST = "sleep 1; head -c 40000000 /dev/zero | tr '\\0' x; echo; echo burst-done"
"""A shell that starts once its turn is over, then prints 40 MB and ends."""


def state_of(message: dict[str, Any]) -> dict[str, Any] | None:
    update = message.get("params", {}).get("update", {})
    return update if update.get("sessionUpdate") == "state_update" else None


def wait_until_stored(config_dir: str, session_id: str, words: str, timeout: float = 30) -> None:
    """Wait until Claude Code's stored conversation has ``words`` (what it answered)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stored = list(Path(config_dir).glob(f"projects/*/{session_id}.jsonl"))
        if stored and words in stored[0].read_text():
            return
        time.sleep(0.05)  # another process's file: there is no event to await
    raise AssertionError(f"Claude Code never stored {words!r}")


def test_v2_a_client_that_stalls_through_a_follow_up_gets_it_and_its_next_prompt_at_once(
    live: LiveModel, workdir: Path
) -> None:
    """The client stops reading while a shell prints 40 MB and ends, and while Claude Code's
    follow-up turn for it runs and ends. Catching up, the agent reads that file to its end long
    after: what it reports does not depend on it. The client gets each turn as running, then
    idle with its stop reason (never a running with no turn behind it, or an idle without one),
    and the prompt it sends once it has the shell's exit goes in at once and ends ``end_turn``."""
    agent = StdioAgent(env=live.env, allow=True)
    agent.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "stall", "version": "1"}})
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]

    def prompt(request_id: int, words: str) -> None:
        agent.request(
            request_id,
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]},
        )

    def idle(stop_reason: str) -> Any:
        return lambda m: (state_of(m) or {}).get("stopReason") == stop_reason

    prompt(2, f"[scenario:bg_from_prompt] <command>{BURST}</command>")
    agent.next_message(idle("end_turn"), timeout=60)
    agent.pause_reading()
    wait_until_stored(live.env["CLAUDE_CONFIG_DIR"], session_id, ACK)
    agent.resume_reading()
    # Caught up: the file was read to its end, the shell's exit and the list without it are out.
    agent.next_message(lambda m: "exitStatus" in m.get("params", {}).get("update", {}), timeout=60)
    agent.next_message(lambda m: (state_of(m) or {}).get("background") == [], timeout=30)
    prompt(3, "[scenario:text] Anything else?")
    agent.response(3, timeout=30)
    agent.next_message(idle("end_turn"), timeout=30)
    assert agent.close() == 0

    assert not validate_transcript(agent.lines, agent.sent, 2)
    updates = [m["params"] for m in agent.lines if m.get("method") == "session/update"]
    check_updates(((u["sessionId"], u["update"]) for u in updates), 2)
    transitions: list[tuple[str, str | None]] = []
    for update in (state_of(m) for m in agent.lines):
        if update is None or update["state"] == "requires_action":
            continue  # a permission question within the first turn
        if not transitions or transitions[-1][0] != update["state"]:
            transitions.append((update["state"], update.get("stopReason")))
    assert transitions == [("running", None), ("idle", "end_turn")] * 3, "the prompt, the follow-up, the next"
    terminals = [u["update"] for u in updates if u["update"]["sessionUpdate"] == "terminal_update"]
    assert terminals[-1]["exitStatus"] == {"exitCode": 0, "signal": None}
    assert "Anything else?" in str(live.model.messages_requests()[-1].body["messages"])


@pytest.mark.parametrize(("mode", "asked", "created"), [("plan", 0, False), ("acceptEdits", 0, True)])
def test_v1_session_modes_switch_claude_codes_permission_mode(
    live: LiveModel, workdir: Path, mode: str, asked: int, created: bool
) -> None:
    steps: list[dict[str, object]] = [
        {
            "op": "request",
            "id": "mode",
            "method": "session/set_mode",
            "params": {"sessionId": "$sessionId", "modeId": mode},
        },
        {"op": "prompt", "id": "p", "text": "[scenario:permission] Touch a file."},
        {
            "op": "request",
            "id": "bad",
            "method": "session/set_mode",
            "params": {"sessionId": "$sessionId", "modeId": "nope"},
            "expectError": -32602,
        },
    ]
    run = run_client(script(live, "v1", workdir, steps))
    offered = [m["id"] for m in run.response("newSession")["result"]["modes"]["availableModes"]]
    assert offered[:3] == ["default", "acceptEdits", "plan"]
    assert run.response("mode")["result"] == {}
    assert [u for u in run.raw_updates() if u["sessionUpdate"] == "current_mode_update"] == [
        {"sessionUpdate": "current_mode_update", "currentModeId": mode}
    ]
    assert len(run.permission_requests) == asked
    assert (workdir / "perm-test.txt").exists() == created


def test_v2_a_prompt_sent_again_with_its_idempotency_key_is_inserted_once(
    live: LiveModel, workdir: Path
) -> None:
    """Idempotency Keys RFD, end to end (raw requests: the official client's ``prompt`` sends no
    key): two attempts of one submission at once, then a third after its turn ended. Each is
    answered with the one ``messageId``; the user message is shown once and Claude Code gets
    it once; a new key is a new submission."""
    agent = StdioAgent(env=live.env)
    agent.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "retry", "version": "1"}})
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    words = "[scenario:text] Say hello once."
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": words}], "idempotencyKey": "sub-1"}
    agent.request(2, "session/prompt", params)
    agent.request(3, "session/prompt", params)
    answers = [agent.response(2, timeout=60)["result"], agent.response(3, timeout=60)["result"]]
    agent.next_message(lambda m: (state_of(m) or {}).get("stopReason") == "end_turn", timeout=60)
    answers.append(agent.call(4, "session/prompt", params)["result"])
    agent.call(
        5,
        "session/prompt",
        {**params, "prompt": [{"type": "text", "text": "[scenario:text] Again."}], "idempotencyKey": "sub-2"},
    )
    agent.next_message(lambda m: (state_of(m) or {}).get("stopReason") == "end_turn", timeout=60)
    assert agent.close() == 0

    assert not validate_transcript(agent.lines, agent.sent, 2)
    updates = [m["params"] for m in agent.lines if m.get("method") == "session/update"]
    check_updates(((u["sessionId"], u["update"]) for u in updates), 2)
    shown = [u["update"] for u in updates if u["update"]["sessionUpdate"] == "user_message"]
    assert [u["content"][0]["text"] for u in shown] == [words, "[scenario:text] Again."]
    assert answers == [{"messageId": shown[0]["messageId"]}] * 3
    assert str(live.model.messages_requests()[-1].body["messages"]).count("Say hello once.") == 1
