"""Validation of agent messages against the official ACP JSON schemas.

The schemas are loaded from the pinned npm package ``@agentclientprotocol/sdk`` installed under
``tests/client/node_modules`` (``schema/v{1,2}/schema.unstable.json``; the unstable files are
supersets of the stable ones). Run :func:`tests.support.acp_client.ensure_node_client` (or ``npm ci``
in ``tests/client``) first.

Validation uses JSON Schema Draft 2020-12 with the schema file's ``$defs``. Which definition a
message is checked against follows the JSON-RPC role of the message:

- agent -> client request: the ``*Request`` definition whose ``x-method`` is the method
  (for example ``RequestPermissionRequest`` for ``session/request_permission``);
- agent -> client notification: the ``*Notification`` definition (``SessionNotification`` in
  v1, ``UpdateSessionNotification`` in v2, ``CancelRequestNotification`` for
  ``$/cancel_request``);
- the agent's response to a client request: the ``*Response`` definition of the method of the
  client request with that id (``InitializeResponse``, ``PromptResponse``, ...), or the ``Error``
  definition for an error response.

Methods starting with ``_`` are extensions and accept any params. For a JetBrains AIR client
(``air=True``), the ``session/update`` kinds only AIR is sent (``tests.support.air.UPDATES``)
are checked against AIR's contract instead of the ACP schema, which does not have them; every
other message of such a transcript is checked as usual.

A v1 transcript is also checked against Toad's rules (``tests.support.toad``), which are stricter
than the schema in places (``rawOutput`` must be an object, say), for the messages of the kinds
Toad takes.

The v2 schema learns one variant the pinned package does not have yet: the ``replay_complete``
session update of the v2 Preview's Session Replay Complete RFD (``_newer_v2``). It is written
from the RFD, not copied from a schema: an update whose only other field is an optional
``_meta``. Every other message is checked against the pinned schema as it is.

Strict mode (the default) additionally rejects what the schema only tolerates for forward
compatibility: a value that matches nothing but a union's ``other`` fallback must begin with
``_`` (ACP reserves unknown non-underscore values such as ``"state": "finished"`` or an unknown
``sessionUpdate`` for future versions), and strings marked ``contentEncoding: base64`` must be
valid base64. ``strict=False`` is plain schema validation.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

from . import air as air_contract
from . import toad

SDK_VERSION = "2.4.0"
CLIENT_DIR = Path(__file__).resolve().parent.parent / "client"
SDK_PACKAGE_DIR = CLIENT_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
SCHEMA_FILE_NAME = "schema.unstable.json"

RequestId = int | str
JsonObject = dict[str, Any]

_JSONRPC_PROTOCOL_ERRORS = (-32700, -32600)


class SchemaNotInstalledError(RuntimeError):
    """The pinned npm package (and so its schema files) is not installed."""


def schema_path(version: int) -> Path:
    """The path of the unstable schema for protocol ``version`` inside the npm package."""
    if version not in (1, 2):
        raise ValueError(f"unknown ACP protocol version {version!r} (expected 1 or 2)")
    return SDK_PACKAGE_DIR / "schema" / f"v{version}" / SCHEMA_FILE_NAME


@functools.cache
def load_schema(version: int) -> JsonObject:
    """Loads ``schema.unstable.json`` for ``version`` from the installed npm package."""
    package_json = SDK_PACKAGE_DIR / "package.json"
    path = schema_path(version)
    if not package_json.is_file() or not path.is_file():
        raise SchemaNotInstalledError(
            f"{path} is missing: run `npm ci` in {CLIENT_DIR} "
            "(tests.support.acp_client.ensure_node_client() does it)"
        )
    installed = json.loads(package_json.read_text(encoding="utf-8")).get("version")
    if installed != SDK_VERSION:
        raise SchemaNotInstalledError(
            f"{SDK_PACKAGE_DIR} is version {installed}, expected {SDK_VERSION}: run `npm ci` in {CLIENT_DIR}"
        )
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict) or not isinstance(loaded.get("$defs"), dict):
        raise SchemaNotInstalledError(f"{path} has no $defs")
    return loaded


# -- newer than the pinned schema ---------------------------------------------------------------------

REPLAY_COMPLETE = "replay_complete"


def _newer_v2(defs: JsonObject) -> JsonObject:
    """``defs`` with the v2 session update ``replay_complete`` (RFD "Session Replay Complete",
    ACP v2 Preview, 2026-11: sent once per session after the last replayed update of a
    ``session/resume`` with ``replayFrom``; its struct ``ReplayComplete`` has only ``_meta``),
    which ``@agentclientprotocol/sdk`` 2.4.0 predates. Written from the RFD's text."""
    newer: JsonObject = copy.deepcopy(defs)
    newer["ReplayComplete"] = {
        "description": "The end of a requested replay on this session (v2 Preview RFD).",
        "type": "object",
        "properties": {"_meta": {"type": ["object", "null"], "additionalProperties": True}},
    }
    tag = {"sessionUpdate": {"type": "string", "const": REPLAY_COMPLETE}}
    branch = {
        "description": "Everything before this update on the session was replayed history.",
        "type": "object",
        "properties": tag,
        "required": ["sessionUpdate"],
        "allOf": [{"$ref": "#/$defs/ReplayComplete"}],
    }
    variants: list[Any] = newer["SessionUpdate"]["anyOf"]
    other = next(v for v in variants if v.get("title") == "other")
    other["not"]["anyOf"].append({"type": "object", "properties": tag, "required": ["sessionUpdate"]})
    variants.insert(variants.index(other), branch)
    return newer


