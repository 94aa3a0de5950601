"""The options of a permission question, from the suggestions Claude Code sends (those of
``tests/fixtures/sdk_events``, recorded from the real CLI, and others of the shapes its
``can_use_tool`` request takes): each name says what the option applies (the live proof that
Claude Code does that is ``test_live_options``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import PermissionUpdate

from claude_bg_acp.core.permission_options import ALLOW_ALWAYS, NO, ONCE, choices

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sdk_events"
MODES = ["default", "acceptEdits", "plan", "auto"]


def recorded(fixture: str) -> tuple[str, list[PermissionUpdate]]:
    """The first ``can_use_tool`` of a recording: the tool and Claude Code's suggestions."""
    for line in (FIXTURES / fixture).read_text().splitlines():
        request = json.loads(line)["msg"].get("request") or {}
        if request.get("subtype") == "can_use_tool":
            return request["tool_name"], [
                PermissionUpdate.from_dict(s) for s in request["permission_suggestions"]
            ]
    raise AssertionError(f"no question in {fixture}")


def suggested(*updates: dict[str, Any]) -> list[PermissionUpdate]:
    return [PermissionUpdate.from_dict(update) for update in updates]


def test_a_commands_always_applies_its_rule_and_directory_and_never_the_suggested_mode() -> None:
    tool, suggestions = recorded("permission.jsonl")
    assert [s.type for s in suggestions] == ["addRules", "addDirectories", "setMode"]
    once, always, no = choices(tool, suggestions, MODES)
    assert (once, no) == (ONCE, NO) and always.option_id == ALLOW_ALWAYS
    assert always.name == (
        "Yes, and don't ask again for `touch perm-test.txt` commands in this project, "
        "and always allow access to /tmp/claude-bg-acp/work for this session"
    )
    assert list(always.updates) == suggestions[:2]


def test_a_prefix_rule_names_the_prefix() -> None:
    tool, suggestions = recorded("bg_burst.jsonl")
    [always] = [c for c in choices(tool, suggestions, MODES) if c.kind == "allow_always"]
    assert always.name == (
        "Yes, and don't ask again for `yes burst-0123456789abcdefghijklmnopqrstuvwxyz` commands"
        " in this project"
    )


def test_a_file_edits_always_may_switch_to_accept_edits() -> None:
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    [_, always, _] = choices("Write", suggested(mode), MODES)
    assert always.name == (
        "Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session"
    )
    assert [u.mode for u in always.updates] == ["acceptEdits"]


def test_other_tools_rules_name_the_rule_and_where_it_is_kept() -> None:
    rule = {
        "type": "addRules",
        "rules": [{"toolName": "WebFetch", "ruleContent": "domain:example.com"}],
        "behavior": "allow",
        "destination": "userSettings",
    }
    [_, always, _] = choices("WebFetch", suggested(rule), MODES)
    assert (
        always.name
        == "Yes, and don't ask again for WebFetch(domain:example.com) in any project (user settings)"
    )


def test_no_always_without_a_suggestion_it_can_name() -> None:
    assert choices("Bash", [], MODES) == [ONCE, NO]
    removal = {
        "type": "removeRules",
        "rules": [{"toolName": "Bash"}],
        "behavior": "deny",
        "destination": "session",
    }
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    assert choices("Bash", suggested(removal, mode), MODES) == [ONCE, NO]


def test_leaving_plan_mode_offers_the_modes_that_may_follow() -> None:
    offered = choices("ExitPlanMode", [], ["default", "acceptEdits", "plan"])
    assert [(c.option_id, c.name, c.kind) for c in offered] == [
        ("mode:acceptEdits", "Yes, auto-accept edits", "allow_always"),
        ("mode:default", "Yes, manually approve edits", "allow_once"),
        ("reject_once", "No, keep planning", "reject_once"),
    ]
    assert [(u.type, u.mode, u.destination) for u in offered[0].updates] == [
        ("setMode", "acceptEdits", "session")
    ]
