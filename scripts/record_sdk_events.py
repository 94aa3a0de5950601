#!/usr/bin/env python3
"""Record what the real Claude Code CLI and the Agent SDK say to each other, per scenario.

Usage: ``.venv/bin/python scripts/record_sdk_events.py SCENARIO [SCENARIO ...] | --all``

Each recording starts the scripted model, runs the bundled CLI exactly as the agent does
(``session_options`` + ``build_client`` with an observer) in an offline environment under a
temp root, sends ``[scenario:NAME] ...`` and drives the session with ONE reader over
``receive_messages()`` until it is quiet: idle, no live background task, nothing new for a
moment. Some recordings act on the way (stop a task, interrupt, deny a permission).

Every frame, both directions, goes to ``tests/fixtures/sdk_events/NAME.jsonl`` as
``{"dir", "dt", "msg"}``, normalised so that re-recording gives a reviewable diff: the temp
root becomes ``/tmp/claude-bg-acp``, the session id and other uuids fixed uuids, task / run /
agent / request ids tokens by first appearance, timestamps and durations zero. The output
files of shell and Monitor tasks follow as ``{"dir": "file", ...}`` lines so that replays can
recreate them byte for byte. Recordings made to be reopened also keep what Claude Code stored
of the conversation, for replays of ``session/load``: ``{"dir": "stored", "path", "record"}``
lines, one per record of each transcript (path relative to the project folder) and one per
subagent's ``.meta.json``; records that are not messages keep only what links them into the
conversation (those outside its chain are left out).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import (
    ClaudeSDKClient,
    Message,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionResult

from claude_bg_acp.claude.options import build_client, session_options
from claude_bg_acp.scripted_model import AUTOCOMPACT_ENV, env_overrides, offline_env, serve

log = logging.getLogger("record_sdk_events")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "sdk_events"
ROOT_PLACEHOLDER = "/tmp/claude-bg-acp"
SESSION_UUID = "00000000-0000-4000-8000-5e5510000000"
EPOCH_ISO = "1970-01-01T00:00:00.000Z"

# No new frame for this long (while idle with nothing live) counts as quiet: follow-up
# turns start within a few tens of milliseconds of the event that causes them.
SETTLE = 0.75
RUN_TIMEOUT = 60.0
# Inline output files only while they stay small once compressed.
MAX_INLINE_COMPRESSED = 64 * 1024
HASH_ONLY = frozenset({"bg_burst"})


# --- what to record -----------------------------------------------------------------------


Driver = Callable[["Session"], Awaitable[None]]


@dataclass(frozen=True)
class Plan:
    scenario: str
    prompt: str
    allow: bool = True
    driver: Driver | None = None
    stored: bool = False
    """Keep Claude Code's stored conversation too."""
    env: dict[str, str] = field(default_factory=dict)
    """More of the CLI's environment."""


async def _stop_after_output(session: Session) -> None:
    task_id = await session.first_task()
    await session.wait_until(lambda: session.results >= 1)
    # Let the shell print a few more lines, so the stop cuts real output short.
    await anyio.sleep(0.6)
    await session.client.stop_task(task_id)


async def _interrupt_then_stop(session: Session) -> None:
    task_id = await session.first_task()
    await session.client.interrupt()
    await session.wait_until(lambda: session.results >= 1 and session.state == "idle")
    # The shell outlives the interrupt; show it still writing, then end it.
    await anyio.sleep(1.0)
    await session.client.stop_task(task_id)


async def _interrupt_mid_turn(session: Session) -> None:
    await session.first_task()
    await session.client.interrupt()


async def _held_turn(session: Session) -> None:
    """Wait for the first turn's result while the subagent it launched is still live."""
    await session.first_task()
    await session.wait_until(lambda: session.results >= 1)
    if not session.live:
        raise RuntimeError("the subagent ended before the first turn's result: no hold to record")


async def _new_prompt_while_held(session: Session) -> None:
    # A v1 client's next prompt hands the held turn off with the outcome it recorded.
    await _held_turn(session)
    await session.client.query("[scenario:text] Say hello while the helper works.")


async def _interrupt_while_held(session: Session) -> None:
    # Our agent sends nothing to Claude Code on session/cancel of a held turn (it is idle by
    # then); this records what the CLI does if such a cancel does reach it: the subagent lives on.
    await _held_turn(session)
    await session.client.interrupt()


def _then(*prompts: str) -> Driver:
    """A conversation of several turns: each of ``prompts`` once the one before it has settled."""

    async def drive(session: Session) -> None:
        for prompt in prompts:
            await session.wait_until(lambda: session.quiet)
            await _answered(session, prompt)

    return drive


