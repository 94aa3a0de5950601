"""The package's shape, checked from its source: imports go one way, only presenters (and
the version negotiation in ``agent``, and the clients: the demo, the scripted model) look at the
protocol version, the core decides nothing by the kind of client but through its named
policies, one module reaches past the SDK's public API, and the core stays in modules a
newcomer reads whole, its session core routing each event to the object that owns it.

Imports are read with ``ast`` from every module of ``claude_bg_acp``, those under
``TYPE_CHECKING`` included; ``from package import module`` counts as an import of that module.
"""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from functools import cache
from pathlib import Path

import claude_bg_acp
from claude_bg_acp.core import policy
from claude_bg_acp.core.policy import Policy

PACKAGE = Path(claude_bg_acp.__file__).parent
NAME = "claude_bg_acp"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


@cache
def tree_of(module: str) -> ast.Module:
    """``module``'s syntax tree, parsed once for all the checks below (none changes it)."""
    return ast.parse(MODULES[module].read_text())


def imports_of(module: str) -> set[str]:
    """The package's modules that ``module`` imports."""
    tree = tree_of(module)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:  # the package uses no relative imports
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in MODULES and name != module}


def test_no_two_modules_import_each_other_directly_or_through_others() -> None:
    graph = {module: imports_of(module) for module in MODULES}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(module: str) -> None:
        if module in done:
            return
        assert module not in visiting, "import cycle: " + " -> ".join(
            [*visiting[visiting.index(module) :], module]
        )
        visiting.append(module)
        for imported in sorted(graph[module]):
            visit(imported)
        visiting.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    assert "claude_bg_acp.core.session" in done  # the walk saw the package


def test_the_core_imports_no_edge_and_no_presenter() -> None:
    """The core is sans-IO: it knows neither the endpoint, the runner, the tailer, the stored
    conversations nor a presenter."""
    edges = {f"{NAME}.{name}" for name in ("acp.stdio", "agent", "cli")}
    edges |= {module for module in MODULES if module.startswith((f"{NAME}.session", f"{NAME}.output"))}
    edges |= {
        f"{NAME}.claude.{name}"
        for name in ("runner", "options", "transport", "store", "orphans", "leftovers", "lifeline")
    }
    for module in (m for m in MODULES if m.startswith(f"{NAME}.core")):
        imported = imports_of(module)
        assert not imported & edges, f"{module} imports an edge: {imported & edges}"
        assert not any(m.startswith(f"{NAME}.presenters") for m in imported), f"{module} imports a presenter"