# -- strict mode ----------------------------------------------------------------------------------


def _strict_defs(defs: JsonObject) -> JsonObject:
    """Returns a copy of ``defs`` whose ``other`` fallbacks only accept ``_``-prefixed values."""
    strict: JsonObject = copy.deepcopy(defs)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("title") == "other":
                if node.get("type") == "string":
                    node["pattern"] = "^_"
                properties = node.get("properties")
                if node.get("type") == "object" and isinstance(properties, dict):
                    for prop in properties.values():
                        if isinstance(prop, dict) and prop.get("type") == "string":
                            prop["pattern"] = "^_"
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(strict)
    return strict


def _content_encoding(
    validator: Any, encoding: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if encoding != "base64" or not isinstance(instance, str):
        return
    try:
        base64.b64decode(instance, validate=True)
    except (binascii.Error, ValueError):
        shown = instance if len(instance) <= 40 else instance[:40] + "..."
        yield ValidationError(f"{shown!r} is not valid base64")


_StrictValidator: Any = validators.extend(Draft202012Validator, {"contentEncoding": _content_encoding})


# -- method tables --------------------------------------------------------------------------------


class AcpSchema:
    """Definitions and method tables of one schema file (one protocol version)."""

    def __init__(self, version: int, *, strict: bool = True) -> None:
        self.version = version
        self.strict = strict
        document = load_schema(version)
        defs: JsonObject = _newer_v2(document["$defs"]) if version == 2 else document["$defs"]
        self.defs: JsonObject = _strict_defs(defs) if strict else defs
        self.dialect: str = document.get("$schema", "https://json-schema.org/draft/2020-12/schema")
        # Messages the agent handles (client -> agent): method -> response def.
        self.agent_responses: dict[str, str] = {}
        # Messages the client handles (agent -> client).
        self.client_requests: dict[str, str] = {}
        self.client_notifications: dict[str, str] = {}
        for name, definition in defs.items():
            if not isinstance(definition, dict) or "x-method" not in definition:
                continue
            method, side = definition["x-method"], definition.get("x-side")
            if side == "agent" and name.endswith("Response"):
                self.agent_responses[method] = name
            elif side in ("client", "protocol") and name.endswith("Request"):
                self.client_requests[method] = name
            elif side in ("client", "protocol") and name.endswith("Notification"):
                self.client_notifications[method] = name
        self._validators: dict[str, Any] = {}

    def validator(self, def_name: str) -> Any:
        found = self._validators.get(def_name)
        if found is None:
            if def_name not in self.defs:
                raise KeyError(f"no definition {def_name!r} in the v{self.version} schema")
            schema = {"$schema": self.dialect, "$defs": self.defs, "$ref": f"#/$defs/{def_name}"}
            validator_class: Any = _StrictValidator if self.strict else Draft202012Validator
            found = validator_class(schema)
            self._validators[def_name] = found
        return found

    def check(self, def_name: str, instance: Any, where: str) -> list[str]:
        """Validates ``instance`` against ``$defs[def_name]``; messages are prefixed with
        ``where`` (the JSON path of ``instance`` inside its message, e.g. ``$.params``)."""
        errors = sorted(self.validator(def_name).iter_errors(instance), key=lambda e: e.json_path)
        messages: list[str] = []
        for error in errors:
            for explained in _explain(error):
                messages.append(f"{def_name}: {_relocate(explained, where)}")
        return messages


@functools.cache
def acp_schema(version: int, strict: bool = True) -> AcpSchema:
    return AcpSchema(version, strict=strict)


# -- readable errors ------------------------------------------------------------------------------

_DISCRIMINATOR_KEYWORDS = frozenset({"const", "enum", "type", "pattern", "not", "required"})


def _is_discriminator_miss(error: ValidationError) -> bool:
    """True for an error inside a union branch that says "this is not that variant" (the
    branch's own tag check failed), as opposed to an error in the variant's content."""
    path = list(error.relative_schema_path)[1:]  # drop the branch index
    if len(path) == 1:
        return path[0] in _DISCRIMINATOR_KEYWORDS
    return len(path) == 3 and path[0] == "properties" and path[2] in _DISCRIMINATOR_KEYWORDS


def _known_tags(branches: Sequence[Any]) -> list[str]:
    """The tag values of a tagged union's variants; empty if some variant has no tag (other
    than the ``other``/``none`` fallbacks), since listing tags would then be misleading."""
    tags: list[str] = []
    for branch in branches:
        if not isinstance(branch, dict):
            return []
        found = [branch["const"]] if "const" in branch else []
        for prop in (branch.get("properties") or {}).values():
            if isinstance(prop, dict) and "const" in prop:
                found.append(prop["const"])
        if not found and branch.get("title") not in ("other", "none"):
            return []
        tags.extend(json.dumps(tag) for tag in found)
    return tags


def _common_tag_key(error: ValidationError) -> str | None:
    """The property that every branch of a failed union uses as its tag, if there is one."""
    keys: set[str] = set()
    for branch in error.validator_value:
        if not isinstance(branch, dict):
            return None
        properties = branch.get("properties")
        if isinstance(properties, dict) and len(properties) == 1:
            keys.update(properties)
        elif branch.get("title") != "none":
            return None
    return keys.pop() if len(keys) == 1 else None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _explain(error: ValidationError) -> list[str]:
    """Human-readable messages for one error, descending into the union branch that the
    instance's tag selects instead of jsonschema's "not valid under any of the given schemas"."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        by_branch: dict[int, list[ValidationError]] = {}
        for sub in error.context:
            index = sub.relative_schema_path[0]
            if isinstance(index, int):
                by_branch.setdefault(index, []).append(sub)
        branch_count = len(error.validator_value)
        candidates = [
            index
            for index in range(branch_count)
            if not any(_is_discriminator_miss(sub) for sub in by_branch.get(index, []))
        ]
        if candidates and all(by_branch.get(index) for index in candidates):
            best = min(candidates, key=lambda index: len(by_branch[index]))
            explained: list[str] = []
            for sub in by_branch[best]:
                explained.extend(_explain(sub))
            return explained
        if not candidates:
            tags = _known_tags(error.validator_value)
            extensible = any(
                isinstance(branch, dict) and branch.get("title") == "other"
                for branch in error.validator_value
            )
            note = "; extensions must start with '_'" if extensible else ""
            known = f" (known: {', '.join(tags)}{note})" if tags else ""
            key = _common_tag_key(error)
            if key is not None and isinstance(error.instance, dict):
                value = error.instance.get(key)
                shown = "missing" if key not in error.instance else _short(value)
                return [f"{error.json_path}.{key}: {shown} is not a known variant{known}"]
            types = sorted(
                {
                    str(sub.validator_value)
                    for sub in error.context
                    if sub.validator == "type" and not sub.relative_path
                }
            )
            expected = f" (expected type: {' or '.join(types)})" if types and not tags else ""
            return [f"{error.json_path}: {_short(error.instance)} matches no variant{known}{expected}"]
    return [f"{error.json_path}: {error.message}"]


def _relocate(message: str, where: str) -> str:
    """Rewrites a message's leading ``$`` path so that it is relative to the whole message."""
    if message.startswith("$"):
        return where + message[1:]
    return message


# -- public API -------------------------------------------------------------------------------------


def _is_request_id(value: Any) -> bool:
    # 1.0 and 1e3 are integers to JSON Schema (and so to the schema's "integer" id).
    integral = isinstance(value, float) and value.is_integer()
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str) or integral


