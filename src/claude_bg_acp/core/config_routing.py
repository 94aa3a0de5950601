"""What Claude Code offers and has in effect, routed to the session's config options.

Claude Code's start (``ClaudeStarted``), what it says by itself (``system/init``, ``status``,
``commands_changed``), the settings read after switches and turns (``SettingsRead``) and a mode
switch it refused go to ``Config`` and ``PermissionModes`` (the config options; the modes
offered follow what ``Config`` read of the settings and the model) and to ``Commands``; a
client's switch (``session/set_mode``, ``session/set_config_option``) goes to Claude Code as
their command, followed by a read that confirms it. After each, the client is told what
changed, once the answer that tells it of the session is written (``Introduction``).
"""

from __future__ import annotations

from typing import Any

from claude_bg_acp.claude.server_info import Applied, read_commands
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.commands import Commands
from claude_bg_acp.core.config import MODE, Config, Introduction, Options, offered
from claude_bg_acp.core.effects import Effect, SetPermissionMode, Ticket
from claude_bg_acp.core.permission_modes import ModeChanged, PermissionModes, closed_modes
from claude_bg_acp.core.presenting import Fact
from claude_bg_acp.core.routes import Routes
from claude_bg_acp.core.usage import Usage


class ConfigRouting:
    def __init__(
        self, config: Config, modes: PermissionModes, commands: Commands, usage: Usage, routes: Routes
    ) -> None:
        self.config = config
        self.modes = modes
        self.commands = commands
        self.usage = usage
        self.routes = routes

    def options(self) -> Options:
        """The session's config options as they are now."""
        return self.config.options(self.modes.available(self.closed_modes()), self.modes.current)

    def closed_modes(self) -> frozenset[str]:
        return closed_modes(self.config.disabled_modes, self.config.runs_auto)

    def answer(self) -> Options:
        """The options for an answer that tells the client of the session (``session/new``,
        load, resume); changes after it go out once the client has it (``AnswerWritten``)."""
        return self.config.answer(self.options())

    def answer_written(self) -> list[Fact]:
        """What changed since the answer was built, and the commands, now that the client has it."""
        return [*self.config.answer_written(self.options()), *self.commands.tell(again=True)]

    # --- the client's switches -------------------------------------------------------------------

    def choose(self, ticket: Ticket, config_id: str, value: object) -> list[Effect]:
        """``session/set_config_option``: the switch goes to Claude Code, the answer carries the
        options (a mode switch also shows in the v1 modes)."""
        if config_id == MODE:
            shut = self.closed_modes()
            offered(MODE, value, [mode["id"] for mode in self.modes.available(shut)])
            commands, changed = self.modes.choose(str(value), shut)
            effects: list[Effect] = [*commands, *(self.config.confirm() if commands else [])]
            effects += self.routes.present(changed)
        else:
            effects = [*self.config.choose(config_id, value, self.options())]
        return effects + self.routes.present([self.config.answered(ticket, self.options())])

    def switch(self, mode_id: str) -> list[Effect]:
        """``session/set_mode``."""
        return self._switched(*self.modes.choose(mode_id, self.closed_modes()))

    def _switched(self, commands: list[SetPermissionMode], changed: list[ModeChanged]) -> list[Effect]:
        """A mode switch of the client's own (``session/set_mode``)."""
        effects: list[Effect] = [*commands, *(self.config.confirm() if commands else [])]
        return effects + self.routes.present(changed) + self.changed()

    def refused(self, mode_id: str) -> list[Effect]:
        """Claude Code refused a mode switch."""
        return self.routes.present(self.modes.refused(mode_id)) + self.changed()

    # --- Claude Code's word on its settings ------------------------------------------------------

    def started(self, started: ev.ClaudeStarted) -> list[Effect]:
        self.config.started(started.info.models, started.applied)
        changed = self.modes.started(started.info.permission_mode, self.config.settled)
        self.commands.listed(started.info.commands)
        # Before the client has the answer, the answer itself says which mode it is.
        told = self.config.introduction is Introduction.OPEN
        return (self.routes.present(changed) if told else []) + self.changed()

    def read(self, applied: Applied | None) -> list[Effect]:
        self.config.read(applied)
        changed = self.modes.settled() if self.config.settled else []
        return self.routes.present(changed) + self.changed()

    def reported(self, subtype: str, data: dict[str, Any]) -> list[Effect]:
        """What Claude Code says of its settings and commands by itself."""
        changed: list[ModeChanged] = []
        if subtype == "init":
            if isinstance(data.get("model"), str):
                self.config.model_reported(data["model"])
            if isinstance(data.get("permissionMode"), str):
                changed = self.modes.reported(data["permissionMode"], self.config.settled)
            terminal = data.get("terminal_slash_commands")
            self.commands.terminal_only(
                [n for n in terminal if isinstance(n, str)] if isinstance(terminal, list) else []
            )
        elif subtype == "status" and isinstance(data.get("permissionMode"), str):
            changed = self.modes.reported(data["permissionMode"], self.config.settled)
        elif subtype == "commands_changed":
            self.commands.listed(read_commands(data.get("commands")))
        elif subtype == "compact_boundary" and isinstance(data.get("compact_metadata"), dict):
            self.usage.compacted(data["compact_metadata"])
            return []
        else:
            return []
        return self.routes.present(changed) + self.changed()

    def changed(self) -> list[Effect]:
        """What the client is told after the options or the commands may have changed."""
        facts: list[Fact] = [*self.config.changed(self.options())]
        if self.config.introduction is Introduction.OPEN:
            facts += self.commands.tell()
        return self.routes.present(facts)
