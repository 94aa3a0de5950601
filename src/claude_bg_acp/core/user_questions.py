"""Claude's questions to the user (Claude Code's ``AskUserQuestion``), put to the client and
answered back to Claude Code.

How it works. Claude Code asks permission to run ``AskUserQuestion`` with the questions in its
input (``questions``: each a ``question``, a short ``header``, two to four ``options`` with a
``label`` and maybe a ``description``, ``multiSelect``; newer builds also ``kind`` ``text`` or
``number``). Allowing it with an input that adds ``answers`` (question text → the chosen
label, the labels of a multi-select, or the user's own words) is how the answers reach the
model; allowing it without them tells the model "The user did not answer the questions".

``asking`` plans the client requests (``Asking``):

- a client that declares ``elicitation.form`` gets one ``elicitation/create`` form: each
  question a property (``q1``...: a single choice as ``oneOf`` its options, a multi-select as an
  array of them, a text or number question as such) and, for a choice, a free-text
  ``q1_other`` for an answer of the user's own; no property is required;
- any other client gets one ``session/request_permission`` per single-choice question, whose
  options are the question's answers (each named by its label) and ``Decline``; a question
  that cannot be put as options (multi-select, text, number) is answered with a note telling
  the model to ask it in its reply.

The session host sends them in order, up to the first that ``ends`` them, and hands the
answers to ``answered``: the input to allow the call with, or None when the user declined (a
form declined or cancelled, a request cancelled or answered ``Decline``), which tells the model
``DECLINED``. A request that failed is no decline: what it asked, and what was not asked after
it, is left to the model to ask in its reply. An answer is never "did not answer" once the user
picked one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TOOL = "AskUserQuestion"
DECLINED = "The user declined to answer the questions."
ASK_IN_REPLY = "(not asked: the user's editor cannot show this question; ask it in your reply instead)"
DECLINE = "decline"
FORM, PERMISSION = "elicitation/create", "session/request_permission"
PermissionRequest = Callable[[str, str, str, dict[str, Any], bool], dict[str, Any]]
"""The presenter's ``permission_request``."""
MAX_TEXT = 4000
"""Claude Code refuses an answer of more than 32,768 characters in all (at most 4 questions)."""


@dataclass(frozen=True)
class Question:
    text: str
    header: str
    labels: tuple[str, ...]
    descriptions: tuple[str | None, ...]
    multi: bool
    kind: str
    """``choice``, ``text`` or ``number``."""
    raw: Mapping[str, Any]

    @property
    def one_choice(self) -> bool:
        return self.kind == "choice" and not self.multi


@dataclass(frozen=True)
class ClientAsk:
    method: str
    params: dict[str, Any]
    question: int | None
    """The question a ``session/request_permission`` asks (None for the form)."""


@dataclass(frozen=True)
class Asking:
    """The client requests that put a call's questions to the user, and what to make of them."""

    tool_input: dict[str, Any]
    questions: tuple[Question, ...]
    form: bool
    asks: tuple[ClientAsk, ...]


def read(tool_name: str, tool_input: Mapping[str, Any]) -> tuple[Question, ...] | None:
    """The questions of an ``AskUserQuestion`` call; None for another tool, an input of another
    shape, or one that brings its own ``answers`` (Claude Code refuses answers added to those):
    asked as any permission."""
    raw = tool_input.get("questions") if tool_name == TOOL else None
    if not isinstance(raw, list) or not raw or "answers" in tool_input:
        return None
    questions = tuple(_question(item) for item in raw)
    return None if any(q is None for q in questions) else tuple(q for q in questions if q is not None)


def _question(item: object) -> Question | None:
    if not isinstance(item, dict) or not isinstance(item.get("question"), str):
        return None
    options = [
        o for o in item.get("options") or [] if isinstance(o, dict) and isinstance(o.get("label"), str)
    ]
    kind = str(item["kind"]) if item.get("kind") in ("text", "number") else "choice"
    header = item.get("header")
    return Question(
        text=item["question"],
        header=header if isinstance(header, str) else "",
        labels=tuple(o["label"] for o in options),
        descriptions=tuple(_text(o.get("description")) for o in options),
        multi=item.get("multiSelect") is True,
        kind=kind,
        raw=item,
    )


def asking(
    tool_input: dict[str, Any],
    questions: tuple[Question, ...],
    form: bool,
    where: tuple[str, str, bool],
    permission_request: PermissionRequest,
) -> Asking:
    """The requests for ``questions``: a form (``form``) or one permission request per
    question that can be one. ``where``: the session, the tool call and whether the client was
    shown that call; ``permission_request``: the presenter's, for a question asked as one."""
    asks: tuple[ClientAsk, ...]
    if form:
        asks = (ClientAsk(FORM, _form(tool_input, questions, where), None),)
    else:
        asks = tuple(
            ClientAsk(PERMISSION, _choice(tool_input, question, where, permission_request), index)
            for index, question in enumerate(questions)
            if question.one_choice
        )
    return Asking(tool_input, questions, form, asks)


