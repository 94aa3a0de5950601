"""The tiers' rules: every test file is in a tier's folder, and no test of the core tier starts a
subprocess (``conftest.py`` here)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
TIERS = ("core", "edges", "agent", "live")


def test_every_test_file_is_in_a_tier() -> None:
    outside = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert not outside, f"move each into the tier it belongs to (tests/{{{','.join(TIERS)}}}): {outside}"


def test_a_core_test_cannot_start_a_subprocess() -> None:
    with pytest.raises(AssertionError, match="move the test to tests/edges"):
        subprocess.run([sys.executable, "--version"], check=False)


def test_nor_through_asyncio() -> None:
    with pytest.raises(AssertionError, match="a core test started a subprocess"):
        asyncio.run(asyncio.create_subprocess_exec(sys.executable, "--version"))
