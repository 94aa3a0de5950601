"""How long after a tool use's input does Claude Code ask ``can_use_tool``? What grace the
``pending`` rule needs (``tool_uses.START_GRACE``).

Claude Code tells nothing when a tool that needs no question starts running; the agent shows such
a call ``in_progress`` once ``START_GRACE`` has passed after its input with no question for it.
That is sound while every question comes within the grace. Method: run the bundled CLI offline
against the scripted model, as the agent does (``session_options`` + ``build_client``), ``-n``
times per scenario (``permission``: a Bash ``touch``; ``edits``: a Write and an Edit, each
asked; ``fg_bash``: an ``echo``, asked nothing), optionally with ``--load`` busy processes
competing for the CPU, and take the time from the ``AssistantMessage`` that gives a tool use's
input (where the agent learns it) to that tool use's ``can_use_tool`` request, and to the
SDK-registered ``PreToolUse`` / ``PostToolUse`` hooks and the result. Prints each gap's
minimum, median and maximum in milliseconds, and how often each order of these was seen.

Usage: ``.venv/bin/python scripts/bench_start_grace.py [-n 10] [--load 2] [SCENARIO ...]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    HookContext,
    HookMatcher,
    PermissionResultAllow,
    ResultMessage,
    ToolPermissionContext,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import HookInput, HookJSONOutput, PermissionResult

from claude_bg_acp.claude.options import build_client, session_options
from claude_bg_acp.core.tool_uses import START_GRACE
from claude_bg_acp.scripted_model import env_overrides, offline_env, serve

SCENARIOS = ("permission", "edits", "fg_bash")
PROMPTS = {"edits": "Edit app.py in <dir>{work}</dir>."}


class Clock:
    """When each thing happened to each tool use, from the input's arrival."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, float]] = defaultdict(dict)

    def mark(self, tool_use_id: str | None, what: str) -> None:
        if tool_use_id:
            self.seen[tool_use_id].setdefault(what, time.monotonic())

    def orders(self) -> Iterator[str]:
        """The order things happened to each tool use in."""
        for marks in self.seen.values():
            yield " < ".join(sorted(marks, key=marks.__getitem__))

    def gaps(self) -> Iterator[tuple[str, float]]:
        for marks in self.seen.values():
            if (start := marks.get("input")) is not None:
                yield from ((what, (at - start) * 1000) for what, at in marks.items() if what != "input")


async def run_once(scenario: str, clock: Clock) -> None:
    with tempfile.TemporaryDirectory(prefix="cbabench-") as tmp:
        root = Path(tmp)
        (root / "work").mkdir()
        (root / "work" / "app.py").write_text("def answer():\n    return 1\n")

        async def ask(tool: str, given: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
            clock.mark(context.tool_use_id, "can_use_tool")
            return PermissionResultAllow()

        def hook(name: str) -> HookMatcher:
            async def called(data: HookInput, tool_use_id: str | None, _: HookContext) -> HookJSONOutput:
                clock.mark(tool_use_id, name)
                return {}

            return HookMatcher(hooks=[called])

        async with serve(scenario=scenario) as model:
            options = session_options(str(root / "work"), ask)
            options.env.update(env_overrides(offline_env(model.base_url, root)))
            options.hooks = {"PreToolUse": [hook("PreToolUse")], "PostToolUse": [hook("PostToolUse")]}
            client = build_client(options)
            await client.connect()
            try:
                with anyio.fail_after(60):
                    prompt = PROMPTS.get(scenario, "Go.").format(work=root / "work")
                    await client.query(f"[scenario:{scenario}] {prompt}")
                    async for message in client.receive_messages():
                        if isinstance(message, AssistantMessage):
                            for block in message.content:
                                if isinstance(block, ToolUseBlock):
                                    clock.mark(block.id, "input")
                        elif isinstance(message, UserMessage) and message.parent_tool_use_id is None:
                            for tool_use_id in _results(message):
                                clock.mark(tool_use_id, "result")
                        elif isinstance(message, ResultMessage):
                            break
            finally:
                await client.disconnect()


def _results(message: UserMessage) -> list[str]:
    content = message.content if isinstance(message.content, list) else []
    return [block.tool_use_id for block in content if hasattr(block, "tool_use_id")]


def _spin() -> None:
    while True:
        pass


@contextmanager
def load(processes: int) -> Iterator[None]:
    burners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        for burner in burners:
            burner.terminate()
            burner.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=", ".join(SCENARIOS))
    parser.add_argument("-n", type=int, default=10, help="runs per scenario")
    parser.add_argument("--load", type=int, default=0, help="busy processes competing for the CPU")
    args = parser.parse_args()
    print(f"START_GRACE = {START_GRACE * 1000:.0f} ms, load = {args.load} busy processes")
    with load(args.load):
        for scenario in args.scenarios or SCENARIOS:
            by_what: dict[str, list[float]] = defaultdict(list)
            orders: Counter[str] = Counter()
            for _ in range(args.n):
                clock = Clock()  # the scripted model's tool use ids are the same in every run
                anyio.run(run_once, scenario, clock)
                for what, ms in clock.gaps():
                    by_what[what].append(ms)
                orders.update(clock.orders())
            for what, values in sorted(by_what.items(), key=lambda kv: statistics.median(kv[1])):
                print(
                    f"{scenario:10} input -> {what:13} n={len(values):3} min {min(values):7.1f}  "
                    f"median {statistics.median(values):7.1f}  max {max(values):7.1f} ms"
                )
            for order, count in orders.most_common():
                print(f"{scenario:10} {count:3} x {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
