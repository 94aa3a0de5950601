"""Config options (mode, model, effort) through the core: what a session's answer offers, what a
choice sends to Claude Code, and what the client is told when Claude Code changes one itself.

Claude Code's answer to ``initialize`` is the recorded one (``recorded_server_info``: CLI
2.1.332 against the scripted model); every answer and update is validated against the official
schema of its version.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest

from claude_bg_acp.claude.options import may_bypass_permissions, session_options
from claude_bg_acp.claude.server_info import Applied, read_applied, read_server_info
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import (
    Effect,
    Query,
    ReadSettings,
    Reply,
    SetEffort,
    SetFast,
    SetModel,
    SetPermissionMode,
)
from claude_bg_acp.core.errors import Refusal, Refused
from tests.support.driver import CoreDriver, as_jsonrpc, recorded_server_info
from tests.support.frames import init, result, state_changed, status
from tests.support.schema import validate_agent_message, validate_transcript

INFO = recorded_server_info()
MODELS = [model["value"] for model in INFO["models"]]
OPUS, SONNET = "claude-opus-5-5", "claude-sonnet-5-5"


def opened(
    version: int, info: dict[str, Any] = INFO, model: str = OPUS, effort: str = "medium"
) -> CoreDriver:
    driver = CoreDriver(version)
    driver.start(info, model, effort)
    fields, _ = driver.open()
    assert not validate_agent_message(
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s", **fields}}, version, {1: "session/new"}
    )
    return driver


def valid(driver: CoreDriver, effects: list[Effect], version: int) -> list[Effect]:
    agent, client = as_jsonrpc(effects, driver.requests)
    assert not validate_transcript(agent, client, version)
    return effects


def options_of(driver: CoreDriver) -> dict[str, dict[str, Any]]:
    fields = driver.core.presenter.answer_fields(driver.core.options())
    key = "id" if "modes" in fields else "configId"
    return {option[key]: option for option in fields["configOptions"]}


@pytest.mark.parametrize("version", [1, 2])
def test_a_new_session_offers_mode_model_and_effort(version: int) -> None:
    driver = CoreDriver(version)
    driver.start(INFO, OPUS, "medium")
    fields, _ = driver.open()
    key = "id" if version == 1 else "configId"
    mode, model, effort, fast = fields["configOptions"]
    assert (mode[key], mode["category"], mode["currentValue"]) == ("mode", "mode", "default")
    assert (model[key], model["category"], model["currentValue"]) == ("model", "model", "default")
    assert [choice["value"] for choice in model["options"]] == MODELS
    assert model["options"][0]["name"] == INFO["models"][0]["displayName"]
    assert (effort[key], effort["category"], effort["currentValue"]) == ("effort", "thought_level", "medium")
    levels = INFO["models"][0]["supportedEffortLevels"]
    assert [choice["value"] for choice in effort["options"]] == levels
    # The recorded models all support fast mode; a v1 client that does not declare boolean
    # options gets it as a select.
    assert (fast[key], fast["category"], fast["currentValue"]) == (
        "fast_mode",
        "model_config",
        False if version == 2 else "off",
    )
    if version == 1:
        assert fields["modes"]["currentModeId"] == "default"
        assert [m["id"] for m in fields["modes"]["availableModes"]] == [c["value"] for c in mode["options"]]
    else:
        assert "modes" not in fields


def test_an_answer_before_claude_code_said_anything_offers_the_mode_alone() -> None:
    driver = CoreDriver(1)
    fields, told = driver.open()
    assert [option["id"] for option in fields["configOptions"]] == ["mode"]
    assert told == []
    started = driver.start(INFO, OPUS, "medium")
    [update] = driver.updates_of(started, "config_option_update")
    assert [option["id"] for option in update["configOptions"]] == ["mode", "model", "effort", "fast_mode"]


def test_nothing_is_told_before_the_client_has_the_answer() -> None:
    driver = CoreDriver(2)
    fields = driver.core.presenter.answer_fields(driver.core.answer())
    assert [option["configId"] for option in fields["configOptions"]] == ["mode"]
    assert driver.start(INFO, OPUS, "medium") == []
    assert driver.frame(init(SONNET)) == []
    opened_now = valid(driver, driver.handle(ev.AnswerWritten()), 2)
    [update] = driver.updates_of(opened_now, "config_option_update")
    assert {o["configId"]: o["currentValue"] for o in update["configOptions"]}["model"] == "sonnet"
    assert len(driver.updates_of(opened_now, "available_commands_update")) == 1


@pytest.mark.parametrize("version", [1, 2])
def test_choosing_a_model_switches_claude_code_before_the_next_prompt(version: int) -> None:
    driver = opened(version)
    ticket, chosen = driver.choose("model", "sonnet")
    valid(driver, chosen, version)
    assert chosen[:2] == [SetModel("sonnet"), ReadSettings()]
    [answer] = [e for e in chosen if isinstance(e, Reply)]
    assert answer.ticket == ticket
    result: Any = answer.result
    current = {o["id" if version == 1 else "configId"]: o["currentValue"] for o in result["configOptions"]}
    assert current["model"] == "sonnet"
    assert not driver.updates_of(chosen, "config_option_update"), "the answer carries the options"
    _, prompted = driver.prompt("hello")
    assert any(isinstance(e, Query) for e in prompted)
    assert driver.effects.index(SetModel("sonnet")) < next(
        i for i, e in enumerate(driver.effects) if isinstance(e, Query)
    )
    assert driver.settings_read(SONNET, "medium") == [], "Claude Code confirmed what the client was told"


def test_choosing_an_effort_sets_it() -> None:
    driver = opened(2)
    _, chosen = driver.choose("effort", "high")
    assert chosen[:2] == [SetEffort("high"), ReadSettings()]
    assert options_of(driver)["effort"]["currentValue"] == "high"


@pytest.mark.parametrize(
    ("client", "on", "shown"), [("v1-terminal-meta", True, True), ("v1-plain", "on", "on")]
)
def test_fast_mode_is_boolean_where_the_client_takes_booleans_and_sets_claude_codes_setting(
    client: str, on: object, shown: object
) -> None:
    driver = CoreDriver.for_client(client)
    driver.start(INFO, OPUS, "medium", fast=False)
    driver.open()
    fast = options_of(driver)["fast_mode"]
    assert fast["type"] == ("boolean" if on is True else "select")
    _, chosen = driver.choose("fast_mode", on)
    valid(driver, chosen, 1)
    assert chosen[:2] == [SetFast(True), ReadSettings()]
    assert options_of(driver)["fast_mode"]["currentValue"] == shown
    # Claude Code's settings confirm it (``fastMode: true`` in its flag settings), and nothing
    # more is told.
    assert driver.handle(ev.SettingsRead(read_applied(settings_answer(flag=True)))) == []
    with pytest.raises(Refused):
        driver.choose("fast_mode", "maybe")


def settings_answer(flag: bool | None, user: bool = True, effective: bool | None = None) -> dict[str, Any]:
    """Claude Code's ``get_settings`` answer as CLI 2.1.332 gives it (probed, its ``applied``
    shortened) when the user's settings say ``fastMode: user`` and the flag settings ``flag``
    (None: no ``--settings``, no ``apply_flag_settings``); ``effective`` as they merge, unless
    given (a managed policy's ``false`` wins)."""
    sources = [{"source": "userSettings", "settings": {"fastMode": user}}]
    if flag is not None:
        sources.append({"source": "flagSettings", "settings": {"fastMode": flag}})
    merged = (user if flag is None else flag) if effective is None else effective
    return {
        "effective": {"fastMode": merged},
        "sources": sources,
        "served_settings_state": "ineligible",
        "applied": {"model": OPUS, "effort": "medium", "advisor": None},
    }


@pytest.mark.parametrize(
    ("answer", "on"),
    [
        # Claude Code refuses fast mode to an SDK host that did not opt in through its flag
        # settings (``sdk_opt_in_required``): the user's own setting shows, yet is not in effect.
        (settings_answer(flag=None), False),
        (settings_answer(flag=True, user=False), True),
        (settings_answer(flag=False), False),
        (settings_answer(flag=True, effective=False), False),
    ],
    ids=["user-alone", "flag-on", "flag-off", "policy-off"],
)
def test_fast_mode_is_on_where_claude_code_takes_it_from_an_sdk_host(
    answer: dict[str, Any], on: bool
) -> None:
    assert read_applied(answer).fast is on


def test_a_users_own_fast_mode_shows_off_until_the_client_turns_it_on() -> None:
    """The user's settings say ``fastMode: true`` and the client never chose: the requests are
    not fast, and the option says off; once the client turns it on, it says on."""
    driver = CoreDriver(2)
    driver.handle(ev.ClaudeStarted(read_server_info(INFO), read_applied(settings_answer(flag=None))))
    driver.open()
    assert options_of(driver)["fast_mode"]["currentValue"] is False
    _, chosen = driver.choose("fast_mode", True)
    assert chosen[:2] == [SetFast(True), ReadSettings()]
    assert driver.handle(ev.SettingsRead(read_applied(settings_answer(flag=True)))) == []
    assert options_of(driver)["fast_mode"]["currentValue"] is True


@pytest.mark.parametrize(("value", "on"), [(True, True), (False, False), ("on", True), ("off", False)])
def test_a_claude_code_started_again_starts_with_the_fast_mode_the_client_chose(
    value: object, on: bool
) -> None:
    """The core keeps the client's choice, whatever Claude Code reports since; the next start
    puts it in Claude Code's flag settings (``--settings``), where ``SetFast`` put it."""
    driver = CoreDriver.for_client("v1-terminal-meta" if isinstance(value, bool) else "v1-plain")
    driver.start(INFO, OPUS, "medium", fast=not on)
    driver.open()
    driver.choose("fast_mode", value)
    # Claude Code's settings say otherwise (the choice did not take): the option shows them.
    driver.handle(ev.SettingsRead(Applied(OPUS, "medium", fast=not on)), 0.5)
    assert options_of(driver)["fast_mode"]["currentValue"] != value
    driver.handle(ev.ClaudeDied("Claude Code failed", False), 1.0)
    assert driver.core.config.chosen_fast is on
    options = session_options("/", None, fast=driver.core.config.chosen_fast)
    assert options.settings is not None and json.loads(options.settings) == {"fastMode": on}
    # What the new Claude Code has in effect is what the client is told.
    [update] = driver.updates_of(driver.start(INFO, OPUS, "medium", fast=on), "config_option_update")
    assert {o["id"]: o["currentValue"] for o in update["configOptions"]}["fast_mode"] == value


def test_fast_mode_the_client_never_chose_is_left_to_claude_codes_own_settings() -> None:
    driver = opened(2)
    driver.choose("model", "sonnet")
    driver.choose("effort", "high")
    assert driver.core.config.chosen_fast is None
    assert session_options("/", None, fast=driver.core.config.chosen_fast).settings is None


def test_a_model_without_fast_mode_has_no_fast_mode_option() -> None:
    info = copy.deepcopy(INFO)
    for model in info["models"]:
        model["supportsFastMode"] = False
    assert "fast_mode" not in options_of(opened(2, info))


def test_the_effort_option_follows_the_model_and_leaves_with_its_levels() -> None:
    info = copy.deepcopy(INFO)
    haiku = next(model for model in info["models"] if model["value"] == "haiku")
    haiku["supportsEffort"], haiku["supportedEffortLevels"] = False, []
    driver = opened(1, info)
    driver.choose("model", "haiku")
    changed = valid(driver, driver.settings_read(haiku["resolvedModel"], None), 1)
    assert changed == [], "the switch's answer told the client already"
    assert "effort" not in options_of(driver)
    with pytest.raises(Refused) as refused:
        driver.choose("effort", "high")
    assert refused.value.kind is Refusal.UNKNOWN and refused.value.field == "configId"
    assert "effort" in str(refused.value)


@pytest.mark.parametrize(
    ("config_id", "value", "named"),
    [
        ("speed", "fast", "speed"),
        ("model", "gpt-9", "gpt-9"),
        ("mode", "yolo", "yolo"),
        ("effort", "huge", "huge"),
    ],
)
def test_an_unknown_option_or_value_is_refused_naming_it(config_id: str, value: str, named: str) -> None:
    driver = opened(2)
    before = driver.core.options()
    with pytest.raises(Refused) as refused:
        driver.choose(config_id, value)
    assert named in str(refused.value)
    assert driver.core.options() == before


def test_a_boolean_is_no_choice_of_a_select() -> None:
    driver = opened(1)
    with pytest.raises(Refused) as refused:
        driver.choose("model", True)
    assert refused.value.kind is Refusal.INVALID


@pytest.mark.parametrize("version", [1, 2])
def test_claude_code_switching_the_model_by_itself_is_told(version: int) -> None:
    """A ``/model sonnet`` prompt: the settings read after its turn, or the next turn's start."""
    driver = opened(version)
    ended = driver.frames(state_changed("running"), result())
    assert ReadSettings() in ended
    [update] = driver.updates_of(
        valid(driver, driver.settings_read(SONNET, "medium"), version), "config_option_update"
    )
    assert {o["id" if version == 1 else "configId"]: o["currentValue"] for o in update["configOptions"]}[
        "model"
    ] == "sonnet"
    assert driver.frame(init(SONNET)) == [], "told already"


def test_a_model_claude_code_did_not_list_is_a_choice_of_its_own() -> None:
    driver = opened(2)
    driver.frames(state_changed("running"), result())
    driver.settings_read("claude-custom-1", "medium")
    model = options_of(driver)["model"]
    assert model["currentValue"] == "claude-custom-1"
    assert "claude-custom-1" in [choice["value"] for choice in model["options"]]


def test_reports_older_than_a_switch_are_not_taken() -> None:
    driver = opened(2)
    driver.choose("model", "sonnet")
    assert driver.frame(init(OPUS)) == [], "a turn that started before the switch"
    assert driver.settings_read(SONNET, "medium") == []
    [update] = driver.updates_of(driver.frame(init(OPUS)), "config_option_update")
    assert {o["configId"]: o["currentValue"] for o in update["configOptions"]}["model"] == "default"


@pytest.mark.parametrize("version", [1, 2])
def test_claude_code_entering_plan_mode_by_itself_is_told(version: int) -> None:
    driver = opened(version)
    told = valid(driver, driver.frame(status("plan")), version)
    [update] = driver.updates_of(told, "config_option_update")
    assert {o["id" if version == 1 else "configId"]: o["currentValue"] for o in update["configOptions"]}[
        "mode"
    ] == "plan"
    modes = driver.updates_of(told, "current_mode_update")
    assert modes == (
        [{"sessionUpdate": "current_mode_update", "currentModeId": "plan"}] if version == 1 else []
    )


def started_in(mode: str) -> dict[str, Any]:
    return {**INFO, "current_permission_mode": mode}


@pytest.mark.parametrize("version", [1, 2])
def test_a_session_starts_in_the_mode_claude_code_starts_in(version: int) -> None:
    """Its settings' ``defaultMode``: the answer says it, and nothing is told after it."""
    driver = CoreDriver(version)
    driver.start(started_in("acceptEdits"), OPUS, "medium")
    fields, opened_ = driver.open()
    assert options_of(driver)["mode"]["currentValue"] == "acceptEdits"
    assert fields.get("modes", {"currentModeId": "acceptEdits"})["currentModeId"] == "acceptEdits"
    assert not driver.updates_of(opened_, "current_mode_update")
    assert not driver.updates_of(opened_, "config_option_update")


def test_a_claude_code_that_starts_in_another_mode_after_the_answer_is_told() -> None:
    """A second session in a directory is answered by what the first one's Claude Code said;
    its own Claude Code may start in another mode (the settings changed meanwhile)."""
    driver = opened(1)
    told = valid(driver, driver.start(started_in("acceptEdits"), OPUS, "medium"), 1)
    assert driver.updates_of(told, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"}
    ]
    [update] = driver.updates_of(told, "config_option_update")
    assert {o["id"]: o["currentValue"] for o in update["configOptions"]}["mode"] == "acceptEdits"


def test_a_switch_chosen_before_claude_code_started_is_not_undone_by_its_start() -> None:
    driver = opened(1)
    driver.handle(ev.ChooseMode("plan"))
    assert driver.start(started_in("default"), OPUS, "medium") == []
    assert driver.settings_read(OPUS, "medium") == []
    assert driver.core.modes.current == "plan"


def test_v1_set_mode_and_the_mode_option_stay_in_sync() -> None:
    driver = opened(1)
    switched = valid(driver, driver.handle(ev.ChooseMode("acceptEdits")), 1)
    assert switched[:2] == [SetPermissionMode("acceptEdits"), ReadSettings()]
    assert driver.updates_of(switched, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"}
    ]
    [update] = driver.updates_of(switched, "config_option_update")
    assert {o["id"]: o["currentValue"] for o in update["configOptions"]}["mode"] == "acceptEdits"

    _, chosen = driver.choose("mode", "plan")
    valid(driver, chosen, 1)
    assert chosen[:2] == [SetPermissionMode("plan"), ReadSettings()]
    assert driver.updates_of(chosen, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}
    ]
    assert not driver.updates_of(chosen, "config_option_update"), "the answer carries the options"
    assert driver.core.modes.current == "plan"


