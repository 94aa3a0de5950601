"""End to end, the everyday surface: the real bundled Claude Code CLI against the scripted model,
our agent over stdio, the official ACP client (v1 and v2); every agent line is schema-checked
(``run_client``).

- ``session/new`` offers mode, model and effort options from Claude Code's own lists, and a
  choice reaches the next model request (the scripted model records each request's model);
  v1's modes and the mode option stay one, and Claude Code leaving plan mode is told;
- Claude Code's commands are offered before the first prompt ends, again once they change (a
  command written mid-session, then ``/reload-skills``), and ``/model`` typed as a prompt runs as
  in the terminal;
- a turn is followed by a ``usage_update``; a todo list becomes the plan; tool calls read as what
  they do (the lines read, the searches, a picture shown, an MCP tool by server and name);
- without credentials a prompt fails with ``auth_required``, and a client that runs terminal
  auth methods is offered Claude Code's login.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.scripted_model.scenarios import PLAN
from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client

pytestmark = pytest.mark.live

SONNET = "claude-sonnet-5-5"


def script(
    live: LiveModel, client: str, workdir: Path, steps: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {"agent": live.agent(), "client": client, "cwd": str(workdir), "steps": steps, **extra}


def prompt(text: str, client: str, step: str) -> list[dict[str, Any]]:
    """A prompt, and (v2) the wait for its turn's end."""
    steps: list[dict[str, Any]] = [{"op": "prompt", "id": step, "text": text}]
    return steps + ([{"op": "waitIdle"}] if client == "v2" else [])


def choose(step: str, config_id: str, value: Any, **extra: Any) -> dict[str, Any]:
    params = {"sessionId": "$sessionId", "configId": config_id, "value": value}
    return {"op": "request", "id": step, "method": "session/set_config_option", "params": params, **extra}


