"""Property tests for the pure output-file rules: the closing-line gate and the read plan.

An independent regular expression serves as the oracle for "where does the closing line start";
the gate must agree with it for any bytes cut at any places.
"""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from claude_bg_acp.claude.conventions import KILLED_SIGNAL, ExitInfo, ShellEnd
from claude_bg_acp.output.closing_line import (
    LINE_GRACE,
    MAX_TRAILER,
    PREFIX_GRACE,
    TrailerGate,
    parse_closing_line,
)
from claude_bg_acp.output.tail import plan_read

ORACLE = re.compile(rb"(?:\A|\n)\[(?:killed|exited with code (?:-?[0-9]{1,20}|unknown))\]\n\Z")

# Pieces that make near-miss closing lines likely, mixed with arbitrary bytes.
PIECES = [
    b"\n",
    b"[",
    b"]",
    b"killed",
    b"[killed]",
    b"exited with code ",
    b"[exited with code ",
    b"3",
    b"42",
    b"-",
    b"unknown",
    b"\xff",
    b"\xc3",
    b"\x1b[31m",
    b"x",
    b" ",
]
noisy_bytes = st.one_of(
    st.binary(max_size=200),
    st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=3)), max_size=40).map(b"".join),
)


@st.composite
def closing_lines(draw: st.DrawFn) -> tuple[bytes, ExitInfo]:
    if draw(st.booleans()):
        return b"\n[killed]\n", ExitInfo(exit_code=None, signal=KILLED_SIGNAL)
    if draw(st.booleans()):
        return b"\n[exited with code unknown]\n", ExitInfo(exit_code=None, signal=None)
    code = draw(st.integers(min_value=-(2**31), max_value=2**31))
    return b"\n[exited with code %d]\n" % code, ExitInfo(exit_code=code, signal=None)


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def run_gate(pieces: list[bytes]) -> tuple[bytes, bytes, ExitInfo | None]:
    """Feed the pieces; return what was released live, what close() gave, and the exit."""
    gate = TrailerGate()
    live = bytearray()
    for piece in pieces:
        live += gate.feed(piece)
        assert gate.withheld <= MAX_TRAILER
    rest, exit_info = gate.close()
    return bytes(live), rest, exit_info


@given(st.data(), noisy_bytes, closing_lines())
def test_output_then_closing_line_yields_exactly_the_output(
    data: st.DataObject, out: bytes, closing: tuple[bytes, ExitInfo]
) -> None:
    line, expected_exit = closing
    pieces = data.draw(splits(out + line))
    live, rest, exit_info = run_gate(pieces)
    assert live + rest == out
    assert exit_info == expected_exit


@given(st.data(), noisy_bytes)
def test_output_alone_yields_the_output_and_no_exit(data: st.DataObject, out: bytes) -> None:
    match = ORACLE.search(out)
    pieces = data.draw(splits(out))
    live, rest, exit_info = run_gate(pieces)
    if match is None:
        assert live + rest == out
        assert exit_info is None
    else:  # output that ends like a closing line is indistinguishable from one
        assert live + rest == out[: match.start()]
        assert exit_info is not None


def could_become_closing_line(tail: bytes, at_start: bool) -> bool:
    """Brute force: is ``tail`` the start of some complete closing line (the oracle's kind)?"""
    for sep in (b"\n", b"") if at_start else (b"\n",):
        if not tail.startswith(sep):
            continue
        body = tail[len(sep) :]
        after_head = body[len(b"[exited with code ") :]
        digits = re.match(rb"-?[0-9]*", after_head)
        number = digits.group() if digits else b""
        number = number + b"0" if number in (b"", b"-") else number
        candidates = [b"[killed]\n", b"[exited with code unknown]\n"]
        candidates.append(b"[exited with code " + number + b"]\n")
        for line in candidates:
            if line.startswith(body) and ORACLE.search(sep + line):
                return True
    return False


@given(st.data(), noisy_bytes)
def test_withheld_tail_is_the_shortest_that_could_still_be_a_closing_line(
    data: st.DataObject, stream: bytes
) -> None:
    gate = TrailerGate()
    released = b"".join(gate.feed(piece) for piece in data.draw(splits(stream)))
    assert stream.startswith(released)
    cut = len(released)
    if cut < len(stream):
        assert could_become_closing_line(stream[cut:], at_start=cut == 0)
    for earlier in range(max(0, len(stream) - MAX_TRAILER - 8), cut):
        assert not could_become_closing_line(stream[earlier:], at_start=earlier == 0)
    gate.feed(b"\x00")  # no closing line holds this byte: everything is proven output
    assert gate.withheld == 0


CLOSING_LINES = [
    (b"\n[exited with code 0]\n", ExitInfo(0, None)),
    (b"\n[exited with code -2147483648]\n", ExitInfo(-2147483648, None)),
    (b"\n[exited with code unknown]\n", ExitInfo(None, None)),
    (b"\n[killed]\n", ExitInfo(None, KILLED_SIGNAL)),
]


