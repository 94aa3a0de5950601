"""The answers we send (JSON-RPC ``result``s), typed as the requests are (``schema``).

Each is a ``TypedDict`` named after ACP's type for it, so that an answer is the very dict the
endpoint encodes: what a handler builds, in the order it builds it, is what the client reads
(the goldens hold the order), and nothing is converted on the way. A field a form of the
protocol lacks is ``NotRequired`` and left out, never sent as ``null``. A shape whose keys
change with the protocol version (a config option's ``id`` is ``configId`` in v2) stays a
``dict`` under a name of its own.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class Empty(TypedDict):
    """The answer of a request that returns nothing: ``{}``."""


ConfigOption = dict[str, Any]
"""ACP's ``SessionConfigOption``: a select or a boolean; its id's key is the version's."""


class SessionMode(TypedDict):
    id: str
    name: str
    description: str


class SessionModeState(TypedDict):
    """v1's ``modes``: the current one and those the client may choose."""

    currentModeId: str
    availableModes: list[SessionMode]


class SessionFields(TypedDict):
    """What an answer that opens a session carries (``session/load``, ``session/resume``)."""

    configOptions: list[ConfigOption]
    modes: NotRequired[SessionModeState]


class NewSessionResponse(SessionFields):
    """``session/new``, ``session/fork``: the session's id, then its fields."""

    sessionId: str


class SessionInfo(TypedDict):
    sessionId: str
    cwd: str
    updatedAt: str
    title: NotRequired[str]


class ListSessionsResponse(TypedDict):
    sessions: list[SessionInfo]
    nextCursor: NotRequired[str]


class PromptResponse(TypedDict):
    """v1 ``session/prompt``: why the turn ended."""

    stopReason: str
    usage: NotRequired[dict[str, Any]]
    """The turn's tokens (``core.foreground``'s ``_usage``)."""


class PromptAccepted(TypedDict):
    """v2 ``session/prompt``: the prompt's message, answered once it is inserted."""

    messageId: str


class SetConfigOptionResponse(TypedDict):
    configOptions: list[ConfigOption]


class StopAsyncTaskResponse(TypedDict):
    """AIR's ``_session/async_task/stop``."""

    stopped: bool


TicketAnswer = PromptResponse | PromptAccepted | SetConfigOptionResponse | StopAsyncTaskResponse
"""What a session's core answers a request with, through its ticket (``core.effects.Reply``)."""


class Implementation(TypedDict):
    name: str
    title: str
    version: str


class AuthMeta(TypedDict):
    """The earlier terminal auth, on v1: the command itself, with a label."""

    command: str
    args: list[str]
    label: str


class MethodId(TypedDict, total=False):
    """The keys of an auth method that one form or the other lacks: its id's (``id`` in v1,
    ``methodId`` in v2, first), and the earlier terminal auth (v1, last)."""

    id: str
    methodId: str
    _meta: dict[str, AuthMeta]


class AuthMethod(MethodId):
    """A login run in the client's terminal."""

    name: str
    description: str
    type: str
    args: list[str]


class InitializeResponseV1(TypedDict):
    _meta: NotRequired[dict[str, Any]]
    protocolVersion: int
    agentInfo: Implementation
    agentCapabilities: dict[str, Any]
    authMethods: list[AuthMethod]


class InitializeResponseV2(TypedDict):
    protocolVersion: int
    info: Implementation
    capabilities: dict[str, Any]
    authMethods: list[AuthMethod]


InitializeResponse = InitializeResponseV1 | InitializeResponseV2

Answer = Empty | InitializeResponse | NewSessionResponse | SessionFields | ListSessionsResponse | TicketAnswer
"""Any answer a request of ours gets (``agent.RequestMethod``)."""
