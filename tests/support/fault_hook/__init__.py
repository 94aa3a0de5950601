"""Faults injected into the agent under test (see ``sitecustomize``)."""

from __future__ import annotations

from pathlib import Path

from .sitecustomize import FAULT_MARK

__all__ = ["FAULT_MARK", "HOOK_DIR", "env"]

HOOK_DIR = Path(__file__).resolve().parent


def env(base: dict[str, str], fault: str) -> dict[str, str]:
    """``base`` for an agent that loads the hook with ``fault`` switched on."""
    return {**base, "PYTHONPATH": str(HOOK_DIR), "CLAUDE_BG_ACP_TEST_FAULT": fault}
