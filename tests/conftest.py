"""Shared fixtures: an offline environment for the real CLI, and the scripted local model; and
before the first test, the pinned ACP client, so that ``uv run pytest`` is all a clone needs.

The property tests (Hypothesis) run ``pinned`` by default: every run tries the same examples,
so the suite fails only when the code changes; they try a fifth of each property's examples
(``tests/support/properties.py``). ``--hypothesis-profile=explore`` tries all of them, new ones
each run; ``--hypothesis-seed=N`` replays one such run (``.ci/run`` explores once,
``pytest -m hypothesis``, and prints its seed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from claude_bg_acp.platform import PORTABLE_ENV
from claude_bg_acp.scripted_model import ScriptedModel, offline_env, serve_in_thread
from tests.support.acp_client import ClientRun, NodeClientUnavailableError, ensure_node_client, run_client
from tests.support.processes import survivors
from tests.support.stdio_agent import AGENT

# No deadline: a per-example time limit is a timed assertion, and fails on a busy machine.
settings.register_profile("pinned", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True, deadline=None)
settings.load_profile("pinned")  # before the test modules build their settings on it


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for an agent whose CLI must never reach a network (no model is served)."""
    yield offline_env("http://127.0.0.1:9", tmp_path / "offline")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts: killed, if they still run, and collected after it."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


@dataclass
class LiveModel:
    """The scripted model on loopback, and how an agent process must be started to use it."""

    model: ScriptedModel
    env: dict[str, str]
    """The full environment for the agent (and so its CLI)."""

    def trust(self, folder: Path) -> None:
        """Record ``folder`` as trusted in Claude Code's own config, as its terminal question
        does: its settings then act (``claude.trust``)."""
        config = Path(self.env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
        record = json.loads(config.read_text()) if config.exists() else {}
        record.setdefault("projects", {})[os.path.realpath(folder)] = {"hasTrustDialogAccepted": True}
        config.write_text(json.dumps(record))

    def agent(self, *args: str) -> dict[str, Any]:
        """The ``agent`` entry of a drive.mjs script: variables the offline env drops are unset."""
        dropped: dict[str, str | None] = {name: None for name in os.environ if name not in self.env}
        return {"argv": [AGENT, *args], "env": {**dropped, **self.env}}


def run_live(
    live: LiveModel, workdir: Path, client: str, steps: list[dict[str, Any]], **extra: Any
) -> ClientRun:
    """The official client of kind ``client`` runs ``steps`` against the agent, in ``workdir``."""
    script = {"agent": live.agent(), "client": client, "cwd": str(workdir), "steps": steps, **extra}
    return run_client(script, timeout=60)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveModel]:
    """The scripted model, and after the test the proof that no process it started survived."""
    with serve_in_thread(scenario="text") as model:
        env = offline_env(model.base_url, tmp_path / "live")
        yield LiveModel(model, env)
    left = survivors("CLAUDE_CODE_TMPDIR=" + env["CLAUDE_CODE_TMPDIR"])
    assert not left, f"processes outlived the agent: {left}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--portable",
        action="store_true",
        help=f"run the tests marked portable, with {PORTABLE_ENV}=1 for the agents they start (and "
        "this process): what macOS runs, tested on Linux",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Subprocesses started by tests must never inherit a real key by accident.
    os.environ.pop("ANTHROPIC_API_KEY", None)
    if config.getoption("portable"):
        if shutil.which("lsof") is None:
            raise pytest.UsageError(
                "the portable mode finds what Claude Code leaves running with lsof, as on macOS: install lsof"
            )
        os.environ[PORTABLE_ENV] = "1"  # before anything asks platform.host(), which keeps its answer


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("--hypothesis-seed")
    return f"property tests: {settings.get_current_profile_name()}" + (f", seed {seed}" if seed else "")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Installs the pinned ACP client (``npm ci`` in tests/client, when its node_modules is missing
    or holds another version): the client tests run it, and every test validates messages
    against the schema it carries. Without Node.js that cannot be done; the tests that need it
    then fail with this reason, and the others run."""
    try:
        ensure_node_client()
    except NodeClientUnavailableError as error:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"the ACP client tests cannot run: {error}", yellow=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("portable"):
        chosen = [item for item in items if item.get_closest_marker("portable")]
        config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
        items[:] = chosen