def test_the_echo_of_a_replaced_switch_does_not_bring_its_mode_back() -> None:
    """Claude Code echoes a mode switch after answering it: two quick switches (Zed cycles modes
    with a key) must not show the first mode again once the second is chosen."""
    driver = opened(1)
    driver.handle(ev.ChooseMode("acceptEdits"))
    driver.choose("mode", "plan")
    echoes = driver.frames(status("acceptEdits"), status("plan"))
    assert not driver.updates_of(echoes, "current_mode_update")
    assert not driver.updates_of(echoes, "config_option_update")
    assert driver.settings_read(OPUS, "medium") == []
    assert driver.settings_read(OPUS, "medium") == []
    assert driver.core.modes.current == "plan"


@pytest.mark.parametrize("version", [1, 2])
def test_a_mode_claude_code_reports_during_a_switch_is_taken_once_it_is_confirmed(version: int) -> None:
    driver = opened(version)
    driver.choose("model", "sonnet")
    assert driver.frame(status("plan")) == [], "it may predate the switch"
    told = valid(driver, driver.settings_read(SONNET, "medium"), version)
    [update] = driver.updates_of(told, "config_option_update")
    key = "id" if version == 1 else "configId"
    assert {o[key]: o["currentValue"] for o in update["configOptions"]}["mode"] == "plan"
    assert len(driver.updates_of(told, "current_mode_update")) == (1 if version == 1 else 0)


