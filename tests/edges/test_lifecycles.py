"""Every lifecycle of the core and of the session host is a table the code is held to, and the
one its docstring draws.

Each module of ``claude_bg_acp.core``, and of the session host (``session.host`` and the
``session_*`` modules it is split into), that draws a lifecycle table in its docstring declares
the same rows as ``Transitions`` keyed by triggers (``core.lifecycle``). Checked here: the
docstring's table and the code's have exactly the same rows, (phase, trigger, next phase), and
name every phase; no phase is set but through the table (``move``, ``step``); the table refuses
every (phase, trigger) it has no row for; and the
transitions do go through the tables: with a table emptied, what uses it raises. The host's
paths through its table are followed here where no Claude Code runs (one that cannot start) and
in ``test_live_lifecycle`` where the real one does.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import logging
import pkgutil
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

import claude_bg_acp
import claude_bg_acp.core
import claude_bg_acp.session
from claude_bg_acp.acp import errors
from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.core import events as ev
from claude_bg_acp.core import foreground
from claude_bg_acp.core.foreground import TurnPhase, TurnTrigger
from claude_bg_acp.core.lifecycle import IllegalTransition, Transitions
from claude_bg_acp.presenters.v2 import V2Presenter
from claude_bg_acp.session.host import SessionHost
from claude_bg_acp.session.lifecycle import HostLifecycle
from claude_bg_acp.session.startup import FirstPhase, FirstStart
from claude_bg_acp.session.trust import FolderTrust
from tests.support.driver import RECORDED_TASKS_ROOT, CoreDriver, load_frames
from tests.support.frames import tool_result, tool_use

BORDER = re.compile(r"=+(?: +=+)+")
Move = tuple[enum.Enum | None, enum.Enum, enum.Enum | None]
Table = Transitions[Any, Any]
Row = tuple[str, str, str]


def checked_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{package.__name__}.{name}")
        for package in (claude_bg_acp.core, claude_bg_acp.session)
        for name in sorted(info.name for info in pkgutil.iter_modules(package.__path__))
    ]


def lifecycles(module: ModuleType) -> dict[str, Table]:
    """The lifecycles a module declares (assigns at its top level, not imports), by name."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    assigned = {
        target.id
        for node in tree.body
        for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(target, ast.Name)
    }
    return {
        value.name: value
        for variable, value in vars(module).items()
        if isinstance(value, Transitions) and variable in assigned
    }


def tables(doc: str) -> dict[str, list[Row]]:
    """The tables a docstring draws, by the first cell of their header: each row's first, second
    (a keyed table's trigger) and last cell. A row goes on over the lines below it while its
    first cell is blank there, or ends in a comma (a list of phases)."""
    lines = doc.splitlines()
    borders = [i for i, line in enumerate(lines) if BORDER.fullmatch(line.strip())]
    assert len(borders) % 3 == 0, "a table is drawn with three borders: top, under the header, bottom"
    found: dict[str, list[Row]] = {}
    for top, head, bottom in zip(borders[::3], borders[1::3], borders[2::3], strict=True):
        starts = [match.start() for match in re.finditer("=+", lines[top])]
        name = lines[top + 1][starts[0] : starts[1]].strip()
        rows: list[Row] = []
        for line in lines[head + 1 : bottom]:
            cells = (line[starts[0] : starts[1]], line[starts[1] : starts[2]], line[starts[-1] :])
            first, second, last = (cell.strip() for cell in cells)
            if rows and (not first or rows[-1][0].endswith(",")):
                was = rows[-1]
                rows[-1] = (
                    f"{was[0]} {first}".strip(),
                    f"{was[1]} {second}".strip(),
                    f"{was[2]} {last}".strip(),
                )
            else:
                rows.append((first, second, last))
        found[name] = rows
    return found


def phases_in(cell: str, phases: type[enum.Enum]) -> list[enum.Enum | None]:
    """The phases a cell names: ``any``, ``NAME``s, and "(not known yet)" or "(forgotten)" as None."""
    if cell == "any":
        return list(phases)
    named: list[enum.Enum | None] = [phases[name] for name in re.findall(r"``(\w+)``", cell)]
    return [None for _ in re.findall(r"\([^)]*\)", cell)] + named


def drawn(rows: list[Row], phases: type[enum.Enum], triggers: type[enum.Enum]) -> frozenset[Move]:
    """A table's rows: every (phase, trigger, next phase), staying in a phase included."""
    moves: set[Move] = set()
    for first, second, last in rows:
        (to,) = phases_in(last, phases)  # each row leads to one phase
        (trigger,) = re.findall(r"``(\w+)``", second)  # each row names one trigger
        moves.update((was, triggers[trigger], to) for was in phases_in(first, phases))
    return frozenset(moves)


def shown(move: Move) -> str:
    return " -> ".join("(none)" if phase is None else phase.name for phase in move)


def moves_of(lifecycle: Table) -> frozenset[Move]:
    return frozenset((was, trigger, to) for (was, trigger), to in lifecycle.table.items())


