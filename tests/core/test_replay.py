"""Replay: recorded real-CLI frames -> the SDK's parser -> the core -> ACP messages.

Each fixture under ``fixtures/sdk_events`` was recorded from the real bundled CLI by
``scripts/record_sdk_events.py``. The core's output is compared with a golden file per scenario
and client kind (``UPDATE_GOLDEN=1`` rewrites them; review the diff, and give each change its
reason in the commit), every message is validated against the official schema of that
version (the updates only JetBrains AIR is sent, against AIR's contract:
``tests.support.air``), and the background rules (``tests.support.rules``) hold on every
transcript. The transcripts of the client with Zed's capabilities are also read as Zed reads
them (``tests.support.zed``): nothing rejected, dropped or left undrawn, and every terminal
ends. Beneath the presenters, the core states the same facts to every client kind that shares
its policy, and to all five where no subagent runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.answers import SessionFields
from claude_bg_acp.core.background_facts import TaskStopAnswered
from claude_bg_acp.core.effects import ClientEffect
from claude_bg_acp.core.presenting import Fact, Presenter
from tests.support.driver import (
    CLIENTS,
    FIXTURES,
    CoreDriver,
    assert_golden,
    check_transcript,
    effect_json,
    load_frames,
)
from tests.support.handoff import shown_hand_offs

SCENARIOS = sorted(path.stem for path in (FIXTURES / "sdk_events").glob("*.jsonl"))
HANDING_OFF = [s for s in SCENARIOS if s.startswith(("agent_", "bg_", "monitor", "two_shells"))]
"""The scenarios whose tools send work to the background."""
SESSION_ID = "session-replay"
"""The root session of every golden (it seeds the prompts' uuids, so it is part of them)."""


def replay(scenario: str, client: str) -> list[dict[str, object]]:
    driver = CoreDriver.for_client(client, session_id=SESSION_ID)
    effects = driver.replay(load_frames(scenario))
    check_transcript(driver, effects, client, recorded=True)
    return [effect_json(effect, SESSION_ID) for effect in effects]


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replay_matches_golden(scenario: str, client: str) -> None:
    assert_golden(FIXTURES / "golden" / f"{scenario}.{client}.jsonl", replay(scenario, client))


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("scenario", HANDING_OFF)
def test_no_client_is_shown_claude_codes_hand_off(scenario: str, client: str) -> None:
    """A call that sent its work to the background shows what it was asked to do, never Claude
    Code's words to the model (issue 29, defect 1: they name the task's id and output file)."""
    updates = [update for line in replay(scenario, client) if isinstance(update := line.get("notify"), dict)]
    assert not shown_hand_offs(updates)
    assert any(update.get("sessionUpdate") in ("tool_call", "tool_call_update") for update in updates)


class Recorder:
    """A presenter that keeps every fact the core states, and leaves the rendering to the
    client kind's own."""

    def __init__(self, presenter: Presenter) -> None:
        self.presenter = presenter
        self.policy = presenter.policy
        self.facts: list[Fact] = []

    def render(self, fact: Fact) -> list[ClientEffect]:
        if not isinstance(fact, TaskStopAnswered):  # the answer to a request only AIR sends
            self.facts.append(fact)
        return self.presenter.render(fact)

    def answer_fields(self, options: Any) -> SessionFields:
        return self.presenter.answer_fields(options)

    def permission_request(
        self,
        session_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        choices: Any,
        shown: bool,
        replaced: str | None = None,
    ) -> dict[str, Any]:
        return self.presenter.permission_request(
            session_id, tool_call_id, tool_name, tool_input, choices, shown, replaced
        )

    def question(
        self, session_id: str, call: dict[str, Any], title: str, options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self.presenter.question(session_id, call, title, options)


def stated(scenario: str, client: str) -> list[Fact]:
    driver = CoreDriver.for_client(client, session_id=SESSION_ID)
    recorder = Recorder(driver.core.presenter)
    driver.core.presenter = recorder
    driver.replay(load_frames(scenario))
    return recorder.facts


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_core_states_the_same_facts_to_every_client_kind(scenario: str) -> None:
    """Which facts a client is shown is its presenter's business: a v1 client's core tails the
    background shell and keeps its terminal, lists and scheduled work as a v2 client's does.
    Only the policies (held turns, subagents as sessions) make a difference, and only when a
    subagent runs."""
    facts = {client: stated(scenario, client) for client in CLIENTS}
    policies = {client: CoreDriver.for_client(client).core.policy for client in CLIENTS}
    for client, policy in policies.items():
        alike = [other for other in CLIENTS if policies[other] == policy]
        assert all(facts[other] == facts[client] for other in alike), (client, alike)
    subagents = any(frame.get("msg", {}).get("task_type") == "local_agent" for frame in load_frames(scenario))
    if not subagents:
        assert all(facts[client] == facts["v2"] for client in CLIENTS)