# --- which permission modes are offered -----------------------------------------------------------


def mode_ids(driver: CoreDriver) -> list[str]:
    """The modes offered, as the mode option and (v1) as session modes, which must agree."""
    fields = driver.core.presenter.answer_fields(driver.core.options())
    ids = [choice["value"] for choice in options_of(driver)["mode"]["options"]]
    if "modes" in fields:
        assert [mode["id"] for mode in fields["modes"]["availableModes"]] == ids
    return ids


def told_modes(driver: CoreDriver, effects: list[Effect]) -> list[str]:
    [update] = driver.updates_of(effects, "config_option_update")
    [mode] = [o for o in update["configOptions"] if o["id"] == "mode"]
    return [choice["value"] for choice in mode["options"]]


EVERY_MODE = ["default", "acceptEdits", "plan", "auto", "bypassPermissions"]


@pytest.mark.parametrize("version", [1, 2])
def test_every_mode_claude_code_would_take_is_offered_by_its_name(version: int) -> None:
    assert mode_ids(opened(version)) == EVERY_MODE


def test_bypass_is_not_offered_when_claude_code_cannot_bypass_permissions() -> None:
    driver = CoreDriver(1, allow_bypass=False)
    driver.start(INFO, OPUS, "medium")
    assert mode_ids(driver) == ["default", "acceptEdits", "plan", "auto"]
    with pytest.raises(Refused) as refused:
        driver.handle(ev.ChooseMode("bypassPermissions"))
    assert refused.value.kind is Refusal.UNKNOWN and "bypassPermissions" in str(refused.value)