def validate_agent_message(
    msg: Any,
    version: int,
    pending_client_requests: Mapping[Any, str],
    *,
    strict: bool = True,
    air: bool = False,
) -> list[str]:
    """Validates one message the agent wrote. Returns human-readable violations (empty = valid).

    ``pending_client_requests`` maps the ids of client requests the agent may answer to their
    methods; it picks the response definition for a response. ``air``: the client is JetBrains
    AIR (see the module docstring).
    """
    schema = acp_schema(version, strict)
    if not isinstance(msg, dict):
        return [f"not a JSON object: {_short(msg)}"]
    problems: list[str] = []
    if msg.get("jsonrpc") != "2.0":
        problems.append(f'"jsonrpc" must be "2.0", got {_short(msg.get("jsonrpc"))}')
    method = msg.get("method")
    if method is not None:
        if not isinstance(method, str):
            return [*problems, f'"method" must be a string, got {_short(method)}']
        params = msg.get("params", {})
        if "id" in msg:
            if not _is_request_id(msg["id"]):
                problems.append(f"request id must be an integer or a string, got {_short(msg['id'])}")
            if method.startswith("_"):
                return problems
            def_name = schema.client_requests.get(method)
            if def_name is None:
                return [*problems, f"request {method!r} is not an agent->client method in v{version}"]
            return [*problems, *schema.check(def_name, params, "$.params")]
        if method.startswith("_"):
            return problems
        if air and method == "session/update" and air_contract.is_air_update(params):
            return [*problems, *air_contract.check(params)]
        def_name = schema.client_notifications.get(method)
        if def_name is None:
            return [
                *problems,
                f"notification {method!r} is not an agent->client notification in v{version}",
            ]
        return [*problems, *schema.check(def_name, params, "$.params")]

    if "id" not in msg:
        return [*problems, f"neither a request, a notification nor a response: {_short(msg)}"]
    request_id = msg["id"]
    has_result, has_error = "result" in msg, "error" in msg
    if has_result == has_error:
        return [*problems, f"a response needs exactly one of result/error: {_short(msg)}"]
    if has_error:
        error = msg["error"]
        problems.extend(schema.check("Error", error, "$.error"))
        code = error.get("code") if isinstance(error, dict) else None
        if request_id is None:
            if code not in _JSONRPC_PROTOCOL_ERRORS:
                problems.append(f"an error response with id null must be -32700/-32600, got {code}")
            return problems
        # A malformed request (no method, say) is not pending, yet its id is answered -32600.
        if request_id not in pending_client_requests and code not in _JSONRPC_PROTOCOL_ERRORS:
            problems.append(f"error response to id {_short(request_id)}, which no pending client request has")
        return problems
    if request_id not in pending_client_requests:
        return [
            *problems,
            f"response to id {_short(request_id)}, which no pending client request has "
            "(never sent, or already answered)",
        ]
    client_method = pending_client_requests[request_id]
    if client_method.startswith("_"):
        return problems
    def_name = schema.agent_responses.get(client_method)
    if def_name is None:
        return [*problems, f"no response definition for client method {client_method!r} in v{version}"]
    return [*problems, *schema.check(def_name, msg["result"], "$.result")]


