"""End to end, Claude's questions (``AskUserQuestion``): the real bundled Claude Code CLI whose
scripted model asks two questions (a single choice, a multi-select) and then repeats what the
tool result told it (``scenarios.ask_question``), our agent over stdio, the official ACP client.
Every message is validated against the schema (``run_client``), the ``elicitation/create``
requests included.

A client that declares Zed's capabilities (``elicitation.form``) is asked one form, which the
test client fills in; a client without elicitation is asked the single choice as a permission
request whose options are its answers, and the model is told to ask the multi-select itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp.core.user_questions import ASK_IN_REPLY, DECLINED
from claude_bg_acp.scripted_model.scenarios import HEARD
from tests.conftest import LiveModel
from tests.support.acp_client import ClientRun, run_client
from tests.support.zed import ZED_CAPABILITIES, ZED_CLIENT_INFO, ZedView

pytestmark = pytest.mark.live

COLOUR, CHECKS = "Which colour should the button be?", "Which checks should run?"
ASK = {"op": "prompt", "id": "p", "text": "[scenario:ask_question] Style the button."}
NOT_ANSWERED = "did not answer"


def as_zed(live: LiveModel, workdir: Path, answer: Any, steps: list[dict[str, Any]]) -> ClientRun:
    script = {
        "agent": live.agent(),
        "client": "v1",
        "capabilities": ZED_CAPABILITIES,
        "clientInfo": ZED_CLIENT_INFO,
        "cwd": str(workdir),
        "elicitation": answer,
        "steps": steps,
    }
    return run_client(script, timeout=60)


def plain(live: LiveModel, workdir: Path, permission: Any) -> ClientRun:
    script = {
        "agent": live.agent(),
        "client": "v1",
        "cwd": str(workdir),
        "permission": permission,
        "steps": [ASK],
    }
    return run_client(script, timeout=60)


def heard(run: ClientRun) -> str:
    """What the model said the tool result told it."""
    text = run.agent_text()
    assert HEARD in text, text
    return text[text.index(HEARD) :]


def test_zed_fills_in_one_form_and_the_model_receives_the_answers(live: LiveModel, workdir: Path) -> None:
    content = {"q1": "Blue", "q2": ["Lint", "Tests"], "q2_other": "Types too"}
    run = as_zed(live, workdir, {"action": "accept", "content": content}, [ASK])
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    [form] = run.elicitations
    schema = form["params"]["requestedSchema"]
    assert form["params"]["mode"] == "form" and form["params"]["sessionId"] == run.session_id()
    assert schema["properties"]["q1"]["oneOf"] == [
        {"const": "Red", "title": "Red", "description": "Warm and loud"},
        {"const": "Blue", "title": "Blue", "description": "Calm"},
    ]
    assert schema["properties"]["q2"]["type"] == "array"
    assert not run.permission_requests, "the form replaces the permission request"
    view = ZedView.of_run(run)
    assert not view.problems(), view.problems()
    [shown] = view.forms
    # The form belongs to the tool call Zed shows for the question.
    assert form["params"]["toolCallId"] in [call.tool_call_id for call in view.calls()]
    assert shown.fields == {"q1": "choice", "q1_other": "text", "q2": "choices", "q2_other": "text"}
    said = heard(run)
    assert f'"{COLOUR}"="Blue"' in said
    assert f'"{CHECKS}"="Lint, Tests, Types too"' in said
    assert NOT_ANSWERED not in said


def test_a_v2_client_that_declares_forms_fills_one_in(live: LiveModel, workdir: Path) -> None:
    content = {"q1": "Red", "q2": ["Tests"]}
    script = {
        "agent": live.agent(),
        "client": "v2",
        "capabilities": {"elicitation": {"form": {}}},
        "cwd": str(workdir),
        "elicitation": {"action": "accept", "content": content},
        "steps": [ASK, {"op": "waitIdle"}],
    }
    run = run_client(script, timeout=60)
    assert len(run.elicitations) == 1 and not run.permission_requests
    said = heard(run)
    assert f'"{COLOUR}"="Red", "{CHECKS}"="Tests"' in said and NOT_ANSWERED not in said


def test_a_declined_form_tells_the_model_the_user_declined(live: LiveModel, workdir: Path) -> None:
    run = as_zed(live, workdir, {"action": "decline"}, [ASK])
    assert run.response("p")["result"]["stopReason"] == "end_turn"
    said = heard(run)
    assert DECLINED in said and NOT_ANSWERED not in said


def test_without_elicitation_the_user_picks_an_answer_as_an_option(live: LiveModel, workdir: Path) -> None:
    run = plain(live, workdir, {"optionId": "answer-1"})
    [request] = run.permission_requests
    assert [option["name"] for option in request["params"]["options"]] == ["Red", "Blue", "Decline"]
    assert request["params"]["toolCall"]["title"] == COLOUR
    said = heard(run)
    assert f'"{COLOUR}"="Blue"' in said
    assert f'"{CHECKS}"="{ASK_IN_REPLY}"' in said, "a multi-select is left to the model to ask"
    assert NOT_ANSWERED not in said


def test_without_elicitation_declining_tells_the_model(live: LiveModel, workdir: Path) -> None:
    run = plain(live, workdir, "reject_once")
    assert run.permission_requests[0]["answer"]["outcome"]["optionId"] == "decline"
    said = heard(run)
    assert DECLINED in said and NOT_ANSWERED not in said


def test_a_cancelled_prompt_withdraws_an_open_form(live: LiveModel, workdir: Path) -> None:
    steps: list[dict[str, Any]] = [
        {**ASK, "await": False},
        {"op": "waitForElicitation"},
        {"op": "cancel"},
        {"op": "awaitResponse", "step": "p"},
    ]
    run = as_zed(live, workdir, "hold", steps)
    assert run.response("p")["result"]["stopReason"] == "cancelled"
    [form] = run.elicitations
    assert form["cancelledByAgent"] and form["answer"] == {"action": "cancel"}
    assert len(run.agent_messages("$/cancel_request")) == 1


def test_closing_the_session_withdraws_an_open_form(live: LiveModel, workdir: Path) -> None:
    steps: list[dict[str, Any]] = [
        {**ASK, "await": False},
        {"op": "waitForElicitation"},
        {"op": "closeSession", "id": "close"},
        {"op": "awaitResponse", "step": "p"},
    ]
    run = as_zed(live, workdir, "hold", steps)
    assert "result" in run.response("close")
    [form] = run.elicitations
    assert form["cancelledByAgent"]
