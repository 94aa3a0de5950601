"""The Agent SDK's private surface: the one module that reaches past the SDK's public API.

The agent needs some of the SDK's insides that its API does not offer: the raw frames of the
client's stream and a control request the client has no method for (the runner parses frames
itself, see ``runner``), the subprocess transport and where its CLI is (the agent wraps the
transport, see ``transport``), the readers of stored transcripts (``store`` and ``listing`` read
what the SDK's readers leave out, and only the part of a listing's page), and the parser and
error of its messages. Some of those are public names at a private path: the package exports
them, but its ``__init__`` imports ``mcp`` (see ``sdk_import``), so they are taken from the
modules that define them.

Each of them is here, and only here, with the SDK version it was checked on: a name of an SDK
module in ``PRIVATE``, a private attribute in a function marked ``@checked``. Every other module
of the agent keeps to the SDK's public names (``tests/core/test_architecture.py``), and every name
here is held to the installed SDK (``tests/edges/test_sdk_private.py``): an SDK upgrade is reviewed in
this file, each name checked again and marked so.

A name of ``PRIVATE`` is imported from its SDK module the first time it is asked for (PEP 562)
and is a plain attribute of this module then: the session listing needs the SDK's transcript
readers alone, a new session its client and message parser, and importing this module imports
nothing of the SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    # What the names of ``PRIVATE`` are, for the type checker (the test holds the two alike).
    import claude_agent_sdk._errors as errors
    from anyio.abc import Process
    from claude_agent_sdk._internal import message_parser, session_mutations, sessions, transport
    from claude_agent_sdk.client import ClaudeSDKClient
    from claude_agent_sdk.types import ClaudeAgentOptions

    parse_message = message_parser.parse_message
    MessageParseError = errors.MessageParseError
    Transport = transport.Transport
    get_session_info = sessions.get_session_info
    fork_session = session_mutations.fork_session
    delete_session = session_mutations.delete_session
    validate_uuid = sessions._validate_uuid
    resolve_session_file = sessions._resolve_session_file_path
    TRANSCRIPT_ENTRY_TYPES = sessions._TRANSCRIPT_ENTRY_TYPES
    build_conversation_chain = sessions._build_conversation_chain
    is_visible_message = sessions._is_visible_message
    resolve_subagents_dir = sessions._resolve_subagents_dir
    collect_agent_files = sessions._collect_agent_files
    read_agent_metadata_sidecar = sessions._read_agent_metadata_sidecar
    parent_ids_from_agent_metadata = sessions._parent_ids_from_agent_metadata
    build_subagent_chain = sessions._build_subagent_chain
    LITE_READ_BUF_SIZE = sessions.LITE_READ_BUF_SIZE
    get_projects_dir = sessions._get_projects_dir
    canonicalize_path = sessions._canonicalize_path
    find_project_dir = sessions._find_project_dir
    extract_json_string_field = sessions._extract_json_string_field
    extract_last_json_string_field = sessions._extract_last_json_string_field
    extract_first_prompt_from_head = sessions._extract_first_prompt_from_head


@dataclass(frozen=True)
class Private:
    """A name that is not the SDK's public API: where it is, and the SDK version it was checked on."""

    module: str
    name: str
    checked_on: str


SESSIONS = "claude_agent_sdk._internal.sessions"
MUTATIONS = "claude_agent_sdk._internal.session_mutations"

