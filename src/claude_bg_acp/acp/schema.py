"""The ACP shapes we accept and send, as pydantic models (v1 and v2 share most of them).

Wire names are camelCase; Python names are snake_case. Every model keeps unknown fields (and
``_meta``) intact. ``wire()`` dumps only the fields that were set, so an omitted field stays
omitted and an explicit ``None`` is sent as ``null`` -- the difference between "unchanged" and
"clear" in ACP's patch semantics. Discriminators (``sessionUpdate``, ``state``, ``type``) are
always sent. The requests live here; the session updates we send live in ``updates``, which
only sessions need, so that ``initialize`` does not pay for building them.

A session request's ``mcpServers`` is checked entry by entry, field by field, against the
schema of the negotiated version (``versioned``), so that a client's typo is refused
with the field it concerns (``mcpServers[0].env[0].name: Field required``) before anything
starts. v1 tells transports apart by ``type``, stdio being the entry without one, and requires
every list (``args``, ``env``, ``headers``); v2 names every transport, stdio included, and has no
SSE. A transport this agent does not take (v2's ``acp``, an extension's ``_name``, v1's
``sse`` in v2) is refused, as v2 asks; ``null`` for a list means an empty one, as both say.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from claude_bg_acp.acp.capabilities import ClientCapabilities
from claude_bg_acp.core.errors import Refusal, Refused

TAGS = ("session_update", "state", "type", "outcome")


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True
    )

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def model_post_init(self, context: Any) -> None:
        # A tag with a default is still part of the message, not an unset patch field.
        self.model_fields_set.update(_tags(type(self)))

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


@functools.cache
def _tags(model: type[WireModel]) -> tuple[str, ...]:
    """The tags ``model`` has with a default (looked up once: pydantic's ``model_fields`` is slow
    to ask); one whose default is None is a patch field by that name (``subagent_update``'s
    ``state``)."""
    fields = model.model_fields
    return tuple(name for name in TAGS if name in fields and fields[name].default is not None)


Model = TypeVar("Model", bound="WireModel")


def parse_params(model: type[Model], params: object) -> Model:
    """Validate request params, refusing the first problem (-32602) naming the field."""
    try:
        return model.model_validate(params if params is not None else {})
    except ValidationError as exc:
        error = exc.errors()[0]
        # Pydantic names its model where the client sent something other than an object.
        message = "Input should be an object" if error["type"] == "model_type" else error["msg"]
        raise Refused(Refusal.INVALID, message, _where(error["loc"])) from None


def _where(loc: tuple[int | str, ...]) -> str:
    """A field's path as a client reads it: ``mcpServers[0].env[0].name``."""
    path = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        elif index > 0 and isinstance(loc[index - 1], int) and part in _TRANSPORTS:
            continue  # the union member pydantic tried: not a field
        else:
            path += f".{part}" if path else part
    return path or "params"


# --- requests from the client -------------------------------------------------------------


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeParams(WireModel):
    """v1 clients send ``clientCapabilities`` and ``clientInfo``, v2 clients ``capabilities`` and
    ``info``; the capabilities are read once the version is known (``declared``)."""

    protocol_version: int
    client_capabilities: dict[str, object] | None = None
    client_info: Implementation | None = None
    info: Implementation | None = None
    capabilities: dict[str, object] | None = None

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("must be a non-negative integer")
        return value

    def declared(self, version: int) -> ClientCapabilities:
        """What the client declared it can do, read as ``version`` has it."""
        sent = self.client_capabilities if version == 1 else self.capabilities
        return ClientCapabilities.declared(version, sent)


class ContentBlock(WireModel):
    type: str


# --- MCP servers (see the module docstring) --------------------------------------------------

Item = TypeVar("Item")


def _null_is_empty(value: Any) -> Any:
    return [] if value is None else value


OrNull = Annotated[list[Item], BeforeValidator(_null_is_empty)]
"""A list for which ``null`` means empty (the schema's ``x-deserialize-default-on-null``)."""


class EnvVariable(WireModel):
    name: str
    value: str


class HttpHeader(WireModel):
    name: str
    value: str


class McpServerStdio(WireModel):
    """v1's stdio entry: no ``type`` needed, every list required."""

    type: Literal["stdio"] | None = "stdio"
    name: str
    command: str
    args: OrNull[str]
    env: OrNull[EnvVariable]


class McpServerHttp(WireModel):
    """v1's http and sse entries (which the union's tag tells apart), every list required."""

    type: Literal["http", "sse"]
    name: str
    url: str
    headers: OrNull[HttpHeader]


