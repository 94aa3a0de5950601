"""The routes between the session core's routers, each owning one concern: tasks and the
background lists (``task_routing``), subagents' messages (``child_routing``), a conversation's
messages (``message_routing``), permission questions (``permission_requests``), the config
options (``config_routing``), a client attaching (``attach_routing``). Each is given the
session's ``Parts`` (the objects that own each concept's state), or the few it needs, and calls
the routers it depends on directly; the few calls that go back the other way go through
``SessionCore``, which implements ``Routes`` (it alone holds every router), so that no two
routers import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from claude_agent_sdk.types import Message

from claude_bg_acp.core.background import Background
from claude_bg_acp.core.effects import Effect
from claude_bg_acp.core.foreground import Foreground
from claude_bg_acp.core.foreground_facts import ForegroundOut
from claude_bg_acp.core.foreground_shells import ForegroundShells, ShellOut
from claude_bg_acp.core.permission_modes import PermissionModes
from claude_bg_acp.core.policy import Policy
from claude_bg_acp.core.presenting import Fact, Presenter
from claude_bg_acp.core.questions import Questions
from claude_bg_acp.core.schedules import Schedules
from claude_bg_acp.core.subagents import Subagents
from claude_bg_acp.core.tool_uses import ToolUses


@dataclass(frozen=True)
class Parts:
    """One session's parts, which the routers route between."""

    session_id: str
    presenter: Presenter
    policy: Policy
    foreground: Foreground
    background: Background
    shells: ForegroundShells
    subagents: Subagents
    schedules: Schedules
    tool_uses: ToolUses
    questions: Questions
    modes: PermissionModes


class Routes(Protocol):
    def present(self, facts: Sequence[Fact]) -> list[Effect]:
        """Facts rendered by the session's presenter."""
        ...

    def foreground_out(self, outs: list[ForegroundOut]) -> list[Effect]:
        """The foreground's outputs: commands for Claude Code, facts, the agent's own commands."""
        ...

    def shells_out(self, outs: list[ShellOut]) -> list[Effect]:
        """The foreground shells' outputs: tails and facts."""
        ...

    def translate(self, session_id: str, message: Message, now: float) -> list[Effect]:
        """A message of Claude Code's read as said in ``session_id``'s conversation."""
        ...

    def exposed(self, now: float) -> list[Effect]:
        """The work a child exposed now launched, shown."""
        ...