def _form(
    tool_input: Mapping[str, Any], questions: Sequence[Question], where: tuple[str, str, bool]
) -> dict[str, Any]:
    session_id, tool_call_id, shown = where
    properties: dict[str, Any] = {}
    for index, question in enumerate(questions):
        key = _key(index)
        properties[key] = _property(question)
        if question.kind == "choice":
            properties[f"{key}_other"] = {
                "type": "string",
                "title": "Other",
                "description": f"Your own answer to: {question.text}",
                "maxLength": MAX_TEXT,
            }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    title = _text(tool_input.get("title"))
    if title:
        schema["title"] = title
    params: dict[str, Any] = {
        "mode": "form",
        "sessionId": session_id,
        "message": title
        or (questions[0].text if len(questions) == 1 else "Claude has some questions for you"),
        "requestedSchema": schema,
    }
    if shown:
        params["toolCallId"] = tool_call_id
    return params


def _property(question: Question) -> dict[str, Any]:
    described = {"title": question.text} | ({"description": question.header} if question.header else {})
    if question.kind == "text":
        return {"type": "string", **described, "maxLength": MAX_TEXT}
    if question.kind == "number":
        bounds = {
            name: question.raw[field]
            for name, field in (("minimum", "min"), ("maximum", "max"), ("default", "defaultValue"))
            if _number(question.raw.get(field)) is not None
        }
        return {"type": "number", **described, **bounds}
    choices = [
        {"const": label, "title": label} | ({"description": description} if description else {})
        for label, description in zip(question.labels, question.descriptions, strict=True)
    ]
    if question.multi:
        return {"type": "array", **described, "items": {"anyOf": choices}}
    return {"type": "string", **described, "oneOf": choices}


def _choice(
    tool_input: Mapping[str, Any],
    question: Question,
    where: tuple[str, str, bool],
    permission_request: PermissionRequest,
) -> dict[str, Any]:
    session_id, tool_call_id, shown = where
    # The call as the client sees it while this question is asked: titled by the question.
    one = {**tool_input, "questions": [dict(question.raw)]}
    params = permission_request(session_id, tool_call_id, TOOL, one, shown)
    if "title" in params:  # a v2 request's own title: "Allow ...?" would not read as a question
        params["title"] = question.text
    answers = [
        {"optionId": f"answer-{i}", "name": label, "kind": "allow_once"}
        for i, label in enumerate(question.labels)
    ]
    params["options"] = [*answers, {"optionId": DECLINE, "name": "Decline", "kind": "reject_once"}]
    return params


def declined(result: object) -> bool:
    """The user declined, by the client's answer to one request (None: the request failed,
    which is no decline)."""
    if not isinstance(result, dict):
        return False
    if "action" in result:
        return bool(result["action"] != "accept")
    outcome = result.get("outcome")
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return True
    return outcome.get("optionId") == DECLINE


def ends(result: object) -> bool:
    """No more requests after this answer: the user declined, or the request failed."""
    return result is None or declined(result)


def answered(asking: Asking, results: Sequence[object]) -> dict[str, Any] | None:
    """The input that allows the call with the user's answers (the client's answers to
    ``asking.asks``, in order, up to the one that ``ends`` them), or None when the user
    declined. What a failed request asked, and what was not asked, is left to the model."""
    if any(declined(result) for result in results):
        return None
    if asking.form:
        result = results[0] if results else None
        failed = {question.text: ASK_IN_REPLY for question in asking.questions}
        answers = failed if result is None else _form_answers(asking.questions, _field(result, "content"))
    else:
        picked = {
            ask.question: _field(result, "outcome") for ask, result in zip(asking.asks, results, strict=False)
        }
        answers = {
            question.text: _picked(question, picked.get(index))
            for index, question in enumerate(asking.questions)
        }
    return {**asking.tool_input, "answers": answers}


def _picked(question: Question, outcome: object) -> str:
    """The label of the answer picked (option ``answer-N``); a question not asked, or answered
    with an option it did not offer, is to be asked in the reply."""
    index = str(_field(outcome, "optionId")).removeprefix("answer-")
    return (
        question.labels[int(index)] if index.isdigit() and int(index) < len(question.labels) else ASK_IN_REPLY
    )


def _field(value: object, name: str) -> object:
    return value.get(name) if isinstance(value, dict) else None


def _form_answers(questions: Sequence[Question], content: object) -> dict[str, str]:
    """What the form says of each question it has an answer to."""
    fields = content if isinstance(content, dict) else {}
    answers: dict[str, str] = {}
    for index, question in enumerate(questions):
        answer = _form_answer(question, fields.get(_key(index)), _text(fields.get(f"{_key(index)}_other")))
        if answer:
            answers[question.text] = answer
    return answers


def _form_answer(question: Question, value: object, other: str | None) -> str | None:
    if question.kind == "number":
        number = _number(value)
        return None if number is None else str(int(number)) if number.is_integer() else repr(number)
    if question.multi:
        picked = value if isinstance(value, list) else []
        labels = [label for label in question.labels if label in picked]
        return _joined([*labels, *([other] if other else [])]) or None
    # The user's own words win over a choice: they took the trouble to write them.
    return other or _text(value)


def _joined(answers: list[str]) -> str:
    """A multi-select's answers as Claude Code writes them: comma-separated, an answer that has
    a comma or a quote in it quoted (it reads them back so, to tell its labels)."""
    return ", ".join(json.dumps(a, ensure_ascii=False) if ", " in a or '"' in a else a for a in answers)


def _key(index: int) -> str:
    return f"q{index + 1}"


def _text(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:MAX_TEXT]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)