def test_modes_the_settings_disable_are_not_offered_nor_taken() -> None:
    driver = opened(1)
    driver.frames(state_changed("running"), result())
    told = valid(driver, driver.settings_read(OPUS, "medium", frozenset({"auto", "bypassPermissions"})), 1)
    assert told_modes(driver, told) == ["default", "acceptEdits", "plan"] == mode_ids(driver)
    for mode in ("auto", "bypassPermissions"):
        with pytest.raises(Refused) as refused:
            driver.choose("mode", mode)
        assert refused.value.kind is Refusal.INVALID and mode in str(refused.value)


def test_auto_is_offered_while_the_model_can_run_it() -> None:
    """Claude Code refuses ``auto`` on a model without ``supportsAutoMode`` (it says "auto mode
    unavailable for this model"), and leaves ``auto`` for ``default`` when the model changes to
    such a one."""
    info = copy.deepcopy(INFO)
    haiku = next(model for model in info["models"] if model["value"] == "haiku")
    del haiku["supportsAutoMode"]
    driver = opened(1, info)
    driver.handle(ev.ChooseMode("auto"))
    driver.settings_read(OPUS, "medium")
    driver.choose("model", "haiku")
    assert "auto" in mode_ids(driver), "the current mode stays listed"
    driver.settings_read(haiku["resolvedModel"], None)
    left = valid(driver, driver.frame(status("default")), 1)
    assert told_modes(driver, left) == ["default", "acceptEdits", "plan", "bypassPermissions"]
    driver.choose("model", "opus")
    assert "auto" in mode_ids(driver)


