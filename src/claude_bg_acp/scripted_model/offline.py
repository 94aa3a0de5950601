"""The environment that keeps the real Claude Code CLI offline, talking only to a local model.

The CLI gets a fresh home, config dir and temp dir under ``root`` (so nothing of the user's
own Claude setup leaks in, and output files land somewhere a test can find), the scripted
model as its API, a dummy key, and every switch for nonessential traffic. Proxies point at
a loopback port nobody may answer on, so any request that slips past the switches fails
locally instead of leaving the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

# Port 9 (discard) is privileged, so no unprivileged process can start answering there.
DEAD_PROXY = "http://127.0.0.1:9"

# Variables of the caller's environment that would send the CLI elsewhere or log it in.
DROPPED = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "ALL_PROXY",
    "all_proxy",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)

SWITCHES = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


def offline_env(base_url: str, root: Path) -> dict[str, str]:
    """The full environment for an offline CLI using the model at ``base_url``.

    Creates ``root/home``, ``root/config`` and ``root/tmp`` (mode 0700). Based on
    ``os.environ`` so that PATH, locale and the like survive.
    """
    home, config, tmp = root / "home", root / "config", root / "tmp"
    for folder in (home, config, tmp):
        folder.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o700)
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(SWITCHES)
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-dummy",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(config),
            "CLAUDE_CODE_TMPDIR": str(tmp),
            "HTTP_PROXY": DEAD_PROXY,
            "HTTPS_PROXY": DEAD_PROXY,
            "NO_PROXY": "127.0.0.1,localhost",
        }
    )
    return env


def env_overrides(env: dict[str, str]) -> dict[str, str]:
    """``env`` as ``ClaudeAgentOptions.env``: the SDK merges that over ``os.environ``, so the
    variables ``env`` dropped must be overridden with empty values (which the CLI treats as
    unset)."""
    return {**{k: "" for k in os.environ if k not in env}, **env}
