"""Permission modes: Claude Code's, offered to the editor as session modes and as the ``mode``
config option.

The editor shows the modes from the session's answer and switches with ``session/set_mode``
(v1) or ``session/set_config_option``; the mode is Claude Code's permission mode, and
``ModeChanged`` confirms the switch. Claude Code may switch by itself (the model enters plan
mode, say): it reports the mode each turn starts with and every switch, and a mode it reports
that we do not offer joins the list, so that the current mode is always one of them. Its echo
of a switch of ours comes after the switch is answered, so a report that arrives while a switch
waits for its confirming read may predate the latest choice: it is held, and the last one held
is taken once the switches are confirmed (``settled``). Two quick switches so never show the
first mode again after the second. The core keeps the current mode, so a Claude Code started
again after a crash gets it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.jsonrpc import INVALID_PARAMS, RpcError
from claude_bg_acp.core.effects import SetPermissionMode

DEFAULT_MODE = "default"
MODES = [
    {"id": "default", "name": "Default", "description": "Ask before edits and commands that need it"},
    {"id": "acceptEdits", "name": "Accept Edits", "description": "Edit files without asking"},
    {"id": "plan", "name": "Plan", "description": "Plan only: read and think, change nothing"},
    {"id": "bypassPermissions", "name": "Bypass Permissions", "description": "Never ask"},
]


@dataclass(frozen=True)
class ModeChanged:
    session_id: str
    mode_id: str


class PermissionModes:
    def __init__(self, session_id: str, allow_bypass: bool = True) -> None:
        self.session_id = session_id
        self.current = DEFAULT_MODE
        # Claude Code refuses to bypass permissions as root: then the mode is not offered.
        self.available = [m for m in MODES if allow_bypass or m["id"] != "bypassPermissions"]
        self._held: str | None = None
        """The last mode Claude Code reported while a switch of ours was not confirmed yet."""

    def state(self) -> dict[str, Any]:
        """The ``modes`` of the ``session/new`` answer."""
        return {"currentModeId": self.current, "availableModes": self.available}

    def choose(self, mode_id: str) -> tuple[list[SetPermissionMode], list[ModeChanged]]:
        """Raises -32602 for a mode we do not offer."""
        if mode_id not in {mode["id"] for mode in self.available}:
            raise RpcError(INVALID_PARAMS, f"Invalid params: modeId: unknown mode {mode_id}")
        if mode_id == self.current:
            return [], []
        self.current, self._held = mode_id, None
        return [SetPermissionMode(mode_id)], [ModeChanged(self.session_id, mode_id)]

    def reported(self, mode_id: str, settled: bool = True) -> list[ModeChanged]:
        """Claude Code says which mode it is in; unless our switches are ``settled``, the report
        is held until they are."""
        if not settled:
            self._held = mode_id
            return []
        self._held = None
        if mode_id == self.current:
            return []
        if mode_id not in {mode["id"] for mode in self.available}:
            self.available = [
                *self.available,
                {"id": mode_id, "name": mode_id, "description": "Claude Code's mode"},
            ]
        self.current = mode_id
        return [ModeChanged(self.session_id, mode_id)]

    def settled(self) -> list[ModeChanged]:
        """Our switches are confirmed: the last report held meanwhile is taken."""
        held = self._held
        return self.reported(held) if held is not None else []