def imports_under(package: str, prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    """What each module of ``package`` imports from under any of ``prefixes``."""
    found = {
        module: {m for m in imports_of(module) if m.startswith(prefixes)}
        for module in MODULES
        if module.startswith(f"{NAME}.{package}.")
    }
    assert found, f"no module under {package}"
    return {module: imported for module, imported in found.items() if imported}


def test_the_claude_side_imports_nothing_above_it() -> None:
    """``claude/`` speaks Claude Code's and the SDK's terms only: what reads them in the core's
    terms (a replay, an output file under the closing-line rule, a title) lives above it."""
    above = tuple(f"{NAME}.{name}" for name in ("core", "output", "session", "presenters", "agent", "cli"))
    assert imports_under("claude", above) == {}


def test_the_output_rules_know_no_protocol_core_or_session() -> None:
    """``output/`` reads bytes under Claude Code's conventions; the host makes events of them."""
    above = tuple(f"{NAME}.{name}" for name in ("core", "acp", "session", "presenters", "agent", "cli"))
    assert imports_under("output", above) == {}


def reads_the_platform(tree: ast.AST) -> bool:
    """``sys.platform``, ``os.name`` or the ``platform`` module of the standard library."""
    for node in ast.walk(tree):
        name = (
            (node.value.id, node.attr)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            else None
        )
        if name in (("sys", "platform"), ("os", "name")):
            return True
        if isinstance(node, ast.Import) and any(alias.name == "platform" for alias in node.names):
            return True
    return False


def test_one_module_decides_what_the_platform_offers() -> None:
    """Every other module asks ``platform.host()``, so the portable switch and the real platform
    lead to the same code."""
    readers = {m for m in MODULES if reads_the_platform(tree_of(m))}
    assert readers == {f"{NAME}.platform"}


VERSION_NAMES = {"version", "protocol_version", "protocolVersion"}


def mentions_a_version(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if isinstance(node, ast.arg):
            name = node.arg
        if name in VERSION_NAMES or (isinstance(node, ast.Constant) and node.value in VERSION_NAMES):
            return True
    return False


def test_only_presenters_and_the_negotiation_know_the_protocol_version() -> None:
    # The demo is a client of the agent: it chooses the version it speaks.
    allowed: tuple[str, ...] = (
        f"{NAME}.presenters",
        f"{NAME}.agent",
        f"{NAME}.acp",
        f"{NAME}.cli",
        f"{NAME}.scripted_model",
    )
    allowed += (f"{NAME}.demo",)
    checked = [m for m in MODULES if not m.startswith(allowed) and m != NAME]
    assert f"{NAME}.core.session" in checked and f"{NAME}.session.host" in checked
    for module in checked:
        assert not mentions_a_version(tree_of(module)), f"{module} looks at a version"


SDK = "claude_agent_sdk"


def private_name(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def own_names(tree: ast.AST) -> set[str]:
    """What a module may read private attributes of: its objects (``self``, ``cls``) and the
    classes it defines (``Agent._prompt`` in ``agent``'s method table)."""
    return {"self", "cls"} | {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def reach(node: ast.AST, prose: set[int], own: set[str]) -> str | None:
    """What ``node`` takes of the SDK's private surface, if anything."""
    match node:
        case ast.Import(names=aliases) | ast.ImportFrom(names=aliases):
            module = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            paths = module + [f"{module[0]}.{a.name}" if module else a.name for a in aliases]
            private = [p for p in paths if p.split(".")[0] == SDK and any(map(private_name, p.split(".")))]
            return f"imports {private[0]}" if private else None
        case ast.Constant(value=str(text)) if f"{SDK}._" in text and id(node) not in prose:
            return f"names {text}"
        case ast.Attribute(value=ast.Name(id=name)) if name in own:
            return None
        case ast.Attribute(attr=attr) if private_name(attr):
            return f"reads {ast.unparse(node)}"
        case ast.Call(
            func=ast.Name(id="getattr" | "setattr" | "hasattr" | "delattr"),
            args=[_, ast.Constant(value=name), *_],
        ) if private_name(name):
            return ast.unparse(node)
    return None


def reaches_into_the_sdk(tree: ast.AST) -> list[str]:
    """Where a module imports a private SDK module or name (a part of its path starting with
    ``_``), names one in a string, or reads a private attribute of anything but its own objects
    and classes (``own_names``), directly or through ``getattr`` and the like."""
    prose, own = docstrings(tree), own_names(tree)
    return [
        f"{node.lineno}: {found}"
        for node in ast.walk(tree)
        if (found := reach(node, prose, own)) and isinstance(node, ast.stmt | ast.expr)
    ]


def test_one_module_reaches_past_the_sdks_public_api() -> None:
    """``claude.sdk_private`` is the one importer of the SDK's private names and the one reader
    of private attributes: every other module keeps to the SDK's public names, and reads a
    private attribute of its own objects and classes only."""
    reaching = {m: found for m in MODULES if (found := reaches_into_the_sdk(tree_of(m)))}
    assert set(reaching) == {f"{NAME}.claude.sdk_private"}, {
        m: f for m, f in reaching.items() if m != f"{NAME}.claude.sdk_private"
    }


def test_the_check_finds_what_reaches_into_the_sdk() -> None:
    found = reaches_into_the_sdk(
        ast.parse(
            "from claude_agent_sdk._internal.sessions import get_session_info\n"
            "from claude_agent_sdk._errors import MessageParseError\n"
            "import claude_agent_sdk._internal.query\n"
            "name = 'claude_agent_sdk._internal.sdk_mcp_bridge'\n"
            "query = client._query\n"
            "process = getattr(transport, '_process', None)\n"
            "self._own = self._client.connect()\n"
            "def f():\n    'claude_agent_sdk._internal in a docstring is prose'\n"
            "class Own:\n    def _handle(self) -> None: ...\n"
            "handler = Own._handle\n"
            "reader = Query._read_messages\n"
        )
    )
    assert [line.split(":")[0] for line in found] == ["1", "2", "3", "4", "5", "6", "13"]


# --- the core and the kinds of client ------------------------------------------------------------

CLIENT_KIND_NAMES = VERSION_NAMES | {"holds_turns", "detached_work", "presenter_for"}
CLIENT_KIND_PARTS = ("visibility", "capabilit")
"""Names (or, for ``CLIENT_KIND_PARTS``, parts of names, in any case) that ask what the client
is or declares: its version, its capabilities, what a presenter says it can see."""
CLIENT_KIND_KEYS = {"_meta", "terminal_output", "terminal_output_delta", "jetbrains", "asyncTasks"}
CLIENT_KIND_KEYS |= {"nativeSubagentSessions", "clientCapabilities", "protocolVersion"}
"""Keys of what a client declares in ``initialize``."""
RENDERING = {"render", "answer_fields", "permission_request"}
"""What the core may ask of its presenter: to render facts and answers, never what it is."""
POLICIES = {field.name for field in fields(Policy)}
POLICY_READS = 6
"""Where the core behaves differently by client kind: each read of a named policy, in all of
``core/``. A new one is a decision of the core's, to be named in ``core.policy`` with its reason."""


def asks_the_client_kind(name: str) -> bool:
    return name in CLIENT_KIND_NAMES or any(part in name.lower() for part in CLIENT_KIND_PARTS)


def client_kind_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Every place in ``tree`` that asks what kind of client the session serves: a name or key
    of the client's declarations or version, a question to the presenter other than to render,
    or a read of one of the core's named policies (an attribute read: ``(line, its name)``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = (
                node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
            )
            if owner == "presenter" and node.attr not in RENDERING:
                found.append((node.lineno, f"presenter.{node.attr}"))
            elif asks_the_client_kind(node.attr) or (
                node.attr in POLICIES and isinstance(node.ctx, ast.Load)
            ):
                found.append((node.lineno, node.attr))
        elif isinstance(node, (ast.Name, ast.arg)):
            name = node.id if isinstance(node, ast.Name) else node.arg
            if asks_the_client_kind(name):
                found.append((node.lineno, name))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CLIENT_KIND_KEYS
        ):
            found.append((node.lineno, repr(node.value)))
    return found


def test_the_core_decides_nothing_by_client_kind_but_through_its_named_policies() -> None:
    """The core states the same facts to every client (presenters drop or reshape them): it
    reads no capability, no version and asks its presenter nothing but to render; where a kind
    of client needs it to behave differently, a named policy says so, read at a known number of
    places."""
    core = [m for m in MODULES if m.startswith(f"{NAME}.core")]
    assert f"{NAME}.core.session" in core and f"{NAME}.core.background" in core
    policy_reads = 0
    for module in core:
        reads = client_kind_reads(tree_of(module))
        decisions = [(line, what) for line, what in reads if what not in POLICIES]
        assert not decisions, f"{module} decides by the kind of client: {decisions}"
        if module != f"{NAME}.core.policy":
            policy_reads += len(reads)
    assert policy_reads == POLICY_READS


def test_each_policy_of_the_core_is_listed_with_why_it_is_no_presenters_choice() -> None:
    listed = set(re.findall(r"^- ``(\w+)``", policy.__doc__ or "", re.MULTILINE))
    assert listed == POLICIES


def calls_of(module: str, name: str) -> list[int]:
    """The lines where ``module`` calls ``name`` (by its name or as an attribute)."""
    tree = tree_of(module)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == name
    ]


def test_one_module_builds_json_rpc_errors() -> None:
    """Handlers raise refusals, rejections and failures (the agent's, the core's, the params'
    checks); ``acp.errors`` alone gives them their codes and messages, and makes the edges' own
    errors; ``acp.jsonrpc`` alone raises the errors of a message that cannot be read."""
    builders = {"RpcError": f"{NAME}.acp.errors", "MalformedMessage": f"{NAME}.acp.jsonrpc"}
    for error, builder in builders.items():
        built = {
            module: lines for module in MODULES if module != builder and (lines := calls_of(module, error))
        }
        assert built == {}, f"{error} built outside {builder}"
    assert calls_of(f"{NAME}.acp.errors", "RpcError")
    assert calls_of(f"{NAME}.acp.jsonrpc", "MalformedMessage")


def test_the_agent_imports_the_claude_side_late_at_one_point() -> None:
    """``initialize`` answers before the Claude side is imported: the agent imports it in a
    worker thread in ``_imported`` alone (its ``from`` imports in methods find it loaded)."""
    tree = tree_of(f"{NAME}.agent")

    def imports_by_name(node: ast.AST) -> bool:
        return any(
            getattr(inner, "id", None) in LATE_IMPORTS or getattr(inner, "attr", None) in LATE_IMPORTS
            for inner in ast.walk(node)
        )

    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert [function.name for function in functions if imports_by_name(function)] == ["_imported"]
    assert sum(isinstance(n, ast.Attribute) and n.attr == "import_module" for n in ast.walk(tree)) == 1


LATE_IMPORTS = {"import_module", "__import__"}


CORE_MODULE_LIMIT = 600
SESSION_CORE_LIMIT = 500


def test_no_module_of_the_core_grows_past_its_limit() -> None:
    """Each concept of the core is a module a newcomer reads whole, and ``SessionCore`` routes
    events without owning any concept's logic (issue 30)."""
    lengths = {path.name: len(path.read_text().splitlines()) for path in (PACKAGE / "core").glob("*.py")}
    assert lengths["session.py"] < SESSION_CORE_LIMIT, f"core/session.py has {lengths['session.py']} lines"
    over = {name: length for name, length in lengths.items() if length > CORE_MODULE_LIMIT}
    assert not over, f"core modules over {CORE_MODULE_LIMIT} lines: {over}"


def test_each_event_goes_to_its_owner_in_one_call() -> None:
    """Each case of ``SessionCore._handle`` is one ``return`` of a call: the routing of an event
    to the object that owns its concern, never logic of its own."""
    tree = tree_of(f"{NAME}.core.session")
    (handle,) = [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "_handle"
    ]
    (match,) = [node for node in handle.body if isinstance(node, ast.Match)]
    for case in match.cases:
        (statement,) = case.body
        value = statement.value if isinstance(statement, ast.Return | ast.Expr) else None
        assert isinstance(value, ast.Call), f"case {ast.unparse(case.pattern)} does more than route"
    assert len(match.cases) > 30  # the check read the dispatch
