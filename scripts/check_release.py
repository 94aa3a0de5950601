"""Checks what a release is made of: the packages built, and the tree they were built from.

    python scripts/check_release.py --dist DIR [--tag vX.Y.Z] [--repository URL]

- Every sdist and wheel in DIR is this version (``__version__`` in
  ``src/claude_bg_acp/__init__.py``, the one place it is written) and carries LICENSE as it is in
  the tree.
- ``acp-registry/agent.json`` names this version, and has ``uvx`` install exactly it.
- ``CHANGELOG.md`` has an entry for it; with ``--tag``, a dated one (``## X.Y.Z - YYYY-MM-DD``).
- With ``--tag`` (the release workflow's tag): the tag is ``v`` and the version.
- With ``--repository`` (where the release workflow runs): the project's URLs and the manifest's
  ``repository`` are that repository's, so the address left open in the tree (``OWNER``) never
  reaches PyPI or the registry.

``.ci/run`` runs it on the packages it builds; the release workflow with the tag and the
repository as well. It prints every problem and exits 1 if there is one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE = (ROOT / "LICENSE").read_bytes()


def version() -> str:
    source = (ROOT / "src" / "claude_bg_acp" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', source, flags=re.MULTILINE)
    if found is None:
        raise SystemExit("src/claude_bg_acp/__init__.py sets no __version__")
    return found.group(1)


def package_problems(path: Path, expected: str) -> list[str]:
    """The version a package's metadata states, and its copy of LICENSE."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            names = set(wheel.namelist())
            info = f"claude_bg_acp-{expected}.dist-info"
            metadata = wheel.read(f"{info}/METADATA") if f"{info}/METADATA" in names else b""
            license_text = (
                wheel.read(f"{info}/licenses/LICENSE") if f"{info}/licenses/LICENSE" in names else None
            )
    else:
        with tarfile.open(path) as sdist:
            top = f"claude_bg_acp-{expected}"
            names = set(sdist.getnames())
            metadata = _member(sdist, f"{top}/PKG-INFO") if f"{top}/PKG-INFO" in names else b""
            license_text = _member(sdist, f"{top}/LICENSE") if f"{top}/LICENSE" in names else None
    problems = []
    stated = HeaderParser().parsestr(metadata.decode("utf-8")).get("Version")
    if stated != expected:
        problems.append(f"{path.name}: its metadata says version {stated}, not {expected}")
    if license_text != LICENSE:
        problems.append(f"{path.name}: LICENSE is {'not the one in the tree' if license_text else 'missing'}")
    return problems


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    extracted = archive.extractfile(name)
    return extracted.read() if extracted is not None else b""


def tree_problems(expected: str, tag: str | None, repository: str | None) -> list[str]:
    entry = json.loads((ROOT / "acp-registry" / "agent.json").read_text(encoding="utf-8"))
    problems = entry_problems(entry, expected)
    problems += changelog_problems(
        (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), expected, tag is not None
    )
    if tag is not None and tag != f"v{expected}":
        problems.append(f"the tag {tag} is not v{expected}")
    if repository is not None:
        urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
        problems += url_problems(
            {**urls, "acp-registry/agent.json repository": entry.get("repository")}, repository
        )
    return problems


def entry_problems(entry: dict[str, object], expected: str) -> list[str]:
    problems = []
    if entry.get("version") != expected:
        problems.append(f"acp-registry/agent.json: version {entry.get('version')}, not {expected}")
    if entry.get("distribution") != {"uvx": {"package": f"claude-bg-acp=={expected}"}}:
        problems.append(f"acp-registry/agent.json: distribution is not uvx of claude-bg-acp=={expected}")
    return problems


def changelog_problems(changelog: str, expected: str, dated: bool) -> list[str]:
    heading = re.search(rf"^## {re.escape(expected)}\b(.*)$", changelog, flags=re.MULTILINE)
    if heading is None:
        return [f"CHANGELOG.md: no entry for {expected}"]
    if dated and not re.fullmatch(r" - \d{4}-\d{2}-\d{2}", heading.group(1)):
        return [f"CHANGELOG.md: the entry for {expected} is not dated (## {expected} - YYYY-MM-DD)"]
    return []


def url_problems(urls: dict[str, object], repository: str) -> list[str]:
    inside = repository.rstrip("/") + "/"
    return [
        f"{name}: {url} is not in {repository}"
        for name, url in urls.items()
        if not (url == repository or str(url).startswith(inside))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, required=True, help="the directory of the built packages")
    parser.add_argument("--tag", help="the release's tag (vX.Y.Z)")
    parser.add_argument("--repository", help="the repository's URL, such as https://github.com/owner/name")
    args = parser.parse_args()
    expected = version()
    packages = sorted([*args.dist.glob("*.whl"), *args.dist.glob("*.tar.gz")])
    problems = (
        [] if len(packages) == 2 else [f"{args.dist}: {len(packages)} packages, not an sdist and a wheel"]
    )
    for package in packages:
        problems += package_problems(package, expected)
    problems += tree_problems(expected, args.tag, args.repository)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"claude-bg-acp {expected}: {', '.join(package.name for package in packages)}")


if __name__ == "__main__":
    main()
