"""What Claude Code says about itself: the models and commands it offers, and what is in effect.

Three answers of Claude Code's, untyped in the SDK, are read here into small values (observed
on CLI 2.1.332):

- its answer to the SDK's ``initialize`` request (``ClaudeSDKClient.get_server_info()``):
  ``models`` (``value`` for ``set_model``, ``displayName``, ``description``, ``resolvedModel``,
  ``supportsEffort``, ``supportedEffortLevels``, ``supportsAutoMode``, ``supportsFastMode``),
  ``commands`` (``name``, ``description``, ``argumentHint``) and ``current_permission_mode``;
- its answer to the ``get_settings`` control request, whose ``applied`` part names the model
  id the next request uses and the effort level in effect (``null`` when the model has none),
  and whose ``effective`` settings may disable permission modes: ``auto`` with
  ``disableAutoMode: "disable"`` (at the top or under ``permissions``), ``bypassPermissions``
  with ``permissions.disableBypassPermissionsMode: "disable"`` (Claude Code refuses a switch to
  either then; a top-level ``disableBypassPermissionsMode`` it ignores); fast mode is in effect
  when they say ``fastMode: true`` (a managed policy's ``false`` wins there, and Claude Code's
  code refuses fast mode then too) and the flag settings layer does (``sources``: the layers,
  each ``source`` with its ``settings``; ``flagSettings`` is there once ``--settings`` or
  ``apply_flag_settings`` filled it), for Claude Code refuses fast mode to an SDK host that did
  not opt in there (``sdk_opt_in_required``): a user's own ``fastMode: true`` shows in
  ``effective``, yet the requests are not fast;
- its answer to the ``mcp_status`` control request (``ClaudeSDKClient.get_mcp_status()``):
  ``mcpServers``, each with its ``name``, ``status`` (``connected``, ``failed``, ``needs-auth``,
  ``pending``, ``disabled``), ``tools`` and, when it failed, ``error``.

``system/commands_changed`` carries the whole command list again in the same shape. Reading is
lenient: an entry without a usable name or value is left out, a missing field is empty, never
an error. Standard library only: the core reads these values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DISABLE = "disable"


@dataclass(frozen=True)
class Model:
    """One of the models Claude Code offers."""

    value: str
    """What ``set_model`` takes: an alias such as ``default`` or ``sonnet``, or a model id."""
    name: str
    description: str | None
    resolved: str | None
    """The model id requests use for it."""
    efforts: tuple[str, ...]
    """The effort levels it supports (none when it has no effort setting)."""
    auto: bool = False
    """It can run in the ``auto`` permission mode."""
    fast: bool = False
    """It can run in fast mode."""


@dataclass(frozen=True)
class SlashCommand:
    """One of Claude Code's slash commands."""

    name: str
    description: str
    hint: str
    """What its arguments look like (``argumentHint``); empty when it takes none."""


@dataclass(frozen=True)
class ServerInfo:
    models: tuple[Model, ...]
    commands: tuple[SlashCommand, ...]
    permission_mode: str | None


@dataclass(frozen=True)
class Applied:
    """What Claude Code has in effect."""

    model: str | None
    """The model id the next request uses."""
    effort: str | None
    disabled_modes: frozenset[str] = frozenset()
    """The permission modes the settings disable."""
    fast: bool = False
    """Fast mode is on."""


@dataclass(frozen=True)
class McpServerState:
    name: str
    status: str
    """``connected``, ``failed``, ``needs-auth``, ``pending`` or ``disabled``."""
    tools: int
    error: str | None = None


def read_mcp_status(raw: Any) -> tuple[McpServerState, ...]:
    """``mcp_status``'s answer (``mcpServers``), leniently: an entry without a name is left out."""
    servers = raw.get("mcpServers") if isinstance(raw, dict) else None
    states: list[McpServerState] = []
    for entry in servers if isinstance(servers, list) else []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            continue
        status, tools, error = entry.get("status"), entry.get("tools"), entry.get("error")
        states.append(
            McpServerState(
                name,
                status if isinstance(status, str) else "unknown",
                len(tools) if isinstance(tools, list) else 0,
                error if isinstance(error, str) and error else None,
            )
        )
    return tuple(states)


def read_server_info(raw: dict[str, Any]) -> ServerInfo:
    models = tuple(model for entry in _list(raw.get("models")) if (model := _model(entry)) is not None)
    mode = raw.get("current_permission_mode")
    return ServerInfo(models, read_commands(raw.get("commands")), mode if isinstance(mode, str) else None)


def read_commands(raw: Any) -> tuple[SlashCommand, ...]:
    return tuple(command for entry in _list(raw) if (command := _command(entry)) is not None)


def read_applied(raw: dict[str, Any]) -> Applied:
    applied, effective = raw.get("applied"), raw.get("effective")
    disabled = _disabled_modes(effective)
    fast = _fast(effective) and any(
        source.get("source") == "flagSettings" and _fast(source.get("settings"))
        for source in _list(raw.get("sources"))
    )
    if not isinstance(applied, dict):
        return Applied(None, None, disabled, fast)
    return Applied(_text(applied.get("model")), _text(applied.get("effort")), disabled, fast)


def _fast(settings: Any) -> bool:
    return isinstance(settings, dict) and settings.get("fastMode") is True


def _disabled_modes(effective: Any) -> frozenset[str]:
    effective = effective if isinstance(effective, dict) else {}
    permissions = effective.get("permissions")
    permissions = permissions if isinstance(permissions, dict) else {}
    disabled: set[str] = set()
    if DISABLE in (effective.get("disableAutoMode"), permissions.get("disableAutoMode")):
        disabled.add("auto")
    if permissions.get("disableBypassPermissionsMode") == DISABLE:
        disabled.add("bypassPermissions")
    return frozenset(disabled)


def _model(entry: dict[str, Any]) -> Model | None:
    value = _text(entry.get("value"))
    if value is None:
        return None
    levels = entry.get("supportedEffortLevels") if entry.get("supportsEffort") else None
    efforts = tuple(level for level in _list(levels, str) if level)
    return Model(
        value,
        _text(entry.get("displayName")) or value,
        _text(entry.get("description")),
        _text(entry.get("resolvedModel")),
        efforts,
        entry.get("supportsAutoMode") is True,
        entry.get("supportsFastMode") is True,
    )


def _command(entry: dict[str, Any]) -> SlashCommand | None:
    name = _text(entry.get("name"))
    if name is None:
        return None
    hint = entry.get("argumentHint")
    if isinstance(hint, list):  # some commands list their arguments one by one
        hint = " ".join(str(part) for part in hint)
    return SlashCommand(name, _text(entry.get("description")) or "", hint if isinstance(hint, str) else "")


def _list(value: Any, kind: type = dict) -> list[Any]:
    return [item for item in value if isinstance(item, kind)] if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
