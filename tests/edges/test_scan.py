"""The scanner that reads a line the decoder refused for its own limits (``acp.scan``), checked
against the decoder itself: on any text shallow enough for ``json.loads``, both say the same
(is it JSON, and which id), and nesting deeper than the decoder goes changes nothing but the
decoder's answer."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from claude_bg_acp.acp.scan import Scanned, scan

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "a", "ä"]), inner, max_size=3)
    ),
    max_leaves=10,
)
spaces = st.sampled_from(["", " ", "\n", "\t ", "\r\n"])
JSONISH = ' \t\n\r{}[]:,"\\/0123456789.eE+-abfilnrstuINy\x01é'
"""The characters that make JSON, and some that break it."""


def expected(text: str) -> Scanned:
    try:
        value = json.loads(text)
    except ValueError:
        return Scanned(False)
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, float) and request_id.is_integer() and abs(request_id) < 2**63:
        request_id = int(request_id)  # 1.0, 1e3: JSON's integers written otherwise
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return Scanned(True, request_id)


@st.composite
def spaced(draw: st.DrawFn, value: Any) -> str:
    """``value`` as JSON text with whitespace of its own between the tokens."""
    gap = draw(spaces)
    if isinstance(value, list):
        items = [draw(spaced(item)) for item in value]
        return gap + "[" + gap + ("," + gap).join(items) + "]" + gap
    if isinstance(value, dict):
        members = [json.dumps(key) + gap + ":" + draw(spaced(item)) for key, item in value.items()]
        return gap + "{" + gap + ("," + gap).join(members) + "}" + gap
    return gap + json.dumps(value, ensure_ascii=draw(st.booleans())) + gap


@given(documents.flatmap(spaced))
@example('{"id": 1, "id": "two"}')
@example('{"id": "one", "id": [2]}')
@example('{"i\\u0064": -0}')
@example('{"id": 1.0}')
@example('{"id": 1e3}')
@example('{"id": 1e400}')
@example('{"a": {"id": 3}}')
@example("[NaN, -Infinity]")
@example('"\\ud800"')
def test_on_json_it_says_what_the_decoder_says(text: str) -> None:
    assert scan(text) == expected(text)


@given(documents.flatmap(spaced), st.integers(0, 40), st.sampled_from(list(JSONISH)))
def test_on_json_made_invalid_it_says_what_the_decoder_says(text: str, at: int, char: str) -> None:
    at = min(at, len(text))
    for broken in (text[:at], text[:at] + char + text[at:], text[:at] + text[at + 1 :]):
        assert scan(broken) == expected(broken)


@given(st.text(alphabet=JSONISH, max_size=40))
@example("")
@example('{"id":1,}')
@example('{"id":1 "a":2}')
@example("[1]]")
@example('{"a":1}}')
@example("01")
@example('"\\x"')
def test_on_noise_it_says_what_the_decoder_says(text: str) -> None:
    assert scan(text) == expected(text)


@settings(deadline=None, max_examples=30)  # each example scans thousands of levels
@given(documents, st.integers(1_000, 5_000), st.integers() | st.text(max_size=6))
def test_depth_changes_nothing_but_the_decoder(document: Any, depth: int, request_id: int | str) -> None:
    deep = "[" * depth + json.dumps(document) + "]" * depth
    text = f'{{"jsonrpc": "2.0", "params": {deep}, "id": {json.dumps(request_id)}}}'
    assert scan(text) == Scanned(True, request_id)
    assert scan(text[:-1]) == Scanned(False)


def test_100000_levels_unclosed_are_no_json() -> None:
    assert scan("[" * 100_000) == Scanned(False)
    assert scan("[" * 100_000 + "]" * 100_000) == Scanned(True)
