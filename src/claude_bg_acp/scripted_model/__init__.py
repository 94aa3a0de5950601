"""The project's scripted local model: a stand-in Anthropic Messages API for the real CLI.

``serve`` / ``serve_in_thread`` run the HTTP server (``server.py``), ``SCENARIOS`` holds the
named scripts it answers with (``scenarios.py``), and ``offline_env`` builds the environment
that points the real Claude Code CLI at it and nowhere else (``offline.py``).
"""

from claude_bg_acp.scripted_model.offline import env_overrides, offline_env
from claude_bg_acp.scripted_model.scenarios import AUTOCOMPACT_ENV, SCENARIOS, Reply, Scenario, Turn
from claude_bg_acp.scripted_model.server import (
    ScriptedModel,
    ServedRequest,
    serve,
    serve_in_thread,
)

__all__ = [
    "AUTOCOMPACT_ENV",
    "SCENARIOS",
    "Reply",
    "Scenario",
    "ScriptedModel",
    "ServedRequest",
    "Turn",
    "env_overrides",
    "offline_env",
    "serve",
    "serve_in_thread",
]
