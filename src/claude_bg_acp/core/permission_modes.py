"""Permission modes: Claude Code's, offered to the editor as session modes and as the ``mode``
config option.

The editor shows the modes from the session's answer and switches with ``session/set_mode``
(v1) or ``session/set_config_option``; the mode is Claude Code's permission mode, and
``ModeChanged`` confirms the switch. Claude Code reports no list of its modes, so the list is
what it would accept for this session, named as it names them: ``default``, ``acceptEdits`` and
``plan`` always; ``auto`` unless its settings disable it (``disableAutoMode``) or the current
model cannot run it (Claude Code refuses ``auto`` then, and leaves it for ``default`` when the
model changes to such a one); ``bypassPermissions`` only when Claude Code was started so that it
may bypass permissions (``--allow-dangerously-skip-permissions``, which it refuses to root) and
its settings do not disable it. The modes it would refuse are ``closed`` (from what ``Config``
read of the settings and the model); the current mode is always listed, closed or not.

A session starts in the mode Claude Code starts in: the one its settings choose
(``permissions.defaultMode``), as in a terminal, ``default`` when they choose none.

Claude Code may switch by itself (the model enters plan mode, say): it reports the mode each
turn starts with and every switch, and a mode it reports that we do not offer joins the list,
so that the current mode is always one of them. Its echo of a switch of ours comes after the
switch is answered, so a report that arrives while a switch waits for its confirming read may
predate the latest choice: it is held, and the last one held is taken once the switches are
confirmed (``settled``). Two quick switches so never show the first mode again after the
second. A switch Claude Code refuses (``refused``) leaves it where it was: unless the client
chose again since, the mode goes back to the one Claude Code last said it is in. The core keeps
the current mode, so a Claude Code started again after a crash gets it too.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from claude_bg_acp.acp.answers import SessionMode
from claude_bg_acp.core.effects import SetPermissionMode
from claude_bg_acp.core.errors import Refusal, Refused

DEFAULT_MODE, AUTO, BYPASS = "default", "auto", "bypassPermissions"
MODES: list[SessionMode] = [
    {"id": DEFAULT_MODE, "name": "Default", "description": "Ask before edits and commands that need it"},
    {"id": "acceptEdits", "name": "Accept Edits", "description": "Edit files without asking"},
    {"id": "plan", "name": "Plan", "description": "Plan only: read and think, change nothing"},
    {
        "id": AUTO,
        "name": "Auto",
        "description": "A classifier model decides on each action instead of asking",
    },
    {"id": BYPASS, "name": "Bypass Permissions", "description": "Never ask"},
]


def closed_modes(disabled: Set[str], runs_auto: bool) -> frozenset[str]:
    """The modes Claude Code would refuse now: those its settings disable, and ``auto`` when the
    current model cannot run it."""
    return frozenset({*disabled, *(() if runs_auto else (AUTO,))})


@dataclass(frozen=True)
class ModeChanged:
    session_id: str
    mode_id: str


class PermissionModes:
    def __init__(self, session_id: str, allow_bypass: bool = True) -> None:
        """``allow_bypass``: Claude Code is started so that it may bypass permissions."""
        self.session_id = session_id
        self.current = DEFAULT_MODE
        self._allow_bypass = allow_bypass
        self._reported: list[SessionMode] = []
        """Modes Claude Code reported being in that are none of ``MODES``."""
        self._held: str | None = None
        """The last mode Claude Code reported while a switch of ours was not confirmed yet."""
        self._claude = DEFAULT_MODE
        """The mode Claude Code last said it is in (it starts in the one it is started with)."""

    def available(self, closed: Set[str] = frozenset()) -> list[SessionMode]:
        """The modes to offer, but those Claude Code would refuse now (``closed``)."""
        shut = {*closed, *(() if self._allow_bypass else (BYPASS,))}
        return [m for m in MODES if m["id"] == self.current or m["id"] not in shut] + self._reported

    def choose(
        self, mode_id: str, closed: Set[str] = frozenset()
    ) -> tuple[list[SetPermissionMode], list[ModeChanged]]:
        """Refuses a mode we do not offer."""
        if mode_id not in {mode["id"] for mode in self.available(closed)}:
            raise Refused(Refusal.UNKNOWN, f"unknown mode {mode_id}", "modeId")
        if mode_id == self.current:
            return [], []
        self.current, self._held = mode_id, None
        return [SetPermissionMode(mode_id)], [ModeChanged(self.session_id, mode_id)]

    def started(self, mode_id: str | None, settled: bool = True) -> list[ModeChanged]:
        """Claude Code started, in ``mode_id`` (None: it did not say): the mode its settings
        choose (``permissions.defaultMode``), the resumed conversation's, or ours after a crash.
        A switch of ours that waits for its confirming read (not ``settled``) is newer."""
        if mode_id is None:
            self._claude = self.current
            return []
        if not settled:
            self._claude = mode_id
            return []
        return self.reported(mode_id)

    def refused(self, mode_id: str) -> list[ModeChanged]:
        """Claude Code refused to switch to ``mode_id``: it stays in the mode it was in."""
        if mode_id != self.current or mode_id == self._claude:
            return []
        self.current, self._held = self._claude, None
        return [ModeChanged(self.session_id, self.current)]

    def reported(self, mode_id: str, settled: bool = True) -> list[ModeChanged]:
        """Claude Code says which mode it is in; unless our switches are ``settled``, the report
        is held until they are."""
        self._claude = mode_id
        if not settled:
            self._held = mode_id
            return []
        self._held = None
        if mode_id == self.current:
            return []
        if mode_id not in {mode["id"] for mode in [*MODES, *self._reported]}:
            self._reported.append({"id": mode_id, "name": mode_id, "description": "Claude Code's mode"})
        self.current = mode_id
        return [ModeChanged(self.session_id, mode_id)]

    def settled(self) -> list[ModeChanged]:
        """Our switches are confirmed: the last report held meanwhile is taken."""
        held = self._held
        return self.reported(held) if held is not None else []
