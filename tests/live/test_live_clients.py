"""One background shell, as each kind of client shows it: plain v1, Zed, JetBrains AIR and v2.

The real CLI runs the same command for every kind, against the scripted model, and the official
client declares what that kind of client declares; its transcript is then read the way that
kind of client reads it: ``PlainView`` (Toad, acpx, the Python SDK's clients: a tool call's
content, replaced with each update, and its status), ``ZedView`` (a display terminal fed through
``_meta``), AIR's async task (its state, and the output file AIR is pointed to), and the v2
terminal (byte-exact chunks and ``exitStatus``). Each test asserts what the user sees: the
output, live and whole (byte for byte where the form allows), and the exit.

The command stamps every line with the time it wrote it (``date +%s%N``), so the log of each
run says how long a line took from the shell's write to the client (p50, printed and kept as a
property of the test); no test asserts a time. ``scripts/bench_output.py --client plain-v1``
measures the same for the record (BENCHMARKS.md).

The plain v1 client declares exactly what acpx declares (``fs`` and ``terminal: true``); the
further plain tests follow one tool call across a later turn and the session's close, a Monitor
and a background subagent.
"""

from __future__ import annotations

import base64
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.air import ASYNC_TASKS, air_capabilities
from tests.support.driver import PLAIN_CAPABILITIES
from tests.support.handoff import shown_hand_offs
from tests.support.plain import PlainView
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, ZedView

pytestmark = pytest.mark.live

LINES = 50
COMMAND = f'for i in $(seq 1 {LINES}); do echo "line-$i $(date +%s%N)"; sleep 0.05; done'
STAMPED = re.compile(rb"line-(\d+) (\d+)\n")
KINDS: dict[str, dict[str, Any]] = {
    "plain-v1": {"client": "v1", "capabilities": PLAIN_CAPABILITIES, "clientInfo": {"name": "acpx"}},
    "zed": {"client": "v1", "capabilities": ZED_CAPABILITIES, "clientInfo": ZED_CLIENT_INFO},
    "air": {"client": "v1", "capabilities": air_capabilities(ASYNC_TASKS)},
    "v2": {"client": "v2-unstable"},
}
Seen = list[tuple[float, bytes]]
"""What the user saw of the output over time: (seconds since the run started, all of it)."""


def run_as(kind: str, live: LiveModel, workdir: Path, steps: list[dict[str, Any]]) -> ClientRun:
    script = {"agent": live.agent(), "cwd": str(workdir), "steps": steps, **KINDS[kind]}
    return run_client(script, timeout=60)


def stamped_lines(output: bytes) -> list[tuple[int, int]]:
    """(line number, write time in ns) of each stamped line, checking that ``output`` is exactly
    the lines, in order, each whole."""
    matches = list(STAMPED.finditer(output))
    assert b"".join(m[0] for m in matches) == output, "nothing but whole stamped lines"
    found = [(int(m[1]), int(m[2])) for m in matches]
    assert [n for n, _ in found] == list(range(1, len(found) + 1)), "lines lost, repeated or reordered"
    return found


def p50_ms(run: ClientRun, seen: Seen) -> float:
    """write -> the first moment the client showed each line whole, p50 in ms."""
    shown_at: dict[int, float] = {}
    for t, output in seen:
        for number, _ in stamped_lines(output[: output.rfind(b"\n") + 1]):
            shown_at.setdefault(number, t)
    started = float(run.raw["startedAtEpochMs"]) / 1000
    written = dict(stamped_lines(seen[-1][1]))
    return statistics.median((started + t - written[n] / 1e9) * 1000 for n, t in shown_at.items())


def updates_with_times(run: ClientRun) -> list[tuple[float, dict[str, Any]]]:
    return [
        (t / 1000, line["params"]["update"])
        for line, t in zip(run.agent_lines, run.agent_line_times, strict=True)
        if line.get("method") == "session/update"
    ]


def answered_at(run: ClientRun, step: str = "p") -> float:
    return float(run.response(step)["t"]) / 1000


# --- what each kind of client shows -----------------------------------------------------------------


def plain_v1(run: ClientRun) -> tuple[Seen, tuple[int | None, str | None]]:
    view = PlainView.of_run(run)
    assert not view.problems, view.problems
    card = view.call(COMMAND)
    running = [s for s in card.shown if s.status == "in_progress"]
    assert any(s.t > answered_at(run) for s in running), "in progress after the prompt's answer"
    assert len({s.text for s in running}) > LINES // 2, "its text followed the lines as they came"
    assert card.status == "completed" and card.shown[-1].status == "completed"
    assert card.raw_output == {"output": card.text, "exitCode": 0, "signal": None}
    return [(s.t, s.text.encode()) for s in card.shown if s.text.startswith("line-")], (0, None)


