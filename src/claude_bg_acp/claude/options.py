"""How every ACP session starts its Claude Code: one place, shared by the agent and the recorder.

The process environment reaches the CLI unchanged (the SDK merges ``options.env`` over
``os.environ``), so ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL`` and the CLI's own switches
work as users expect. Claude Code gets its own system prompt (the ``claude_code`` preset: the
SDK's default is none at all), as in the terminal and as the TypeScript adapter runs it. On top
of it we switch on the session-state events, which the SDK otherwise swallows, and hand the SDK
our own transport so that its ``initialize`` request declares ``perTaskStopAffordance``. The
CLI's stderr goes to the log (INFO) with anything that looks like a credential blanked out
first (``redact``).

Claude Code starts in the ``default`` permission mode and may later be switched to
``bypassPermissions`` only if it was started with ``--allow-dangerously-skip-permissions``
(which makes that mode a choice and changes nothing else; its settings may still disable it).
It refuses that flag to root and exits, unless ``IS_SANDBOX=1`` or ``CLAUDE_CODE_BUBBLEWRAP`` says
it runs in a sandbox: it gets the flag whenever it would take it (``may_bypass_permissions``).

Fast mode reaches Claude Code from an SDK host only through its flag settings: the layer that
``apply_flag_settings`` changes while it runs and ``--settings`` (the SDK's ``settings``) fills
at its start, above the user's and the folder's. A Claude Code started again gets the client's
choice there (``fast``), and runs fast or not as the one before it did (probed with CLI 2.1.332:
``{"fastMode": true}`` given so is in effect and the first model request is fast; ``false``
overrides a user's ``fastMode: true``).
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from claude_agent_sdk.client import ClaudeSDKClient
from claude_agent_sdk.types import CanUseTool, ClaudeAgentOptions

from claude_bg_acp.acp.schema import McpServer, McpServerStdio
from claude_bg_acp.claude.sdk_private import bundled_cli, subprocess_transport
from claude_bg_acp.claude.transport import AffordanceTransport, FrameObserver
from claude_bg_acp.platform import host, is_root

log = logging.getLogger("claude_bg_acp.cli")

SESSION_ENV = {"CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS": "1"}
ALLOW_BYPASS = {"allow-dangerously-skip-permissions": None}
"""The CLI flag that lets the session be switched to ``bypassPermissions`` later."""
SECRET_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Variables whose values never reach the log."""
API_KEY = re.compile(r"sk-ant-[A-Za-z0-9_-]+")
"""What an Anthropic key or token looks like, wherever it came from."""
REDACTED = "[redacted]"


def session_options(
    cwd: str,
    can_use_tool: CanUseTool | None,
    cli_path: str | Path | None = None,
    resume: str | None = None,
    mcp_servers: Sequence[McpServer] = (),
    add_dirs: list[str] | None = None,
    session_id: str | None = None,
    project_settings: bool = True,
    fast: bool | None = None,
) -> ClaudeAgentOptions:
    """``resume`` continues a stored conversation; ``session_id`` names a new one; without
    ``project_settings`` Claude Code reads the user's settings alone (``claude.trust``);
    ``fast``: fast mode as the client chose it (None: as Claude Code's settings have it)."""
    return ClaudeAgentOptions(
        cwd=cwd,
        system_prompt={"type": "preset", "preset": "claude_code"},
        resume=resume,
        session_id=session_id,
        mcp_servers=mcp_config(mcp_servers),
        add_dirs=list(add_dirs or []),
        cli_path=cli_path,
        env=dict(SESSION_ENV),
        can_use_tool=can_use_tool,
        # No --permission-mode: Claude Code starts in the mode the user's settings choose
        # (permissions.defaultMode), as it does in a terminal; the session reports it.
        extra_args=dict(ALLOW_BYPASS) if may_bypass_permissions(os.environ) else {},
        setting_sources=["user", "project", "local"] if project_settings else ["user"],
        settings=None if fast is None else json.dumps({"fastMode": fast}),
        include_partial_messages=True,
        forward_subagent_text=True,
        stderr=stderr_logger(os.environ),
    )