def client_requests_by_id(client_lines: Sequence[Any]) -> dict[RequestId, str]:
    """Ids of the requests in ``client_lines`` mapped to their methods."""
    found: dict[RequestId, str] = {}
    for line in client_lines:
        if isinstance(line, dict) and isinstance(line.get("method"), str) and "id" in line:
            request_id = line["id"]
            if _is_request_id(request_id):
                found[request_id] = line["method"]
    return found


def negotiated_version(agent_lines: Sequence[Any], client_lines: Sequence[Any]) -> int | None:
    """The ``protocolVersion`` of the agent's successful answer to ``initialize``, if any."""
    initialize_ids = {
        request_id
        for request_id, method in client_requests_by_id(client_lines).items()
        if method == "initialize"
    }
    version: int | None = None
    for line in agent_lines:
        if isinstance(line, dict) and line.get("id") in initialize_ids and "method" not in line:
            result = line.get("result")
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), int):
                version = result["protocolVersion"]
    return version


def validate_transcript(
    agent_lines: Sequence[Any],
    client_lines: Sequence[Any],
    version: int,
    *,
    strict: bool = True,
    air: bool = False,
) -> list[str]:
    """Validates every message the agent wrote. Returns violations, each naming the agent line
    (0-based index into ``agent_lines``) and its method; an empty list means valid.

    Responses are matched to client requests by id; a second response to the same id is a
    violation.
    """
    pending = client_requests_by_id(client_lines)
    violations: list[str] = []
    for index, msg in enumerate(agent_lines):
        found = validate_agent_message(msg, version, pending, strict=strict, air=air)
        if isinstance(msg, dict) and "method" not in msg and "id" in msg:
            label = f"response to {pending.get(msg['id'], '?')} (id {_short(msg['id'])})"
            pending.pop(msg["id"], None)
        elif isinstance(msg, dict):
            label = str(msg.get("method"))
        else:
            label = "?"
        violations.extend(f"agent line {index} [{label}]: {problem}" for problem in found)
    if version == 1:
        violations.extend(toad.check_transcript(agent_lines))
    return violations
