"""Whether a folder's own Claude Code settings may act, and what they would do.

A folder's project settings (``.claude/settings.json``, ``.claude/settings.local.json``) and the
``.mcp.json`` files in it and in every folder above it (Claude Code reads them all, and starts
their servers unasked under the SDK) run commands as soon as Claude Code starts there: hooks, MCP servers, an
``apiKeyHelper``; their ``env`` may send every model request, with the user's key, elsewhere;
their ``permissions`` may let tools run unasked. In a terminal Claude Code asks whether the
folder is trusted first; under the SDK nobody asks, so the agent does (``session.trust``).

Claude Code records a folder's trust in its global config (``<CLAUDE_CONFIG_DIR or ~>/.claude.json``,
or a non-empty legacy ``<config dir>/.config.json``): ``projects[<path>].hasTrustDialogAccepted``.
A folder is trusted, as the pinned CLI judges it (when its terminal would not ask), when that
record is set for its git repository's canonical root, the folder the CLI keys a repository's
trust by (for a linked worktree, the main repository's root: ``repository``), or for the
folder or a folder above it, up to the root of its git repository (above it nothing counts), or
up to ``/`` outside one. The agent reads that record (``trusted``) and never writes it: the CLI
writes it itself, under the canonical root, when its ``initialize`` request attests the user's
answer (``workspaceTrust``, see ``transport``); so a worktree trusted once is trusted in the
main repository and in its other worktrees too, as in a terminal.
``CLAUDE_BG_ACP_TRUST_ALL_FOLDERS=1`` (``--trust-all-folders``) lets every folder's settings act
unasked, as before.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_bg_acp.claude import repository, store_files

log = logging.getLogger(__name__)

TRUST_ALL_ENV = "CLAUDE_BG_ACP_TRUST_ALL_FOLDERS"
SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
MCP_FILE = ".mcp.json"
HELPERS = ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper")
"""Settings whose value is a command Claude Code runs."""


@dataclass
class ProjectSettings:
    """What a folder's own settings would do, as the trust question shows it."""

    files: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    mcp_servers: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    default_mode: str | None = None
    allowed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per thing it would do (the files it comes from first)."""
        listed = [
            *(f"Hook {hook}" for hook in self.hooks),
            *(f"MCP server {server}" for server in self.mcp_servers),
            *(f"Environment variable {variable}" for variable in self.env),
            *self.helpers,
        ]
        if self.default_mode is not None:
            listed.append(f"Starts in permission mode {self.default_mode}")
        listed += [f"Allowed without asking: {rule}" for rule in self.allowed]
        return [f"From {', '.join(self.files)}:", *(f"- {line}" for line in listed)]

    def raw(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "hooks": self.hooks,
            "mcpServers": self.mcp_servers,
            "env": self.env,
            "helpers": self.helpers,
            "defaultMode": self.default_mode,
            "allowed": self.allowed,
        }


def trust_all(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(TRUST_ALL_ENV, "") not in ("", "0")


def settings_may_act(cwd: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether Claude Code may start in ``cwd`` with its project settings: all folders are
    trusted, or this one has none, or Claude Code's record says it is trusted."""
    return trust_all(environ) or not has_project_settings(cwd) or trusted(cwd, environ)


def has_project_settings(cwd: str) -> bool:
    return any((Path(cwd) / name).is_file() for name in SETTINGS_FILES) or bool(mcp_files(cwd))


def mcp_files(cwd: str) -> list[Path]:
    """The ``.mcp.json`` files Claude Code reads in ``cwd``: its own and those above it."""
    folder = Path(os.path.abspath(cwd))
    return [path for candidate in (folder, *folder.parents) if (path := candidate / MCP_FILE).is_file()]


def trusted(cwd: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether Claude Code's own record trusts ``cwd`` (see the module docstring)."""
    projects = _read_json(record_file(environ)).get("projects")
    if not isinstance(projects, dict):
        return False
    folder = os.path.realpath(cwd)
    top = repository.git_root(folder)
    keys = [repository.canonical_root(top)] if top is not None else []
    for candidate in (Path(folder), *Path(folder).parents):
        keys.append(str(candidate))
        if str(candidate) == top:
            break
    return any(_accepted(projects.get(key)) for key in keys)


def _accepted(entry: object) -> bool:
    return isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True


def record_file(environ: Mapping[str, str] = os.environ) -> Path:
    """Claude Code's global config, where it records trusted folders."""
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    config_dir = environ.get("CLAUDE_CONFIG_DIR")
    legacy = Path(config_dir) if config_dir else home / ".claude"
    if (legacy / ".config.json").is_file() and (legacy / ".config.json").stat().st_size > 0:
        return legacy / ".config.json"
    return (Path(config_dir) if config_dir else home) / ".claude.json"


def read_project_settings(cwd: str) -> ProjectSettings:
    """What ``cwd``'s settings files and ``.mcp.json`` would do (unreadable files count as empty)."""
    found = ProjectSettings()
    for name in SETTINGS_FILES:
        path = Path(cwd) / name
        if path.is_file():
            found.files.append(name)
            _add_settings(found, _read_json(path))
    for mcp in mcp_files(cwd):
        found.files.append(MCP_FILE if mcp.parent == Path(os.path.abspath(cwd)) else str(mcp))
        servers = _read_json(mcp).get("mcpServers")
        for name, server in (servers if isinstance(servers, dict) else {}).items():
            found.mcp_servers.append(f"{name}: {_server(server)}")
    return found


def _add_settings(found: ProjectSettings, settings: dict[str, Any]) -> None:
    hooks = settings.get("hooks")
    for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in _dicts(group.get("hooks") if isinstance(group, dict) else None):
                found.hooks.append(f"{event}: {_hook(hook)}")
    env = settings.get("env")
    found.env += [f"{name}={value}" for name, value in (env if isinstance(env, dict) else {}).items()]
    found.helpers += [f"{key}: {settings[key]}" for key in HELPERS if isinstance(settings.get(key), str)]
    permissions = settings.get("permissions")
    if isinstance(permissions, dict):
        mode = permissions.get("defaultMode")
        found.default_mode = mode if isinstance(mode, str) else found.default_mode
        allow = permissions.get("allow")
        found.allowed += [rule for rule in allow if isinstance(rule, str)] if isinstance(allow, list) else []


def _hook(hook: dict[str, Any]) -> str:
    for key in ("command", "url", "prompt"):
        if isinstance(hook.get(key), str):
            return str(hook[key])
    return json.dumps(hook)


def _server(server: Any) -> str:
    if not isinstance(server, dict):
        return json.dumps(server)
    if isinstance(server.get("url"), str):
        return str(server["url"])
    args = server.get("args")
    words = [server.get("command"), *(args if isinstance(args, list) else [])]
    return " ".join(str(word) for word in words if word is not None)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


MAX_SETTINGS = 16 << 20
"""Bytes a settings file may hold to be read (a larger one is no settings file, and counts as
empty: the question is still asked, its file named)."""


def _read_json(path: Path) -> dict[str, Any]:
    # A repository's file: never blocking (a FIFO), never unbounded (a huge or endless file).
    try:
        value = json.loads(store_files.read_regular(str(path), MAX_SETTINGS, follow=True))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("could not read %s: %s", path, exc)
        return {}
    return value if isinstance(value, dict) else {}
