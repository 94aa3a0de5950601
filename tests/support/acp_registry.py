"""The ACP Registry's admission rules (``agentclientprotocol/registry``), written down here so
that ``acp-registry/`` is checked offline, on every run: the registry's own CI downloads the
package from PyPI and so cannot run before a release.

The rules are checked in Python, not with a schema file. They are the facts stated by these
files of the registry, at these commits: ``agent.schema.json`` (172d5034),
``.github/workflows/build_registry.py`` and ``verify_agents.py`` (1925d94a),
``.github/workflows/client.py`` (604caf4f), ``CONTRIBUTING.md`` (78927130) and
``AUTHENTICATION.md``. Where the registry states a rule in prose and its CI checks it more
loosely (an URI's form), the stricter reading is taken.

- An entry: an object with ``id``, ``name``, ``version``, ``description`` and ``distribution``;
  ``id`` lowercase letters, digits and hyphens, starting with a letter, and the name of its
  directory; ``version`` starts with three numeric parts; ``repository``, ``website`` and
  ``license_url`` are URIs; ``authors`` a list of strings; ``icon`` is set by the registry's
  build, never by the entry. Other top-level fields are allowed.
- ``distribution``: at least one of ``binary``, ``npx``, ``uvx`` and nothing else. A package
  distribution has a non-empty ``package`` and optionally ``args`` (strings) and ``env``
  (string to string), nothing else; a version in ``package`` (``==``, ``@``) is the entry's
  version, never ``latest``.
- ``icon.svg`` (required): an ``<svg>`` root of 16 by 16 (``width``/``height``, else
  ``viewBox``), no comments, every ``fill`` and ``stroke`` (attributes, inline styles, style
  sheets) ``currentColor``, ``none`` or ``inherit``, and ``currentColor`` used at least once.
- Authentication: the registry starts the agent with a scratch ``HOME``, sends one v1
  ``initialize`` (``REGISTRY_INITIALIZE``) and reads the first line of stdout, which must be its
  answer. The answer's ``authMethods`` must hold a method whose type is ``agent`` or
  ``terminal``: its ``type``, else ``terminal`` when its ``_meta`` has ``terminal-auth``,
  ``agent`` when it has ``agent-auth``, else ``agent``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from typing import Any

REGISTRY_INITIALIZE: dict[str, Any] = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": {"readTextFile": True, "writeTextFile": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
"""The ``initialize`` params of the registry's authentication check: no ``auth.terminal``, only
the earlier ``_meta`` form of terminal auth."""

REQUIRED = ("id", "name", "version", "description", "distribution")
URI_FIELDS = ("repository", "website", "license_url")
DISTRIBUTIONS = ("binary", "npx", "uvx")
PACKAGE_FIELDS = {"package", "args", "env"}
PLATFORMS = {
    f"{system}-{machine}" for system in ("darwin", "linux", "windows") for machine in ("aarch64", "x86_64")
}
ICON_SIZE = 16
PAINTS = {"currentcolor", "none", "inherit"}
AUTH_TYPES = {"agent", "terminal"}


def entry_errors(entry: Any, directory: str) -> list[str]:
    """What the registry would refuse in ``entry``, submitted as ``<directory>/agent.json``."""
    if not isinstance(entry, dict):
        return ["the entry is not an object"]
    errors = [f"{name}: missing" for name in REQUIRED if name not in entry]
    for name in ("id", "name", "version", "description", "license"):
        if name in entry and not (isinstance(entry[name], str) and entry[name]):
            errors.append(f"{name}: not a non-empty string")
    if isinstance(entry.get("id"), str):
        if not re.fullmatch(r"[a-z][a-z0-9-]*", entry["id"]):
            errors.append(f"id: {entry['id']!r} is not lowercase letters, digits and hyphens from a letter")
        elif entry["id"] != directory:
            errors.append(f"id: {entry['id']!r} is not its directory's name {directory!r}")
    version = entry.get("version")
    if isinstance(version, str) and not re.match(r"\d+\.\d+\.\d+", version):
        errors.append(f"version: {version!r} is not a semantic version")
    for name in URI_FIELDS:
        if name in entry and not (
            isinstance(entry[name], str) and re.match(r"[a-z][a-z0-9+.-]*://\S+$", entry[name])
        ):
            errors.append(f"{name}: not an absolute URI")
    authors = entry.get("authors", [])
    if not (isinstance(authors, list) and all(isinstance(author, str) for author in authors)):
        errors.append("authors: not a list of strings")
    if "icon" in entry:
        errors.append("icon: set by the registry's build from icon.svg, not by the entry")
    if "distribution" in entry:
        errors += distribution_errors(entry["distribution"], version if isinstance(version, str) else "")
    return errors


def distribution_errors(distribution: Any, version: str) -> list[str]:
    if not isinstance(distribution, dict) or not distribution:
        return ["distribution: not a non-empty object"]
    errors = [f"distribution.{kind}: unknown kind" for kind in distribution if kind not in DISTRIBUTIONS]
    for kind in ("npx", "uvx"):
        if kind in distribution:
            errors += [
                f"distribution.{kind}.{error}" for error in package_errors(distribution[kind], version)
            ]
    binary = distribution.get("binary")
    if binary is not None and not (
        isinstance(binary, dict)
        and binary
        and all(
            platform in PLATFORMS and isinstance(target, dict) and {"archive", "cmd"} <= target.keys()
            for platform, target in binary.items()
        )
    ):
        errors.append("distribution.binary: not platforms, each with archive and cmd")
    return errors


def package_errors(package: Any, version: str) -> list[str]:
    if not isinstance(package, dict):
        return ["not an object"]
    errors = [
        f"{name}: not a field of a package distribution" for name in package if name not in PACKAGE_FIELDS
    ]
    spec = package.get("package")
    if not (isinstance(spec, str) and spec):
        return [*errors, "package: not a non-empty string"]
    if "@latest" in spec.lower():
        errors.append(f"package: {spec!r} names latest, not a version")
    pinned = re.search(r"[=@]+([\d.]+)", spec)
    if pinned and pinned.group(1) != version:
        errors.append(f"package: {spec!r} is not the entry's version {version!r}")
    args = package.get("args", [])
    if not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
        errors.append("args: not a list of strings")
    env = package.get("env", {})
    if not (isinstance(env, dict) and all(isinstance(value, str) for value in env.values())):
        errors.append("env: not an object of strings")
    return errors


def icon_errors(svg: str) -> list[str]:
    """What the registry would refuse in an ``icon.svg`` with this text."""
    if "<!--" in svg:
        return ["the icon has a comment"]
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError as error:
        return [f"the icon is not XML: {error}"]
    if _local(root.tag) != "svg":
        return [f"the icon's root is <{_local(root.tag)}>, not <svg>"]
    errors = []
    size = _size(root)
    if size != (ICON_SIZE, ICON_SIZE):
        errors.append(f"the icon is {size}, not {ICON_SIZE}x{ICON_SIZE}")
    paints = [paint.strip().lower() for element in root.iter() for paint in _paints(element)]
    errors += [f"the icon paints with {paint!r}" for paint in paints if paint not in PAINTS]
    if "currentcolor" not in paints:
        errors.append("the icon never uses currentColor")
    return errors


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _size(root: ElementTree.Element) -> tuple[float, float] | None:
    def number(text: str | None) -> float | None:
        try:
            return float(re.sub(r"[a-z%]+$", "", (text or "").strip(), flags=re.IGNORECASE))
        except ValueError:
            return None

    width, height = number(root.get("width")), number(root.get("height"))
    if width is not None and height is not None:
        return width, height
    box = (root.get("viewBox") or "").split()
    return (number(box[2]) or 0, number(box[3]) or 0) if len(box) == 4 else None


def _paints(element: ElementTree.Element) -> list[str]:
    """The fill and stroke values an element sets: attributes, inline style, or a style sheet."""
    found = [value for name in ("fill", "stroke") if (value := element.get(name)) is not None]
    for declaration in (element.get("style") or "").split(";"):
        name, _, value = declaration.partition(":")
        if name.strip().lower() in ("fill", "stroke"):
            found.append(value)
    if _local(element.tag) == "style" and element.text:
        found += re.findall(r"\b(?:fill|stroke)\s*:\s*([^;}\s]+)", element.text, re.IGNORECASE)
    return found


def auth_errors(answer: Any) -> list[str]:
    """What the registry's authentication check would refuse in an ``initialize`` answer."""
    if not isinstance(answer, dict) or "result" not in answer:
        return [f"not an initialize result: {answer!r}"]
    methods = answer["result"].get("authMethods") or []
    if not methods:
        return ["no authMethods"]
    kinds = [auth_type(method) for method in methods]
    return [] if AUTH_TYPES & set(kinds) else [f"no agent or terminal method among {kinds}"]


def auth_type(method: dict[str, Any]) -> str:
    """A method's type as the registry reads it."""
    if method.get("type"):
        return str(method["type"])
    meta = method.get("_meta")
    if isinstance(meta, dict) and "terminal-auth" in meta:
        return "terminal"
    return "agent"
