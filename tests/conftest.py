"""Shared fixtures: an offline environment for the real CLI, and the scripted local model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_bg_acp.scripted_model import offline_env, serve_in_thread


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
def scripted_model(tmp_path: Path) -> Iterator[tuple[object, dict[str, str]]]:
    """The scripted model on loopback and the offline environment pointing the CLI at it."""
    with serve_in_thread(scenario="text") as model:
        yield model, offline_env(model.base_url, tmp_path / "live")


def pytest_configure(config: pytest.Config) -> None:
    # Subprocesses started by tests must never inherit a real key by accident.
    os.environ.pop("ANTHROPIC_API_KEY", None)
