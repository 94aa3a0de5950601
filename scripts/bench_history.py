"""A year of threads: listing a large store of conversations and reopening a long one.

Builds the store a heavy user reaches in months, in one directory, from a real conversation:
this agent, with the real Claude Code CLI offline against the scripted model, runs one exchange
(a prompt that starts a background shell, the shell's end, Claude Code's follow-up turn), and
what Claude Code stored of it is the model of everything else:

- ``--conversations`` (1,002) conversations: the recorded transcript (with the context
  attachments and request records Claude Code 2.1.332 writes into it) copied under new ids,
  their files dated over the past year;
- one long conversation: the recorded transcript, then its exchange ``--repeats`` - 1 more
  times (400 in all; its conversation records only, without the context attachments and
  request records, each exchange under new ids and chained to the one before): 7,217
  transcript lines, 800 prompts (each exchange's prompt and the shell's notification).

Then, each time in a fresh agent process (Python's bytecode cached, as on its second start) and
as a v1 client:

- ``session/list {cwd}`` right after ``initialize``: request -> answer (the first page), the
  sessions on it and whether a next page exists, with nothing kept from an earlier listing
  (this agent keeps what it read of each transcript next to Claude Code's store, see
  ``claude.summaries``), then in another process with what that one kept, where the same
  request is then sent again;
- ``session/load`` of the long conversation: request -> answer, and -> the first and the
  last update before it (this agent answers once its Claude Code has resumed the
  conversation, which it reads and replays meanwhile: from its last update to its answer is
  the rest of that wait), -> its Claude Code's process (the agent's first child), the updates
  sent before the answer (the replay), the agent process's own CPU from the request to the
  answer (its Claude Code's not included: the figure that least depends on the machine's
  load) and its peak RSS meanwhile; every prompt must be replayed (a ``user_message_chunk``
  with the recorded prompt, once per exchange), and a prompt sent in the loaded conversation
  must end ``end_turn``; and, just before each agent's load, Claude
  Code alone (the SDK's client, no agent) resuming the same conversation: spawn -> its answer
  to ``initialize``, the part of a load's wait that is Claude Code's, on the machine as it is
  then (the TypeScript adapter bundles an older Claude Code, 2.1.318).

Both agents when the TypeScript adapter is installed (``--ts-dir``, where ``bench_compare.py``
installs it), and with ``--baseline main`` this agent as of a git ref too, alternating,
``--rounds`` times; the table has the median of the rounds, and, unless ``--no-write``, replaces
its section of BENCHMARKS.md. The machine's load matters: its load average is printed with the
figures.

Usage: ``.venv/bin/python scripts/bench_history.py [--rounds 3] [--baseline main] [--no-write]
[--json PATH]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from bench_client import OURS, AgentCommand, BenchAgent, RssSampler, children, cpu_ticks
from bench_compare import DEFAULT_TS_DIR, TS_PACKAGE, TS_VERSION, baseline
from bench_startup import with_bytecode_cache
from claude_bg_acp.acp.client import AgentError, update_of
from claude_bg_acp.claude import summaries
from claude_bg_acp.scripted_model import offline_env, serve_in_thread

REPO = Path(__file__).resolve().parent.parent
PROMPT = "[scenario:bg_completed] Run a background job."
FOLLOW_UP = "BG_DONE_ACK"
"""What the scripted model answers to the shell's notification: the exchange has ended."""
LATER_PROMPT = "[scenario:text] And now?"
CONTEXT_RECORDS = {"attachment", "api-request-shape", "api-request-blob", "api-request"}
"""What Claude Code writes around a request (the context it attached, the request itself): the
long conversation has them once, in its first exchange."""
IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:toolu|msg|req)_[0-9a-f]{24}"
)
PREVIOUS = "<the previous exchange's last message>"
YEAR = 365 * 24 * 3600
SECTION = "## bench_history.py: a year of threads, listed and reopened"
WIDTH = 100
"""The width BENCHMARKS.md's prose is wrapped at."""
BUSY = (
    "The machine was busy (more runnable processes than CPUs): every figure is slower than on a quiet "
    "machine, the more so the more it waits on CPU; compare the columns, which shared the load, rather "
    "than a figure with its target."
)
TARGETS = {
    "first page, nothing kept (ms)": 300.0,
    "first page, summaries kept (ms)": 300.0,
    "load -> answer (ms)": 1200.0,
}

