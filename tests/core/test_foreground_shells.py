"""A foreground command's output, live on its tool call (``core.foreground_shells``).

The recording ``fg_lines`` is the real CLI running a five-second foreground command: about two
seconds in, Claude Code reports it as a task (``is_backgrounded: false``) whose output file the
core then follows. Replayed here with the tasks root the recording ran under, with part of the
output read while the command runs (as the tailer reads it) and the rest at the drain the end
asks for: every client kind is shown the output before the result, the result after the last
of it, and every transcript stays valid (schema, background rules, Zed's and a plain client's
reading).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from claude_bg_acp.core.effects import Effect, FinishCommandTail, Tail
from claude_bg_acp.core.foreground_shells import ForegroundShells, ShellOutput
from claude_bg_acp.core.tasks import Task
from claude_bg_acp.core.tool_uses import ToolCallCut, ToolCallFinished, ToolUse, ToolUsePhase
from tests.support.driver import (
    CLIENTS,
    RECORDED_TASKS_ROOT,
    CoreDriver,
    as_jsonrpc,
    check_transcript,
    load_frames,
)
from tests.support.zed import ZedView

TASK = "bash01"
FILE = "".join(f"fg-line-{i}\n" for i in range(1, 11)).encode()
EARLY = b"fg-line-1\nfg-line-2\n"
"""What the tailer read while the command ran."""


def live_replay(client: str) -> tuple[CoreDriver, list[Effect], int]:
    """The recording with ``EARLY`` read after the task was reported; the effects and the index
    of the first effect of the command's end."""
    frames = load_frames("fg_lines")
    started = next(
        i for i, f in enumerate(frames) if f["dir"] == "in" and f["msg"].get("subtype") == "task_started"
    )
    driver = CoreDriver.for_client(client, session_id="root", tasks_root=RECORDED_TASKS_ROOT)
    effects = driver.replay(frames[: started + 1])
    effects += driver.output(TASK, EARLY)
    end = len(effects)
    rest = [_rest_of_file(f) if f["dir"] == "file" else f for f in frames[started + 1 :]]
    return driver, effects + driver.replay(rest), end


def _rest_of_file(frame: dict[str, Any]) -> dict[str, Any]:
    assert base64.b64decode(frame["data_b64"]) == FILE
    return {**frame, "data_b64": base64.b64encode(FILE[len(EARLY) :]).decode()}


def test_the_file_followed_is_the_tasks_own() -> None:
    frames = load_frames("fg_lines")
    started = next(
        i for i, f in enumerate(frames) if f["dir"] == "in" and f["msg"].get("subtype") == "task_started"
    )
    driver = CoreDriver.for_client("v2", session_id="root", tasks_root=RECORDED_TASKS_ROOT)
    effects = driver.replay(frames[:started])
    assert not [e for e in effects if isinstance(e, Tail)], "nothing is followed before the task is reported"
    (tail,) = [e for e in driver.replay(frames[started : started + 1]) if isinstance(e, Tail)]
    recorded = next(f["path"] for f in frames if f["dir"] == "file")
    assert tail == Tail(TASK, recorded)


@pytest.mark.parametrize("client", list(CLIENTS))
def test_every_client_sees_the_output_before_the_result(client: str) -> None:
    driver, effects, end = live_replay(client)
    check_transcript(driver, effects, client, recorded=True)
    updates = [u for _, u in driver.notified(effects) if u.get("toolCallId", "").startswith("toolu_")]
    shown = [json.dumps(u) for u in driver.notified(effects[:end])]
    assert any("fg-line-1" in text for text in shown), "the early output is shown while the command runs"
    final = next(i for i, u in enumerate(updates) if u.get("status") == "completed")
    assert all(u.get("status") != "completed" for u in updates[:final])
    assert not [u for u in updates[final + 1 :] if "content" in u or "_meta" in u], "nothing after the result"
    before = json.dumps(updates[:final])
    if client != "v1-terminal-meta":
        assert "fg-line-10" in before, "the rest of the file is shown before the result replaces it"


def test_zed_draws_the_file_exactly_once_and_the_exit() -> None:
    driver, effects, _ = live_replay("v1-terminal-meta")
    agent_lines, client_lines = as_jsonrpc(effects, driver.requests)
    view = ZedView.replay("root", agent_lines, client_lines)
    (terminal,) = view.terminals.values()
    assert terminal.text == FILE.decode(), "the file's bytes, not the result's text again"
    assert terminal.exit == (0, None)


# --- the module alone -----------------------------------------------------------------------------


def _shell_use(call: str = "toolu_1") -> ToolUse:
    return ToolUse(call, "Bash", {"command": "make"}, "root", ToolUsePhase.RUNNING)


def _task() -> Task:
    return Task(TASK, task_type="local_bash", tool_use_id="toolu_1", backgrounded=False)


def test_a_cut_command_says_nothing_more() -> None:
    shells = ForegroundShells()
    assert shells.follow(_task(), _shell_use(), "/t/bash01.output") == [Tail(TASK, "/t/bash01.output")]
    cut = ToolCallCut("root", "toolu_1", failed=False)
    assert shells.results([cut]) == [FinishCommandTail(TASK), cut]
    assert shells.output(TASK, b"late\n") == []
    assert shells.drained(TASK, b"more\n") == []
    assert not shells.knows(TASK)


def test_a_result_waits_for_the_rest_of_the_file() -> None:
    shells = ForegroundShells()
    shells.follow(_task(), _shell_use(), "/t/bash01.output")
    finished = ToolCallFinished("root", "toolu_1", False, "done")
    assert shells.results([finished]) == [FinishCommandTail(TASK)]
    assert shells.ended(TASK) == [], "its end was already asked for"
    assert shells.drained(TASK, b"last\n") == [ShellOutput("root", "toolu_1", b"last\n"), finished]


def test_a_command_moved_to_the_background_is_no_longer_followed_here() -> None:
    shells = ForegroundShells()
    shells.follow(_task(), _shell_use(), "/t/bash01.output")
    shells.backgrounded(TASK)
    assert not shells.knows(TASK)
    finished = ToolCallFinished("root", "toolu_1", False, "moved")
    assert shells.results([finished]) == [finished]


def test_only_a_running_shell_tool_call_is_followed() -> None:
    shells = ForegroundShells()
    other = ToolUse("toolu_1", "Read", {"file_path": "x"}, "root", ToolUsePhase.RUNNING)
    assert shells.follow(_task(), other, "/t/bash01.output") == []
    assert shells.follow(_task(), None, "/t/bash01.output") == []
    assert shells.follow(_task(), _shell_use(), None) == []
    done = _shell_use()
    done.phase = ToolUsePhase.FINAL
    assert shells.follow(_task(), done, "/t/bash01.output") == []
