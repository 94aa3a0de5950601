"""Claude's questions (``core.user_questions``): the form or the permission requests built for
them, and the answers read back into the input Claude Code is allowed with. The core is driven
as the session host drives it (``CoreDriver``), every request validated against the schema of
its client's version (``check_transcript``); the live tests (``test_live_questions``) prove
Claude Code reads the answers so."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.capabilities import ClientCapabilities
from claude_bg_acp.core import events as ev
from claude_bg_acp.core import user_questions as uq
from claude_bg_acp.core.effects import AskQuestions, Decide, DecideAnswered, Effect
from claude_bg_acp.presenters.choice import presenter_for
from claude_bg_acp.scripted_model.scenarios import QUESTIONS
from tests.support.driver import CLIENTS, CoreDriver, check_transcript
from tests.support.frames import state_changed, tool_use

COLOUR, CHECKS = (q["question"] for q in QUESTIONS)
TEXT = {"question": "What should the button say?", "header": "Label", "kind": "text", "options": []}
NUMBER = {"question": "How wide, in pixels?", "header": "Width", "kind": "number", "min": 10, "max": 400}
ZED, V2 = "v1-terminal-meta", "v2"


def asked(
    client: str, questions: list[dict[str, Any]], capabilities: dict[str, Any] | None = None
) -> tuple[CoreDriver, AskQuestions]:
    version, declared = CLIENTS[client]
    d = CoreDriver(version, declared if capabilities is None else capabilities)
    d.prompt("Style the button.")
    tool_input = {"questions": questions}
    d.frames(state_changed("running"), tool_use("toolu_ask", uq.TOOL, tool_input))
    [ask] = [e for e in d.ask(7, uq.TOOL, tool_input, "toolu_ask") if isinstance(e, AskQuestions)]
    check_transcript(d, d.effects, client)
    return d, ask


def given(decision: Decide) -> dict[str, object] | None:
    """The input a decision allows the tool with instead of the one asked about."""
    return decision.updated_input if isinstance(decision, DecideAnswered) else None


def answer(d: CoreDriver, ask: AskQuestions, results: list[object]) -> Decide:
    effects: list[Effect] = d.handle(ev.QuestionsAnswered(7, uq.answered(ask.asking, results)))
    [decision] = [e for e in effects if isinstance(e, Decide)]
    return decision


def accepted(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def picked(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


# --- which clients get a form -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "form"),
    [
        ({"elicitation": {"form": {}}}, True),
        ({"elicitation": {"form": {}, "url": {}}}, True),
        ({"elicitation": {"url": {}}}, False),
        ({"elicitation": {"form": None}}, False),
        ({"elicitation": {"form": True}}, False),
        ({"elicitation": []}, False),
        ({}, False),
    ],
)
@pytest.mark.parametrize("version", [1, 2])
def test_a_client_fills_in_forms_when_it_declares_elicitation_form(
    declared: dict[str, Any], form: bool, version: int
) -> None:
    assert ClientCapabilities.declared(version, declared).elicitation_form is form


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("form", [True, False])
def test_every_kind_of_client_is_asked_a_form_when_it_declares_forms(client: str, form: bool) -> None:
    version, declared = CLIENTS[client]
    others = {name: value for name, value in declared.items() if name != "elicitation"}
    forms: dict[str, Any] = {"elicitation": {"form": {}}} if form else {}
    presenter = presenter_for(ClientCapabilities.declared(version, {**others, **forms}))
    assert presenter.policy.questions_as_forms is form


# --- the form ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", [ZED, V2])
def test_the_form_has_a_field_per_question_and_a_free_text_one_per_choice(client: str) -> None:
    capabilities: dict[str, Any] | None = None if client == ZED else {"elicitation": {"form": {}}}
    _, ask = asked(client, [*QUESTIONS, TEXT, NUMBER], capabilities)
    [form] = ask.asking.asks
    assert form.method == "elicitation/create" and form.params["toolCallId"] == "toolu_ask"
    assert form.params["message"] == "Claude has some questions for you"
    properties = form.params["requestedSchema"]["properties"]
    assert list(properties) == ["q1", "q1_other", "q2", "q2_other", "q3", "q4"]
    assert properties["q1"] == {
        "type": "string",
        "title": COLOUR,
        "description": "Colour",
        "oneOf": [
            {"const": "Red", "title": "Red", "description": "Warm and loud"},
            {"const": "Blue", "title": "Blue", "description": "Calm"},
        ],
    }
    assert properties["q2"]["type"] == "array"
    assert [item["const"] for item in properties["q2"]["items"]["anyOf"]] == ["Lint", "Tests"]
    assert properties["q3"]["type"] == "string" and "oneOf" not in properties["q3"]
    assert properties["q4"] == {
        "type": "number",
        "title": NUMBER["question"],
        "description": "Width",
        "minimum": 10,
        "maximum": 400,
    }
    assert "required" not in form.params["requestedSchema"], "a question may be left unanswered"


def test_the_form_reads_back_as_claude_codes_answers() -> None:
    d, ask = asked(ZED, [*QUESTIONS, TEXT, NUMBER])
    content = {
        "q1": "Blue",
        "q2": ["Tests", "Lint", "Not offered"],
        "q2_other": 'Types, "strict"',
        "q3": "  Save  ",
        "q4": 120.0,
    }
    decision = answer(d, ask, [accepted(content)])
    assert decision.allow and given(decision) == {
        "questions": [*QUESTIONS, TEXT, NUMBER],
        "answers": {
            COLOUR: "Blue",
            # In the order offered, the user's own words last, quoted as Claude Code quotes them.
            CHECKS: 'Lint, Tests, "Types, \\"strict\\""',
            TEXT["question"]: "Save",
            NUMBER["question"]: "120",
        },
    }


def test_the_users_own_words_win_over_a_choice_and_unanswered_questions_are_left_out() -> None:
    d, ask = asked(ZED, QUESTIONS)
    decision = answer(d, ask, [accepted({"q1": "Red", "q1_other": "Green", "q2": []})])
    assert (chosen := given(decision)) is not None
    assert chosen["answers"] == {COLOUR: "Green"}


@pytest.mark.parametrize("result", [{"action": "decline"}, {"action": "cancel"}, {"action": "_later"}])
def test_a_form_not_accepted_declines(result: object) -> None:
    d, ask = asked(ZED, QUESTIONS)
    decision = answer(d, ask, [result])
    assert decision == Decide(7, False, message=uq.DECLINED)


# --- one permission request per question ---------------------------------------------------------


@pytest.mark.parametrize("client", ["v1-plain", V2])
def test_without_forms_each_single_choice_is_asked_with_its_answers_as_options(client: str) -> None:
    _, ask = asked(client, [*QUESTIONS, {**QUESTIONS[0], "question": "Which border?"}])
    assert [a.question for a in ask.asking.asks] == [0, 2], "the multi-select is not asked"
    first = ask.asking.asks[0].params
    assert [(o["optionId"], o["name"], o["kind"]) for o in first["options"]] == [
        ("answer-0", "Red", "allow_once"),
        ("answer-1", "Blue", "allow_once"),
        (uq.DECLINE, "Decline", "reject_once"),
    ]
    call = first.get("toolCall") or first["subject"]["toolCall"]
    assert call["title"] == COLOUR
    if client == V2:
        assert first["title"] == COLOUR


def test_the_options_picked_read_back_and_the_rest_is_left_to_the_model() -> None:
    d, ask = asked("v1-plain", [*QUESTIONS, {**QUESTIONS[0], "question": "Which border?"}])
    decision = answer(d, ask, [picked("answer-1"), picked("answer-9")])
    assert (chosen := given(decision)) is not None
    assert chosen["answers"] == {
        COLOUR: "Blue",
        CHECKS: uq.ASK_IN_REPLY,
        "Which border?": uq.ASK_IN_REPLY,  # an option it was not offered
    }


@pytest.mark.parametrize("result", [picked(uq.DECLINE), {"outcome": {"outcome": "cancelled"}}])
def test_declining_one_question_declines_them_all(result: object) -> None:
    d, ask = asked("v1-plain", [*QUESTIONS, {**QUESTIONS[0], "question": "Which border?"}])
    assert uq.ends(result)
    assert given(answer(d, ask, [picked("answer-0"), result])) is None
    assert uq.answered(ask.asking, [result]) is None, "asking stops at a decline"


@pytest.mark.parametrize("client", [ZED, "v1-plain"])
def test_a_failed_request_leaves_its_questions_to_the_model_and_keeps_what_was_picked(client: str) -> None:
    """A client that answers with an error did not decline: the model asks in its reply."""
    border = {**QUESTIONS[0], "question": "Which border?"}
    d, ask = asked(client, [*QUESTIONS, border])
    results: list[object] = [None] if client == ZED else [picked("answer-0"), None]
    assert uq.ends(None) and not uq.declined(None)
    decision = answer(d, ask, results)
    assert decision.allow and (chosen := given(decision)) is not None
    left = {CHECKS: uq.ASK_IN_REPLY, "Which border?": uq.ASK_IN_REPLY}
    first = uq.ASK_IN_REPLY if client == ZED else "Red"
    assert chosen["answers"] == {COLOUR: first, **left}


def test_questions_none_of_which_can_be_options_are_left_to_the_model_at_once() -> None:
    d = CoreDriver(1, CLIENTS["v1-plain"][1])
    d.prompt("Style the button.")
    d.frames(state_changed("running"), tool_use("toolu_ask", uq.TOOL, {"questions": QUESTIONS[1:]}))
    effects = d.ask(7, uq.TOOL, {"questions": QUESTIONS[1:]}, "toolu_ask")
    answers = {CHECKS: uq.ASK_IN_REPLY}
    decided, *rest = effects
    assert decided == DecideAnswered(7, True, updated_input={"questions": QUESTIONS[1:], "answers": answers})
    assert [u["status"] for u in d.updates_of(rest)] == ["in_progress"]  # the call runs: nothing to ask
    assert not d.core.questions.tickets(), "nothing is left open, nothing waits on the user"


# --- what is not a question ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_name", "tool_input"),
    [
        ("Bash", {"questions": QUESTIONS}),
        (uq.TOOL, {}),
        (uq.TOOL, {"questions": []}),
        (uq.TOOL, {"questions": [{"header": "no question"}]}),
        (uq.TOOL, {"questions": "Which?"}),
        (uq.TOOL, {"questions": QUESTIONS, "answers": {COLOUR: "Red"}}),
    ],
)
def test_another_tool_or_input_is_asked_as_any_permission(tool_name: str, tool_input: dict[str, Any]) -> None:
    assert uq.read(tool_name, tool_input) is None


def test_an_answer_after_the_question_was_withdrawn_decides_nothing() -> None:
    d, ask = asked(ZED, QUESTIONS)
    d.handle(ev.PermissionAbandoned(7))
    assert d.handle(ev.QuestionsAnswered(7, uq.answered(ask.asking, [accepted({"q1": "Red"})]))) == []
