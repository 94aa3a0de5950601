"""Permission options: what the client is offered for a question of Claude Code's, and what each
choice applies.

Claude Code sends with each question the permission updates that would spare the next one
(``ToolPermissionContext.suggestions``: rules to add and where to keep them, directories to
add, a mode to switch to). Its terminal turns them into one "don't ask again" row, worded from
what the row applies; so does this module. An "always" option exists only when Claude Code
suggested something it can show; its name says each update it applies, and choosing it applies
exactly those (``Choice.updates``, the allow result's ``updated_permissions``). As in the
terminal, a mode suggested for a command (``acceptEdits`` for ``touch``) is not offered: it
would let other commands through unasked; a file edit's is. Kinds the terminal never offers
(replacing or removing rules or directories, rules that deny) are left out.

Leaving plan mode (``ExitPlanMode``, asked about without suggestions) offers a choice per mode
that may follow, worded as the terminal words them, and "No, keep planning"; choosing one sets
that mode for the session (a ``setMode`` update), and Claude Code reports the switch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from claude_agent_sdk.types import PermissionMode, PermissionRuleValue, PermissionUpdate

from claude_bg_acp.core.permission_modes import DEFAULT_MODE

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
"""The tools whose suggested mode (accept edits) the terminal offers."""
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
ACCEPT_EDITS, PLAN_EXIT = "acceptEdits", "ExitPlanMode"
ACCEPT_EDITS_WORDS = "accept edits (auto-approve file edits and common file commands)"
"""Claude Code's words for the mode, in its "switch to" rows."""
PLAN_EXITS: dict[PermissionMode, str] = {
    "bypassPermissions": "Yes, and bypass permissions",
    "auto": "Yes, and use auto mode",
    "acceptEdits": "Yes, auto-accept edits",
    "default": "Yes, manually approve edits",
}
"""The modes that may follow a plan, most permissive first, named as the terminal names them."""
WHERE = {
    "localSettings": "in this project",
    "projectSettings": "in this project, for everyone (project settings)",
    "userSettings": "in any project (user settings)",
}
"""Where a rule is kept (any other destination: this session only)."""
SESSION = "for this session"

Kind = Literal["allow_once", "allow_always", "reject_once"]


@dataclass(frozen=True)
class Choice:
    """One option of a permission request, and what choosing it applies."""

    option_id: str
    name: str
    kind: Kind
    updates: tuple[PermissionUpdate, ...] = field(default=(), compare=False)

    @property
    def allows(self) -> bool:
        return self.kind != "reject_once"


ONCE = Choice(ALLOW_ONCE, "Yes", "allow_once")
NO = Choice(REJECT_ONCE, "No", "reject_once")


def choices(tool_name: str, suggestions: Sequence[PermissionUpdate], modes: Sequence[str]) -> list[Choice]:
    """The options for a question about ``tool_name``; ``modes``: those that may be set now."""
    if tool_name == PLAN_EXIT:
        return plan_exits(modes)
    shown = [update for update in suggestions if offered(tool_name, update)]
    if not shown:
        return [ONCE, NO]
    name = "Yes, and " + ", and ".join(describe(tool_name, update) for update in shown)
    return [ONCE, Choice(ALLOW_ALWAYS, name, "allow_always", tuple(shown)), NO]


def plan_exits(modes: Sequence[str]) -> list[Choice]:
    """Leaving plan mode: a choice per mode that may follow (default asks again: ``allow_once``)."""
    exits = [
        Choice(
            f"mode:{mode}",
            name,
            "allow_once" if mode == DEFAULT_MODE else "allow_always",
            (PermissionUpdate("setMode", mode=mode, destination="session"),),
        )
        for mode, name in PLAN_EXITS.items()
        if mode in modes
    ]
    return [*exits, Choice(REJECT_ONCE, "No, keep planning", "reject_once")]


def offered(tool_name: str, update: PermissionUpdate) -> bool:
    match update.type:
        case "addRules":
            return update.behavior == "allow" and bool(update.rules)
        case "addDirectories":
            return bool(update.directories)
        case "setMode":
            return tool_name in EDIT_TOOLS and update.mode == ACCEPT_EDITS
        case _:
            return False


def describe(tool_name: str, update: PermissionUpdate) -> str:
    """What an offered update does, in the terminal's words, with where it is kept."""
    where = WHERE.get(update.destination or "session", SESSION)
    match update.type:
        case "addRules":
            rules = and_list([rule_words(tool_name, rule) for rule in update.rules or []])
            return f"don't ask again for {rules} {where}"
        case "addDirectories":
            return f"always allow access to {and_list(update.directories or [])} {where}"
        case _:
            return f"switch to {ACCEPT_EDITS_WORDS} {SESSION}"  # the only mode offered


def rule_words(tool_name: str, rule: PermissionRuleValue) -> str:
    """A rule as the terminal shows it: a command prefix of the tool asked about, else the rule."""
    content = rule.rule_content
    if content is None:
        return f"any {rule.tool_name} command" if rule.tool_name in SHELL_TOOLS else rule.tool_name
    if rule.tool_name == tool_name and tool_name in SHELL_TOOLS:
        prefix = content.removesuffix(":*").removesuffix(" *")
        return f"`{prefix}` commands"
    return f"{rule.tool_name}({content})"


def and_list(items: Sequence[str]) -> str:
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]
