"""Replay: recorded real-CLI frames -> the SDK's parser -> the core -> ACP messages.

Each fixture under ``fixtures/sdk_events`` was recorded from the real bundled CLI by
``scripts/record_sdk_events.py``. The core's output is compared with a golden file per scenario
and client kind (``UPDATE_GOLDEN=1`` rewrites them; review the diff, and give each change its
reason in the commit), every message is validated against the official schema of that
version (the updates only JetBrains AIR is sent, against AIR's contract:
``tests.support.air``), and the background rules (``tests.support.rules``) hold on every
transcript. The transcripts of the client with Zed's capabilities are also read as Zed reads
them (``tests.support.zed``): nothing rejected, dropped or left undrawn, and every terminal
ends.
"""

from __future__ import annotations

import json
import os

import pytest

from claude_bg_acp.core.effects import Notify
from tests.support.air import declares_air
from tests.support.driver import CLIENTS, FIXTURES, CoreDriver, as_jsonrpc, effect_json, load_frames
from tests.support.rules import check_updates
from tests.support.schema import validate_transcript
from tests.support.zed import ZED_CAPABILITIES, ZedView

SCENARIOS = sorted(path.stem for path in (FIXTURES / "sdk_events").glob("*.jsonl"))
SESSION_ID = "session-replay"
"""The root session of every golden (it seeds the prompts' uuids, so it is part of them)."""


def replay(scenario: str, client: str) -> list[dict[str, object]]:
    driver = CoreDriver.for_client(client, session_id=SESSION_ID)
    effects = driver.replay(load_frames(scenario))
    agent_lines, client_lines = as_jsonrpc(effects, driver.requests)
    version, capabilities = CLIENTS[client]
    violations = validate_transcript(agent_lines, client_lines, version, air=declares_air(capabilities))
    assert not violations, "\n".join(violations)
    check_updates(((e.session_id, e.update.wire()) for e in effects if isinstance(e, Notify)), version)
    if CLIENTS[client][1] == ZED_CAPABILITIES:
        shown = ZedView.replay(SESSION_ID, agent_lines, client_lines)
        assert not shown.problems(), "\n".join(shown.problems())
        running = [t.terminal_id for t in shown.terminals.values() if t.exit is None]
        assert not running, f"Zed would show these terminals running forever: {running}"
    return [effect_json(effect, SESSION_ID) for effect in effects]


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replay_matches_golden(scenario: str, client: str) -> None:
    produced = replay(scenario, client)
    golden = FIXTURES / "golden" / f"{scenario}.{client}.jsonl"
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in produced)
    if os.environ.get("UPDATE_GOLDEN") or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
        if not os.environ.get("UPDATE_GOLDEN"):
            pytest.fail(f"wrote a new golden file {golden.name}; review and commit it")
    assert text == golden.read_text()
