"""The Claude side imported ahead of need (``prewarm``): a module at a time, held while a listing
runs, and all of it in the end.

The steps are run by a recording importer (the real one imports each module once per process);
the real steps are checked in fresh interpreters.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import threading
from collections.abc import Callable
from types import ModuleType

from claude_bg_acp import prewarm
from claude_bg_acp.prewarm import Prewarm


class Steps:
    """An importer that records each step and the listings held when it began; a listing can be
    made to start during a step (``listing_during``: ``listing`` is then the one under way)."""

    def __init__(self, prewarm: Callable[[], Prewarm], listing_during: str | None = None) -> None:
        self.taken: list[tuple[str, int]] = []
        self.listing: contextlib.AbstractContextManager[None] | None = None
        self.listing_started = threading.Event()
        self._prewarm = prewarm
        self._during = listing_during

    def __call__(self, name: str) -> ModuleType:
        warm = self._prewarm()
        self.taken.append((name, warm._listings))
        if name == self._during:
            self.listing = warm.held()
            self.listing.__enter__()
            self.listing_started.set()
        return ModuleType(name)


def joined(prewarm: Prewarm) -> None:
    assert prewarm._thread is not None
    prewarm._thread.join(30)
    assert not prewarm._thread.is_alive()


def test_every_step_is_taken_in_order_once() -> None:
    warm = Prewarm(("a", "b", "c"), Steps(lambda: warm))
    steps = warm._import
    assert isinstance(steps, Steps)
    warm.start()
    warm.start()  # a later initialize starts nothing more
    joined(warm)
    assert steps.taken == [("a", 0), ("b", 0), ("c", 0)]


def test_what_is_given_to_start_is_done_first() -> None:
    warm = Prewarm(("a", "b"), Steps(lambda: warm))
    steps = warm._import
    assert isinstance(steps, Steps)
    warm.start(lambda: steps.taken.append(("first", 0)))
    joined(warm)
    assert steps.taken == [("first", 0), ("a", 0), ("b", 0)]


def test_the_params_of_the_requests_that_open_a_session_are_made_ahead() -> None:
    """In a fresh interpreter (the models are made once per process): after the agent's first
    step, the first ``session/load`` finds its params' model made and its validator built."""
    code = (
        "import claude_bg_acp.agent as a\n"
        "from claude_bg_acp.acp.capabilities import ClientCapabilities\n"
        "client = ClientCapabilities.declared(1, {})\n"
        "load = a.REQUESTS['session/load']\n"
        "before = load.model(client).__pydantic_complete__\n"
        "a._opening_models(client)\n"
        "print(before, load.model(client).__pydantic_complete__)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["False", "True"]


def test_a_listing_that_starts_during_a_step_holds_the_next_one_until_it_is_done() -> None:
    steps = Steps(lambda: warm, listing_during="a")
    warm = Prewarm(("a", "b"), steps)
    warm.start()
    assert steps.listing_started.wait(30)
    assert steps.listing is not None
    steps.listing.__exit__(None, None, None)  # the listing is done
    joined(warm)
    assert steps.taken == [("a", 0), ("b", 0)], "step b began while the listing ran"


def test_listings_hold_the_import_until_the_last_one_is_done() -> None:
    warm = Prewarm(("a",), Steps(lambda: warm))
    with warm.held():
        with warm.held():
            assert not warm._clear.is_set()
        assert not warm._clear.is_set(), "the outer listing still runs"
    assert warm._clear.is_set()


def test_the_steps_are_modules_of_the_agent_and_end_with_everything_a_session_needs() -> None:
    """Each step names a module of this package; the last one is the session host, which imports
    the rest. A fresh interpreter importing the steps one by one ends with the same modules as
    one importing the session host alone."""
    for name in prewarm.STEPS:
        assert importlib.util.find_spec(name) is not None, name
    assert prewarm.STEPS[-1] == "claude_bg_acp.session.host"

    def loaded(code: str) -> set[str]:
        # As the agent imports them: with the SDK's MCP servers left unloaded (``cli.main``).
        agent = "from claude_bg_acp.claude.sdk_import import defer_mcp; defer_mcp()"
        report = "import sys; print(' '.join(sorted(m for m in sys.modules if m.startswith('claude'))))"
        done = subprocess.run(
            [sys.executable, "-c", f"{agent}; {code}; {report}"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    steps = "; ".join(f"import {name}" for name in prewarm.STEPS)
    assert loaded(steps) == loaded("import claude_bg_acp.session.host")
