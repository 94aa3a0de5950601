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

import pytest

from tests.support.driver import (
    CLIENTS,
    FIXTURES,
    CoreDriver,
    assert_golden,
    check_transcript,
    effect_json,
    load_frames,
)

SCENARIOS = sorted(path.stem for path in (FIXTURES / "sdk_events").glob("*.jsonl"))
SESSION_ID = "session-replay"
"""The root session of every golden (it seeds the prompts' uuids, so it is part of them)."""


def replay(scenario: str, client: str) -> list[dict[str, object]]:
    driver = CoreDriver.for_client(client, session_id=SESSION_ID)
    effects = driver.replay(load_frames(scenario))
    check_transcript(driver, effects, client)
    return [effect_json(effect, SESSION_ID) for effect in effects]


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replay_matches_golden(scenario: str, client: str) -> None:
    assert_golden(FIXTURES / "golden" / f"{scenario}.{client}.jsonl", replay(scenario, client))
