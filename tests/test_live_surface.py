"""End to end, the everyday surface: the real bundled Claude Code CLI against the scripted model,
our agent over stdio, the official ACP client (v1 and v2); every agent line is schema-checked
(``run_client``).

- ``session/new`` offers mode, model and effort options from Claude Code's own lists, and a
  choice reaches the next model request (the scripted model records each request's model);
- Claude Code's commands are offered before the first prompt ends, and ``/model`` typed as a
  prompt runs as in the terminal;
- a turn is followed by a ``usage_update``; a todo list becomes the plan;
- without credentials a prompt fails with ``auth_required``, and a client that runs terminal
  auth methods is offered Claude Code's login.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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


def test_a_slash_command_runs_as_in_the_terminal(live: LiveModel, workdir: Path) -> None:
    steps = [*prompt("/model sonnet", "v1", "slash"), *prompt("[scenario:text] after", "v1", "after")]
    run = run_client(script(live, "v1", workdir, steps))
    assert "Set model to" in run.agent_text()
    assert not [u for u in run.raw_updates() if u["sessionUpdate"] == "user_message_chunk"]
    [update] = [u for u in run.raw_updates() if u["sessionUpdate"] == "config_option_update"]
    assert options(update)["model"]["currentValue"] == "sonnet"
    assert live.model.messages_requests()[-1].model == SONNET


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
    [method] = run.raw["initialize"]["result"]["authMethods"]
    assert method["type"] == "terminal" and method["args"] == ["login"]
    assert method["id" if client == "v1" else "methodId"] == "claude-login"
    assert ("_meta" in method) == meta
    if meta:
        assert method["_meta"]["terminal-auth"]["args"][-1] == "login"


@pytest.mark.parametrize("client", ["v1", "v2"])
def test_a_client_that_cannot_run_terminal_auth_is_offered_none(
    live: LiveModel, workdir: Path, client: str
) -> None:
    run = run_client({**script(live, client, workdir, []), "autoSession": False})
    assert run.raw["initialize"]["result"]["authMethods"] == []
