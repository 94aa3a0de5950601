"""Replay: recorded real-CLI frames -> the SDK's parser -> the core -> ACP messages.

Each fixture under ``fixtures/sdk_events`` was recorded from the real bundled CLI by
``scripts/record_sdk_events.py``. The core's output is compared with a golden file per scenario
and protocol version (``UPDATE_GOLDEN=1`` rewrites them; review the diff), and every message is
validated against the official schema of that version.
"""

from __future__ import annotations

import json
import os

import pytest

from claude_bg_acp.bridge.meta_terminals import Mode
from tests.support.replay import FIXTURES, Replay, as_jsonrpc, effect_json, load_frames
from tests.support.schema import validate_transcript

SCENARIOS = sorted(path.stem for path in (FIXTURES / "sdk_events").glob("*.jsonl"))


CLIENTS: dict[str, tuple[int, bool | None, Mode | None]] = {
    "v1": (1, False, None),
    "v1-subagents": (1, True, None),
    "v1-terminal-meta": (1, False, "delta"),
    "v2": (2, None, None),
}


def replay(scenario: str, client: str) -> list[dict[str, object]]:
    version, expose, meta = CLIENTS[client]
    effects = Replay(1 if version == 1 else 2, expose, meta).run(load_frames(scenario))
    agent_lines, client_lines = as_jsonrpc(effects)
    violations = validate_transcript(agent_lines, client_lines, version)
    assert not violations, "\n".join(violations)
    return [effect_json(effect) for effect in effects]


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
