"""End to end for what a Zed user sees: the real CLI, the scripted model, and a client that
declares exactly Zed's capabilities (``tests.support.zed``), whose transcript is read by Zed's
own rules (``ZedView``). Every message is also validated against the v1 schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, Terminal, ZedView

pytestmark = pytest.mark.live

EXITED = {"op": "waitFor", "update": "tool_call_update", "match": {"_meta": {"terminal_exit": "$present"}}}
"""Wait until some terminal has exited."""


def as_zed(
    live: LiveModel, workdir: Path, steps: list[dict[str, Any]], **extra: Any
) -> tuple[ClientRun, ZedView]:
    """Zed runs ``steps`` (``extra``: more of the driver's script, e.g. ``autoSession``, or
    ``permission``: how questions are answered)."""
    run = run_client(
        {
            "agent": live.agent(),
            "client": "v1",
            "capabilities": ZED_CAPABILITIES,
            "clientInfo": ZED_CLIENT_INFO,
            "cwd": str(workdir),
            "steps": steps,
            **extra,
        },
        timeout=60,
    )
    view = ZedView.of_run(run)
    assert not view.problems(), "\n".join(view.problems())
    return run, view


def shell_terminal(view: ZedView, command: str, session_id: str | None = None) -> Terminal:
    """The one terminal drawn by the tool call that runs ``command``."""
    (call,) = view.calls(command, session_id)
    (terminal,) = view.drawn(call)
    return terminal


def test_a_background_shell_streams_into_its_tool_call(live: LiveModel, workdir: Path) -> None:
    run, view = as_zed(
        live, workdir, [{"op": "prompt", "id": "p", "text": "[scenario:bg_lines] Print forty lines."}, EXITED]
    )
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    terminal = shell_terminal(view, "for i in $(seq 1 40); do echo line-$i; sleep 0.05; done")
    assert terminal.text == "".join(f"line-{i}\n" for i in range(1, 41)), "every line exactly once"
    assert terminal.exit == (0, None)
    # The lines arrive while the shell runs (about two seconds), in many pieces, and go on
    # after the prompt's answer.
    assert len(terminal.appended_at) > 5
    assert terminal.appended_at[-1] - terminal.appended_at[0] > 1.0
    (answered_at, _) = view.prompt_answers[0]
    assert terminal.appended_at[-1] > answered_at
    assert terminal.exited_at is not None and terminal.exited_at >= terminal.appended_at[-1]


def test_a_failing_background_shell_reports_its_exit_code(live: LiveModel, workdir: Path) -> None:
    _, view = as_zed(live, workdir, [{"op": "prompt", "text": "[scenario:bg_failed_exit3] Fail."}, EXITED])
    terminal = shell_terminal(view, "echo failing-job; sleep 1; exit 3")
    assert (terminal.text, terminal.exit) == ("failing-job\n", (3, None))


def test_a_shell_stopped_at_session_close_reports_its_signal(live: LiveModel, workdir: Path) -> None:
    """Zed has no per-item stop; closing the session stops what still runs."""
    _, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:bg_long] Run a long job."},
            {"op": "waitForTerminalBytes", "contains": "line-3"},
            {"op": "closeSession"},
        ],
    )
    terminal = shell_terminal(view, "for i in $(seq 1 300); do echo line-$i; sleep 0.2; done")
    assert terminal.exit == (None, "SIGKILL")
    lines = terminal.text.splitlines()
    assert lines == [f"line-{i}" for i in range(1, len(lines) + 1)], "lines lost or repeated"


def test_foreground_commands_show_their_output_and_exit_code(live: LiveModel, workdir: Path) -> None:
    _, view = as_zed(
        live,
        workdir,
        [
            {"op": "prompt", "text": "[scenario:fg_bash] Echo."},
            {"op": "prompt", "text": "[scenario:fg_failed] Fail."},
        ],
    )
    passed = shell_terminal(view, "echo hello-fg")
    assert (passed.text, passed.exit) == ("hello-fg", (0, None))
    failed = shell_terminal(view, "echo out-line; echo err-line >&2; exit 3")
    assert (failed.text, failed.exit) == ("out-line\nerr-line", (3, None))
    assert view.calls("echo out-line; echo err-line >&2; exit 3")[0].status == "failed"


def test_a_background_subagents_work_is_shown(live: LiveModel, workdir: Path) -> None:
    run, view = as_zed(live, workdir, [{"op": "prompt", "id": "p", "text": "[scenario:agent_bg] Delegate."}])
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    # Zed reads child sessions only in a draft form outside the v1 schema: the subagent's work is
    # in the session that launched it, next to its Agent tool call, before the held answer.
    assert [c.title for c in view.calls()] == ["background helper", "echo from-subagent"]
    # Its card shows what it was asked to do, never Claude Code's hand-off (internal metadata
    # naming the agent's id and output file).
    agent = view.calls("background helper")[0]
    assert (agent.status, agent.content, agent.raw_output) == (
        "completed",
        [{"type": "content", "content": {"type": "text", "text": "background helper"}}],
        {"output": "background helper"},
    )
    terminal = shell_terminal(view, "echo from-subagent")
    assert (terminal.text, terminal.exit) == ("from-subagent", (0, None))
    assert "subagent one finished its work" in view.thread().text()
    (answered_at, _) = view.prompt_answers[0]
    assert terminal.exited_at is not None and terminal.exited_at <= answered_at
    assert list(view.threads) == [run.session_id()], "no session Zed does not know"
