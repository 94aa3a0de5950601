"""The ACP shapes we accept and send, as pydantic models (v1 and v2 share most of them).

Wire names are camelCase; Python names are snake_case. Every model keeps unknown fields (and
``_meta``) intact. ``wire()`` dumps only the fields that were set, so an omitted field stays
omitted and an explicit ``None`` is sent as ``null`` -- the difference between "unchanged" and
"clear" in ACP's patch semantics. Discriminators (``sessionUpdate``, ``state``, ``type``) are
always sent. The requests live here; the session updates we send live in ``updates``, which
only sessions need, so that ``initialize`` does not pay for building them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from claude_bg_acp.acp.jsonrpc import INVALID_PARAMS, RpcError

TAGS = ("session_update", "state", "type", "outcome")


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True
    )

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def model_post_init(self, context: Any) -> None:
        # A tag with a default is still part of the message, not an unset patch field.
        for name in TAGS:
            if name in type(self).model_fields:
                self.model_fields_set.add(name)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


def parse_params(model: type[WireModel], params: Any) -> Any:
    """Validate request params, turning the first problem into -32602 naming the field."""
    try:
        return model.model_validate(params if params is not None else {})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "params"
        raise RpcError(INVALID_PARAMS, f"Invalid params: {where}: {error['msg']}") from None


# --- requests from the client -------------------------------------------------------------


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeParams(WireModel):
    protocol_version: int
    client_capabilities: dict[str, Any] | None = None
    client_info: Implementation | None = None
    info: Implementation | None = None
    capabilities: dict[str, Any] | None = None

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("must be a non-negative integer")
        return value


def air_capabilities(client_capabilities: dict[str, Any]) -> frozenset[str] | None:
    """What a JetBrains AIR client declares in ``clientCapabilities._meta.jetbrains.air``.

    None when the client is not AIR. AIR declares an integer ``version`` of at least 1 and a
    list of ``capabilities`` (names); anything else is no declaration at all.
    """
    meta = client_capabilities.get("_meta")
    jetbrains = meta.get("jetbrains") if isinstance(meta, dict) else None
    air = jetbrains.get("air") if isinstance(jetbrains, dict) else None
    if not isinstance(air, dict):
        return None
    version, names = air.get("version"), air.get("capabilities")
    if isinstance(version, bool) or not isinstance(version, int) or not isinstance(names, list):
        return None
    if version < 1:
        return None
    return frozenset(name for name in names if isinstance(name, str))


class ContentBlock(WireModel):
    type: str


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[dict[str, Any]] | None = None
    additional_directories: list[str] | None = None


class SessionParams(WireModel):
    session_id: str


class LoadSessionParams(NewSessionParams):
    """``session/load``, ``session/resume`` and ``session/fork`` (which names the source)."""

    session_id: str


class ResumeSessionParams(LoadSessionParams):
    replay_from: dict[str, Any] | None = None


class ListSessionsParams(WireModel):
    cwd: str | None = None
    cursor: str | None = None


class PromptParams(SessionParams):
    prompt: list[ContentBlock] = Field(min_length=1)


class SetModeParams(SessionParams):
    mode_id: str


class SetConfigOptionParams(SessionParams):
    config_id: str
    value: str | bool
    type: str | None = None


class AuthMethodParams(WireModel):
    method_id: str


class CancelTerminalParams(SessionParams):
    terminal_id: str


class CancelToolCallParams(SessionParams):
    tool_call_id: str


class StopAsyncTaskParams(SessionParams):
    async_task_id: str = Field(min_length=1)


class CancelRequestParams(WireModel):
    request_id: int | str


class PermissionOutcome(WireModel):
    outcome: str
    option_id: str | None = None


class PermissionResponse(WireModel):
    outcome: PermissionOutcome