def options(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {option.get("id", option.get("configId")): option for option in found["configOptions"]}


def line_of(run: ClientRun, match: Any) -> int:
    return next(i for i, line in enumerate(run.agent_lines) if match(line))


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_session_new_offers_model_effort_and_mode(live: LiveModel, workdir: Path, client: str) -> None:
    run = run_client(script(live, client, workdir, []))
    answer = run.response("newSession")["result"]
    offered = options(answer)
    assert [offered[k]["category"] for k in ("mode", "model", "effort")] == ["mode", "model", "thought_level"]
    models = [choice["value"] for choice in offered["model"]["options"]]
    assert "default" in models and "sonnet" in models and offered["model"]["currentValue"] == "default"
    assert offered["effort"]["currentValue"] in [c["value"] for c in offered["effort"]["options"]]
    assert offered["mode"]["currentValue"] == "default"
    assert ("modes" in answer) == (client == "v1")


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_choosing_another_model_makes_the_next_request_use_it(
    live: LiveModel, workdir: Path, client: str
) -> None:
    steps = [
        *prompt("[scenario:text] first", client, "first"),
        choose("model", "model", "sonnet"),
        choose("effort", "effort", "high"),
        *prompt("[scenario:text] second", client, "second"),
    ]
    run = run_client(script(live, client, workdir, steps))
    assert options(run.response("model")["result"])["model"]["currentValue"] == "sonnet"
    assert options(run.response("effort")["result"])["effort"]["currentValue"] == "high"
    first, second = live.model.messages_requests()[-2:]
    assert first.model != SONNET and second.model == SONNET
    assert second.body["output_config"]["effort"] == "high"
    if client == "v2":
        # Claude Code echoes a model switch as a user message: no turn, no prompt.
        assert run.state_updates()[-1]["state"] == "idle"
        assert len([u for u in run.raw_updates() if u["sessionUpdate"] == "user_message"]) == 2


@pytest.mark.parametrize(
    ("client", "reopen"), [("v1", "loadSession"), ("v2", "resumeSession"), ("v2", "forkSession")]
)
def test_a_reopened_session_offers_the_options_and_then_its_commands(
    live: LiveModel, workdir: Path, client: str, reopen: str
) -> None:
    first = run_client(script(live, client, workdir, prompt("[scenario:text] hi", client, "p")))
    steps = [{"op": reopen, "id": "open", "sessionId": first.session_id()}]
    second = run_client({**script(live, client, workdir, steps), "autoSession": False})
    offered = options(second.response("open")["result"])
    assert offered["model"]["currentValue"] == "default" and offered["effort"]["category"] == "thought_level"
    answered = line_of(second, lambda line: "configOptions" in (line.get("result") or {}))
    listed = line_of(
        second,
        lambda line: (
            line.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update"
        ),
    )
    assert answered < listed


def mode_of(update: dict[str, Any]) -> Any:
    return options(update)["mode"]["currentValue"]


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_the_mode_follows_every_switch_and_claude_code_leaving_plan_mode(
    live: LiveModel, workdir: Path, client: str
) -> None:
    """v1's ``session/set_mode`` and the mode option are one setting; Claude Code leaving plan
    mode by itself (its plan approved, choosing to auto-accept edits) is told as both."""
    steps: list[dict[str, Any]] = [choose("plan", "mode", "plan")]
    if client == "v1":
        set_mode = {"sessionId": "$sessionId", "modeId": "acceptEdits"}
        steps.insert(0, {"op": "request", "id": "set", "method": "session/set_mode", "params": set_mode})
    steps += prompt("[scenario:exit_plan] Plan it.", client, "p")
    run = run_client(script(live, client, workdir, steps, permission={"optionId": "mode:acceptEdits"}))
    assert mode_of(run.response("plan")["result"]) == "plan"
    [approval] = run.permission_requests
    call = approval["params"].get("toolCall", approval["params"].get("subject", {}).get("toolCall"))
    assert call["kind"] == "switch_mode"
    # Claude Code asks with an empty input; the person deciding sees the plan the model wrote.
    assert call["content"] == [{"type": "content", "content": {"type": "text", "text": PLAN}}]
    told = [mode_of(u) for u in run.raw_updates() if u["sessionUpdate"] == "config_option_update"]
    modes = [u["currentModeId"] for u in run.raw_updates() if u["sessionUpdate"] == "current_mode_update"]
    # Claude Code leaves plan mode for the one chosen (see test_live_options).
    if client == "v1":
        assert told == ["acceptEdits", "acceptEdits"], "set_config_option answers; the rest is told"
        assert modes == ["acceptEdits", "plan", "acceptEdits"]
    else:
        assert told == ["acceptEdits"] and modes == []


def test_an_unknown_option_or_value_is_refused(live: LiveModel, workdir: Path) -> None:
    steps = [
        choose("option", "speed", "fast", expectError=-32602),
        choose("value", "model", "gpt-9", expectError=-32602),
    ]
    run = run_client(script(live, "v2", workdir, steps))
    assert "speed" in run.response("option")["error"]["message"]
    assert "gpt-9" in run.response("value")["error"]["message"]


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_commands_are_offered_before_the_first_prompt_ends(
    live: LiveModel, workdir: Path, client: str
) -> None:
    run = run_client(script(live, client, workdir, prompt("[scenario:text] hi", client, "p")))
    update, *later = [u for u in run.raw_updates() if u["sessionUpdate"] == "available_commands_update"]
    compact = next(command for command in update["availableCommands"] if command["name"] == "compact")
    # The first turn's start names the commands that only work in Claude Code's terminal UI.
    assert all(len(u["availableCommands"]) < len(update["availableCommands"]) for u in later)
    assert compact["description"] and compact["input"]["hint"]
    listed = line_of(run, lambda line: line.get("params", {}).get("update") == update)
    answered = line_of(run, lambda line: "sessionId" in (line.get("result") or {}))
    assert answered < listed, "the commands follow the answer that tells the client of the session"
    ended = line_of(
        run,
        lambda line: (
            ("result" in line and "stopReason" in line["result"])
            or line.get("params", {}).get("update", {}).get("state") == "idle"
        ),
    )
    assert listed < ended


GREET = (
    "printf -- '---\\ndescription: Say hello\\n---\\nSay hello to $ARGUMENTS\\n' > .claude/commands/greet.md"
)


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_commands_reloaded_in_the_session_are_offered_again(
    live: LiveModel, workdir: Path, client: str
) -> None:
    # A command written mid-session: Claude Code lists it once its skills are reloaded.
    (workdir / ".claude" / "commands").mkdir(parents=True)
    steps = [
        *prompt(f"[scenario:bg_from_prompt] Add a command. <command>{GREET}</command>", client, "write"),
        {"op": "waitFor", "update": "tool_call_update", "match": {"status": "completed"}},
        *prompt("/reload-skills", client, "reload"),
    ]
    run = run_client(script(live, client, workdir, steps))
    assert (workdir / ".claude" / "commands" / "greet.md").exists()
    first, *later = [u for u in run.raw_updates() if u["sessionUpdate"] == "available_commands_update"]
    assert "greet" not in [command["name"] for command in first["availableCommands"]]
    [greet] = [c for c in later[-1]["availableCommands"] if c["name"] == "greet"]
    assert greet["description"].startswith("Say hello")
    assert "reloaded" in run.agent_text().lower()


def test_a_slash_command_runs_as_in_the_terminal(live: LiveModel, workdir: Path) -> None:
    steps = [
        *prompt("/model sonnet", "v1", "slash"),
        *prompt("/effort high", "v1", "effort"),
        *prompt("[scenario:text] after", "v1", "after"),
    ]
    run = run_client(script(live, "v1", workdir, steps))
    assert "Set model to" in run.agent_text()
    assert not [u for u in run.raw_updates() if u["sessionUpdate"] == "user_message_chunk"]
    # Claude Code switched by itself: the client is told.
    told = [options(u) for u in run.raw_updates() if u["sessionUpdate"] == "config_option_update"]
    assert [(o["model"]["currentValue"], o["effort"]["currentValue"]) for o in told] == [
        ("sonnet", "medium"),
        ("sonnet", "high"),
    ]
    request = live.model.messages_requests()[-1]
    assert request.model == SONNET and request.body["output_config"]["effort"] == "high"


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_a_turn_is_followed_by_usage(live: LiveModel, workdir: Path, client: str) -> None:
    run = run_client(script(live, client, workdir, prompt("[scenario:fg_bash] go", client, "p")))
    [usage] = [u for u in run.raw_updates() if u["sessionUpdate"] == "usage_update"]
    assert usage["used"] > 0 and usage["size"] > 0 and usage["cost"]["currency"] == "USD"
    if client == "v1":
        assert run.response("p")["result"]["usage"]["totalTokens"] > 0


@pytest.mark.parametrize(
    ("scenario", "env", "expected"),
    [
        (
            "todo",
            {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "0"},
            [("Write the parser", "completed"), ("Writing the tests", "in_progress")],
        ),
        (
            "tasks",
            {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"},
            [("Writing the parser", "in_progress"), ("Write the tests", "pending")],
        ),
    ],
)
@pytest.mark.parametrize("client", ["v1", "v2"])
def test_claude_codes_list_becomes_the_plan(
    live: LiveModel,
    workdir: Path,
    client: str,
    scenario: str,
    env: dict[str, str],
    expected: list[tuple[str, str]],
) -> None:
    agent = live.agent()
    agent["env"].update(env)
    steps = prompt(f"[scenario:{scenario}] plan it", client, "p")
    run = run_client({"agent": agent, "client": client, "cwd": str(workdir), "steps": steps})
    plans = [u for u in run.raw_updates() if u["sessionUpdate"] in ("plan", "plan_update")]
    latest = plans[-1]["entries"] if client == "v1" else plans[-1]["plan"]["entries"]
    assert [(entry["content"], entry["status"]) for entry in latest] == expected
    calls = [u for u in run.raw_updates() if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert calls == [], "the list's tool calls are the plan"


DOT = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg=="
"""A PNG of two by two red pixels."""
PROBE = Path(__file__).parents[1] / "support" / "mcp_probe.py"


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_tool_calls_read_as_what_they_do(live: LiveModel, workdir: Path, client: str) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\nthree TODO\nfour\n")
    (workdir / "dot.png").write_bytes(base64.b64decode(DOT))
    probe = {"name": "probe", "command": sys.executable, "args": [str(PROBE)], "env": []}
    if client == "v2":
        probe["type"] = "stdio"  # v1 names no transport for stdio, v2 names every one
    steps = prompt(f"[scenario:look_around] Look around <dir>{workdir}</dir>", client, "p")
    run = run_client({**script(live, client, workdir, steps), "session": {"mcpServers": [probe]}})
    calls: dict[str, dict[str, Any]] = {}
    for update in run.raw_updates():
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], {}).update(update)
    by_title = {call["title"]: call for call in calls.values()}
    read = by_title["Read notes.txt (lines 2-3)"]
    assert read["kind"] == "read" and read["locations"] == [{"path": f"{workdir}/notes.txt", "line": 2}]
    assert by_title['Grep "TODO" in . (*.txt)']["kind"] == "search"
    assert by_title['Glob "*.png" in .']["locations"] == [{"path": str(workdir)}]
    picture = by_title["Read dot.png"]
    images = [c["content"] for c in picture["content"] if c["content"]["type"] == "image"]
    assert [image["mimeType"] for image in images] == ["image/png"] and images[0]["data"]
    assert by_title["probe: probe_echo"]["status"] == "completed"
    # CLI 2.1.332 offers no Grep nor Glob (the model is told to use Bash): those calls fail, but
    # they are shown as they were asked.
    assert {call["title"]: call["status"] for call in calls.values() if call["kind"] != "search"} == {
        "Read notes.txt (lines 2-3)": "completed",
        "Read dot.png": "completed",
        "probe: probe_echo": "completed",
    }


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_without_credentials_a_prompt_fails_with_auth_required(
    live: LiveModel, workdir: Path, client: str
) -> None:
    agent = live.agent()
    agent["env"]["ANTHROPIC_API_KEY"] = None
    steps: list[dict[str, Any]] = [{"op": "prompt", "id": "p", "text": "[scenario:text] hi"}]
    if client == "v1":
        steps[0]["expectError"] = -32000
        run = run_client({"agent": agent, "client": client, "cwd": str(workdir), "steps": steps})
        error = run.response("p")["error"]
    else:
        steps.append({"op": "waitIdle", "match": {"stopReason": "error"}})
        run = run_client({"agent": agent, "client": client, "cwd": str(workdir), "steps": steps})
        error = run.state_updates()[-1]["error"]
    assert error["code"] == -32000 and "claude /login" in error["message"]
    assert "Please run /login" not in run.agent_text(), "the error says how; no stray message"
    assert live.model.messages_requests() == [], "no request left the CLI"


@pytest.mark.parametrize(
    ("client", "auth", "meta"),
    [
        ("v1", {"auth": {"terminal": True}, "_meta": {"terminal-auth": True}}, True),
        ("v1", {"auth": {"terminal": True}}, False),
        ("v2", {"auth": {"terminal": {}}}, False),
    ],
)
def test_a_client_that_runs_terminal_auth_is_offered_claude_codes_login(
    live: LiveModel, workdir: Path, client: str, auth: dict[str, Any], meta: bool
) -> None:
    run = run_client({**script(live, client, workdir, []), "capabilities": auth, "autoSession": False})
    # Both of Claude Code's logins: a Claude subscription, and an Anthropic Console account.
    methods = run.raw["initialize"]["result"]["authMethods"]
    assert [m["id" if client == "v1" else "methodId"] for m in methods] == ["claude-login", "console-login"]
    assert [(m["type"], m["args"]) for m in methods] == [
        ("terminal", ["login"]),
        ("terminal", ["login", "--console"]),
    ]
    assert [m["name"] for m in methods] == [
        "Log in with your Claude subscription",
        "Log in with an Anthropic Console account",
    ]
    assert all(("_meta" in m) == meta for m in methods)
    if meta:
        assert [m["_meta"]["terminal-auth"]["args"][-1] for m in methods] == ["login", "--console"]


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_a_client_that_cannot_run_terminal_auth_is_offered_none(
    live: LiveModel, workdir: Path, client: str
) -> None:
    run = run_client({**script(live, client, workdir, []), "autoSession": False})
    assert run.raw["initialize"]["result"]["authMethods"] == []