async def _answered(session: Session, prompt: str) -> None:
    results = session.results
    await session.client.query(prompt)
    await session.wait_until(lambda: session.results > results)


def _plain(scenario: str, prompt: str) -> tuple[str, Plan]:
    return scenario, Plan(scenario, prompt)


RECORDINGS: dict[str, Plan] = dict(
    [
        _plain("text", "Say hello."),
        _plain("thinking", "Think, then answer."),
        _plain("fg_bash", "Run echo in the foreground."),
        _plain("fg_failed", "Run a failing command in the foreground."),
        _plain("fg_lines", "Print ten lines slowly in the foreground."),
        _plain("permission", "Create a file."),
        ("permission_denied", Plan("permission", "Create a file (you will be denied).", allow=False)),
        _plain("bg_completed", "Run a background job."),
        _plain("bg_failed_exit3", "Run a background job that fails."),
        ("bg_stop_task", Plan("bg_long", "Run a long background job.", driver=_stop_after_output)),
        ("bg_interrupt", Plan("bg_long", "Run a long background job.", driver=_interrupt_then_stop)),
        _plain("two_shells", "Run two background shells."),
        _plain("bg_invalid_utf8", "Print some bytes that are not UTF-8."),
        _plain("bg_burst", "Print ten megabytes."),
        _plain("monitor", "Watch a ticking script."),
        _plain("agent_bg", "Start a background helper."),
        _plain("agent_two", "Start two background helpers."),
        _plain("agent_permission", "Start a helper that writes a file."),
        ("agent_interrupt", Plan("agent_bg", "Start a background helper.", driver=_interrupt_mid_turn)),
        (
            "agent_hold_new_prompt",
            Plan("agent_bg", "Start a background helper.", driver=_new_prompt_while_held),
        ),
        ("agent_hold_cancel", Plan("agent_bg", "Start a background helper.", driver=_interrupt_while_held)),
        _plain("max_tokens", "Write a long answer."),
        (
            "conversation",
            Plan(
                "bg_completed",
                "Run a background job.",
                driver=_then(
                    "[scenario:thinking] Think, then answer.",
                    "[scenario:agent_bg] Start a background helper.",
                ),
                stored=True,
            ),
        ),
        (
            "compacted",
            Plan(
                "fg_bash",
                "Run echo in the foreground.",
                driver=_then("/compact", "[scenario:text] Say hello."),
                stored=True,
            ),
        ),
        (
            "autocompacted",
            Plan(
                "text",
                "Say hello.",
                # Claude Code compacts no conversation of one turn ("too_few_groups").
                driver=_then("[scenario:context_full] Fill the context.", "[scenario:text] Say hello again."),
                stored=True,
                env=AUTOCOMPACT_ENV,
            ),
        ),
    ]
)


# --- one live session ---------------------------------------------------------------------


@dataclass
class Frame:
    direction: str
    dt: float
    msg: dict[str, Any]


@dataclass
class Tape:
    """Every frame the transport saw, timed from the start of the run."""

    t0: float = field(default_factory=time.monotonic)
    frames: list[Frame] = field(default_factory=list)
    last_in: float = 0.0

    def observe(self, direction: str, frame: dict[str, Any]) -> None:
        now = time.monotonic()
        # A copy: the SDK owns the frame and we normalise ours later.
        self.frames.append(Frame(direction, round(now - self.t0, 3), json.loads(json.dumps(frame))))
        if direction == "in":
            self.last_in = now


@dataclass
class Session:
    """The client plus what its one reader has seen so far."""

    client: ClaudeSDKClient
    tape: Tape
    root: Path
    state: str | None = None
    live: set[str] = field(default_factory=set)
    started: list[dict[str, Any]] = field(default_factory=list)
    results: int = 0
    kept: dict[str, int] = field(default_factory=dict)
    """Descriptors of foreground commands' output files, by task: Claude Code deletes such a
    file when the command ends, so it is read through the descriptor opened at its start."""

    def see(self, message: Message) -> None:
        if isinstance(message, ResultMessage):
            self.results += 1
        elif isinstance(message, SystemMessage):
            self._see_system(message.subtype, message.data)

    def _see_system(self, subtype: str, data: dict[str, Any]) -> None:
        if subtype == "session_state_changed":
            self.state = str(data.get("state"))
        elif subtype == "background_tasks_changed":
            self.live = {t["task_id"] for t in data.get("tasks", []) if not t.get("ambient")}
        elif subtype == "task_started":
            self.started.append(data)
            if data.get("is_backgrounded") is False:
                self._keep(str(data["task_id"]))

    def _keep(self, task_id: str) -> None:
        for path in self.root.glob(f"tmp/*/*/*/tasks/{task_id}.output"):
            self.kept[task_id] = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)

    @property
    def quiet(self) -> bool:
        return (
            self.results >= 1
            and self.state == "idle"
            and not self.live
            and time.monotonic() - self.tape.last_in >= SETTLE
        )

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await anyio.sleep(0.02)

    async def first_task(self) -> str:
        await self.wait_until(lambda: bool(self.started))
        return str(self.started[0]["task_id"])