def zed(run: ClientRun) -> tuple[Seen, tuple[int | None, str | None]]:
    view = ZedView.of_run(run)
    assert not view.problems(), view.problems()
    (call,) = view.calls(COMMAND)
    (terminal,) = view.drawn(call)
    assert terminal.appended_at[-1] > answered_at(run), "output after the prompt's answer"
    seen: Seen = []
    output = b""
    for t, update in updates_with_times(run):
        data = (update.get("_meta") or {}).get("terminal_output", {}).get("data")
        if data:
            output += data.encode()
            seen.append((t, output))
    assert output == terminal.output
    assert terminal.exit is not None
    return seen, terminal.exit


def v2(run: ClientRun) -> tuple[Seen, tuple[int | None, str | None]]:
    (terminal_id,) = run.terminal_ids
    seen: Seen = []
    output = b""
    exit: tuple[int | None, str | None] | None = None
    for t, update in updates_with_times(run):
        if update["sessionUpdate"] == "terminal_output_chunk":
            output += base64.b64decode(update["data"])
            seen.append((t, output))
        elif update["sessionUpdate"] == "terminal_update" and "exitStatus" in update:
            exit = (update["exitStatus"]["exitCode"], update["exitStatus"]["signal"])
    assert output == run.terminal_bytes(terminal_id)
    idle = [u for u in run.state_updates() if u["state"] == "idle"]
    assert any(terminal_id in str(u["background"]) for u in idle), "listed running when the turn ended"
    assert exit is not None
    return seen, exit


SHOWN: dict[str, Callable[[ClientRun], tuple[Seen, tuple[int | None, str | None]]]] = {
    "plain-v1": plain_v1,
    "zed": zed,
    "v2": v2,
}
END: dict[str, dict[str, Any]] = {
    "plain-v1": {
        "op": "waitFor",
        "update": "tool_call_update",
        "match": {"status": "completed", "title": COMMAND},
    },
    "zed": {"op": "waitFor", "update": "tool_call_update", "match": {"_meta": {"terminal_exit": "$present"}}},
    "air": {
        "op": "waitFor",
        "raw": True,
        "update": "async_task_state_update",
        "match": {"state": "completed"},
    },
    "v2": {"op": "waitFor", "update": "terminal_update", "match": {"exitStatus": "$present"}},
}


@pytest.mark.parametrize("kind", ["plain-v1", "zed", "v2"])
def test_every_kind_of_client_sees_the_shell_live_and_its_exit(
    kind: str, live: LiveModel, workdir: Path, record_property: Callable[[str, object], None]
) -> None:
    run = run_as(
        kind,
        live,
        workdir,
        [
            {
                "op": "prompt",
                "id": "p",
                "text": f"[scenario:bg_from_prompt] Go. <command>{COMMAND}</command>",
            },
            END[kind],
        ],
    )
    # (a v2 client may also see the turn Claude Code starts itself once the shell is done)
    assert run.stop_reasons()[:1] == ["end_turn"]
    seen, exit = SHOWN[kind](run)
    output = seen[-1][1]
    assert [n for n, _ in stamped_lines(output)] == list(range(1, LINES + 1)), "every line, once, whole"
    assert exit == (0, None)
    assert not shown_hand_offs(u for _, u in updates_with_times(run)), "never the output file's path"
    assert len(seen) > 5 and seen[0][0] < seen[-1][0] - 1.0, "the lines came while the shell ran"
    p50 = p50_ms(run, seen)
    record_property("write_to_client_p50_ms", round(p50, 1))
    print(f"{kind}: a line's write -> the client, p50 {p50:.1f} ms over {LINES} lines")


def test_an_air_client_follows_the_shell_as_an_async_task(live: LiveModel, workdir: Path) -> None:
    """AIR reads a shell's output from the file its async task names, and its end from the
    task's state: the file is named before the shell ends, and holds every line."""
    run = run_as(
        "air",
        live,
        workdir,
        [
            {
                "op": "prompt",
                "id": "p",
                "text": f"[scenario:bg_from_prompt] Go. <command>{COMMAND}</command>",
            },
            END["air"],
        ],
    )
    assert run.stop_reasons() == ["end_turn"]
    tasks = [u for u in run.raw_updates() if u["sessionUpdate"].startswith("async_task_")]
    told = {key: value for u in tasks for key, value in u.items() if key == "outputFilePath"}
    (ended,) = [i for i, u in enumerate(tasks) if u.get("state") == "completed"]
    named = next(i for i, u in enumerate(tasks) if "outputFilePath" in u)
    assert named < ended and tasks[0]["taskType"] == "shell"
    assert not shown_hand_offs(run.raw_updates()), "the path is the async task's, not the card's"
    output = Path(told["outputFilePath"]).read_bytes()
    lines = output[: output.index(b"\n", output.index(f"line-{LINES} ".encode())) + 1]
    assert [n for n, _ in stamped_lines(lines)] == list(range(1, LINES + 1)), "every line, once, whole"


