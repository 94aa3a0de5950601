"""Usage through the core: after each turn, how full the context is (the latest request of the
main conversation), the window of its model and the cumulative cost; v1 answers carry the
turn's tokens. Frames are built by ``tests.support.frames`` in the recorded shapes."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.core.effects import Effect, Notify, Reply
from tests.support.driver import CoreDriver, as_jsonrpc
from tests.support.frames import (
    MODEL,
    compact_boundary,
    message_delta,
    message_start,
    result,
    state_changed,
)
from tests.support.schema import validate_transcript

WINDOWS = {MODEL: {"inputTokens": 1, "outputTokens": 1, "costUSD": 0.5, "contextWindow": 200_000}}


def usage_updates(driver: CoreDriver, effects: list[Effect], version: int) -> list[dict[str, Any]]:
    agent, client = as_jsonrpc(effects)
    assert not validate_transcript(agent, client, version)
    return [
        e.update.wire()
        for e in effects
        if isinstance(e, Notify) and e.update.wire()["sessionUpdate"] == "usage_update"
    ]


@pytest.mark.parametrize("version", [1, 2])
def test_a_turn_ends_with_the_context_used_its_window_and_the_cost(version: int) -> None:
    driver = CoreDriver(version)
    driver.prompt("hello")
    effects = driver.frames(
        state_changed("running"),
        message_start(100, cache_read=50, cache_write=10),
        message_delta(40),
        message_start(300, cache_read=20),
        message_delta(7),
        result(model_usage=WINDOWS),
    )
    [update] = usage_updates(driver, effects, version)
    assert update == {
        "sessionUpdate": "usage_update",
        "used": 300 + 20 + 7,
        "size": 200_000,
        "cost": {"amount": 0.002, "currency": "USD"},
    }
    position = effects.index(next(e for e in effects if isinstance(e, Notify) and e.update.wire() == update))
    if version == 1:
        [answer] = [e for e in effects if isinstance(e, Reply)]
        assert effects.index(answer) > position, "the usage is part of the turn"
        answered: Any = answer.result
        assert answered["usage"]["totalTokens"] == 24 + 88
    else:
        idle = next(e for e in effects if isinstance(e, Notify) and e.update.wire().get("state") == "idle")
        assert effects.index(idle) > position


def test_a_turn_without_a_model_request_keeps_the_known_window() -> None:
    driver = CoreDriver(2)
    driver.prompt("hello")
    driver.frames(state_changed("running"), message_start(10), message_delta(5), result(model_usage=WINDOWS))
    driver.prompt("/context")
    [update] = usage_updates(driver, driver.frames(state_changed("running"), result(model_usage={})), 2)
    assert (update["used"], update["size"]) == (15, 200_000)


def test_nothing_is_reported_before_a_window_is_known() -> None:
    driver = CoreDriver(1)
    driver.prompt("/model sonnet")
    assert usage_updates(driver, driver.frames(state_changed("running"), result()), 1) == []


def test_a_compaction_shrinks_the_context() -> None:
    driver = CoreDriver(2)
    driver.prompt("hello")
    driver.frames(
        state_changed("running"), message_start(9000), message_delta(100), result(model_usage=WINDOWS)
    )
    driver.prompt("/compact")
    compacted = driver.frames(
        state_changed("running"),
        message_start(9100),
        message_delta(500),
        compact_boundary(9600, 1200),
        result(),
    )
    [update] = usage_updates(driver, compacted, 2)
    assert update["used"] == 1200


def test_a_subagents_requests_are_not_the_sessions_context() -> None:
    driver = CoreDriver(1)
    driver.prompt("hello")
    effects = driver.frames(
        state_changed("running"),
        message_start(10),
        message_delta(5),
        message_start(90_000, parent="toolu_agent"),
        message_delta(900, parent="toolu_agent"),
        result(model_usage=WINDOWS),
    )
    [update] = usage_updates(driver, effects, 1)
    assert update["used"] == 15