def _permission_handler(
    allow: bool,
) -> Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]]:
    async def answer(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        log.info("can_use_tool %s -> %s", tool, "allow" if allow else "deny")
        if allow:
            return PermissionResultAllow()
        return PermissionResultDeny(message="The recorder denies this tool use.")

    return answer


async def record(name: str, plan: Plan, out_dir: Path, timeout: float) -> Path:
    with tempfile.TemporaryDirectory(prefix="cbarec-") as tmp:
        root = Path(tmp)
        (root / "work").mkdir()
        async with serve(scenario=plan.scenario) as model:
            options = session_options(str(root / "work"), _permission_handler(plan.allow))
            options.env.update(env_overrides({**offline_env(model.base_url, root), **plan.env}))
            tape = Tape()
            session = Session(build_client(options, tape.observe), tape, root)
            files = await _run(session, plan, root, timeout)
        normaliser = Normaliser(root)
        lines = normaliser.fixture(tape.frames, files, hash_only=name in HASH_ONLY)
        if plan.stored:
            lines += [normaliser.stored_line(path, record) for path, record in _stored_records(root)]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


async def _run(session: Session, plan: Plan, root: Path, timeout: float) -> dict[str, bytes]:
    client = session.client
    await client.connect()
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_all, session)
                await client.query(f"[scenario:{plan.scenario}] {plan.prompt}")
                if plan.driver is not None:
                    await plan.driver(session)
                await session.wait_until(lambda: session.quiet)
                files = _output_files(session, root)
                tg.cancel_scope.cancel()
    finally:
        with anyio.move_on_after(15):
            await client.disconnect()
    return files


async def _read_all(session: Session) -> None:
    async for message in session.client.receive_messages():
        session.see(message)


def _output_files(session: Session, root: Path) -> dict[str, bytes]:
    """The final output of each shell / Monitor task (subagent transcripts are skipped)."""
    files: dict[str, bytes] = {}
    for started in session.started:
        if started.get("task_type") != "local_bash":
            continue
        task_id = str(started["task_id"])
        for path in sorted((root / "tmp").glob(f"*/*/*/tasks/{task_id}.output")):
            if not path.is_symlink():
                files[str(path)] = path.read_bytes()
        if task_id in session.kept:
            files.update(_kept_file(session, root, task_id))
    return files


def _kept_file(session: Session, root: Path, task_id: str) -> dict[str, bytes]:
    """A foreground command's output, read through the descriptor kept since its start."""
    fd = session.kept.pop(task_id)
    try:
        path = os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)")
        return {path: os.pread(fd, os.fstat(fd).st_size, 0)}
    finally:
        os.close(fd)


LINKS = ("type", "subtype", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "isMeta", "sessionId")
"""What is kept of a stored record that is not a message: what the SDK needs to walk the chain
(and, of a compaction's boundary, its ``compactMetadata``: what a replay shows of it)."""


