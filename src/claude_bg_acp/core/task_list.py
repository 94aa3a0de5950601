"""The session's own commands for its background work: ``/tasks`` lists it, ``/stop`` stops one item.

Theory of operation. Every client, v1 ones included, can type a slash command, so these two are
offered beside Claude Code's (``OWN_COMMANDS``) and answered by the agent itself: a prompt that
is one of them (``own_command``) goes in like any other prompt, in order, and when its turn comes
it is answered here, as text, with no model request and nothing added to Claude Code's
conversation. What counts as live background work is what ``background`` shows as items whose
task still runs: terminals, work on tool calls (a ``Monitor``, a subagent shown in its
parent's session) and background child sessions.

Each item gets a number the first time a command looks at the work (in the order the tasks
were first seen), and keeps it while it lives; numbers only grow, so none is ever given to
another item of the session. ``/stop N`` stops the item numbered N; ``/stop TEXT`` the one item
whose command or description contains TEXT (case-insensitive), and refuses, saying why, when
none or several do. The stop itself is the session core's (the same one ``terminal/cancel``,
``tool_call/cancel`` and a child's ``session/cancel`` send): this module only chooses. The time
is passed in; the listing's lines sit in a code block, so that a Markdown client neither renumbers
them as a list nor reads a command's characters as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from claude_bg_acp.claude.server_info import SlashCommand
from claude_bg_acp.core.background import Item, ItemPhase, Kind
from claude_bg_acp.core.tool_uses import ToolUse

TASKS = SlashCommand(
    "tasks", "List the session's background work (shells, monitors, subagents), numbered", ""
)
STOP = SlashCommand("stop", "Stop one item of background work", "number from /tasks, or text of its command")
OWN_COMMANDS = (TASKS, STOP)
LINE_LIMIT = 120
"""Characters of a command or an output line shown in the listing."""

ToolOf = Callable[[str | None], ToolUse | None]


@dataclass(frozen=True)
class OwnCommand:
    name: Literal["tasks", "stop"]
    argument: str


@dataclass(frozen=True)
class Answer:
    """What the agent says to a command, and the item to stop, if it chose one."""

    text: str
    stop: Item | None = None


def own_command(text: str) -> OwnCommand | None:
    """The agent's own command a prompt's text is, if it is one."""
    words = text.strip().split(maxsplit=1)
    if not words:
        return None
    argument = words[1].strip() if len(words) > 1 else ""
    if words[0] == f"/{TASKS.name}":
        return OwnCommand("tasks", argument)
    if words[0] == f"/{STOP.name}":
        return OwnCommand("stop", argument)
    return None


class TaskList:
    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str], int] = {}
        self._last = 0

    def answer(self, command: OwnCommand, items: Iterable[Item], tool_of: ToolOf, now: float) -> Answer:
        numbered = self._number(items)
        if command.name == "tasks":
            return Answer(_listing(numbered, tool_of, now))
        return _choose(command.argument, numbered, tool_of)

    def _number(self, items: Iterable[Item]) -> list[tuple[int, Item]]:
        """The live items with their numbers: the ones they had, or new ones (numbers of items no
        longer live are forgotten, never given again)."""
        live = sorted((item for item in items if _live(item)), key=lambda item: item.task.first_seen_at)
        keys = {_key(item) for item in live}
        self._numbers = {key: number for key, number in self._numbers.items() if key in keys}
        for item in live:
            if _key(item) not in self._numbers:
                self._last += 1
                self._numbers[_key(item)] = self._last
        return sorted(((self._numbers[_key(item)], item) for item in live), key=lambda pair: pair[0])


def _live(item: Item) -> bool:
    """Background work that runs: not a terminal whose task ended (its file is being read to
    the end), nor a subagent in the foreground (the turn's work, not background)."""
    return item.phase is ItemPhase.LIVE and not (
        item.kind is Kind.SUBAGENT and item.task.backgrounded is False
    )


def _key(item: Item) -> tuple[str, str]:
    # A task's new run (a resumed subagent) may be new work under a new reference.
    return item.task.task_id, item.ref


def _listing(numbered: list[tuple[int, Item]], tool_of: ToolOf, now: float) -> str:
    if not numbered:
        return "No background work is running."
    lines = [_line(number, item, tool_of, now) for number, item in numbered]
    fence = "`" * max(3, *(_longest_backtick_run(line) + 1 for line in lines))
    return "\n".join(["Background work (`/stop N` stops one):", "", f"{fence}text", *lines, fence])


def _line(number: int, item: Item, tool_of: ToolOf, now: float) -> str:
    parts = [f"{number}. {_what(item, tool_of)}", f"running {_duration(now - item.task.first_seen_at)}"]
    if item.stop_sent_at is not None:
        parts.append("stopping")
    if item.kind is Kind.TERMINAL:
        last = _last_line(item.recent.latest() if item.recent is not None else b"")
        parts.append(f"last output: {last}" if last else "no output yet")
    return " — ".join(parts)


def _choose(argument: str, numbered: list[tuple[int, Item]], tool_of: ToolOf) -> Answer:
    if not argument:
        return Answer(
            "Which one? `/stop N` stops the item numbered N in `/tasks`; `/stop TEXT` the one "
            "whose command or description contains TEXT."
        )
    chosen = _by_number(argument, numbered) if argument.isdecimal() else _by_text(argument, numbered, tool_of)
    if isinstance(chosen, str):
        return Answer(chosen)
    number, item = chosen
    what = _what(item, tool_of)
    if item.stop_sent_at is not None:
        return Answer(f"{number}. {what} is being stopped already.")
    return Answer(f"Stopping {number}. {what}", item)


def _by_number(argument: str, numbered: list[tuple[int, Item]]) -> tuple[int, Item] | str:
    """The item numbered ``argument``, or why there is none."""
    found = next(((number, item) for number, item in numbered if number == int(argument)), None)
    return found or f"No background work numbered {argument} is running (see `/tasks`)."


def _by_text(argument: str, numbered: list[tuple[int, Item]], tool_of: ToolOf) -> tuple[int, Item] | str:
    """The one item whose command or description has ``argument`` in it, or why there is not one."""
    matching = [(number, item) for number, item in numbered if _matches(argument, item, tool_of)]
    # What is being stopped already is no choice left, unless it is all there is.
    chosen = [(number, item) for number, item in matching if item.stop_sent_at is None] or matching
    if not chosen:
        return f"No running background work has “{argument}” in its command or description (see `/tasks`)."
    if len(chosen) > 1:
        which = ", ".join(str(number) for number, _ in chosen)
        return (
            f"“{argument}” is in more than one item ({which}); nothing was stopped. Say which with `/stop N`."
        )
    return chosen[0]


def _matches(text: str, item: Item, tool_of: ToolOf) -> bool:
    tool = tool_of(item.task.tool_use_id)
    said = [item.command, item.task.description]
    if tool is not None:
        said += [value for key, value in tool.tool_input.items() if key in ("command", "description")]
    needle = text.casefold()
    return any(isinstance(value, str) and needle in value.casefold() for value in said)


def _what(item: Item, tool_of: ToolOf) -> str:
    """What the item is, in a line: a shell's command, else its kind and description."""
    if item.kind is Kind.TERMINAL:
        return f"shell: {_shortened(item.command)}"
    if item.kind is Kind.SUBAGENT or item.task.is_subagent:
        kind = "subagent"
    else:
        tool = tool_of(item.task.tool_use_id)
        kind = (tool.name if tool is not None else item.task.task_type or "task").replace("_", " ").lower()
    return f"{kind}: {_shortened(item.task.description)}" if item.task.description else kind


def _last_line(output: bytes) -> str:
    """The output's latest line with text (a progress bar's latest state, after its ``\\r``)."""
    lines = output.decode("utf-8", "replace").replace("\r", "\n").split("\n")
    return _shortened(next((line for line in reversed(lines) if line.strip()), ""))


def _shortened(text: str) -> str:
    """On one line, at most ``LINE_LIMIT`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= LINE_LIMIT else flat[: LINE_LIMIT - 1] + "…"


def _duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest
