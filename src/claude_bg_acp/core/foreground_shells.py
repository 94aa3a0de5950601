"""A foreground shell command's output, live on its tool call.

Claude Code runs a foreground Bash command as a task too: from its start the command writes to
the same kind of output file as a background shell (``<tasks root>/<session>/tasks/<task id>
.output``), and once it has run for about two seconds Claude Code reports the task
(``task_started`` with ``is_backgrounded: false``, naming the Bash tool use). Its tool result,
the whole output at once, only comes when the command ends. So such a task's file is followed
from its first byte, under the same rules as a background shell's (only that task's own
regular file, below Claude Code's task directory), and its bytes are told as ``ShellOutput`` of
the tool call, for each presenter to show as its client draws a running command.

The tool call's end waits for the file: when the command ended (its task's end, or its tool
result), the file is read to its end (Claude Code deletes it then; the open descriptor keeps
it readable, and a foreground file gets no closing line to wait for), and the result is told
after the last of the output. A command whose turn was cut short ends at once: what its file
still holds is dropped. A command Claude Code moves to the background becomes a background
shell (``core.background``) with the same file, followed on from where it was. Its lifecycle:

=============  ================  ===============================================  =============
shell          trigger           what happens                                     next
=============  ================  ===============================================  =============
(task)         ``FOLLOW``        a foreground shell task of a running tool call   ``FOLLOWED``
``FOLLOWED``   ``ENDED``         its task ended, or its tool result came          ``DRAINING``
``FOLLOWED``,  ``CUT``           its turn was cut short                           ``DROPPING``
``DRAINING``,
``DROPPING``
``FOLLOWED``   ``BACKGROUNDED``  Claude Code moved it to the background           (gone)
``DRAINING``,  ``READ``          its file was read to the end (also one whose     (gone)
``DROPPING``,                    end was not asked for yet)
``FOLLOWED``
=============  ================  ===============================================  =============
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from claude_bg_acp.core.effects import FinishCommandTail, FinishTail, Tail
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.tasks import Task
from claude_bg_acp.core.tool_uses import ToolCallCut, ToolCallFinished, ToolUse


class ShellPhase(enum.Enum):
    FOLLOWED = "followed"
    DRAINING = "draining"
    DROPPING = "dropping"


class ShellTrigger(enum.Enum):
    FOLLOW = "follow"
    ENDED = "ended"
    CUT = "cut"
    BACKGROUNDED = "backgrounded"
    READ = "read"


FOLLOWED, DRAINING, DROPPING = ShellPhase
SHELLS: Transitions[ShellPhase, ShellTrigger] = Transitions.of(
    "shell",
    ShellPhase,
    ShellTrigger,
    ((None,), ShellTrigger.FOLLOW, FOLLOWED),
    ((FOLLOWED,), ShellTrigger.ENDED, DRAINING),
    ((FOLLOWED, DRAINING, DROPPING), ShellTrigger.CUT, DROPPING),
    ((FOLLOWED,), ShellTrigger.BACKGROUNDED, None),
    ((DRAINING, DROPPING, FOLLOWED), ShellTrigger.READ, None),
)


@dataclass(frozen=True)
class ShellOutput:
    """Bytes a foreground command wrote, in order (``replaced``: they are the latest of its
    output, which fell too far behind to be told whole)."""

    session_id: str
    tool_call_id: str
    data: bytes
    replaced: bool = False


Ended = ToolCallFinished | ToolCallCut
ShellOut = ShellOutput | Ended | Tail | FinishTail


@dataclass
class Shell:
    session_id: str
    tool_call_id: str
    phase: ShellPhase
    held: list[ToolCallFinished] = field(default_factory=list)
    """The tool call's result, told once the file was read to its end."""


class ForegroundShells:
    def __init__(self) -> None:
        self._shells: dict[str, Shell] = {}
        """By task id."""

    def knows(self, task_id: str) -> bool:
        return task_id in self._shells

    def follow(self, task: Task, tool: ToolUse | None, output_file: str | None) -> list[ShellOut]:
        """Follow the file of a foreground shell task while its tool call runs."""
        if task.task_id in self._shells or tool is None or not tool.shell or tool.final:
            return []
        if output_file is None or task.task_type not in (None, "local_bash"):
            return []
        phase = SHELLS.move(None, ShellTrigger.FOLLOW)
        self._shells[task.task_id] = Shell(tool.session_id, tool.call_id, phase)
        return [Tail(task.task_id, output_file)]

    def backgrounded(self, task_id: str) -> None:
        """Claude Code moved the command to the background: its file is a background shell's
        from now on (followed on, by the same key)."""
        shell = self._shells.get(task_id)
        if shell is not None and shell.phase is ShellPhase.FOLLOWED:
            SHELLS.forget(shell.phase, ShellTrigger.BACKGROUNDED)
            del self._shells[task_id]

    def ended(self, task_id: str) -> list[ShellOut]:
        shell = self._shells.get(task_id)
        return self._drain(task_id, shell) if shell is not None else []

    def output(self, task_id: str, data: bytes, replaced: bool = False) -> list[ShellOut]:
        shell = self._shells[task_id]
        if shell.phase is ShellPhase.DROPPING or not (data or replaced):
            return []
        return [ShellOutput(shell.session_id, shell.tool_call_id, data, replaced)]

    def drained(self, task_id: str, rest: bytes) -> list[ShellOut]:
        out = self.output(task_id, rest)
        shell = self._shells.pop(task_id)
        SHELLS.forget(shell.phase, ShellTrigger.READ)
        return [*out, *shell.held]

    def results(self, ended: Sequence[Ended]) -> list[ShellOut]:
        """Tool calls that ended: a followed command's result waits for the rest of its file;
        a command cut short tells nothing more."""
        out: list[ShellOut] = []
        for fact in ended:
            found = self._of_call(fact.tool_call_id)
            if found is None:
                out.append(fact)
                continue
            task_id, shell = found
            if isinstance(fact, ToolCallCut):
                out += [*self._drain(task_id, shell), fact]
                shell.phase = SHELLS.move(shell.phase, ShellTrigger.CUT)
                shell.held.clear()
            else:
                out += self._drain(task_id, shell)
                shell.held.append(fact)
        return out

    def _drain(self, task_id: str, shell: Shell) -> list[ShellOut]:
        if shell.phase is not ShellPhase.FOLLOWED:
            return []
        shell.phase = SHELLS.move(shell.phase, ShellTrigger.ENDED)
        return [FinishCommandTail(task_id)]

    def _of_call(self, tool_call_id: str) -> tuple[str, Shell] | None:
        for task_id, shell in self._shells.items():
            if shell.tool_call_id == tool_call_id:
                return task_id, shell
        return None
