"""Slash commands: Claude Code's and the agent's own, offered to the client as the session's
available commands.

Claude Code lists its commands when it starts, and the whole list again when it changes
(``system/commands_changed``, after skills or plugins were reloaded); each turn's
``system/init`` names the ones that only work in its terminal UI. A prompt that starts with
``/name args`` goes to Claude Code as typed, and Claude Code runs the command as in the
terminal: a local one answers with a message of its own (shown as the agent's), others become
a prompt for the model.

The client is offered every command a prompt can run, each name once: not ``clear`` (nor its
aliases), which would carry on under another Claude Code session id than the ACP session's
(the prompt is refused); not Claude Code's
internal ones (a name starting with ``_``), nor names with whitespace (ACP forbids them), nor
the terminal-only ones once Claude Code has named them. The agent's own commands
(``task_list``: ``/tasks``, ``/stop``) come first, and take the place of Claude Code's of the
same name. ``CommandsChanged`` goes out when the
client is told of the session, and again whenever what is offered changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from claude_bg_acp.claude.conventions import NEW_CONVERSATION_COMMANDS
from claude_bg_acp.claude.server_info import SlashCommand

NOT_OFFERED = frozenset(command.lstrip("/") for command in NEW_CONVERSATION_COMMANDS)


@dataclass(frozen=True)
class CommandsChanged:
    session_id: str
    commands: tuple[SlashCommand, ...]


class Commands:
    def __init__(self, session_id: str, own: tuple[SlashCommand, ...] = ()) -> None:
        """``own``: the agent's own commands, offered first, in place of any of Claude Code's
        with the same name."""
        self.session_id = session_id
        self._own = own
        self._known: tuple[SlashCommand, ...] | None = None
        self._terminal_only: frozenset[str] = frozenset()
        self._shown: tuple[SlashCommand, ...] | None = None

    @property
    def offered(self) -> tuple[SlashCommand, ...] | None:
        """What the client may run (None until Claude Code listed its commands)."""
        if self._known is None:
            return None
        seen = {command.name for command in self._own}
        offered = list(self._own)
        for command in self._known:
            name = command.name
            if name in seen or name in NOT_OFFERED or name in self._terminal_only:
                continue
            if name.startswith("_") or any(c.isspace() for c in name):
                continue
            seen.add(name)
            offered.append(command)
        return tuple(offered)

    def listed(self, commands: tuple[SlashCommand, ...]) -> None:
        """Claude Code's whole list (at start, or changed)."""
        self._known = commands

    def terminal_only(self, names: list[str]) -> None:
        self._terminal_only = frozenset(names)

    def tell(self, again: bool = False) -> list[CommandsChanged]:
        """What the client is to be told: the list when it changed since it was last told (or,
        with ``again``, for a client that is told of the session anew)."""
        offered = self.offered
        if offered is None or (offered == self._shown and not again):
            return []
        self._shown = offered
        return [CommandsChanged(self.session_id, offered)]
