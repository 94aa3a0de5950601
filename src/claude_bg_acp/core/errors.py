"""What the core refuses, and how work fails, in the core's own words.

A client request the core does not carry out raises ``Refused`` from ``SessionCore.handle``
before anything changes: why (a sentence the client is shown), which field of the request was
refused when one was, and the kind of refusal. A prompt, a turn or the session that fails
carries a ``Failure``: its kind and what happened. The core never speaks the wire: the edge
(``acp.errors``) gives each its JSON-RPC code and message, as h11 keeps its protocol errors
apart from what its caller sends.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Refusal(enum.Enum):
    UNKNOWN = "unknown"
    """The request names nothing the session has (a terminal, a child session, a mode, an option)."""
    INVALID = "invalid"
    """A value the session does not take (a prompt block, a choice that was not offered)."""
    FINISHED = "finished"
    """It names work that can no longer be acted on: it has finished."""


class Refused(Exception):
    """A client request the core does not carry out (see the module docstring)."""

    def __init__(self, kind: Refusal, why: str, field: str | None = None) -> None:
        """``field``: the request's field that was refused (``prompt[0]``, ``modeId``), if one was."""
        super().__init__(f"{field}: {why}" if field else why)
        self.kind = kind
        self.why = why
        self.field = field


class Failing(enum.Enum):
    LOGIN_REQUIRED = "login required"
    """Claude Code is not logged in: the client may have its user log in and try again."""
    ERROR = "error"
    """Claude Code ended the turn with an error, died, or the session is closed."""
    WITHDRAWN = "withdrawn"
    """The request was withdrawn (or cancelled) before it was carried out."""


@dataclass(frozen=True)
class Failure:
    """Why a prompt, a turn or the session failed."""

    kind: Failing
    message: str