FOUND = [
    (module, name, lifecycle)
    for module in checked_modules()
    for name, lifecycle in lifecycles(module).items()
]
DECLARED = [
    pytest.param(module, lifecycle, id=f"{module.__name__.rsplit('.', 1)[1]}:{name}")
    for module, name, lifecycle in FOUND
]


def test_every_table_in_the_core_and_the_host_is_declared_in_code() -> None:
    for module in checked_modules():
        drawn_names = set(tables(module.__doc__ or ""))
        declared = set(lifecycles(module))
        assert drawn_names == declared, f"{module.__name__}: tables {drawn_names}, declared {declared}"


@pytest.mark.parametrize(("module", "lifecycle"), DECLARED)
def test_the_docstring_draws_the_table_the_code_is_held_to(module: ModuleType, lifecycle: Table) -> None:
    rows = tables(module.__doc__ or "")[lifecycle.name]
    code, docstring = moves_of(lifecycle), drawn(rows, lifecycle.phases, lifecycle.triggers)
    missing = sorted(map(shown, code - docstring))
    extra = sorted(map(shown, docstring - code))
    assert not missing and not extra, f"the docstring lacks {missing} and has {extra} besides"
    reached = {phase for was, _, to in code for phase in (was, to)}
    assert reached >= set(lifecycle.phases), f"phases in no row: {set(lifecycle.phases) - reached}"


@pytest.mark.parametrize(("module", "lifecycle"), DECLARED)
def test_move_refuses_every_transition_its_table_does_not_have(module: ModuleType, lifecycle: Table) -> None:
    phases: list[enum.Enum | None] = [None, *lifecycle.phases]
    for was in phases:
        for trigger in lifecycle.triggers:
            to = lifecycle.table.get((was, trigger), IllegalTransition)
            if to is not IllegalTransition:
                assert lifecycle.step(was, trigger) is to
                assert (lifecycle.move if to else lifecycle.forget)(was, trigger) is to
                with pytest.raises(IllegalTransition, match=lifecycle.name):
                    (lifecycle.forget if to else lifecycle.move)(was, trigger)
                continue
            for asked in (lifecycle.move, lifecycle.forget, lifecycle.step):
                with pytest.raises(IllegalTransition, match=lifecycle.name):
                    asked(was, trigger)


def test_no_phase_is_set_but_through_its_table() -> None:
    """An assignment to a phase field (``phase``, ``hold``, or any field annotated with a
    lifecycle's phases) is ``<table>.move(...)``, bar the initial one."""
    enums = {lc.phases for module in checked_modules() for lc in lifecycles(module).values()}
    for module in checked_modules():
        tree = ast.parse(Path(inspect.getfile(module)).read_text())
        fields = {"phase", "hold"} | {
            node.target.attr if isinstance(node.target, ast.Attribute) else node.target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Attribute | ast.Name)
            and vars(module).get(ast.unparse(node.annotation)) in enums
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                targets = target.elts if isinstance(target, ast.Tuple) else [target]
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for each, value in zip(targets, values, strict=False):
                    if isinstance(each, ast.Attribute) and each.attr in fields:
                        moved = (
                            isinstance(value, ast.Call)
                            and isinstance(value.func, ast.Attribute)
                            and value.func.attr in ("move", "step")
                        )
                        assert moved, f"{module.__name__}:{node.lineno} sets {ast.unparse(each)} directly"


# --- the core's transitions go through the tables ----------------------------------------------


def replay(fixture: str, client: str) -> Callable[[], object]:
    return lambda: CoreDriver.for_client(client).replay(load_frames(fixture))


def schedule_stopped() -> object:
    d = CoreDriver(2)
    d.frames(tool_use("toolu_wake", "ScheduleWakeup", {"delaySeconds": 600}), tool_result("toolu_wake", "ok"))
    return d.frames(tool_use("toolu_stop", "ScheduleWakeup", {"stop": True}), tool_result("toolu_stop", "ok"))


class NoClient:
    """Sends nothing and takes every line: where Claude Code never starts, no client is asked."""

    async def read(self, n: int) -> bytes:
        await anyio.sleep_forever()
        return b""

    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


