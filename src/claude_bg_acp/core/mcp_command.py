"""``/mcp``: the session's MCP servers, each with its state, and their reconnect, enable and
disable, through the SDK's MCP control requests.

Claude Code runs ``/mcp`` as a local command, without the model, but in a session driven
through the SDK it only counts the servers ("1 MCP server: 1 connected, …. Use `/mcp` in the
terminal for details.") and refuses ``/mcp reconnect|enable|disable <server>`` ("… aren't
available in this session"): the SDK's host is to do those with its control requests
(``mcp_status``, ``mcp_reconnect``, ``mcp_toggle``). So the agent does them.

The prompt still goes to Claude Code as typed (it is the conversation's, and its turn is the
prompt's turn), but right before it the core asks for the control requests (``ControlMcp``),
which the runner performs in order, before it writes the prompt; the answer (``McpAnswered``:
what was done or why not, and every server's state after it) is the agent's message of that
turn, and Claude Code's own answer to the command is left out, so the output shows once. Any
other ``/mcp`` subcommand goes to Claude Code, which answers it itself. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from claude_bg_acp.claude.server_info import McpServerState
from claude_bg_acp.core.effects import ControlMcp
from claude_bg_acp.core.transcript import MessageChunk

ACTIONS = {"reconnect": "Reconnected", "enable": "Enabled", "disable": "Disabled"}
"""The subcommands done through a control request, and what is said once one is done."""
_COMMAND = re.compile(r"/mcp(?:\s+(\S+)(?:\s+(.*\S))?)?\s*", re.DOTALL)
SYNTHETIC = "<synthetic>"
"""The model an answer of Claude Code's own names (no model request made it)."""


def command_of(content: list[dict[str, Any]]) -> ControlMcp | None:
    """The ``/mcp`` command a prompt (Claude's content) is, if the agent does it."""
    text = next((block.get("text") for block in content if block.get("type") == "text"), None)
    found = _COMMAND.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        return None
    action, server = found[1], found[2]
    if action is None:
        return ControlMcp("status", None)
    return ControlMcp(action, server) if action in ACTIONS else None


class McpCommands:
    """The ``/mcp`` turn under way: its answer, and Claude Code's own that it replaces."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._answered = 0
        self._replacing = False

    def answered(
        self, command: ControlMcp, servers: tuple[McpServerState, ...] | None, failure: str | None
    ) -> MessageChunk:
        """The agent's message for the command; Claude Code's answer of the turn is left out."""
        self._answered += 1
        self._replacing = True
        text = answer(command, servers, failure)
        return MessageChunk(self.session_id, f"mcp-{self._answered}", False, text)

    def replaced(self, model: str | None) -> bool:
        """Whether an assistant message of the main conversation (by ``model``) is Claude Code's
        answer to a command the agent answered."""
        return self._replacing and model == SYNTHETIC

    def turn_ended(self) -> None:
        self._replacing = False


def answer(command: ControlMcp, servers: tuple[McpServerState, ...] | None, failure: str | None) -> str:
    """What was done (``failure``: why it was not), then each server's state after it (None: it
    could not be read)."""
    done = ""
    if command.action in ACTIONS:
        if command.server is None:
            done = f"Name the server: `/mcp {command.action} <server>`.\n\n"
        elif failure is not None:
            done = f"Could not {command.action} {command.server}: {failure}\n\n"
        else:
            done = f"{ACTIONS[command.action]} {command.server}.\n\n"
    if servers is None:
        return done + "The MCP servers' state could not be read."
    if not servers:
        return done + "No MCP servers."
    lines = [f"MCP servers ({len(servers)}):"] + [f"- {_state(server)}" for server in servers]
    return done + "\n".join(lines)


def _state(server: McpServerState) -> str:
    tools = f", {server.tools} tool{'s' if server.tools != 1 else ''}" if server.status == "connected" else ""
    error = f" ({server.error})" if server.error else ""
    return f"{server.name}: {server.status}{tools}{error}"
