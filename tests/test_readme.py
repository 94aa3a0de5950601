"""The README against the rest of the tree: it opens with the two commands a newcomer runs, CI
runs the second of them, every figure it quotes is BENCHMARKS.md's (each figure lives there
alone), and its links to sections of itself and of BENCHMARKS.md lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCHMARKS = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

NUMBER = r"\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?"
FIGURE = re.compile(rf"(?<![\w.])({NUMBER}(?: / {NUMBER})*)\s?(ms|s|MB/s|MiB|KiB|GiB|MB|%|x)(?![\w/])")
"""Numbers with a unit of time, size, rate or ratio: ``4.1 / 4.4 ms`` is two figures, a range
such as ``86-125 MB/s`` one."""
NOT_MEASURED = {"180 MB": "the download of the SDK's wheel, which carries Claude Code"}
"""Figures of the README that are no measurement of the agent, so not BENCHMARKS.md's."""


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


def test_every_figure_in_the_readme_is_in_benchmarks() -> None:
    assert len(_figures(README)) > 40, "the README's figures are found"
    assert _not_in_benchmarks(README) == []


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


def test_links_to_sections_lead_to_headings() -> None:
    targets = {"": _anchors(README), "BENCHMARKS.md": _anchors(BENCHMARKS)}
    links = re.findall(r"\]\((BENCHMARKS\.md|)#([^)]+)\)", _prose(README))
    assert links
    broken = [f"{page}#{anchor}" for page, anchor in links if anchor not in targets[page]]
    assert not broken, f"links to no heading: {broken}"
