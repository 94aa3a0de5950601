"""One version number, ``__version__`` in ``src/claude_bg_acp/__init__.py``, read by every place
that states one (the command, the installed package's metadata, the ``initialize`` answer; the
registry entry is checked in ``test_acp_registry``), and ``scripts/check_release.py``, which the
release workflow runs, refusing a release that is not what it claims. ``.ci/run`` runs that
script on the packages it builds."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from claude_bg_acp import __version__
from tests.support.stdio_agent import AGENT, StdioAgent

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_release.py"


def test_the_command_states_the_version() -> None:
    shown = subprocess.run([AGENT, "--version"], capture_output=True, text=True, check=True, timeout=60)
    assert shown.stdout.strip() == f"claude-bg-acp {__version__}"


def test_the_installed_package_is_the_version() -> None:
    assert importlib.metadata.version("claude-bg-acp") == __version__


@pytest.mark.parametrize(
    ("params", "info"),
    [
        ({"protocolVersion": 1, "clientInfo": {"name": "t", "version": "1"}}, "agentInfo"),
        ({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}, "info"),
    ],
)
def test_the_initialize_answer_states_the_version(
    offline: dict[str, str], params: dict[str, object], info: str
) -> None:
    agent = StdioAgent(env=offline)
    answer = agent.call(0, "initialize", params)["result"]
    assert answer[info]["name"] == "claude-bg-acp" and answer[info]["version"] == __version__
    assert agent.close() == 0


def test_the_changelog_has_an_entry_for_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(__version__)}\b", changelog, flags=re.MULTILINE)


def check_release(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=60, check=False
    )


def fake_packages(dist: Path, version: str, license_text: bytes | None) -> None:
    """A wheel and an sdist that hold only what the check reads (building real ones takes
    ``uv build``, which ``.ci/run`` runs with this check on its packages)."""
    dist.mkdir()
    metadata = f"Metadata-Version: 2.4\nName: claude-bg-acp\nVersion: {version}\n".encode()
    top = f"claude_bg_acp-{version}"
    with zipfile.ZipFile(dist / f"{top}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{top}.dist-info/METADATA", metadata)
        if license_text is not None:
            wheel.writestr(f"{top}.dist-info/licenses/LICENSE", license_text)
    with tarfile.open(dist / f"{top}.tar.gz", "w:gz") as sdist:
        for name, data in [("PKG-INFO", metadata), ("LICENSE", license_text)]:
            if data is not None:
                member = tarfile.TarInfo(f"{top}/{name}")
                member.size = len(data)
                sdist.addfile(member, io.BytesIO(data))


def test_the_release_check_takes_packages_of_this_version_with_the_license(tmp_path: Path) -> None:
    fake_packages(tmp_path / "dist", __version__, (ROOT / "LICENSE").read_bytes())
    done = check_release("--dist", str(tmp_path / "dist"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"claude-bg-acp {__version__}:")


@pytest.mark.parametrize(
    ("version", "license_text", "refused"),
    [
        (__version__, None, "LICENSE is missing"),
        (__version__, b"MIT License\n", "LICENSE is not the one in the tree"),
        ("0.0.1", b"", "metadata says version None"),
    ],
)
def test_the_release_check_refuses_packages_that_are_not_this_release(
    tmp_path: Path, version: str, license_text: bytes | None, refused: str
) -> None:
    fake_packages(tmp_path / "dist", version, license_text)
    done = check_release("--dist", str(tmp_path / "dist"))
    assert done.returncode == 1 and refused in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (["--tag", "v9.9.9"], "the tag v9.9.9 is not v"),
        (["--repository", "https://github.com/acme/claude-bg-acp"], "is not in https://github.com/acme/"),
    ],
)
def test_the_release_check_refuses_a_tag_or_a_repository_that_is_not_this_release(
    tmp_path: Path, args: list[str], refused: str
) -> None:
    fake_packages(tmp_path / "dist", __version__, (ROOT / "LICENSE").read_bytes())
    done = check_release("--dist", str(tmp_path / "dist"), *args)
    assert done.returncode == 1 and refused in done.stderr, done.stderr


def test_the_release_check_wants_a_dated_changelog_entry_for_a_tag() -> None:
    check = _script()
    assert check.changelog_problems("## 1.2.3 - 2027-01-31\n", "1.2.3", dated=True) == []
    assert check.changelog_problems("## 1.2.3 (not released yet)\n", "1.2.3", dated=False) == []
    assert "is not dated" in check.changelog_problems("## 1.2.3 (not released yet)\n", "1.2.3", dated=True)[0]
    assert (
        "no entry for 1.2.3" in check.changelog_problems("## 1.2.30 - 2027-01-31\n", "1.2.3", dated=False)[0]
    )


def test_the_release_check_wants_every_url_in_the_repository() -> None:
    check = _script()
    here = "https://github.com/acme/claude-bg-acp"
    assert check.url_problems({"Repository": here, "Issues": f"{here}/issues"}, here) == []
    assert check.url_problems({"Issues": "https://github.com/acme/claude-bg-acp-fork/issues"}, here)


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_release", CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
