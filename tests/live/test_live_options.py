"""End to end, the options of a permission question: the real CLI and the scripted model, and a
client that declares exactly Zed's capabilities (``tests.support.zed``), every message validated
against the schema (``run_client``). Each option does what its name says, and no more: the
"always" of a command adds the rule Claude Code suggested, and leaving plan mode sets the mode
the option names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.scripted_model.scenarios import PLAN
from tests.conftest import LiveModel, run_live
from tests.live.test_live_zed import as_zed
from tests.support.acp_client import ClientRun
from tests.support.views import option_held

pytestmark = pytest.mark.live

TOUCH = "[scenario:permission] Touch a file."
REMOVE = "[scenario:fg_from_prompt] Remove it. <command>rm -f perm-test.txt</command>"


def prompt(key: str, text: str) -> dict[str, Any]:
    return {"op": "prompt", "id": key, "text": text}


def set_mode(mode: str) -> dict[str, Any]:
    params = {"sessionId": "$sessionId", "configId": "mode", "value": mode}
    return {"op": "request", "id": f"set-{mode}", "method": "session/set_config_option", "params": params}


def named(request: dict[str, Any]) -> dict[str, str]:
    """A request's options: kind of each name."""
    return {option["name"]: option["kind"] for option in request["params"]["options"]}


def modes_told(run: ClientRun) -> list[str]:
    return [u["currentModeId"] for u in run.raw_updates() if u["sessionUpdate"] == "current_mode_update"]


def test_always_on_a_command_adds_only_the_suggested_rule(live: LiveModel, workdir: Path) -> None:
    """Claude Code suggests a rule for ``touch``, its directory, and accept edits; the "always"
    names the rule and the directory, and applies those: the mode stays, so a later ``rm`` is
    asked about (in accept edits it would not be), while the same ``touch`` no longer is."""
    steps = [prompt("touch", TOUCH), prompt("remove", REMOVE), prompt("again", TOUCH)]
    run, _ = as_zed(live, workdir, steps, permission=["allow_always", "reject_once"])
    touch, remove = run.permission_requests
    always = next(name for name, kind in named(touch).items() if kind == "allow_always")
    assert always.startswith("Yes, and don't ask again for `touch perm-test.txt` commands in this project")
    assert "accept edits" not in always
    assert remove["params"]["toolCall"]["rawInput"]["command"] == "rm -f perm-test.txt"
    assert (workdir / "perm-test.txt").exists(), "the rm was asked about, and rejected"
    settings = json.loads((workdir / ".claude" / "settings.local.json").read_text())
    assert settings["permissions"]["allow"] == ["Bash(touch perm-test.txt)"]
    assert modes_told(run) == []
    assert run.response("again")["result"]["stopReason"] == "end_turn"


@pytest.mark.parametrize(
    ("option", "mode"),
    [("Yes, auto-accept edits", "acceptEdits"), ("Yes, manually approve edits", "default")],
)
def test_leaving_plan_mode_sets_the_mode_the_option_names(
    live: LiveModel, workdir: Path, option: str, mode: str
) -> None:
    # Claude Code would go back to the mode it had before planning: the test starts in another.
    before = "default" if mode == "acceptEdits" else "acceptEdits"
    steps = [set_mode(before)] if before != "default" else []
    steps += [
        set_mode("plan"),
        prompt("plan", "[scenario:exit_plan] Plan it."),
        prompt("after", "[scenario:text] hi"),
    ]
    run, _ = as_zed(live, workdir, steps, permission={"optionId": f"mode:{mode}"})
    (request,) = run.permission_requests
    assert named(request) == {
        "Yes, and use auto mode": "allow_always",
        "Yes, auto-accept edits": "allow_always",
        "Yes, manually approve edits": "allow_once",
        "No, keep planning": "reject_once",
    }
    assert option in named(request)
    assert request["params"]["toolCall"]["content"][0]["content"]["text"] == PLAN
    # Claude Code reports the switch; the next turn starts in that mode and tells nothing new.
    assert modes_told(run) == [*([before] if before != "default" else []), "plan", mode]
    assert run.response("after")["result"]["stopReason"] == "end_turn"


def toggle(value: object) -> dict[str, Any]:
    params = {"sessionId": "$sessionId", "configId": "fast_mode", "value": value}
    if isinstance(value, bool):
        params["type"] = "boolean"
    return {"op": "request", "id": "fast", "method": "session/set_config_option", "params": params}


def speeds(live: LiveModel) -> dict[str, Any]:
    """The speed each prompt's model requests asked for, by the prompt's words."""
    asked: dict[str, Any] = {}
    for request in live.model.messages_requests():
        words = json.dumps(request.body["messages"])
        latest = next((w for w in ("after", "before") if f"[scenario:text] {w}" in words), None)
        if latest is not None:
            asked[latest] = request.body.get("speed")
    return asked


@pytest.mark.parametrize(
    ("zed", "on", "users"),
    [(True, True, False), (False, "on", False), (True, True, True)],
    ids=["zed", "select", "users-own"],
)
def test_fast_mode_is_a_toggle_that_reaches_claude_code(
    live: LiveModel, workdir: Path, zed: bool, on: object, users: bool
) -> None:
    """Zed declares boolean options and gets a switch; a client that does not (here one that
    declares nothing) gets an on/off select. Either way Claude Code's next request is fast.
    The user's own settings saying ``fastMode: true`` (``users``) change nothing: Claude Code
    takes fast mode from an SDK host only through its flag settings, so until the client
    turns it on the requests are not fast, and the option says off."""
    if users:
        (Path(live.env["CLAUDE_CONFIG_DIR"]) / "settings.json").write_text(json.dumps({"fastMode": True}))
    steps = [prompt("before", "[scenario:text] before"), toggle(on), prompt("after", "[scenario:text] after")]
    if zed:
        run, _ = as_zed(live, workdir, steps)
    else:
        run = run_live(live, workdir, "v1", steps)
    [fast] = [o for o in run.response("newSession")["result"]["configOptions"] if o["id"] == "fast_mode"]
    assert (fast["type"], fast["currentValue"]) == (("boolean", False) if zed else ("select", "off"))
    [now] = [o for o in run.response("fast")["result"]["configOptions"] if o["id"] == "fast_mode"]
    assert now["currentValue"] == on and option_held(run.agent_lines, "fast_mode") == on
    assert speeds(live) == {"before": None, "after": "fast"}