def test_every_split_of_a_closing_line_waits_for_the_rest() -> None:
    """Claude Code writes its closing line in one write(), which a reader may catch half done:
    whatever part shows is held with a grace; the rest, within it, completes the line."""
    for out in (b"", b"out", b"out\n"):
        for line, exit_info in CLOSING_LINES:
            for split in range(1, len(line)):
                gate = TrailerGate()
                live = gate.feed(out + line[:split])
                held = (out + line[:split])[len(live) :]
                assert gate.grace() == (LINE_GRACE if held == b"\n" else PREFIX_GRACE), (out, line, split)
                live += gate.feed(line[split:])
                assert gate.grace() is None  # a whole closing line is never released on a timer
                assert gate.release() == b""
                assert TrailerGate().feed(out + line) == live
                assert (live, *gate.close()) == (out, b"", exit_info)


def test_a_newline_released_too_early_still_lets_the_closing_line_be_recognised() -> None:
    """The one split the short grace can lose: the closing line's own newline, caught alone
    after output without one. The editor gets that newline; never the line's text."""
    for line, exit_info in CLOSING_LINES:
        gate = TrailerGate()
        assert gate.feed(b"out" + line[:1]) == b"out"
        assert gate.grace() == LINE_GRACE
        assert gate.release() == b"\n"
        assert gate.feed(line[1:]) == b""
        assert gate.close() == (b"", exit_info)


@given(st.data(), noisy_bytes, closing_lines())
def test_releasing_a_quiet_newline_keeps_output_and_exit(
    data: st.DataObject, out: bytes, closing: tuple[bytes, ExitInfo]
) -> None:
    """Released whenever the held tail is a lone newline (as after LINE_GRACE of quiet), at any
    split: the exit is still parsed and at most that one newline is extra."""
    line, expected_exit = closing
    gate = TrailerGate()
    live = bytearray()
    for piece in data.draw(splits(out + line)):
        live += gate.feed(piece)
        if gate.grace() == LINE_GRACE and data.draw(st.booleans()):
            live += gate.release()
    rest, exit_info = gate.close()
    assert bytes(live + rest) in (out, out + b"\n")
    assert exit_info == expected_exit


def test_what_looks_like_the_start_of_a_closing_line_is_released_after_the_long_grace() -> None:
    gate = TrailerGate()
    assert gate.feed(b"progress\n[ex") == b"progress"
    assert gate.grace() == PREFIX_GRACE
    assert gate.release() == b"\n[ex"
    assert gate.feed(b"ample]\n") == b"ample]"
    assert gate.withheld == 1


def test_closing_line_examples() -> None:
    assert parse_closing_line(b"\n[exited with code 3]\n", False) == ExitInfo(3, None)
    assert parse_closing_line(b"\n[killed]\n", False) == ExitInfo(None, KILLED_SIGNAL)
    assert parse_closing_line(b"[exited with code 0]\n", True) == ExitInfo(0, None)
    assert parse_closing_line(b"[exited with code 0]\n", False) is None
    assert parse_closing_line(b"\n[exited with code 3]", False) is None
    assert parse_closing_line(b"\n[exited with code ]\n", False) is None


def test_a_closing_line_followed_by_output_is_output() -> None:
    gate = TrailerGate()
    assert gate.feed(b"a\n[exited with code 0]\n") == b"a"
    assert gate.feed(b"more") == b"\n[exited with code 0]\nmore"
    assert gate.close() == (b"", None)


def test_a_closing_line_counts_only_if_the_tasks_end_confirms_it() -> None:
    """A command can print a closing line: the task's end (its status, the code its summary
    names) decides whether the last one is Claude Code's; if not, it is output."""
    exited_0, exited_3, unknown = ExitInfo(0, None), ExitInfo(3, None), ExitInfo(None, None)
    killed = ExitInfo(None, KILLED_SIGNAL)
    assert ShellEnd("failed", 3).confirms(exited_3) and not ShellEnd("failed", 3).confirms(exited_0)
    assert ShellEnd("failed").confirms(exited_3) and ShellEnd("failed").confirms(unknown)
    assert ShellEnd("completed").confirms(exited_0) and not ShellEnd("completed").confirms(killed)
    assert ShellEnd("killed").confirms(killed) and not ShellEnd("stopped").confirms(exited_0)
    assert not ShellEnd().confirms(exited_0), "no end told: nothing confirms a line"
    gate = TrailerGate()
    assert gate.feed(b"a\n[exited with code 0]\n") == b"a"
    assert gate.close(ShellEnd("failed", 3).confirms) == (b"\n[exited with code 0]\n", None)


@given(
    size=st.integers(0, 10**9),
    offset=st.integers(0, 10**9),
    chunk=st.integers(1, 2**20),
    limit=st.integers(1, 2**24),
    snap=st.integers(1, 2**24),
)
def test_plan_read(size: int, offset: int, chunk: int, limit: int, snap: int) -> None:
    plan = plan_read(size, offset, chunk_size=chunk, backlog_limit=limit, snapshot_size=snap)
    if size <= offset:
        assert plan is None
        return
    assert plan is not None
    if size - offset > limit:
        assert plan.snapshot
        assert plan.start + plan.length == size
        assert plan.length == min(size, snap)
    else:
        assert not plan.snapshot
        assert plan.start == offset
        assert plan.length == min(chunk, size - offset)
