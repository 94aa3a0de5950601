"""The README and the docs under ``docs/`` against the rest of the tree: the README opens with
the two commands a newcomer runs, CI runs the second of them, every figure they quote is
BENCHMARKS.md's (each figure lives there alone), and every relative link among them leads to a
file and, where it names one, a heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = {path: path.read_text(encoding="utf-8") for path in PAGES}
"""The README and the docs it links to, by path."""
BENCHMARKS = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

NUMBER = r"\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?"
FIGURE = re.compile(rf"(?<![\w.])({NUMBER}(?: / {NUMBER})*)\s?(ms|s|MB/s|MiB|KiB|GiB|MB|%|x)(?![\w/])")
"""Numbers with a unit of time, size, rate or ratio: ``4.1 / 4.4 ms`` is two figures, a range
such as ``86-125 MB/s`` one."""
NOT_MEASURED = {
    "180 MB": "the download of the SDK's wheel, which carries Claude Code",
    "16 MiB": "the largest file the store reads, a limit the agent sets",
}
"""Figures of the README and the docs that are no measurement of the agent, so not
BENCHMARKS.md's."""


def _code_blocks(markdown: str) -> list[tuple[str, str]]:
    """Each fenced block's language and text, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def _prose(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)


def _figures(markdown: str) -> list[str]:
    return [
        f"{number} {unit}"
        for numbers, unit in FIGURE.findall(_prose(markdown))
        for number in numbers.split(" / ")
    ]


def _appears(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    return {_anchor(heading) for heading in re.findall(r"^#+ (.+)$", _prose(markdown), flags=re.MULTILINE)}


def _two_commands() -> list[str]:
    before_any_section = README.split("\n## ", 1)[0]
    language, text = _code_blocks(before_any_section)[0]
    assert language == "sh"
    return text.splitlines()


def test_the_readme_opens_with_a_demo_and_the_tests() -> None:
    assert _two_commands() == ["uvx --from . claude-bg-acp demo", "uv run --frozen pytest"]


def test_ci_runs_the_tests_with_the_readmes_command() -> None:
    assert _two_commands()[1] in CI.splitlines()


def _not_in_benchmarks(markdown: str) -> list[str]:
    figures = [figure for figure in _figures(markdown) if figure not in NOT_MEASURED]
    return [figure for figure in figures if not _appears(figure.split(" ")[0], BENCHMARKS)]


@pytest.mark.parametrize("path", list(DOCS), ids=lambda path: path.name)
def test_every_figure_in_the_readme_and_the_docs_is_in_benchmarks(path: Path) -> None:
    assert _not_in_benchmarks(DOCS[path]) == []


def test_the_figures_are_found() -> None:
    assert len(_figures(README)) > 15, "the README's figures are found"
    assert sum(len(_figures(text)) for text in DOCS.values()) > 40


@pytest.mark.parametrize(
    ("drifted", "caught"),
    [
        ("a 1 GiB burst arrived as 273 MiB of chunks and 22 snapshots", ["273 MiB"]),
        ("every byte of the 1 GiB arrived, at 43-118 MB/s", ["43-118 MB/s"]),
        ("TypeScript adapter, same run: 251 / 477 ms", ["251 ms", "477 ms"]),
    ],
)
def test_a_figure_that_benchmarks_does_not_have_is_caught(drifted: str, caught: list[str]) -> None:
    """Figures the README once quoted while BENCHMARKS.md said otherwise."""
    assert _not_in_benchmarks(drifted) == caught


def _links(path: Path) -> list[tuple[Path, str]]:
    """The relative links of one page: the file each names and the anchor, if any."""
    found = re.findall(r"\]\(([^)\s:]*?)(?:#([^)\s]+))?\)", _prose(path.read_text(encoding="utf-8")))
    return [((path.parent / target).resolve() if target else path, anchor) for target, anchor in found]


@pytest.mark.parametrize("path", [*DOCS, ROOT / "BENCHMARKS.md"], ids=lambda path: path.name)
def test_links_lead_to_files_and_headings(path: Path) -> None:
    links = _links(path)
    missing = [str(target) for target, _ in links if not target.exists()]
    assert not missing, f"links to no file: {missing}"
    broken = [
        f"{target.name}#{anchor}"
        for target, anchor in links
        if anchor and target.suffix == ".md" and anchor not in _anchors(target.read_text(encoding="utf-8"))
    ]
    assert not broken, f"links to no heading: {broken}"


def test_the_readme_links_to_every_doc() -> None:
    linked = {target for target, _ in _links(ROOT / "README.md")}
    assert {path for path in DOCS if path.parent.name == "docs"} <= linked
