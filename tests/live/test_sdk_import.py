"""The SDK without its in-process MCP servers (``claude.sdk_import``), against the locked SDK.

A whole session of the installed agent (initialize, ``session/new``, a prompt answered by the
scripted model through the real CLI, ``session/list``) runs with Python's import log on, and
never loads ``mcp``: that import was most of the time to the first word. Fresh interpreters
then show that nothing of the SDK is lost to code that wants it: the package's own names, and a
real MCP bridge for an SDK server; and that the command's entry point does it, not an import of
the package (code that imports the agent's modules gets the SDK as it installs itself).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import LiveModel
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

SRC = Path(__file__).resolve().parents[2] / "src" / "claude_bg_acp"
V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
# ``-X importtime`` writes one line per module imported: "import time: self | cumulative | name".
# The self time comes out negative when another thread imported meanwhile (the SDK is imported
# in a thread of its own while the session's modules are).
IMPORTED = re.compile(r"^import time:\s+-?\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)


def test_a_whole_session_never_imports_mcp(live: LiveModel, workdir: Path) -> None:
    agent = StdioAgent(env={**live.env, "PYTHONPROFILEIMPORTTIME": "1"})
    agent.call(0, "initialize", V1_INIT)
    session = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]
    prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    assert agent.call(2, "session/prompt", prompt, timeout=60)["result"]["stopReason"] == "end_turn"
    assert agent.call(3, "session/list", {"cwd": str(workdir)})["result"]["sessions"]
    assert agent.close() == 0, agent.stderr
    assert not validate_transcript(agent.lines, agent.sent, 1)

    imported = IMPORTED.findall(agent.stderr)
    assert "claude_agent_sdk._internal.query" in imported  # the log covers the SDK's client
    assert [name for name in imported if name == "mcp" or name.startswith("mcp.")] == []


def test_our_modules_import_the_sdk_modules_not_its_package() -> None:
    """``from claude_agent_sdk import X`` would run the package's ``__init__``, and so mcp."""
    offenders = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "claude_agent_sdk":
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name == "claude_agent_sdk" for a in node.names):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def in_fresh_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


AS_THE_COMMAND = "import sys\nfrom claude_bg_acp.claude.sdk_import import defer_mcp\ndefer_mcp()\n"
"""What the command's entry point (``cli.main``) does first."""


def test_importing_the_package_leaves_the_sdk_as_it_installs_itself() -> None:
    out = in_fresh_python(
        "import sys, claude_bg_acp, claude_bg_acp.cli, claude_bg_acp.agent\n"
        "print('claude_agent_sdk' in sys.modules)\n"
        "import claude_bg_acp.session.host\n"
        "print('mcp' in sys.modules, hasattr(sys.modules['claude_agent_sdk'], 'create_sdk_mcp_server'))\n"
    )
    assert out.split() == ["False", "True", "True"]


def test_the_package_completes_itself_when_a_name_is_asked_of_it() -> None:
    out = in_fresh_python(
        AS_THE_COMMAND + "import claude_bg_acp.session.host\n"
        "import claude_agent_sdk, claude_agent_sdk.types as types\n"
        "print('mcp' in sys.modules)\n"
        "from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, __version__\n"
        "print('mcp' in sys.modules, ClaudeAgentOptions is types.ClaudeAgentOptions)\n"
        "print(sorted(set(claude_agent_sdk.__all__) - set(vars(claude_agent_sdk))))\n"
    )
    assert out.splitlines() == ["False", "True True", "[]"]


def test_an_sdk_mcp_server_still_gets_the_real_bridge() -> None:
    out = in_fresh_python(
        AS_THE_COMMAND + "import claude_bg_acp.session.host\n"
        "from claude_agent_sdk._internal.query import SdkMcpBridge\n"
        "from claude_agent_sdk import create_sdk_mcp_server\n"
        "server = create_sdk_mcp_server('probe')['instance']\n"
        "bridge = SdkMcpBridge('probe', server)\n"
        "real = sys.modules['claude_agent_sdk._internal.sdk_mcp_bridge']\n"
        "print(type(bridge) is real.SdkMcpBridge, real.__file__.endswith('sdk_mcp_bridge.py'))\n"
    )
    assert out.split() == ["True", "True"]
