"""The method table (``agent.METHODS``) is what the installed agent answers, over raw stdio and
offline: every method has a params model in every version; a request is dispatched in the
versions it exists in (its params are checked: ``[1]`` is refused with -32602) and is "Method
not found" (-32601) in the others, and in every version for a client that did not declare the
extension it belongs to; a notification's name is no request's. Every line is validated
against the official schema of the negotiated version.
"""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.capabilities import ASYNC_TASKS, ClientCapabilities
from claude_bg_acp.acp.schema import WireModel
from claude_bg_acp.agent import METHODS, NOTIFICATIONS, REQUESTS, NotificationMethod, RequestMethod
from tests.support.air import air_capabilities
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

INFO = {"name": "t", "version": "1"}
EVERYTHING = {
    1: {"auth": {"terminal": True}, **air_capabilities(ASYNC_TASKS)},
    2: {"auth": {"terminal": {}}},
}
"""What a client of each version declares to have every extension of the table."""
NOT_AN_OBJECT = [1]


def initialize_params(version: int, capabilities: dict[str, Any]) -> dict[str, Any]:
    if version == 1:
        return {"protocolVersion": 1, "clientCapabilities": capabilities}
    return {"protocolVersion": version, "info": INFO, "capabilities": capabilities}


def test_the_table_names_each_method_once_as_a_request_or_a_notification() -> None:
    names = [method.name for method in METHODS]
    assert len(set(names)) == len(names)
    assert set(REQUESTS) | set(NOTIFICATIONS) == set(names)
    assert all(isinstance(method, RequestMethod | NotificationMethod) for method in METHODS)
    assert {"initialize", "session/new", "session/prompt", "session/cancel"} <= set(names)


@pytest.mark.parametrize("version", [1, 2])
def test_every_method_has_a_params_model_in_every_version(version: int) -> None:
    client = ClientCapabilities.declared(version, EVERYTHING[version])
    for method in METHODS:
        assert issubclass(method.model(client), WireModel), method.name
        assert issubclass(method.model(None), WireModel), method.name


@pytest.mark.parametrize("declares_everything", [True, False], ids=["declaring-all", "declaring-none"])
@pytest.mark.parametrize("version", [1, 2])
def test_a_request_is_answered_in_its_versions_and_not_found_in_the_others(
    offline: dict[str, str], version: int, declares_everything: bool
) -> None:
    capabilities = EVERYTHING[version] if declares_everything else {}
    agent = StdioAgent(env=offline)
    assert "result" in agent.call(0, "initialize", initialize_params(version, capabilities))
    for request_id, method in enumerate(METHODS, start=1):
        code = agent.call(request_id, method.name, NOT_AN_OBJECT)["error"]["code"]
        exists = version in method.versions and (method.requires is None or declares_everything)
        if isinstance(method, NotificationMethod):
            assert code == -32601, f"{method.name} is a notification"
        elif exists:
            assert code == -32602, f"{method.name} exists in v{version}: its params are checked"
        else:
            assert code == -32601, f"{method.name} does not exist for this v{version} client"
    assert agent.close() == 0, agent.stderr
    violations = validate_transcript(agent.lines, agent.sent, version)
    assert not violations, "\n".join(violations)