# --- plain v1 clients, further ------------------------------------------------------------------------


LONG = "for i in $(seq 1 300); do echo line-$i; sleep 0.2; done"


def test_a_plain_client_follows_the_shell_across_turns_until_the_session_closes(
    live: LiveModel, workdir: Path
) -> None:
    output = {"status": "in_progress", "title": LONG, "content": "$present"}
    run = run_as(
        "plain-v1",
        live,
        workdir,
        [
            {"op": "prompt", "id": "p", "text": "[scenario:bg_long] Run a long job."},
            {"op": "waitFor", "update": "tool_call_update", "match": output, "count": 3},
            {"op": "prompt", "id": "later", "text": "[scenario:text] Anything else?"},
            {"op": "waitFor", "update": "tool_call_update", "match": output, "count": 2, "fresh": True},
            {"op": "closeSession"},
        ],
    )
    assert run.stop_reasons() == ["end_turn", "end_turn"]
    view = PlainView.of_run(run)
    assert not view.problems, view.problems
    card = view.call(LONG)
    after_later_turn = [s.status for s in card.shown if s.t > answered_at(run, "later")]
    assert set(after_later_turn) == {"in_progress", "failed"} and after_later_turn[-1] == "failed"
    lines, end = card.text.split("\n\n")
    assert lines.splitlines() == [f"line-{i}" for i in range(1, len(lines.splitlines()) + 1)]
    # Stopped by the close, not a crash (acpx closes the agent after each answer); the signal
    # Claude Code stopped it with stays in rawOutput.
    assert (card.status, end) == ("failed", "Stopped when the session closed.")
    assert card.raw_output == {"output": card.text, "exitCode": None, "signal": "SIGKILL"}
    assert "Hello from the scripted model." in view.agent_text


def test_a_plain_clients_monitor_stays_in_progress_until_it_ends(live: LiveModel, workdir: Path) -> None:
    title = "Monitor: tick watcher"
    run = run_as(
        "plain-v1",
        live,
        workdir,
        [
            {"op": "prompt", "id": "p", "text": "[scenario:monitor] Watch ticks."},
            {"op": "waitFor", "update": "tool_call_update", "match": {"status": "completed", "title": title}},
        ],
    )
    view = PlainView.of_run(run)
    assert not view.problems, view.problems
    card = view.call(title)
    at_answer = [s for s in card.shown if s.t <= answered_at(run)][-1]
    # What it watches, never Claude Code's words to the model (its task id, how to wait).
    assert (at_answer.status, at_answer.text) == ("in_progress", "tick watcher")
    assert not shown_hand_offs(u for _, u in updates_with_times(run))
    assert card.status == "completed" and card.shown[-1].t > answered_at(run)


def test_a_plain_clients_background_subagent_reports_on_its_tool_call(live: LiveModel, workdir: Path) -> None:
    run = run_as(
        "plain-v1", live, workdir, [{"op": "prompt", "id": "p", "text": "[scenario:agent_bg] Delegate."}]
    )
    assert run.stop_reasons() == ["end_turn"]
    view = PlainView.of_run(run)
    assert not view.problems, view.problems
    agent = view.call("background helper")
    assert agent.status == "completed" and agent.text == "subagent one finished its work"
    assert agent.raw_output == {"output": "subagent one finished its work"}
    assert [s.status for s in agent.shown if s.t < agent.shown[-1].t][-1] == "in_progress"
    # Claude Code's hand-off is internal metadata (the agent's id, its output file): the call
    # shows what the subagent was asked to do until its words come.
    assert next(s.text for s in agent.shown if s.status == "in_progress" and s.text) == "background helper"
    assert not [s for s in agent.shown if "agentId" in s.text or ".output" in s.text]
    assert agent.shown[-1].t <= answered_at(run), "done before the held answer"
    # Its words are the tool call's, never glued to the agent's own messages.
    assert "subagent one" not in view.agent_text
    assert view.agent_text.startswith("The subagent is working in the background; I will report back.")
    assert view.call("echo from-subagent").status == "completed"
