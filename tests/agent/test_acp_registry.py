"""``acp-registry/``, this agent's entry for the ACP Registry: it meets the registry's rules
(``tests.support.acp_registry``), installs this version of this package with ``uvx``, and the
agent passes the registry's checks of a running agent: it starts and ends on a closed stdin, and
its ``initialize`` answer to the registry's own request offers a login method.

The command is the development environment's, or the one ``CLAUDE_BG_ACP_COMMAND`` names: CI
runs this file again with the command installed from the built wheel into a fresh environment.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from claude_bg_acp import __version__
from claude_bg_acp.agent import AGENT_INFO
from tests.support.acp_registry import REGISTRY_INITIALIZE, auth_errors, entry_errors, icon_errors
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import AGENT

COMMAND = os.environ.get("CLAUDE_BG_ACP_COMMAND", AGENT)
ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "acp-registry"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
ICON = (ENTRY / "icon.svg").read_text(encoding="utf-8")
PASSED_ON = ("PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
"""What of the environment the registry's check gives the agent (besides a scratch HOME)."""


def entry() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    return loaded


def run_as_the_registry(home: Path, given: bytes | None) -> bytes:
    """The agent's stdout once it ends, started as the registry starts it: a scratch ``HOME``
    and working directory, little of the environment, and ``given`` on stdin (else
    ``/dev/null``)."""
    done = subprocess.run(
        [COMMAND],
        input=given,
        stdin=subprocess.DEVNULL if given is None else None,
        capture_output=True,
        cwd=home,
        env={
            **{name: os.environ[name] for name in PASSED_ON if name in os.environ},
            "HOME": str(home),
            "TERM": "dumb",
        },
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    return done.stdout


def test_the_entry_meets_the_registrys_rules() -> None:
    assert entry_errors(entry(), directory=PROJECT["name"]) == []
    assert icon_errors(ICON) == []


def test_the_entry_installs_this_version_of_this_package_with_uvx() -> None:
    submitted = entry()
    assert submitted["version"] == __version__
    assert submitted["distribution"] == {"uvx": {"package": f"{PROJECT['name']}=={__version__}"}}
    assert submitted["name"] == AGENT_INFO["title"]
    assert submitted["license"] == PROJECT["license"]
    assert submitted["repository"] == PROJECT["urls"]["Repository"]


def _changed(path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(entry())
    *parents, name = path.split(".")
    target = changed
    for parent in parents:
        target = target[parent]
    if value is None:
        del target[name]
    else:
        target[name] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "refused"),
    [
        ("description", None, "description: missing"),
        ("id", "Claude-BG", "id: 'Claude-BG' is not lowercase"),
        ("id", "claude-bg", "is not its directory's name"),
        ("version", "0.1", "is not a semantic version"),
        ("repository", "github.com/x/y", "repository: not an absolute URI"),
        ("icon", "icon.svg", "icon: set by the registry's build"),
        ("distribution.pip", {"package": "claude-bg-acp"}, "distribution.pip: unknown kind"),
        ("distribution.uvx.package", "claude-bg-acp==0.0.9", "is not the entry's version"),
        ("distribution.uvx.package", "claude-bg-acp@latest", "names latest"),
        ("distribution.uvx.command", "claude-bg-acp", "command: not a field of a package distribution"),
        ("distribution.uvx.args", [1], "args: not a list of strings"),
    ],
)
def test_the_rules_refuse_what_the_registry_refuses(path: str, value: Any, refused: str) -> None:
    errors = entry_errors(_changed(path, value), directory=PROJECT["name"])
    assert any(refused in error for error in errors), errors


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        (('fill="currentColor"', 'fill="#d97757"'), "paints with '#d97757'"),
        (('width="16" height="16"', 'width="24" height="24"'), "not 16x16"),
        (("<rect", "<!-- a frame --><rect"), "has a comment"),
        (("currentColor", "none"), "never uses currentColor"),
    ],
)
def test_the_rules_refuse_an_icon_the_registry_refuses(change: tuple[str, str], refused: str) -> None:
    errors = icon_errors(ICON.replace(*change))
    assert any(refused in error for error in errors), errors


def test_the_registrys_launch_check_sees_the_agent_end_on_a_closed_stdin(tmp_path: Path) -> None:
    assert run_as_the_registry(tmp_path, None) == b""


def test_the_registrys_auth_check_is_offered_claude_codes_login(tmp_path: Path) -> None:
    """The check reads the first line of stdout as the answer: a v1 client that declares only
    the earlier ``_meta["terminal-auth"]`` is offered the terminal login in both forms."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": REGISTRY_INITIALIZE}
    answer = json.loads(run_as_the_registry(tmp_path, json.dumps(request).encode() + b"\n").splitlines()[0])
    assert auth_errors(answer) == []
    subscription, console = answer["result"]["authMethods"]
    assert (subscription["id"], subscription["type"], subscription["args"]) == (
        "claude-login",
        "terminal",
        ["login"],
    )
    assert (console["id"], console["type"], console["args"]) == (
        "console-login",
        "terminal",
        ["login", "--console"],
    )
    earlier = subscription["_meta"]["terminal-auth"]
    assert Path(earlier["command"]).is_file() and earlier["args"] == ["-m", "claude_bg_acp", "login"]
    assert console["_meta"]["terminal-auth"]["args"] == ["-m", "claude_bg_acp", "login", "--console"]
    assert answer["result"]["agentInfo"]["version"] == __version__
    assert not validate_transcript([answer], [request], 1)


@pytest.mark.parametrize(
    ("methods", "refused"),
    [
        ([], "no authMethods"),
        ([{"id": "key", "name": "API key", "type": "env_var"}], "no agent or terminal method"),
    ],
)
def test_the_auth_rule_refuses_an_answer_without_a_login(methods: list[dict[str, Any]], refused: str) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "authMethods": methods}}
    assert any(refused in error for error in auth_errors(answer))


def test_the_auth_rule_reads_a_method_without_a_type_as_the_registry_does() -> None:
    untyped = [
        {"id": "a", "name": "A", "_meta": {"terminal-auth": {"command": "x"}}},
        {"id": "b", "name": "B"},
    ]
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"authMethods": untyped}}
    assert auth_errors(answer) == []