def may_bypass_permissions(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether Claude Code takes ``--allow-dangerously-skip-permissions`` from this process: not
    from root outside a sandbox it recognizes."""
    sandbox = environ.get("IS_SANDBOX") == "1" or bool(environ.get("CLAUDE_CODE_BUBBLEWRAP"))
    return not is_root() or sandbox


def stderr_logger(environ: Mapping[str, str]) -> Callable[[str], None]:
    """Logs a line of the CLI's stderr, credentials redacted (their values as ``environ`` has them)."""
    secrets = [value for name in SECRET_VARIABLES if (value := environ.get(name, "").strip())]

    def log_line(line: str) -> None:
        log.info("claude: %s", redact(line.rstrip(), secrets))

    return log_line


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return API_KEY.sub(REDACTED, text)


def mcp_config(servers: Sequence[McpServer]) -> dict[str, Any]:
    """The editor's MCP servers (ACP ``McpServer``, checked: stdio, http or sse) in the SDK's
    form; of two variables, headers or servers of the same name, the last one counts."""
    config: dict[str, Any] = {}
    for server in servers:
        if isinstance(server, McpServerStdio):
            env = {variable.name: variable.value for variable in server.env}
            stdio = {"type": "stdio", "command": server.command, "args": server.args, "env": env}
            config[server.name] = stdio
        else:
            headers = {header.name: header.value for header in server.headers}
            config[server.name] = {"type": server.type, "url": server.url, "headers": headers}
    return config


def build_client(options: ClaudeAgentOptions, observer: FrameObserver | None = None) -> ClaudeSDKClient:
    """A client whose transport adds the stop affordance (and reports frames to ``observer``)."""
    return ClaudeSDKClient(options=options, transport=build_transport(options, observer))


def build_transport(
    options: ClaudeAgentOptions, observer: FrameObserver | None = None, attest_trust: bool = False
) -> AffordanceTransport:
    """The subprocess transport for ``options``, wrapped (see ``transport``); ``attest_trust``:
    the user trusted the folder, which Claude Code is to record."""
    # A custom transport gets no CLI flags from the client, so build the subprocess one from
    # the options ourselves, routing permission prompts over stdio as the client would.
    cli_options = options
    if options.can_use_tool is not None:
        cli_options = replace(options, permission_prompt_tool_name="stdio")
    inner = subprocess_transport(cli_options, tied_to_us(claude_cli(options.cli_path)))
    trusted = str(options.cwd) if attest_trust and options.cwd is not None else None
    return AffordanceTransport(inner, observer, trusted)


def claude_cli(cli_path: str | Path | None) -> str:
    """The Claude Code executable: ``cli_path``, else the one the SDK would run (its bundled
    CLI, else one on ``PATH``)."""
    return str(cli_path) if cli_path is not None else bundled_cli()


def tied_to_us(cli: str) -> str:
    """The CLI to run such that it is told to stop (SIGTERM) if this process dies.

    Closing sessions stops Claude Code, but a SIGKILL of the agent runs no cleanup, and Claude
    Code outlives a closed stdin while a background task runs. On Linux ``setpriv`` sets the
    parent-death signal before it execs the CLI; on SIGTERM Claude Code stops its own tasks.
    Elsewhere (``platform``) the CLI runs as it is.
    """
    setpriv = shutil.which("setpriv") if host().linux else None
    if setpriv is None:
        return cli
    return _wrapper(setpriv, cli)


@functools.cache
def _wrapper(setpriv: str, cli: str) -> str:
    folder = tempfile.mkdtemp(prefix="claude-bg-acp-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "claude")
    with open(path, "w") as script:
        script.write(f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig TERM -- {shlex.quote(cli)} "$@"\n')
    os.chmod(path, 0o700)
    return path