Figures = dict[str, float]


# --- the store ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Store:
    project: Path
    long_id: str
    conversations: int
    megabytes: float
    long_lines: int
    long_prompts: int
    """The user's and Claude Code's (the shells' notifications)."""
    typed_prompts: int
    """The user's."""


def record(model_url: str, root: Path) -> Path:
    """One exchange through this agent and the real CLI; the transcript Claude Code stored."""
    env = offline_env(model_url, root / "offline")
    work = root / "work"
    work.mkdir()
    agent = BenchAgent(env, work, keep_all=True)
    try:
        agent.initialize_v1()
        session_id = agent.new_session(work)
        agent.result(agent.prompt(session_id, PROMPT), 120)

        def followed_up() -> bool:
            chunks = (update_of(m, "agent_message_chunk") for m in agent.messages)
            return any(FOLLOW_UP in json.dumps(u) for u in chunks if u is not None)

        agent.wait_until(followed_up, 120, "the follow-up turn")
    finally:
        agent.shut_down()
    (transcript,) = Path(env["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}.jsonl")
    return transcript


def build_store(recorded: Path, conversations: int, repeats: int) -> Store:
    """The copies and the long conversation, beside the recorded transcript."""
    project = recorded.parent
    text = recorded.read_text()
    now = time.time()
    for n in range(1, conversations):
        copy = project / f"{uuid.uuid4()}.jsonl"
        copy.write_text(text.replace(recorded.stem, copy.stem))
        dated = now - YEAR + n * YEAR / conversations
        os.utime(copy, (dated, dated))
    os.utime(recorded, (now - YEAR, now - YEAR))
    long_id = str(uuid.uuid4())
    lines = long_conversation(text, recorded.stem, repeats)
    (project / f"{long_id}.jsonl").write_text("".join(lines).replace(recorded.stem, long_id))
    size = sum(path.stat().st_size for path in project.glob("*.jsonl"))
    users = [line for line in lines if '"type":"user"' in line and '"tool_result"' not in line]
    typed = sum(1 for line in users if PROMPT in line)
    return Store(project, long_id, conversations, size / 1e6, len(lines), len(users), typed)


def long_conversation(text: str, session_id: str, repeats: int) -> list[str]:
    """The recorded transcript, then its exchange again and again, each under new ids (message
    uuids, tool use, message and request ids, the shell's task id) and chained to the one before."""
    records = [json.loads(line) for line in text.splitlines()]
    task_ids = {r["toolUseResult"]["backgroundTaskId"] for r in records if "backgroundTaskId" in str(r)}
    parents = {r["uuid"]: r.get("parentUuid") for r in records if "uuid" in r}
    dropped = {r["uuid"] for r in records if r.get("type") in CONTEXT_RECORDS and "uuid" in r}
    exchange = []
    for record_ in (r for r in records if r.get("type") not in CONTEXT_RECORDS):
        if "parentUuid" in record_:
            parent = record_["parentUuid"]
            while parent in dropped:
                parent = parents.get(parent)
            record_ = {**record_, "parentUuid": parent or PREVIOUS}
        exchange.append(json.dumps(record_, separators=(",", ":")))
    last = [r["uuid"] for r in records if r.get("type") in ("user", "assistant")][-1]
    leaf = last
    lines = [line + "\n" for line in text.splitlines()]
    for n in range(1, repeats):
        again, renamed = _renamed("\n".join(exchange), n, session_id)
        for task_id in task_ids:
            again = again.replace(task_id, f"{task_id[:-4]}{n:04d}")
        lines += [line + "\n" for line in again.replace(PREVIOUS, leaf).split("\n")]
        leaf = renamed[last]
    return lines


def _renamed(text: str, n: int, kept: str) -> tuple[str, dict[str, str]]:
    """``text`` with every id but ``kept`` renamed for the ``n``-th exchange, and the renaming."""
    renamed = {old: _new_id(old, n) for old in set(IDS.findall(text)) - {kept}}
    return IDS.sub(lambda found: renamed.get(found[0], found[0]), text), renamed


def _new_id(old: str, n: int) -> str:
    """An id of the same form as ``old``, for the ``n``-th exchange."""
    digest = hashlib.sha256(f"{old}/{n}".encode()).hexdigest()
    if "_" in old:
        prefix, rest = old.split("_", 1)
        return f"{prefix}_{digest[: len(rest)]}"
    return str(uuid.UUID(digest[:32], version=4))


# --- measuring ----------------------------------------------------------------------------------


def measure_list(command: AgentCommand, env: dict[str, str], cwd: Path, kept: bool) -> Figures:
    """``kept``: with the summaries an earlier agent process kept (this agent's; else none)."""
    if not kept:
        Path(summaries.file(env)).unlink(missing_ok=True)
    agent = BenchAgent(env, cwd, command=command)
    try:
        agent.initialize_v1()
        first, first_ms = _listed(agent, cwd)
        _, again_ms = _listed(agent, cwd)
    finally:
        agent.shut_down()
    if kept:
        return {"first page, summaries kept (ms)": first_ms, "the same list again (ms)": again_ms}
    return {
        "first page, nothing kept (ms)": first_ms,
        "sessions on it": len(first["sessions"]),
        "next page": 1.0 if first.get("nextCursor") else 0.0,
    }


def _listed(agent: BenchAgent, cwd: Path) -> tuple[dict[str, Any], float]:
    """``session/list {cwd}``: the answer, and how long it took (ms)."""
    asked = time.monotonic_ns()
    answer, answered = agent.timed_result(agent.ask("session/list", {"cwd": str(cwd)}), 120)
    return answer, (answered - asked) / 1e6


def measure_load(command: AgentCommand, env: dict[str, str], cwd: Path, store: Store) -> Figures:
    """The prompt after the load goes on with the long conversation: it is put back as it was
    afterwards, so that every load replays the same."""
    transcript = store.project / f"{store.long_id}.jsonl"
    original, times = transcript.read_bytes(), transcript.stat()
    try:
        return resumed_alone(env, cwd, store) | _load(command, env, cwd, store)
    finally:
        transcript.write_bytes(original)
        os.utime(transcript, ns=(times.st_atime_ns, times.st_mtime_ns))


def resumed_alone(env: dict[str, str], cwd: Path, store: Store) -> Figures:
    """Claude Code without an agent (the SDK's client) resuming the long conversation, just
    before the agent's load: spawn -> its answer to ``initialize``, the wait no agent can take
    from a load's answer, on the machine as it is at that moment."""
    options = ClaudeAgentOptions(cwd=str(cwd), env=env, resume=store.long_id)

    async def resumed() -> float:
        client = ClaudeSDKClient(options)
        began = time.monotonic_ns()
        await client.connect()
        took = (time.monotonic_ns() - began) / 1e6
        await client.disconnect()
        return took

    return {"Claude Code alone resuming it, just before (ms)": anyio.run(resumed)}


def _load(command: AgentCommand, env: dict[str, str], cwd: Path, store: Store) -> Figures:
    agent = BenchAgent(env, cwd, command=command)
    replayed: list[dict[str, Any]] = []
    received: list[int] = []
    window = {"open": False}

    def on_line(at: int, message: dict[str, Any]) -> None:
        if window["open"] and message.get("method") == "session/update":
            replayed.append(message["params"]["update"])
            received.append(at)
        elif "method" not in message:
            window["open"] = False  # the answer: the only request in flight meanwhile is the load

    agent.on_line = on_line
    try:
        agent.initialize_v1()
        window["open"] = True
        rss = RssSampler(agent.pid, interval=0.01)
        spawn = SpawnWatch(agent.pid)
        cpu = cpu_ticks(agent.pid)
        asked = time.monotonic_ns()
        load = agent.ask("session/load", {"sessionId": store.long_id, "cwd": str(cwd), "mcpServers": []})
        _, answered = agent.timed_result(load, 300)
        cpu = cpu_ticks(agent.pid) - cpu
        peak = rss.stop()
        spawned = spawn.stop()
        later = agent.result(agent.ask("session/prompt", _prompt(store.long_id)), 300)
    finally:
        agent.shut_down()
    prompts = [
        u for u in replayed if u.get("sessionUpdate") == "user_message_chunk" and PROMPT in json.dumps(u)
    ]
    if len(prompts) != store.typed_prompts:
        raise AgentError(f"{command.name} replayed {len(prompts)} of {store.typed_prompts} prompts")
    if later.get("stopReason") != "end_turn":
        raise AgentError(f"{command.name}: the prompt after the load ended {later}")
    return {
        "load -> answer (ms)": (answered - asked) / 1e6,
        "load -> Claude Code's process (ms)": (spawned - asked) / 1e6,
        "agent CPU during the load (ms)": 1000 * cpu / os.sysconf("SC_CLK_TCK"),
        "load -> first update (ms)": (received[0] - asked) / 1e6,
        "load -> last update before the answer (ms)": (received[-1] - asked) / 1e6,
        "updates replayed": len(replayed),
        "agent RSS growth during the load (MiB)": peak,
    }


class SpawnWatch(threading.Thread):
    """When the agent's first child process (its Claude Code) appears: ``/proc`` looked at every
    millisecond."""

    def __init__(self, pid: int) -> None:
        super().__init__(name="spawn-watch", daemon=True)
        self._pid = pid
        self._done = threading.Event()
        self.seen: int | None = None
        self.start()

    def run(self) -> None:
        while self.seen is None and not self._done.wait(0.001):
            if children(self._pid):
                self.seen = time.monotonic_ns()

    def stop(self) -> int:
        """When the child appeared (monotonic ns); raises if none did."""
        self._done.set()
        self.join()
        if self.seen is None:
            raise AgentError("the agent started no process during the load")
        return self.seen


def _prompt(session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": LATER_PROMPT}]}


# --- running and reporting ----------------------------------------------------------------------


def run(agents: list[AgentCommand], rounds: int, conversations: int, repeats: int) -> dict[str, Any]:
    found: dict[str, dict[str, list[float]]] = {agent.name: {} for agent in agents}
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp, serve_in_thread("text") as model:
        root = Path(tmp)
        print("recording one exchange through the agent ...", file=sys.stderr, flush=True)
        store = build_store(record(model.base_url, root), conversations, repeats)
        print(
            f"store: {store.conversations} conversations + the long one ({store.long_lines} lines, "
            f"{store.long_prompts} prompts), {store.megabytes:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
        cwd = root / "work"
        env = with_bytecode_cache(offline_env(model.base_url, root / "offline"), root / "pycache")
        for agent in agents:  # unmeasured: all of its bytecode written, its files in the page cache
            measure_list(agent, env, cwd, kept=False)
            measure_load(agent, env, cwd, store)
        for round_no in range(rounds):
            for agent in agents if round_no % 2 == 0 else agents[::-1]:
                print(f"... round {round_no + 1}: {agent.name}", file=sys.stderr, flush=True)
                figures = measure_list(agent, env, cwd, kept=False) | measure_list(agent, env, cwd, kept=True)
                figures |= measure_load(agent, env, cwd, store)
                for figure, value in figures.items():
                    found[agent.name].setdefault(figure, []).append(value)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit.stdout.strip(),
        "store": store.__dict__ | {"project": str(store.project)},
        "figures": found,
    }


def table(found: dict[str, dict[str, list[float]]]) -> list[str]:
    names = list(found)
    rows = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for figure in found[names[0]]:
        cells = []
        for name in names:
            values = found[name].get(figure, [])
            if not values:
                cells.append("")
                continue
            spread = f" ({min(values):.0f}-{max(values):.0f})" if "ms" in figure and len(values) > 1 else ""
            cells.append(f"{statistics.median(values):,.0f}{spread}")
        rows.append(f"| {figure} | " + " | ".join(cells) + " |")
    return rows


def section(result: dict[str, Any], rounds: int, load: tuple[float, float]) -> str:
    store = result["store"]
    ours = result["figures"][OURS.name]
    met = [
        f"{figure} {statistics.median(ours[figure]):,.0f} (target {target:,.0f}: "
        f"{'met' if statistics.median(ours[figure]) <= target else 'missed'})"
        for figure, target in TARGETS.items()
    ]
    prose = (
        f"Measured {result['measured']} at commit {result['commit']}, {rounds} round(s), the agents "
        f"alternating; 1-minute load average {load[0]:.1f} before, {load[1]:.1f} after. The store: "
        f"{store['conversations']:,} conversations ({store['megabytes']:.0f} MB, copies of one "
        f"recorded through this agent with the real CLI) and a long one ({store['long_lines']:,} "
        f"transcript lines, {store['long_prompts']} prompts), in one directory. Each figure is "
        "the median of the rounds (the spread in brackets); each measure a fresh agent process "
        "(bytecode cached), a v1 client. What is kept between processes is this agent's (the "
        "summaries of the transcripts it read, next to Claude Code's store): for another agent "
        "both first pages are alike."
    )
    verdict = "claude-bg-acp: " + "; ".join(met) + "."
    busy = [BUSY] if max(load) > (os.cpu_count() or 1) else []
    paragraphs = [textwrap.fill(text, WIDTH) for text in (verdict, *busy)]
    return (
        "\n\n".join([SECTION, textwrap.fill(prose, WIDTH), "\n".join(table(result["figures"])), *paragraphs])
        + "\n"
    )


def write_section(text: str, path: Path = REPO / "BENCHMARKS.md") -> None:
    """Replace the section in BENCHMARKS.md (or add it before the last one)."""
    current = path.read_text()
    start = current.find(SECTION)
    if start < 0:
        start = end = current.rindex("\n## ") + 1
    else:
        following = current.find("\n## ", start + len(SECTION))
        end = len(current) if following < 0 else following + 1
    path.write_text(current[:start] + text + "\n" + current[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=1002)
    parser.add_argument("--repeats", type=int, default=400, help="exchanges in the long conversation")
    parser.add_argument("--ts-dir", type=Path, default=DEFAULT_TS_DIR, help="where bench_compare installs it")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md as it is")
    parser.add_argument("--json", type=Path, help="also write every figure of every round here")
    parser.add_argument(
        "--baseline", metavar="REF", help="also run claude-bg-acp as of this git ref (e.g. main)"
    )
    args = parser.parse_args(argv)
    agents = [OURS]
    entry = args.ts_dir / "node_modules" / TS_PACKAGE / "dist" / "index.js"
    if entry.exists():
        root_needs = (("IS_SANDBOX", "1"),) if os.geteuid() == 0 else ()
        agents.append(AgentCommand(f"TS adapter {TS_VERSION}", ("node", str(entry)), root_needs))
    else:
        print(f"the TypeScript adapter is not in {args.ts_dir}: this agent only", file=sys.stderr)
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as exported:
        if args.baseline:
            agents.append(baseline(args.baseline, Path(exported)))
        result = run(agents, args.rounds, args.conversations, args.repeats)
    text = section(result, args.rounds, (before, os.getloadavg()[0]))
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
