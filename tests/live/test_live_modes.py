"""End to end, the permission modes: the real bundled Claude Code CLI against the scripted model,
our agent over stdio, the official ACP client; every agent line is checked against the schema
and, v1, Toad's rules (``run_client``).

The modes offered are those Claude Code would take for the session, and each test proves Claude
Code took a choice: the prompt after it starts a turn, whose ``system/init`` names the mode
Claude Code is in, and a switch it refused would bring the mode back (told to the client). Only
text prompts run in ``auto`` and ``bypassPermissions``: in ``auto`` Claude Code asks a classifier
model about each action, which the scripted model does not answer.

The tests run as root here, where Claude Code refuses ``--allow-dangerously-skip-permissions``
unless ``IS_SANDBOX=1``: without it ``bypassPermissions`` is not offered, with it it is.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.claude.options import claude_cli
from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client

pytestmark = pytest.mark.live

ROOT = os.geteuid() == 0
ALWAYS = ["default", "acceptEdits", "plan"]


def run(
    live: LiveModel, workdir: Path, steps: list[dict[str, Any]], client: str = "v1", **env: str
) -> ClientRun:
    agent = live.agent()
    agent["env"] = {**agent["env"], **env}
    return run_client({"agent": agent, "client": client, "cwd": str(workdir), "steps": steps}, timeout=60)


def set_mode(mode: str, **extra: Any) -> dict[str, Any]:
    params = {"sessionId": "$sessionId", "modeId": mode}
    return {"op": "request", "id": f"set-{mode}", "method": "session/set_mode", "params": params, **extra}


def offered(run_: ClientRun) -> list[str]:
    """The modes of the ``session/new`` answer, which its mode option must list alike."""
    answer = run_.response("newSession")["result"]
    [option] = [o for o in answer["configOptions"] if o.get("id", o.get("configId")) == "mode"]
    choices = [choice["value"] for choice in option["options"]]
    if "modes" in answer:
        assert [mode["id"] for mode in answer["modes"]["availableModes"]] == choices
        assert answer["modes"]["currentModeId"] == option["currentValue"] == "default"
    return choices


def told(run_: ClientRun) -> tuple[list[str], list[str]]:
    """Every mode the client was told after the answer: as session modes, and as the option."""
    modes = [u["currentModeId"] for u in run_.raw_updates() if u["sessionUpdate"] == "current_mode_update"]
    options = [
        option["currentValue"]
        for u in run_.raw_updates()
        if u["sessionUpdate"] == "config_option_update"
        for option in u["configOptions"]
        if option.get("id", option.get("configId")) == "mode"
    ]
    return modes, options


def settings(live: LiveModel, workdir: Path, **values: Any) -> None:
    """Settings of the folder, which is trusted (else they would wait for the user's trust)."""
    live.trust(workdir)
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(values))


@pytest.mark.skipif(not ROOT, reason="Claude Code refuses bypassing permissions only to root")
def test_root_is_offered_auto_and_not_bypass(live: LiveModel, workdir: Path) -> None:
    steps = [set_mode("bypassPermissions", expectError=-32602)]
    run_ = run(live, workdir, steps)
    assert offered(run_) == [*ALWAYS, "auto"]
    assert "bypassPermissions" in run_.response("set-bypassPermissions")["error"]["message"]


def test_choosing_auto_is_taken_by_claude_code_and_told(live: LiveModel, workdir: Path) -> None:
    steps = [set_mode("auto"), {"op": "prompt", "id": "p", "text": "[scenario:text] hi"}]
    run_ = run(live, workdir, steps)
    assert "auto" in offered(run_)
    assert run_.response("p")["result"]["stopReason"] == "end_turn"
    assert told(run_) == (["auto"], ["auto"]), "Claude Code's turn started in auto: nothing went back"