class McpServerStdioV2(McpServerStdio):
    type: Literal["stdio"]
    args: OrNull[str] = []
    env: OrNull[EnvVariable] = []


class McpServerHttpV2(McpServerHttp):
    headers: OrNull[HttpHeader] = []

    @field_validator("url")
    @classmethod
    def _uri(cls, url: str) -> str:
        if not urlsplit(url).scheme:
            raise PydanticCustomError("uri", "must be an absolute URI")
        return url


class UnsupportedTransport(WireModel):
    """An entry whose ``type`` names no transport of this agent's: refused by its validator."""

    offered: ClassVar[str] = "stdio, http, sse"
    type: str

    @field_validator("type")
    @classmethod
    def _refused(cls, kind: str) -> str:
        message = "unsupported MCP transport {kind} (this agent takes {offered})"
        raise PydanticCustomError("transport", message, {"kind": repr(kind), "offered": cls.offered})


class UnsupportedTransportV2(UnsupportedTransport):
    offered: ClassVar[str] = "stdio, http"


_TRANSPORTS = frozenset({"stdio", "http", "sse", "unsupported"})
"""The tags of the transport unions: pydantic names them in an error's path."""


def _transport(default: str | None, known: frozenset[str]) -> Callable[[Any], str]:
    """The union member for an entry: its ``type`` (``default`` when it has none)."""

    def tag(entry: Any) -> str:
        if not isinstance(entry, dict):
            return "stdio"  # whose model says what an entry must be
        kind = entry.get("type", default)
        if kind is None:
            return "stdio"
        return kind if isinstance(kind, str) and kind in known else "unsupported"

    return tag


McpServerV1 = Annotated[
    Annotated[McpServerStdio, Tag("stdio")]
    | Annotated[McpServerHttp, Tag("http")]
    | Annotated[McpServerHttp, Tag("sse")]
    | Annotated[UnsupportedTransport, Tag("unsupported")],
    Discriminator(_transport("stdio", frozenset({"stdio", "http", "sse"}))),
]
McpServerV2 = Annotated[
    Annotated[McpServerStdioV2, Tag("stdio")]
    | Annotated[McpServerHttpV2, Tag("http")]
    | Annotated[UnsupportedTransportV2, Tag("unsupported")],
    Discriminator(_transport(None, frozenset({"stdio", "http"}))),
]
McpServer = McpServerStdio | McpServerHttp
"""An entry once checked (v2's models are subclasses of v1's)."""


def versioned(model: type[Model], version: int) -> type[Model]:
    """``model`` as ``version`` has it: a session request's (``NewSessionParams`` or one of its
    kin) with the ``McpServer`` of ``version``, v2's prompt with its ``idempotencyKey``, any other
    as it is."""
    if model is PromptParams and version >= 2:
        return KeyedPromptParams  # type: ignore[return-value]
    if not issubclass(model, NewSessionParams):
        return model
    shape = McpServerV1 if version == 1 else McpServerV2
    return model[shape]  # type: ignore[index,no-any-return]


# --- sessions ------------------------------------------------------------------------------


class NewSessionParams(WireModel, Generic[Item]):
    """Generic in the version's ``McpServer`` (``versioned``)."""

    cwd: str
    mcp_servers: OrNull[Item] = []
    additional_directories: list[str] | None = None


class SessionParams(WireModel):
    session_id: str


class LoadSessionParams(NewSessionParams[Item], Generic[Item]):
    """``session/load``, ``session/resume`` and ``session/fork`` (which names the source)."""

    session_id: str


class ResumeSessionParams(LoadSessionParams[Item], Generic[Item]):
    replay_from: dict[str, Any] | None = None


class ListSessionsParams(WireModel):
    cwd: str | None = None
    cursor: str | None = None


class PromptParams(SessionParams):
    prompt: list[ContentBlock] = Field(min_length=1)


class KeyedPromptParams(PromptParams):
    """v2's ``session/prompt`` (v2 Preview, Idempotency Keys RFD): the client may name the
    submission with a key it sends on every attempt, an opaque string of 1 to 255 characters
    (v1 has no such field: there it stays an unknown one, kept and unread)."""

    idempotency_key: str | None = Field(default=None, min_length=1, max_length=255)


class SetModeParams(SessionParams):
    mode_id: str


class SetConfigOptionParams(SessionParams):
    config_id: str
    value: str | bool
    type: str | None = None


class AuthMethodParams(WireModel):
    method_id: str


class LogoutParams(WireModel):
    """``logout``: nothing but ``_meta``."""


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