@pytest.mark.parametrize("version", [1, 2])
def test_a_switch_claude_code_refuses_goes_back_to_the_mode_it_is_in(version: int) -> None:
    """A refusal the list cannot foresee (Claude Code may say "auto mode is unavailable for your
    plan"): the client is told the mode Claude Code stayed in."""
    driver = opened(version)
    driver.handle(ev.ChooseMode("acceptEdits")) if version == 1 else driver.choose("mode", "acceptEdits")
    driver.frame(status("acceptEdits"))
    driver.settings_read(OPUS, "medium")
    driver.choose("mode", "auto")
    back = valid(driver, driver.handle(ev.ModeRefused("auto")), version)
    [update] = driver.updates_of(back, "config_option_update")
    key = "id" if version == 1 else "configId"
    assert {o[key]: o["currentValue"] for o in update["configOptions"]}["mode"] == "acceptEdits"
    assert driver.updates_of(back, "current_mode_update") == (
        [{"sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"}] if version == 1 else []
    )
    assert driver.core.modes.current == "acceptEdits"


def test_a_refusal_overtaken_by_a_later_choice_changes_nothing() -> None:
    driver = opened(1)
    driver.choose("mode", "auto")
    driver.choose("mode", "plan")
    assert driver.handle(ev.ModeRefused("auto")) == []
    assert driver.core.modes.current == "plan"


