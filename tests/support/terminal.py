"""The bundled Claude Code CLI in its own terminal (a pseudo-terminal): whether it asks its
folder-trust question on starting in a folder. The question a terminal asks is the judgement the
agent's (``claude.trust``) must equal, so the live trust tests ask the terminal too.

The CLI is started with the test's environment, its onboarding marked done and the offline key
approved in its config (else first-run screens come before the question). Its screen is read
until the question's confirm option or the prompt's permission-mode line shows (whichever comes
first: the question comes before the prompt), then the terminal's session is killed.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

from claude_bg_acp.claude.options import claude_cli

QUESTION = "Yes, I trust this folder"
"""The trust question's confirm option."""
PROMPT = "shift+tab to cycle"
"""The permission-mode line under the prompt, shown once the CLI waits for input."""
ESCAPES = re.compile(rb"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def asks_trust(cwd: Path, env: dict[str, str], timeout: float = 60) -> bool:
    """Whether the CLI's terminal, started in ``cwd``, asks whether to trust the folder."""
    config = Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    record = json.loads(config.read_text()) if config.exists() else {}
    key = env["ANTHROPIC_API_KEY"][-20:]  # the CLI remembers an approved key by its end
    approved = {"approved": [key], "rejected": []}
    onboarded = {"hasCompletedOnboarding": True, "theme": "dark", "customApiKeyResponses": approved}
    config.write_text(json.dumps({**record, **onboarded}))
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    process = subprocess.Popen(
        [claude_cli(None)],
        cwd=cwd,
        env={**env, "TERM": "xterm-256color"},
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    try:
        return _first_shown(controller, time.monotonic() + timeout) == QUESTION
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        os.close(controller)


def _first_shown(controller: int, deadline: float) -> str:
    screen = b""
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([controller], [], [], left)[0]:
            break
        try:
            chunk = os.read(controller, 1 << 16)
        except OSError:  # EIO: the CLI closed its terminal
            break
        if not chunk:
            break
        screen += chunk
        for shown in (QUESTION, PROMPT):
            if shown in _text(screen):
                return shown
    raise AssertionError(
        f"the terminal showed neither the trust question nor the prompt: {_text(screen)[-2000:]}"
    )


def _text(screen: bytes) -> str:
    """The words drawn on the screen so far, without the escapes that placed them."""
    return " ".join(ESCAPES.sub(b" ", screen).decode("utf-8", errors="replace").split())