@contextmanager
def host_moves() -> Iterator[list[tuple[str, str]]]:
    """The moves of every session host's phase meanwhile, as its log (DEBUG) tells them."""
    moves: list[tuple[str, str]] = []

    class Moves(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            _, was, to = record.args  # type: ignore[misc]
            moves.append((str(was), str(to)))

    logger = logging.getLogger("claude_bg_acp.session.lifecycle")
    handler, level = Moves(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield moves
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def host_whose_claude_code_cannot_start() -> SessionHost:
    """A session host run in-process, not yet opened to a client, whose Claude Code exits at
    once (a script: the real CLI cannot be made to fail on demand)."""
    with tempfile.TemporaryDirectory() as tmp:
        cli = Path(tmp, "claude")
        cli.write_text("#!/bin/sh\necho 'no Claude Code here' >&2\nexit 3\n")
        cli.chmod(0o755)

        async def run() -> SessionHost:
            endpoint = Endpoint(NoClient(), NoClient())
            host = SessionHost(str(uuid.uuid4()), tmp, V2Presenter(), endpoint, cli_path=str(cli))
            await host.run()
            return host

        return anyio.run(run)


def trust_with_nothing_left_to_ask() -> object:
    """A folder's trust question, open at the start, whose folder has no settings left by the
    first prompt (no client is asked)."""

    async def nothing(*_: object) -> None:
        return None

    async def settle(folder: str) -> bool:
        endpoint = Endpoint(NoClient(), NoClient())
        lifecycle = HostLifecycle("session")
        trust = FolderTrust("session", folder, V2Presenter(), endpoint, nothing, nothing, True, lifecycle)
        return await trust.settle()

    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(settle, tmp)


USES: dict[str, Callable[[], object]] = {
    "turn": lambda: CoreDriver(2).prompt("Hello"),
    "hold": replay("agent_hold_new_prompt", "v1-plain"),
    "task": replay("bg_completed", "v2"),
    "item": replay("bg_completed", "v2"),
    "tool use": replay("fg_bash", "v2"),
    "shell": lambda: CoreDriver(2, tasks_root=RECORDED_TASKS_ROOT).replay(load_frames("fg_lines")),
    "child": replay("agent_bg", "v2"),
    "schedule": schedule_stopped,
    "question": replay("permission", "v2"),
    "title": lambda: CoreDriver(2).handle(ev.TitleRead("Greeting", True, None)),
    "introduction": lambda: CoreDriver(2).open(),
    "attach": lambda: CoreDriver(2).attach(ev.StoredConversation([], [], {})),
    "host": host_whose_claude_code_cannot_start,
    "first start": host_whose_claude_code_cannot_start,
    "stream": host_whose_claude_code_cannot_start,
    "trust": trust_with_nothing_left_to_ask,
}
"""Something the core does that moves each lifecycle."""


def test_each_lifecycle_has_a_use_here() -> None:
    assert set(USES) == {lifecycle.name for _, _, lifecycle in FOUND}


@pytest.mark.parametrize(("module", "lifecycle"), DECLARED)
def test_with_its_table_emptied_a_lifecycle_refuses_to_move(
    module: ModuleType, lifecycle: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    use = USES[lifecycle.name]
    use()  # with its table, it goes through
    (name,) = [name for name, value in vars(module).items() if value is lifecycle]
    emptied: Table = Transitions(lifecycle.name, lifecycle.phases, lifecycle.triggers, {})
    monkeypatch.setattr(module, name, emptied)
    with pytest.raises(IllegalTransition, match=f"^{lifecycle.name}: "):
        use()


def test_an_illegal_transition_leaves_the_turn_where_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transition the table lacks raises before the phase changes: the turn stays where it
    was, and the prompt that could not go in still waits."""
    without_insertion = dict(foreground.TURNS.table)
    del without_insertion[TurnPhase.IDLE, TurnTrigger.INSERT]
    monkeypatch.setattr(foreground, "TURNS", Transitions("turn", TurnPhase, TurnTrigger, without_insertion))
    d = CoreDriver(2)
    with pytest.raises(IllegalTransition, match="no row leads from IDLE on INSERT"):
        d.prompt("Hello")
    foreground_now = d.core.foreground
    assert foreground_now.phase is TurnPhase.IDLE and foreground_now.prompt is None
    assert len(foreground_now.waiting) == 1  # the prompt still waits, not lost half-inserted


def test_a_host_whose_claude_code_cannot_start_before_the_client_was_told_fails() -> None:
    """Its phase goes down, then fails (the client was not told of the session), and the
    request that opens the session gets why."""
    with host_moves() as moves:
        host = host_whose_claude_code_cannot_start()
    assert moves == [("STARTING", "DOWN"), ("DOWN", "FAILED"), ("FAILED", "ENDED")]
    assert host.start_error is host.failure is not None
    assert host.failure.message.startswith("Claude Code could not start")


def test_the_first_start_tells_those_waiting_once_and_first_come_first_told() -> None:
    """A first start that failed settles its outcome with the first reason alone (the session's
    end fails it again); one that went down while the client knew of the session lets the
    requests waiting for what it offers go on, and its restart settles the outcome."""
    first, why, later = FirstStart(), errors.internal_error(), errors.disconnected()
    first.spawn()
    assert first.spawned.is_set() and not first.ready.is_set() and not first.settled
    first.failed(why)
    first.failed(later)
    assert first.phase is FirstPhase.FAILED and first.outcome.error is why and first.ready.is_set()

    restarted = FirstStart()
    restarted.went_down()
    assert restarted.ready.is_set() and not restarted.spawned.is_set() and not restarted.settled
    restarted.spawn()
    restarted.announce()
    restarted.serve()
    restarted.failed(why)  # the session ends
    assert restarted.phase is FirstPhase.STARTED and restarted.outcome.done.is_set()
    assert restarted.outcome.error is None