PRIVATE = {
    # A frame's parser, and what it raises on a frame it cannot parse (the runner skips those).
    "parse_message": Private("claude_agent_sdk._internal.message_parser", "parse_message", "0.2.189"),
    "MessageParseError": Private("claude_agent_sdk._errors", "MessageParseError", "0.2.189"),
    # The transport's base class (public as ``claude_agent_sdk.Transport``).
    "Transport": Private("claude_agent_sdk._internal.transport", "Transport", "0.2.189"),
    # Stored conversations (public as ``claude_agent_sdk.get_session_info`` and so on).
    "get_session_info": Private(SESSIONS, "get_session_info", "0.2.189"),
    "fork_session": Private(MUTATIONS, "fork_session", "0.2.189"),
    "delete_session": Private(MUTATIONS, "delete_session", "0.2.189"),
    # How the SDK's readers find, decode and chain a transcript, with every field kept.
    "validate_uuid": Private(SESSIONS, "_validate_uuid", "0.2.189"),
    "resolve_session_file": Private(SESSIONS, "_resolve_session_file_path", "0.2.189"),
    "TRANSCRIPT_ENTRY_TYPES": Private(SESSIONS, "_TRANSCRIPT_ENTRY_TYPES", "0.2.189"),
    "build_conversation_chain": Private(SESSIONS, "_build_conversation_chain", "0.2.189"),
    "is_visible_message": Private(SESSIONS, "_is_visible_message", "0.2.189"),
    "resolve_subagents_dir": Private(SESSIONS, "_resolve_subagents_dir", "0.2.189"),
    "collect_agent_files": Private(SESSIONS, "_collect_agent_files", "0.2.189"),
    "read_agent_metadata_sidecar": Private(SESSIONS, "_read_agent_metadata_sidecar", "0.2.189"),
    "parent_ids_from_agent_metadata": Private(SESSIONS, "_parent_ids_from_agent_metadata", "0.2.189"),
    "build_subagent_chain": Private(SESSIONS, "_build_subagent_chain", "0.2.189"),
    # How the SDK's listing reads a transcript's head and tail.
    "LITE_READ_BUF_SIZE": Private(SESSIONS, "LITE_READ_BUF_SIZE", "0.2.189"),
    "get_projects_dir": Private(SESSIONS, "_get_projects_dir", "0.2.189"),
    "canonicalize_path": Private(SESSIONS, "_canonicalize_path", "0.2.189"),
    "find_project_dir": Private(SESSIONS, "_find_project_dir", "0.2.189"),
    "extract_json_string_field": Private(SESSIONS, "_extract_json_string_field", "0.2.189"),
    "extract_last_json_string_field": Private(SESSIONS, "_extract_last_json_string_field", "0.2.189"),
    "extract_first_prompt_from_head": Private(SESSIONS, "_extract_first_prompt_from_head", "0.2.189"),
}
"""This module's name for each, and where it is in the SDK."""

MCP_BRIDGE = Private("claude_agent_sdk._internal.sdk_mcp_bridge", "SdkMcpBridge", "0.2.189")
"""Builds in-process MCP servers, and imports ``mcp`` to do it (``sdk_import`` defers it)."""


F = TypeVar("F", bound=Callable[..., Any])

CHECKED: dict[str, str] = {}
"""The functions below, which reach into private attributes, and the SDK version each was checked on."""


def checked(sdk_version: str) -> Callable[[F], F]:
    def mark(function: F) -> F:
        CHECKED[function.__name__] = sdk_version
        return function

    return mark


if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        private = PRIVATE.get(name)
        if private is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(private.module), private.name)
        globals()[name] = value
        return value


@checked("0.2.189")
def raw_frames(client: ClaudeSDKClient) -> AsyncIterator[dict[str, Any]]:
    """The frames of a connected client's stream, unparsed: what ``receive_messages`` parses
    (``client._query``'s own ``receive_messages``)."""
    query = client._query
    if query is None:
        raise RuntimeError("not connected")
    frames: AsyncIterator[dict[str, Any]] = query.receive_messages()
    return frames


@checked("0.2.189")
async def control_request(client: ClaudeSDKClient, request: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's answer to a control request the client has no method for
    (``Query._send_control_request``)."""
    query = client._query
    if query is None:
        raise RuntimeError("not connected")
    answer: dict[str, Any] = await query._send_control_request(request)
    return answer


@checked("0.2.189")
def subprocess_transport(options: ClaudeAgentOptions, cli: str) -> Transport:
    """The SDK's subprocess transport for ``options``, running ``cli`` (its ``_cli_path``)."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    inner = SubprocessCLITransport(prompt=_no_prompt(), options=options)
    inner._cli_path = cli
    return inner


@checked("0.2.189")
def bundled_cli() -> str:
    """The Claude Code executable the SDK would run: its bundled CLI, else one on ``PATH``
    (``SubprocessCLITransport._find_cli``)."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk.types import ClaudeAgentOptions

    finder = SubprocessCLITransport(prompt=_no_prompt(), options=ClaudeAgentOptions())
    found: str = finder._find_cli()
    return found


@checked("0.2.189")
def process_of(transport: Transport) -> Process | None:
    """The CLI's process while a subprocess transport is connected (its ``_process``)."""
    process: Process | None = getattr(transport, "_process", None)
    return process


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    # An input stream that never yields keeps the CLI's stdin open for later queries.
    return
    yield
