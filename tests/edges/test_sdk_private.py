"""The SDK's private surface (``claude.sdk_private``) against the installed SDK.

Every name it takes from the SDK's modules is there, and is what the type checker is told it is;
every one, and every function that reads a private attribute, was checked on the installed
version of the SDK (an upgrade fails here until each is checked again); and a name is imported
only when it is first asked for.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import subprocess
import sys

from claude_bg_acp.claude import sdk_private
from claude_bg_acp.claude.sdk_private import CHECKED, MCP_BRIDGE, PRIVATE

INSTALLED = importlib.metadata.version("claude-agent-sdk")
TREE = ast.parse(inspect.getsource(sdk_private))


def test_every_name_is_where_the_table_says() -> None:
    for name, private in PRIVATE.items():
        assert getattr(sdk_private, name) is getattr(importlib.import_module(private.module), private.name), (
            name
        )
    assert hasattr(importlib.import_module(MCP_BRIDGE.module), MCP_BRIDGE.name)


def test_every_name_was_checked_on_the_installed_sdk() -> None:
    versions = (
        {name: p.checked_on for name, p in PRIVATE.items()} | CHECKED | {"MCP_BRIDGE": MCP_BRIDGE.checked_on}
    )
    assert {name: v for name, v in versions.items() if v != INSTALLED} == {}


def test_the_type_checker_is_told_what_each_name_is() -> None:
    """The ``TYPE_CHECKING`` block assigns each name of the table from its SDK module."""
    (block,) = [n for n in TREE.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    modules = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        if isinstance(node, ast.ImportFrom)
        else alias.name
        for node in block.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    told = {
        node.targets[0].id: (modules[node.value.value.id], node.value.attr)
        for node in block.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
    }
    assert told == {name: (p.module, p.name) for name, p in PRIVATE.items()}


def private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def reads_a_private_attribute(function: ast.AST) -> bool:
    """``x._name``, or ``getattr(x, "_name")``."""
    return any(
        (isinstance(node, ast.Attribute) and private(node.attr))
        or (isinstance(node, ast.Constant) and private(node.value))
        for node in ast.walk(function)
    )


def test_every_function_that_reads_a_private_attribute_is_marked_checked() -> None:
    functions = [n for n in TREE.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    reading = {f.name for f in functions if reads_a_private_attribute(f)}
    assert reading == set(CHECKED)
    assert reading >= {"raw_frames", "control_request", "subprocess_transport", "bundled_cli", "process_of"}


def test_a_name_is_imported_when_it_is_first_asked_for() -> None:
    """As the agent loads the SDK (``sdk_import``): the listing's names leave the client and the
    session mutations unloaded, and importing the module loads nothing."""
    code = (
        "import sys\n"
        "from claude_bg_acp.claude import sdk_private, sdk_import\n"
        "print(any(m.startswith('claude_agent_sdk') for m in sys.modules))\n"
        "sdk_import.defer_mcp()\n"
        "from claude_bg_acp.claude.sdk_private import validate_uuid, extract_json_string_field\n"
        "print(*(m in sys.modules for m in ('claude_agent_sdk._internal.sessions',"
        " 'claude_agent_sdk.client', 'claude_agent_sdk._internal.session_mutations')))\n"
        "print(sdk_private.fork_session.__module__, 'fork_session' in vars(sdk_private))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "False",
        "True",
        "False",
        "False",
        "claude_agent_sdk._internal.session_mutations",
        "True",
    ]
