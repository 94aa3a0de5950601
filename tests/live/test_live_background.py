"""End to end for background work with the official v2 client: the real CLI runs background
shells and monitors; the client sees terminals, their bytes, the ``background`` list, and
stops one item with ``terminal/cancel`` / ``tool_call/cancel``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.processes import survivors

pytestmark = pytest.mark.live


def run_v2(live: LiveModel, workdir: Path, steps: list[dict[str, Any]], **extra: Any) -> ClientRun:
    return run_client(
        {"agent": live.agent(), "client": "v2-unstable", "cwd": str(workdir), "steps": steps, **extra},
        timeout=60,
    )


def rfd_order_holds(run: ClientRun) -> None:
    """Announce before list, final status before removal, background on every snapshot."""
    announced: set[tuple[str, str]] = set()
    finished: set[tuple[str, str]] = set()
    listed: set[tuple[str, str]] = set()
    for update in run.raw_updates():
        kind = update["sessionUpdate"]
        if kind == "terminal_update":
            announced.add(("terminal", update["terminalId"]))
            if "exitStatus" in update:
                finished.add(("terminal", update["terminalId"]))
        elif kind == "tool_call_update":
            announced.add(("tool_call", update["toolCallId"]))
            if update.get("status") in ("completed", "failed", "cancelled"):
                finished.add(("tool_call", update["toolCallId"]))
        elif kind == "state_update":
            assert isinstance(update.get("background"), list), update
            now = {(i["type"], i.get("terminalId") or i.get("toolCallId")) for i in update["background"]}
            assert now <= announced, f"listed before announced: {now - announced}"
            assert not now & finished, f"listed after its final status: {now & finished}"
            assert not (listed - now) - finished, f"removed before final: {(listed - now) - finished}"
            assert len(now) == len(update["background"]), "an item listed twice"
            listed = now


@pytest.mark.portable
def test_background_shell_streams_and_exits(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_completed] Run a background job."},
            {"op": "waitBackground", "contains": {"type": "terminal"}},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
            {"op": "waitBackground", "empty": True},
            {"op": "waitIdle", "match": {"stopReason": "end_turn"}, "after": "2"},
        ],
    )
    rfd_order_holds(run)
    (terminal_id,) = run.terminal_ids
    assert run.terminal_bytes(terminal_id) == b"hello-from-bg\nbg-finished\n"
    first = next(u for u in run.raw_updates() if u["sessionUpdate"] == "terminal_update")
    assert first["command"].startswith("echo hello-from-bg") and first["cwd"] == str(workdir)
    assert first["capabilities"] == {"cancel": {}}
    last = [u for u in run.raw_updates() if u["sessionUpdate"] == "terminal_update"][-1]
    assert last["exitStatus"] == {"exitCode": 0, "signal": None} and last["capabilities"] is None
    handoff = next(
        u
        for u in run.raw_updates()
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    )
    assert {"type": "terminal", "terminalId": terminal_id} in handoff["content"]
    # The follow-up turn is reported running in the snapshot that removes the terminal.
    listed = {"type": "terminal", "terminalId": terminal_id}
    snapshots = run.state_updates()
    first_listed = next(i for i, u in enumerate(snapshots) if listed in u["background"])
    removal = next(u for u in snapshots[first_listed:] if listed not in u["background"])
    assert removal["state"] == "running"


@pytest.mark.portable
def test_output_under_the_systems_temp_directory_is_relayed(live: LiveModel, workdir: Path) -> None:
    """Without ``CLAUDE_CODE_TMPDIR`` Claude Code keeps its task output below the runtime's temp
    directory, ``$TMPDIR`` (which macOS sets for every user); the agent follows it there."""
    agent = live.agent()
    temp = agent["env"]["CLAUDE_CODE_TMPDIR"]
    agent["env"] |= {"CLAUDE_CODE_TMPDIR": None, "TMPDIR": temp}
    steps = [
        {"op": "prompt", "text": "[scenario:bg_completed] Run a background job."},
        {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
        {"op": "waitBackground", "empty": True},
    ]
    run = run_client(
        {"agent": agent, "client": "v2-unstable", "cwd": str(workdir), "steps": steps}, timeout=60
    )
    (terminal_id,) = run.terminal_ids
    assert run.terminal_bytes(terminal_id) == b"hello-from-bg\nbg-finished\n"
    (output,) = Path(temp).rglob(f"{terminal_id}.output")
    assert output.is_relative_to(Path(temp, "claude-" + str(os.getuid())))
    # The live fixture looks for CLAUDE_CODE_TMPDIR; these processes carry TMPDIR instead.
    assert not survivors("TMPDIR=" + temp)


@pytest.mark.portable
def test_failing_shell_reports_its_exit_code(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_failed_exit3] Run a failing job."},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
            {"op": "waitBackground", "empty": True},
        ],
    )
    rfd_order_holds(run)
    (terminal_id,) = run.terminal_ids
    last = [u for u in run.raw_updates() if u["sessionUpdate"] == "terminal_update"][-1]
    assert last["exitStatus"]["exitCode"] == 3
    assert b"exited with code" not in run.terminal_bytes(terminal_id)


@pytest.mark.portable
def test_cancel_terminal_stops_exactly_that_shell(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_long] Run a long job."},
            {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
            {"op": "waitForTerminalBytes", "contains": "line-3"},
            {"op": "cancel"},
            {"op": "waitForTerminalBytes", "contains": "line-6"},
            {"op": "cancelTerminal", "id": "stop"},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
            {"op": "waitBackground", "empty": True},
            {"op": "cancelTerminal", "id": "again", "force": True, "expectError": -32602},
        ],
    )
    rfd_order_holds(run)
    assert run.response("stop")["result"] == {}
    (terminal_id,) = run.terminal_ids
    output = run.terminal_bytes(terminal_id)
    lines = output.decode().splitlines()
    assert lines[: len(lines)] == [f"line-{i}" for i in range(1, len(lines) + 1)], "bytes lost or reordered"
    assert b"[killed]" not in output
    last = [u for u in run.raw_updates() if u["sessionUpdate"] == "terminal_update"][-1]
    assert last["exitStatus"]["signal"] and last["capabilities"] is None


@pytest.mark.portable
def test_session_close_stops_background_work(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_long] Run a long job."},
            {"op": "waitForTerminalBytes", "contains": "line-2"},
            {"op": "closeSession", "id": "close"},
        ],
    )
    rfd_order_holds(run)
    close_id = next(line["id"] for line in run.client_lines if line.get("method") == "session/close")
    close_at = next(
        i for i, line in enumerate(run.agent_lines) if line.get("id") == close_id and "method" not in line
    )
    exit_at = next(
        i
        for i, line in enumerate(run.agent_lines)
        if "exitStatus" in line.get("params", {}).get("update", {})
    )
    assert exit_at < close_at, "the terminal's exitStatus must go out before session/close answers"
    assert run.shutdown["processGroupSurvivors"] is False


@pytest.mark.portable
def test_bytes_are_relayed_exactly(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_invalid_utf8] Print odd bytes."},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
        ],
    )
    (terminal_id,) = run.terminal_ids
    # What the scenario's printf calls write, byte for byte (split UTF-8 and escapes included).
    expected = b"a\xffb\xc3(c\x1b[31mred\x1b[0m\n" + b"\xe2\x82" + b"\xac euro \x1b[" + b"32mgreen\x1b[0m\n"
    assert run.terminal_bytes(terminal_id) == expected


@pytest.mark.portable
def test_ten_megabyte_burst_arrives_intact(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_burst] Write a lot."},
            {
                "op": "waitFor",
                "update": "terminal_update",
                "match": {"exitStatus": "$present"},
                "timeoutMs": 60000,
            },
        ],
    )
    (terminal_id,) = run.terminal_ids
    received = run.terminal_bytes(terminal_id)
    snapshots = [u for u in run.raw_updates() if u["sessionUpdate"] == "terminal_update" and "output" in u]
    assert not snapshots, "a client that keeps up must get every byte as chunks"
    line = b"burst-0123456789abcdefghijklmnopqrstuvwxyz\n"
    expected = (line * (10485760 // len(line) + 1))[:10485760]
    assert len(received) == len(expected)
    assert hashlib.sha256(received).hexdigest() == hashlib.sha256(expected).hexdigest()


def test_monitor_is_a_cancellable_tool_call(live: LiveModel, workdir: Path) -> None:
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:monitor] Watch ticks."},
            {"op": "waitBackground", "contains": {"type": "tool_call"}},
            {"op": "cancelToolCall", "id": "stop", "toolCallId": "$lastToolCall"},
            {"op": "waitFor", "update": "tool_call_update", "match": {"status": "cancelled"}},
            {"op": "waitBackground", "empty": True},
        ],
    )
    rfd_order_holds(run)
    assert run.response("stop")["result"] == {}
    assert not run.terminal_ids, "a monitor is listed as its tool call, not as a terminal"


def test_v1_client_reading_terminal_meta_gets_live_output(live: LiveModel, workdir: Path) -> None:
    """A v1 client that declares ``terminal_output_delta`` besides Zed's ``terminal_output`` gets
    the output under that key (``test_live_zed`` shows what Zed itself gets)."""
    run = run_client(
        {
            "agent": live.agent(),
            "client": "v1",
            "cwd": str(workdir),
            "capabilities": {"_meta": {"terminal_output": True, "terminal_output_delta": True}},
            "steps": [
                {"op": "prompt", "id": "p", "text": "[scenario:bg_invalid_utf8] Print odd bytes."},
                {
                    "op": "waitFor",
                    "update": "tool_call_update",
                    "match": {"_meta": {"terminal_exit": "$present"}},
                },
            ],
        },
        timeout=60,
    )
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    (terminal_id,) = run.terminal_ids
    assert run.terminal_info(terminal_id)["exitStatus"] == {"exitCode": 0, "signal": None}
    assert not [u for u in run.raw_updates() if "terminal_output" in u.get("_meta", {})]
    written = b"a\xffb\xc3(c\x1b[31mred\x1b[0m\n" + b"\xe2\x82" + b"\xac euro \x1b[" + b"32mgreen\x1b[0m\n"
    # Plain text can only carry valid UTF-8: the split euro sign arrives whole, bad bytes as U+FFFD.
    assert run.terminal_bytes(terminal_id) == written.decode("utf-8", "replace").encode()


@pytest.mark.portable
def test_an_output_file_replaced_by_a_link_leaks_nothing(live: LiveModel, workdir: Path) -> None:
    """Issue 8, defect 3: with the shell's output file replaced by a symbolic link, the agent
    sent the link's target to the client. The shell itself swaps its output file (found through
    its own stdout) for a link to a file outside Claude Code's task directory, then writes on:
    the client gets what the shell wrote, and nothing of the target."""
    secret = workdir / "secret.txt"
    secret.write_bytes(b"root:x:0:0:SECRET-MARKER:/root:/bin/sh\n" * 50)
    command = (
        'echo before; out=$(readlink /proc/$$/fd/1); sleep 1; rm -f "$out"; '
        f'ln -s {secret} "$out"; echo after; sleep 0.5'
    )
    run = run_v2(
        live,
        workdir,
        [
            {"op": "prompt", "text": f"[scenario:bg_from_prompt] Go. <command>{command}</command>"},
            {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
        ],
    )
    (terminal_id,) = run.terminal_ids
    assert b"SECRET-MARKER" not in run.terminal_bytes(terminal_id)
    assert run.terminal_bytes(terminal_id) == b"before\nafter\n"
    # The link also kept Claude Code's closing line out (it opens with O_NOFOLLOW): the exit
    # comes from the task's own event.
    assert run.terminal_info(terminal_id)["exitStatus"] == {"exitCode": 0, "signal": None}