def test_choosing_auto_as_an_option_is_taken_by_claude_code(live: LiveModel, workdir: Path) -> None:
    params = {"sessionId": "$sessionId", "configId": "mode", "value": "auto"}
    steps: list[dict[str, Any]] = [
        {"op": "request", "id": "auto", "method": "session/set_config_option", "params": params},
        {"op": "prompt", "id": "p", "text": "[scenario:text] hi"},
        {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
    ]
    run_ = run(live, workdir, steps, client="v2")
    assert "auto" in offered(run_)
    [mode] = [o for o in run_.response("auto")["result"]["configOptions"] if o["configId"] == "mode"]
    assert mode["currentValue"] == "auto"
    assert told(run_) == ([], []), "the answer told it; Claude Code's turn started in auto"


def test_in_a_sandbox_root_is_offered_bypass_and_claude_code_takes_it(live: LiveModel, workdir: Path) -> None:
    """``--allow-dangerously-skip-permissions`` makes the mode a choice and changes nothing
    else: the session starts in ``default`` and a command that writes a file is still asked."""
    steps = [
        {"op": "prompt", "id": "touch", "text": "[scenario:permission] Touch a file."},
        set_mode("bypassPermissions"),
        {"op": "prompt", "id": "p", "text": "[scenario:text] hi"},
    ]
    run_ = run(live, workdir, steps, IS_SANDBOX="1")
    assert offered(run_) == [*ALWAYS, "auto", "bypassPermissions"]
    assert len(run_.permission_requests) == 1 and (workdir / "perm-test.txt").exists()
    assert run_.response("p")["result"]["stopReason"] == "end_turn"
    assert told(run_) == (["bypassPermissions"], ["bypassPermissions"])


def test_modes_the_settings_disable_are_not_offered(live: LiveModel, workdir: Path) -> None:
    disabled = {"disableAutoMode": "disable", "disableBypassPermissionsMode": "disable"}
    settings(live, workdir, permissions=disabled)
    steps = [set_mode("auto", expectError=-32602), set_mode("bypassPermissions", expectError=-32602)]
    run_ = run(live, workdir, steps, IS_SANDBOX="1")
    assert offered(run_) == ALWAYS
    assert "auto" in run_.response("set-auto")["error"]["message"]


def test_auto_is_not_offered_on_a_model_that_cannot_run_it(live: LiveModel, workdir: Path) -> None:
    """Claude Code says of each model whether it ``supportsAutoMode``, and refuses ``auto`` on one
    that does not ("auto mode unavailable for this model")."""
    settings(live, workdir, model="claude-3-5-haiku-20241022")
    run_ = run(live, workdir, [])
    assert "auto" not in offered(run_)
    assert (
        run_.response("newSession")["result"]["configOptions"][1]["currentValue"]
        == "claude-3-5-haiku-20241022"
    )


def test_a_switch_claude_code_refuses_goes_back_to_the_mode_it_is_in(live: LiveModel, workdir: Path) -> None:
    """The real CLI, started through a wrapper that drops ``--allow-dangerously-skip-permissions``
    from its arguments (the only way found to make it refuse a mode the agent offers: its other
    refusals, such as auto mode unavailable for an account's plan, cannot be had offline), answers
    the switch with "not launched with --dangerously-skip-permissions"; the client is told the
    mode Claude Code stayed in, and the next turn runs in it."""
    wrapper = workdir.parent / "claude-without-the-flag"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for arg; do shift; [ "$arg" = --allow-dangerously-skip-permissions ] || set -- "$@" "$arg"; done\n'
        f'exec {shlex.quote(claude_cli(None))} "$@"\n'
    )
    wrapper.chmod(0o700)
    agent = live.agent("--cli-path", str(wrapper))
    agent["env"] = {**agent["env"], "IS_SANDBOX": "1"}
    steps = [
        set_mode("bypassPermissions"),
        # Before any turn: the refusal itself brings the mode back, not the next turn's start.
        {"op": "waitFor", "update": "current_mode_update", "match": {"currentModeId": "default"}},
        {"op": "prompt", "id": "p", "text": "[scenario:text] hi"},
    ]
    run_ = run_client({"agent": agent, "client": "v1", "cwd": str(workdir), "steps": steps}, timeout=60)
    assert "bypassPermissions" in offered(run_)
    assert run_.response("set-bypassPermissions")["result"] == {}
    assert told(run_) == (["bypassPermissions", "default"], ["bypassPermissions", "default"])
    assert "Claude Code refused mode bypassPermissions" in run_.agent_stderr


def test_a_session_starts_in_the_mode_the_settings_choose(live: LiveModel, workdir: Path) -> None:
    """Claude Code's ``permissions.defaultMode`` is the user's choice: the session starts in it,
    says so in its answer, and its turns run in it (nothing is told back after the answer)."""
    settings(live, workdir, permissions={"defaultMode": "acceptEdits"})
    run_ = run(live, workdir, [{"op": "prompt", "id": "p", "text": "[scenario:text] hi"}])
    answer = run_.response("newSession")["result"]
    assert answer["modes"]["currentModeId"] == "acceptEdits"
    assert run_.response("p")["result"]["stopReason"] == "end_turn"
    assert told(run_) == ([], [])


@pytest.mark.skipif(not ROOT, reason="Claude Code refuses bypassing permissions only to root")
def test_a_default_mode_claude_code_may_not_take_leaves_the_session_asking(
    live: LiveModel, workdir: Path
) -> None:
    """As root outside a sandbox, Claude Code ignores ``defaultMode: bypassPermissions``: the
    session says ``default`` and a command that writes a file is still asked about."""
    settings(live, workdir, permissions={"defaultMode": "bypassPermissions"})
    run_ = run(
        live, workdir, [{"op": "prompt", "id": "touch", "text": "[scenario:permission] Touch a file."}]
    )
    assert run_.response("newSession")["result"]["modes"]["currentModeId"] == "default"
    assert len(run_.permission_requests) == 1 and (workdir / "perm-test.txt").exists()
    assert told(run_) == ([], [])
