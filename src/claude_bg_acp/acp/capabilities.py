"""What a client declared it can do at ``initialize``, read once into one typed value.

v1 clients send ``clientCapabilities``, v2 clients ``capabilities``; ``ClientCapabilities.declared
(version, sent)`` reads either in the form of its version (``auth.terminal`` is ``true`` in v1,
an object in v2). Besides ACP's own fields it reads the extensions that clients declare in
``_meta``:

- ``_meta.terminal_output`` (and ``terminal_output_delta``): Zed shows terminals fed through
  ``_meta`` (``presenters.zed``).
- ``_meta["terminal-auth"]``: the earlier form of terminal auth, which Zed and the ACP Registry's
  admission check send; a v1 client declaring it is offered the login, whose command is then also
  given in that form (in either version).
- ``_meta.jetbrains.air``: JetBrains AIR, an integer ``version`` of at least 1 and a list of
  ``capabilities`` (names; other items skipped), anything else being no declaration at all
  (``presenters.air``). Read for v1 only.
- ``subagents``: child sessions in the RFD's form (v1; any value but ``null`` declares it).
- ``session.notices``: ``notice`` updates (v1; v2 clients take them undeclared).
- ``session.configOptions.boolean``: boolean config options (v1; v2 clients take them undeclared).

And one of ACP's own: ``elicitation.form`` (an object), forms the user fills in
(``elicitation/create``), which Claude's questions are put as (``core.user_questions``).

As the schema says of each of these fields (``x-deserialize-default-on-error``), a value of
another shape reads as not declared: what a client declares is never a reason to refuse its
``initialize``. What was sent is kept whole (``sent``), the fields this agent does not read
included.

Plain code rather than a pydantic model: ``initialize`` waits for this reading, and building
the validators of a model tree costs several milliseconds at every start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ASYNC_TASKS, NATIVE_SUBAGENTS = "asyncTasks", "nativeSubagentSessions"
"""What an AIR client may declare: its async tasks, and subagents as native child sessions."""


@dataclass(frozen=True)
class ClientCapabilities:
    version: int
    """The protocol version the client negotiated."""
    terminal_auth: bool
    """The client runs terminal auth methods: v1 ``auth.terminal: true`` or the earlier
    ``_meta["terminal-auth"]``, v2 ``auth.terminal: {}``."""
    earlier_terminal_auth: bool
    """``_meta["terminal-auth"]``: the client reads a terminal method's command in that form."""
    terminal_output: bool
    """``_meta.terminal_output``: Zed's terminals in ``_meta``."""
    terminal_output_delta: bool
    """``_meta.terminal_output_delta``: their output as deltas."""
    child_sessions: bool
    """``subagents``: subagents as child sessions in the RFD's form."""
    notices: bool
    """v1 ``session.notices``: the client takes ``notice`` updates."""
    booleans: bool
    """v1 ``session.configOptions.boolean``: the client takes boolean config options."""
    air: frozenset[str] | None
    """What a JetBrains AIR client declares; None when the client is not AIR."""
    elicitation_form: bool
    """``elicitation.form``: the client fills in ``elicitation/create`` forms."""
    sent: Mapping[str, object]
    """The declaration as the client sent it."""

    @classmethod
    def declared(cls, version: int, sent: Mapping[str, object] | None) -> ClientCapabilities:
        """What a client speaking ``version`` declared in ``sent`` (its ``clientCapabilities``
        or ``capabilities``: an object, or absent)."""
        sent = sent or {}
        meta, auth, session = (
            _fields(sent.get("_meta")),
            _fields(sent.get("auth")),
            _fields(sent.get("session")),
        )
        terminal = auth.get("terminal")
        earlier = meta.get("terminal-auth") is True
        return cls(
            version=version,
            terminal_auth=(terminal is True or earlier) if version == 1 else isinstance(terminal, dict),
            earlier_terminal_auth=earlier,
            terminal_output=meta.get("terminal_output") is True,
            terminal_output_delta=meta.get("terminal_output_delta") is True,
            child_sessions=sent.get("subagents") is not None,
            notices=session.get("notices") is not None,
            booleans=_fields(session.get("configOptions")).get("boolean") is not None,
            air=_air(_fields(meta.get("jetbrains")).get("air")) if version == 1 else None,
            elicitation_form=isinstance(_fields(sent.get("elicitation")).get("form"), dict),
            sent=sent,
        )


def _fields(value: object) -> Mapping[str, object]:
    """An object's fields; a value of another shape has none."""
    return value if isinstance(value, dict) else {}


def _air(declared: object) -> frozenset[str] | None:
    air = _fields(declared)
    version, names = air.get("version"), air.get("capabilities")
    if isinstance(version, bool) or not isinstance(version, int) or not isinstance(names, list):
        return None
    if version < 1:
        return None
    return frozenset(name for name in names if isinstance(name, str))