@pytest.mark.parametrize(
    ("effective", "disabled"),
    [
        ({}, set()),
        ({"permissions": {"disableAutoMode": "disable"}}, {"auto"}),
        ({"disableAutoMode": "disable"}, {"auto"}),
        ({"permissions": {"disableBypassPermissionsMode": "disable"}}, {"bypassPermissions"}),
        ({"disableBypassPermissionsMode": "disable"}, set()),
        ({"permissions": {"disableAutoMode": "enable", "defaultMode": "plan"}}, set()),
    ],
)
def test_the_modes_claude_codes_settings_disable_are_read_as_it_reads_them(
    effective: dict[str, Any], disabled: set[str]
) -> None:
    """What ``get_settings`` answers (``effective``); CLI 2.1.332 refuses a switch to the modes
    disabled this way, and ignores a top-level ``disableBypassPermissionsMode``."""
    applied = read_applied({"effective": effective, "applied": {"model": OPUS, "effort": "medium"}})
    assert applied.disabled_modes == disabled and applied.model == OPUS


@pytest.mark.parametrize(
    ("euid", "environ", "may"),
    [
        (1000, {}, True),
        (0, {}, False),
        (0, {"IS_SANDBOX": "1"}, True),
        (0, {"IS_SANDBOX": "true"}, False),
        (0, {"CLAUDE_CODE_BUBBLEWRAP": "1"}, True),
        (0, {"CLAUDE_CODE_BUBBLEWRAP": ""}, False),
    ],
)
def test_claude_code_is_let_bypass_permissions_where_it_takes_the_flag(
    monkeypatch: pytest.MonkeyPatch, euid: int, environ: dict[str, str], may: bool
) -> None:
    """CLI 2.1.332 exits on ``--allow-dangerously-skip-permissions`` as root unless ``IS_SANDBOX``
    is exactly ``1`` or ``CLAUDE_CODE_BUBBLEWRAP`` is set (probed: ``IS_SANDBOX=true`` exits)."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    assert may_bypass_permissions(environ) is may
    monkeypatch.setattr(os, "environ", environ)
    assert ("allow-dangerously-skip-permissions" in session_options("/", None).extra_args) is may
