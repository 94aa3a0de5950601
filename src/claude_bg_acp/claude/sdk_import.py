"""Importing the Agent SDK without its in-process MCP servers, which this agent never uses.

The SDK's package ``__init__`` imports ``mcp`` for in-process MCP servers (``tool``,
``create_sdk_mcp_server``), and so does the module its control protocol keeps them in
(``sdk_mcp_bridge``). That import builds a pydantic model for every MCP message: about 0.75 s of
CPU on a 2-vCPU machine, most of the time from spawning the agent to its first word. This agent
hands MCP servers to Claude Code as configuration and gives the SDK none of its own, so none of
that code ever runs.

``defer_mcp`` therefore registers the package without running its ``__init__`` and puts a
stand-in where ``sdk_mcp_bridge`` would be. The agent imports names from the SDK's modules
(``claude_agent_sdk.types``, ``.client``, and the private ones through ``sdk_private``), which
load as they are, so behaviour stays the SDK's. Nothing is lost for code that wants more: the
first name asked of the package runs its ``__init__`` then, and the first bridge built, or name
asked of the stand-in, loads the real module. ``tests/live/test_sdk_import.py`` pins this against the
locked SDK.

The command's entry point (``cli.main``) calls ``defer_mcp`` before anything imports the SDK;
importing ``claude_bg_acp`` alone changes nothing in ``sys.modules``, so code that imports the
agent's modules as a library (the tests, the benchmarks) gets the SDK as the SDK installs itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from claude_bg_acp.claude import sdk_private

PACKAGE = "claude_agent_sdk"
BRIDGE = sdk_private.MCP_BRIDGE.module


def defer_mcp() -> None:
    """Register the SDK's package so that importing its modules leaves ``mcp`` unloaded."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None:
        return  # an ordinary import will say what is missing
    package = importlib.util.module_from_spec(spec)
    package.__dict__["__getattr__"] = _completer(package, spec)
    sys.modules[PACKAGE] = package
    sys.modules[BRIDGE] = _bridge_stand_in()
    # ``client.py`` takes ``Transport`` from the package itself.
    package.__dict__["Transport"] = sdk_private.Transport


def _completer(package: ModuleType, spec: ModuleSpec) -> Callable[[str], Any]:
    lock = threading.Lock()

    def complete(name: str) -> Any:
        """Run the package's ``__init__`` the first time a name is asked of it (PEP 562)."""
        with lock:
            if package.__dict__.get("__getattr__") is complete:
                del package.__dict__["__getattr__"]
                assert spec.loader is not None
                spec.loader.exec_module(package)
        return package.__dict__[name] if name in package.__dict__ else _missing(name)

    return complete


def _missing(name: str) -> Any:
    raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")


def _bridge_stand_in() -> ModuleType:
    stand_in = ModuleType(BRIDGE, "Stands in for the SDK's MCP bridge until one is built.")

    def bridge(*args: Any, **kwargs: Any) -> Any:
        return getattr(_real_bridge(stand_in), sdk_private.MCP_BRIDGE.name)(*args, **kwargs)

    def forward(name: str) -> Any:
        # The import system probes for ``__path__`` and the like: those are not worth mcp.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real_bridge(stand_in), name)

    stand_in.__dict__[sdk_private.MCP_BRIDGE.name] = bridge
    stand_in.__dict__["__getattr__"] = forward
    return stand_in


def _real_bridge(stand_in: ModuleType) -> ModuleType:
    if sys.modules.get(BRIDGE) is stand_in:
        del sys.modules[BRIDGE]
    return importlib.import_module(BRIDGE)
