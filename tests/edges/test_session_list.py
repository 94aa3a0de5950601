"""``session/list``: the sessions a listing shows are the SDK's, a page at a time, latest first.

The store is a real one: the transcripts the ``conversation`` recording kept (the real CLI's, a
subagent's beside it), copied under new ids and dated a minute apart, written compact as Claude
Code writes them, and beside them what a store also holds: a conversation Claude Code renamed
and one it titled, one of another directory, a subagent's transcript, a file cut short, an
empty one, one that is not JSON, a name that is not a session id, long ones (a name only at
their start, a first prompt past their first 64 KiB), one opened with a command, and, for the
listing without a directory, another project with a session of its own and a copy of one of
ours (under the same id, newer).

A listing must show what the SDK's ``list_sessions`` shows (which sessions, their directory,
title and time, in the same order), whichever way it is paged, while reading only the
transcripts its page needs. What it read is kept, in the process and on disk for the next one,
and read again only from a transcript that changed since.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from claude_agent_sdk import SDKSessionInfo
from claude_agent_sdk._internal.sessions import get_session_messages, list_sessions

from claude_bg_acp.acp.answers import ListSessionsResponse, SessionInfo
from claude_bg_acp.acp.errors import rpc_error
from claude_bg_acp.acp.session_list import info, page, start
from claude_bg_acp.claude import listing, summaries
from claude_bg_acp.claude.conventions import OWN_MESSAGES
from claude_bg_acp.claude.prompt_text import LIMIT, short
from claude_bg_acp.core.errors import Refused
from tests.support.driver import CWD, RECORDED_SESSION, load_frames, store_recorded

COPIES = 23
T0 = 1_790_000_000.0
"""When the oldest copy last changed (seconds): the others follow a minute apart."""
OTHER_CWD = "/tmp/claude-bg-acp/elsewhere"

Listed = list[tuple[str, str, str | None, str]]


def compact(text: str) -> str:
    """A transcript as Claude Code writes it: one compact JSON object per line."""
    return "".join(json.dumps(json.loads(line), separators=(",", ":")) + "\n" for line in text.splitlines())


def dated(path: Path, seconds: float) -> Path:
    os.utime(path, (seconds, seconds))
    return path


def transcript(project: Path, text: str, seconds: float, session_id: str | None = None) -> str:
    session_id = session_id or str(uuid.uuid4())
    path = project / f"{session_id}.jsonl"
    path.write_text(text.replace(RECORDED_SESSION, session_id))
    dated(path, seconds)
    return session_id


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A real store (see the module's docstring), in a config directory of its own, named by
    ``CLAUDE_CONFIG_DIR`` for the duration of the test; the listing's cache starts empty."""
    env = store_recorded(load_frames("conversation"), tmp_path)
    project = tmp_path / "projects" / CWD.replace("/", "-")
    recorded = project / f"{RECORDED_SESSION}.jsonl"
    text = compact(recorded.read_text())
    dated(recorded, T0 - 3600)
    copies = [transcript(project, text, T0 + 60 * n) for n in range(COPIES)]
    rename = {"type": "custom-title", "customTitle": "Parser  refactor", "sessionId": RECORDED_SESSION}
    transcript(project, text + json.dumps(rename) + "\n", T0 + 30)
    named = {"type": "ai-title", "aiTitle": "Background work " + "x" * 300, "sessionId": RECORDED_SESSION}
    transcript(project, text + json.dumps(named) + "\n", T0 + 90)
    transcript(project, text.replace(CWD, OTHER_CWD), T0 + 150)
    child = next((project / RECORDED_SESSION / "subagents").glob("agent-*.jsonl"))
    transcript(project, compact(child.read_text()), T0 + 210)
    transcript(project, child.read_text(), T0 + 215)
    transcript(project, text[: text.index("\n") // 2], T0 + 270)
    transcript(project, "", T0 + 330)
    transcript(project, "not json at all\n{\n", T0 + 390)
    (project / "not-a-session.jsonl").write_text(text)
    # Longer than the head and the tail the SDK reads (64 KiB each): what each of them says.
    first, rest = text.split("\n", 1)
    bulk = rest * (3 * 65536 // len(rest) + 1)
    early = {"type": "custom-title", "customTitle": "Named early", "sessionId": RECORDED_SESSION}
    transcript(project, f"{first}\n{json.dumps(early)}\n{bulk}", T0 + 420)
    transcript(project, text + bulk, T0 + 480)
    context = json.dumps({"type": "attachment", "uuid": str(uuid.uuid4()), "sessionId": RECORDED_SESSION})
    last = {"type": "last-prompt", "lastPrompt": "Run a background job.", "sessionId": RECORDED_SESSION}
    transcript(project, f"{context}\n" * 1000 + text + json.dumps(last) + "\n", T0 + 540)
    command = text.replace(
        "[scenario:bg_completed] Run a background job.", "<command-name>/model</command-name>"
    )
    transcript(project, command, T0 + 600)
    other = tmp_path / "projects" / OTHER_CWD.replace("/", "-")
    other.mkdir()
    transcript(other, text.replace(CWD, OTHER_CWD), T0 + 20)
    transcript(other, text.replace(CWD, OTHER_CWD), T0 + 100_000, copies[0])
    with mock.patch.dict(os.environ, env):
        yield project


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No summary kept in this process yet (as in an agent process that just started)."""
    new_process(monkeypatch)


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summaries, "_kept", OrderedDict())
    monkeypatch.setattr(summaries, "_seen", {})
    monkeypatch.setattr(summaries, "_changed", False)


def the_sdks(cwd: str | None) -> Listed:
    """What the SDK's ``list_sessions`` lists, as a client is shown it (the agent's listing
    before this one read every transcript through it)."""
    infos = (
        list_sessions(directory=cwd, include_worktrees=False)
        if cwd
        else list_sessions(include_worktrees=False)
    )
    wanted = os.path.realpath(cwd) if cwd else None
    infos = [i for i in infos if i.cwd and (wanted is None or os.path.realpath(i.cwd) == wanted)]
    infos.sort(key=lambda i: (i.last_modified, i.session_id), reverse=True)
    return [
        (
            i.session_id,
            str(i.cwd),
            titled(i),
            listing.timestamp(i.last_modified),
        )
        for i in infos
    ]


def titled(info: SDKSessionInfo) -> str | None:
    """The title of a session the SDK lists, as ours shows it: Claude Code's, else the first
    line of the person's first prompt (not a command, nor a message Claude Code wrote) if it is
    in the transcript's head, where the SDK finds one."""
    if info.custom_title or not info.first_prompt:
        return short(info.custom_title) if info.custom_title else None
    for message in get_session_messages(info.session_id):
        content = message.message.get("content") if message.type == "user" else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [block["text"] for block in blocks if block.get("type") == "text"]
        if texts and not texts[0].startswith(("<command-", *OWN_MESSAGES)):
            return short(texts[0].splitlines()[0])
    return None


def ours(cwd: str | None, after: listing.Position | None = None) -> Listed:
    return [(s.session_id, s.cwd, s.title, s.updated_at) for s in listing.page(cwd, after, 10**6)]


def pages(cwd: str | None, size: int) -> list[list[SessionInfo]]:
    """Every page, as the agent answers ``session/list`` (``size`` sessions a page)."""
    found, cursor = [], None
    while True:
        result = one_page(cwd, cursor, size)
        found.append(result["sessions"])
        cursor = result.get("nextCursor")
        if cursor is None:
            return found


def one_page(cwd: str | None, cursor: str | None, size: int) -> ListSessionsResponse:
    return page([info(s) for s in listing.page(cwd, start(cursor), size + 1)], size)


@pytest.mark.parametrize("cwd", [CWD, None], ids=["a directory", "every directory"])
def test_the_listing_is_the_sdks(store: Path, cwd: str | None) -> None:
    expected = the_sdks(cwd)
    assert ours(cwd) == expected
    titles = {title for _, _, title, _ in expected}
    assert {"Parser refactor", "[scenario:bg_completed] Run a background job."} <= titles
    assert any(title and title.startswith("Background work x") and len(title) == LIMIT for title in titles)
    assert "Named early" in titles
    # The one whose first 64 KiB name no directory is the listed directory's, and no other's.
    assert (None in titles) == (cwd is not None)
    listed = COPIES + 7 if cwd else COPIES + 7 - 1 + 2
    assert len(expected) == listed, "what the SDK lists, and no more"


@pytest.mark.parametrize("size", [1, 5, 26])
def test_pages_hold_every_session_once_in_order(store: Path, size: int) -> None:
    found = pages(CWD, size)
    assert [len(p) for p in found[:-1]] == [size] * (len(found) - 1) and 0 < len(found[-1]) <= size
    assert [s["sessionId"] for p in found for s in p] == [s for s, _, _, _ in the_sdks(CWD)]


def test_a_page_reads_only_its_own_transcripts(store: Path) -> None:
    """The first page of five opens the five newest transcripts and the one that says a next
    page exists; the second the next five (their first read already) and one more."""
    first = one_page(CWD, None, 5)
    shown = [s["sessionId"] for s in first["sessions"]]
    assert {Path(path).stem for path in summaries._kept} == {*shown, the_sdks(CWD)[5][0]}
    one_page(CWD, first["nextCursor"], 5)
    assert len(summaries._kept) == 11


def test_a_session_that_changes_between_pages_shifts_nothing(store: Path) -> None:
    before = [s for s, _, _, _ in the_sdks(CWD)]
    first = one_page(CWD, None, 4)
    touched = before[6]
    dated(store / f"{touched}.jsonl", T0 + 10**6)
    second = one_page(CWD, first["nextCursor"], 4)
    shown = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert shown == [s for s in before[:9] if s != touched]
    assert one_page(CWD, None, 1)["sessions"][0]["sessionId"] == touched, "it moved to the top"


def test_a_changed_transcript_is_read_again_and_an_unchanged_one_is_not(store: Path) -> None:
    """Claude Code in a terminal renames the latest conversation: the next listing shows the new
    title and time. The summary is kept by the file's size and time: a file changed behind
    them (same size, time put back) is not read again."""
    (latest, _, title, updated) = ours(CWD)[0]
    path = store / f"{latest}.jsonl"
    rename = {"type": "custom-title", "customTitle": "Renamed in the terminal", "sessionId": latest}
    with path.open("a") as file:
        file.write(json.dumps(rename, separators=(",", ":")) + "\n")
    dated(path, T0 + 10**6)
    now = ours(CWD)[0]
    assert now[0] == latest and now[2] == "Renamed in the terminal" and now[3] > updated
    assert now == the_sdks(CWD)[0]
    stat = path.stat()
    path.write_text(path.read_text().replace("Renamed in the terminal", "Renamed behind its back"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert ours(CWD)[0][2] == "Renamed in the terminal", "same size and time: the summary kept"
    dated(path, T0 + 10**6 + 1)
    assert ours(CWD)[0][2] == "Renamed behind its back"
    assert title == "[scenario:bg_completed] Run a background job."


def test_a_transcript_cut_short_or_emptied_is_listed_as_the_sdk_lists_it(store: Path) -> None:
    (latest, *_) = ours(CWD)[0]
    path = store / f"{latest}.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) // 3])
    dated(path, T0 + 10**6)
    assert ours(CWD) == the_sdks(CWD)
    path.write_text("")
    dated(path, T0 + 10**6 + 1)
    assert latest not in [s for s, _, _, _ in ours(CWD)] and ours(CWD) == the_sdks(CWD)


def test_the_summaries_kept_are_bounded(store: Path) -> None:
    with mock.patch.object(summaries, "KEPT", 4):
        assert ours(CWD) == the_sdks(CWD)
        assert len(summaries._kept) == 4
        assert len(json.loads(Path(summaries.file()).read_text())["summaries"]) == 4


def renamed_behind_its_back(store: Path) -> str:
    """The renamed conversation's transcript changed without changing its size or time (no
    program does that: it shows whether the transcript is read or its summary kept)."""
    (session_id,) = [s for s, _, title, _ in the_sdks(CWD) if title == "Parser refactor"]
    path = store / f"{session_id}.jsonl"
    stat = path.stat()
    path.write_text(path.read_text().replace("Parser  refactor", "Lexer   refactor"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return session_id


def titles(listed: Listed) -> dict[str, str | None]:
    return {session_id: title for session_id, _, title, _ in listed}


def test_the_next_process_takes_the_summaries_kept_on_disk(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One agent process lists; the next takes what it read from the file it left next to
    Claude Code's store (written whole, 0600, no temporary file left), not from the
    transcripts, except those that changed since."""
    before = ours(CWD)
    kept = Path(summaries.file())
    assert kept.stat().st_mode & 0o777 == 0o600 and list(kept.parent.iterdir()) == [kept]
    not_a_session = 1
    assert len(json.loads(kept.read_text())["summaries"]) == len(list(store.glob("*.jsonl"))) - not_a_session
    renamed = renamed_behind_its_back(store)
    (latest, *_) = before[0]
    rename = {"type": "custom-title", "customTitle": "Renamed in the terminal", "sessionId": latest}
    with (store / f"{latest}.jsonl").open("a") as file:
        file.write(json.dumps(rename) + "\n")
    new_process(monkeypatch)
    after = ours(CWD)
    assert titles(after)[renamed] == "Parser refactor", "kept on disk: the transcript was not read"
    assert after[0][0] == latest and after[0][2] == "Renamed in the terminal", "changed since: read again"
    assert after[1:] == before[1:]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("", id="empty"),
        pytest.param('{"format": 1, "summaries": {"/x": [1, 2, true, null', id="cut short"),
        pytest.param('{"format": 2, "summaries": {}}', id="another format"),
        pytest.param('["not", "a", "summary"]', id="not an object"),
    ],
)
def test_a_damaged_summaries_file_is_ignored_and_written_anew(
    store: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    kept = Path(summaries.file())
    kept.parent.mkdir()
    kept.write_text(content)
    assert ours(CWD) == the_sdks(CWD)
    assert json.loads(kept.read_text())["format"] == summaries.FORMAT


def test_a_malformed_summary_is_ignored_and_its_transcript_read(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours(CWD)
    renamed = renamed_behind_its_back(store)
    kept = Path(summaries.file())
    content = json.loads(kept.read_text())
    (path,) = [p for p in content["summaries"] if Path(p).stem == renamed]
    content["summaries"][path][2] = "yes"
    kept.write_text(json.dumps(content))
    new_process(monkeypatch)
    assert titles(ours(CWD))[renamed] == "Lexer refactor"


def test_a_listing_does_without_the_file_where_it_cannot_be_written(store: Path) -> None:
    Path(summaries.file()).parent.write_text("a file where the directory would be")
    assert ours(CWD) == the_sdks(CWD)


@pytest.mark.parametrize("cursor", ["", "offset:5", "bm90IGpzb24=", "WzEsMl0="])
def test_a_cursor_this_agent_did_not_give_is_refused(cursor: str) -> None:
    with pytest.raises(Refused) as refused:
        start(cursor)
    error = rpc_error(refused.value)
    assert error.code == -32602 and error.message.startswith("Invalid params: cursor: ")