def _stored_records(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every record of the stored conversation (and subagents), in file order, by its path."""
    (project,) = (root / "config" / "projects").iterdir()
    records: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(project.rglob("*.json*")):
        relative = str(path.relative_to(project))
        if path.suffix == ".json":
            records.append((relative, json.loads(path.read_text())))
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") not in ("user", "assistant"):
                if "uuid" not in record:
                    continue  # bookkeeping outside the conversation's chain
                record = {key: record[key] for key in (*LINKS, "compactMetadata") if key in record}
            records.append((relative, record))
    return records


# --- normalisation ------------------------------------------------------------------------

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ZEROED = frozenset(
    {
        "end_time",
        "start_time",
        "pid",
        "duration_ms",
        "durationMs",
        "duration_api_ms",
        "first_content_frame_ms",
        "time_to_request_ms",
        "ttft_ms",
        "ttft_stream_ms",
    }
)
ID_KINDS = {
    "task_id": "task",
    "agent_id": "task",
    "parent_task_id": "task",
    "run_id": "run",
    "request_id": "req",
}
# A subagent's task id is also its agent id; naming tokens by kind keeps fixtures readable.
TASK_KINDS = {"local_bash": "bash", "local_agent": "agent"}


def _sanitised(path: str) -> str:
    # How the CLI turns a cwd into a folder name.
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Normaliser:
    """Rewrites machine-specific and random values into stable ones (see the module doc)."""

    def __init__(self, root: Path) -> None:
        real = os.path.realpath(root)
        pairs = {
            str(root): ROOT_PLACEHOLDER,
            real: ROOT_PLACEHOLDER,
            _sanitised(str(root)): _sanitised(ROOT_PLACEHOLDER),
            _sanitised(real): _sanitised(ROOT_PLACEHOLDER),
            f"/claude-{os.getuid()}/": "/claude-0/",
        }
        self._paths = sorted(pairs.items(), key=lambda kv: -len(kv[0]))
        self._ids: dict[str, str] = {}
        self._uuids: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def fixture(self, frames: list[Frame], files: dict[str, bytes], hash_only: bool) -> list[dict[str, Any]]:
        for frame in frames:
            self._learn(frame.msg)
        lines: list[dict[str, Any]] = [
            {"dir": f.direction, "dt": f.dt, "msg": self.apply(f.msg)} for f in frames
        ]
        lines.extend(self._file_line(path, data, hash_only) for path, data in files.items())
        return lines

    def stored_line(self, path: str, record: dict[str, Any]) -> dict[str, Any]:
        return {"dir": "stored", "path": self._string(path), "record": self.apply(record)}

    def _file_line(self, path: str, data: bytes, hash_only: bool) -> dict[str, Any]:
        line: dict[str, Any] = {"dir": "file", "path": self._string(path)}
        if not hash_only:
            line["data_b64"] = base64.b64encode(data).decode("ascii")
            return line
        line.update(sha256=hashlib.sha256(data).hexdigest(), length=len(data))
        packed = zlib.compress(data, 9)
        if len(packed) <= MAX_INLINE_COMPRESSED:
            line["data_zlib_b64"] = base64.b64encode(packed).decode("ascii")
        return line

    def _learn(self, value: Any) -> None:
        """Register ids in order of first appearance (uuids are found while applying)."""
        if isinstance(value, dict):
            session_id = value.get("session_id")
            if isinstance(session_id, str) and UUID.fullmatch(session_id):
                self._uuids.setdefault(session_id, SESSION_UUID)
            for key, item in value.items():
                kind = ID_KINDS.get(key)
                if key == "task_id":
                    kind = TASK_KINDS.get(str(value.get("task_type")), kind)
                if kind and isinstance(item, str) and item and item not in self._ids:
                    self._ids[item] = self._token(kind)
                self._learn(item)
        elif isinstance(value, list):
            for item in value:
                self._learn(item)

    def _token(self, kind: str) -> str:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return f"{kind}{self._counts[kind]:02d}"

    def apply(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.apply(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if key in ZEROED and isinstance(value, (int, float)) and not isinstance(value, bool):
            return 0
        if key == "timestamp" and isinstance(value, str):
            return EPOCH_ISO
        if isinstance(value, str):
            return self._string(value)
        return value

    def _string(self, text: str) -> str:
        for old, new in self._paths:
            text = text.replace(old, new)
        text = re.sub(r"cc-socks/\d+\.sock", "cc-socks/0.sock", text)
        for old in sorted(self._ids, key=len, reverse=True):
            if old in text:
                text = text.replace(old, self._ids[old])
        return UUID.sub(self._uuid, text)

    def _uuid(self, match: re.Match[str]) -> str:
        found = match.group(0)
        if found not in self._uuids:
            self._uuids[found] = f"00000000-0000-4000-8000-{len(self._uuids) + 1:012d}"
        return self._uuids[found]


# --- command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", metavar="SCENARIO", help=", ".join(RECORDINGS))
    parser.add_argument("--all", action="store_true", help="record every scenario")
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT, help="seconds per run")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    names = list(RECORDINGS) if args.all else args.names
    unknown = [n for n in names if n not in RECORDINGS]
    if unknown or not names:
        parser.error(f"unknown or no scenario: {unknown}; choose from {', '.join(RECORDINGS)}")
    return anyio.run(_record_all, names, args.out, args.timeout)


async def _record_all(names: list[str], out_dir: Path, timeout: float) -> int:
    failed = []
    for name in names:
        started = time.monotonic()
        try:
            path = await record(name, RECORDINGS[name], out_dir, timeout)
        except Exception as exc:
            failed.append(name)
            print(f"FAILED {name}: {exc!r}", file=sys.stderr)
            continue
        print(
            f"{name}: {path.relative_to(REPO) if path.is_relative_to(REPO) else path} "
            f"({time.monotonic() - started:.1f}s)",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
