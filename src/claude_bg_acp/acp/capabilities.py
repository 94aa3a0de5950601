"""What a client declared it can do at ``initialize``, read once into one model.

v1 clients send ``clientCapabilities``, v2 clients ``capabilities``; both are read by
``ClientCapabilities.declared(version, sent)``, which keeps the version for the fields whose
form differs (``auth.terminal``: ``true`` in v1, an object in v2). Besides ACP's own fields it
reads the extensions that clients declare in ``_meta``:

- ``_meta.terminal_output`` (and ``terminal_output_delta``): Zed shows terminals fed through
  ``_meta`` (``presenters.zed``).
- ``_meta["terminal-auth"]``: the earlier form of terminal auth, which Zed and the ACP Registry's
  admission check send; a v1 client declaring it is offered the login, whose command is then also
  given in that form.
- ``_meta.jetbrains.air``: JetBrains AIR, an integer ``version`` of at least 1 and a list of
  ``capabilities`` (names, non-strings skipped); anything else is no declaration at all
  (``presenters.air``). Read for v1 only.
- ``subagents``: child sessions in the RFD's form (v1; any value but ``null`` declares it).

As the schema says of every one of these fields (``x-deserialize-default-on-error``), a field
whose value has another shape is read as not declared: a client's extension is never a reason
to refuse its ``initialize``. Fields this agent does not read are kept (``model_extra``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticUseDefault

ASYNC_TASKS, NATIVE_SUBAGENTS = "asyncTasks", "nativeSubagentSessions"
"""What an AIR client may declare: its async tasks, and subagents as native child sessions."""


def _default_on_error(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        raise PydanticUseDefault() from None


DefaultOnError = WrapValidator(_default_on_error)
"""A field whose value has another shape takes its default (the schema's
``x-deserialize-default-on-error``)."""

Flag = Annotated[StrictBool, DefaultOnError]
"""Declared by ``true`` alone."""


class Declaration(BaseModel):
    """Part of a declaration: extra fields are kept, nothing is refused."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)


def _names(value: Any) -> Any:
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else value


class AirDeclaration(Declaration):
    version: Annotated[StrictInt, Field(ge=1)]
    capabilities: Annotated[list[str], BeforeValidator(_names)]


class JetBrainsMeta(Declaration):
    air: Annotated[AirDeclaration | None, DefaultOnError] = None


class CapabilitiesMeta(Declaration):
    terminal_output: Flag = False
    terminal_output_delta: Flag = False
    terminal_auth: Flag = Field(default=False, alias="terminal-auth")
    jetbrains: Annotated[JetBrainsMeta, DefaultOnError] = Field(default_factory=JetBrainsMeta)


class TerminalAuth(Declaration):
    """v2's ``auth.terminal``: an object."""


class AuthCapabilities(Declaration):
    terminal: Annotated[StrictBool | TerminalAuth | None, DefaultOnError] = None
    """v1: ``true``; v2: an object."""


class SubagentCapabilities(Declaration):
    pass


def _any_value_declares(value: Any) -> Any:
    return {} if value is not None and not isinstance(value, dict) else value


class ClientCapabilities(Declaration):
    meta: Annotated[CapabilitiesMeta, DefaultOnError] = Field(default_factory=CapabilitiesMeta, alias="_meta")
    auth: Annotated[AuthCapabilities, DefaultOnError] = Field(default_factory=AuthCapabilities)
    subagents: Annotated[SubagentCapabilities | None, BeforeValidator(_any_value_declares)] = None
    _version: int = PrivateAttr(default=1)

    @classmethod
    def declared(cls, version: int, sent: dict[str, Any] | None) -> ClientCapabilities:
        """What a client speaking ``version`` declared in ``sent`` (its ``clientCapabilities``
        or ``capabilities``, an object or absent)."""
        capabilities = cls.model_validate(sent or {})
        capabilities._version = version
        return capabilities

    @property
    def version(self) -> int:
        """The protocol version the client negotiated."""
        return self._version

    @property
    def terminal_auth(self) -> bool:
        """The client runs terminal auth methods: v1 ``auth.terminal: true`` or the earlier
        ``_meta["terminal-auth"]``, v2 ``auth.terminal: {}``."""
        terminal = self.auth.terminal
        if self._version == 1:
            return terminal is True or self.meta.terminal_auth
        return isinstance(terminal, TerminalAuth)

    @property
    def air(self) -> frozenset[str] | None:
        """What a JetBrains AIR client declares; None when the client is not AIR."""
        air = self.meta.jetbrains.air
        if self._version != 1 or air is None:
            return None
        return frozenset(air.capabilities)

    @property
    def child_sessions(self) -> bool:
        """``subagents``: the client reads subagents as child sessions (the RFD's form)."""
        return self.subagents is not None
