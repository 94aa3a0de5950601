"""Nothing in Claude Code's store or in the listing's summary file can hang, trick or starve the
agent: the installed agent over raw stdio, offline (nothing is prompted), on a real store (the
``conversation`` recording's transcripts) into which the test puts what anything that can create
a file there could: a FIFO named like a conversation, a summary file that is a FIFO, a link to
``/dev/zero`` or a link in the directory's place, a first prompt holding a lone surrogate. Every
wait is bounded (``StdioAgent``), and every line is validated against the official schema."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_bg_acp.claude import summaries
from tests.support.driver import CWD, RECORDED_SESSION, load_frames, store_recorded
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

V2_INIT = {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}
LISTS = 50
"""More ``session/list`` calls than the agent has worker threads (40): each must answer."""


@pytest.fixture
def store(offline: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The agent's environment, its config directory holding the recorded conversation."""
    return offline | store_recorded(load_frames("conversation"), tmp_path / "config")


def project(env: dict[str, str]) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / CWD.replace("/", "-")


@pytest.fixture
def agent(store: dict[str, str]) -> Iterator[StdioAgent]:
    agent = StdioAgent(env=store)
    agent.call(0, "initialize", V2_INIT)
    yield agent
    assert agent.close(timeout=20) == 0, agent.stderr
    violations = validate_transcript(agent.lines, agent.sent, 2)
    assert not violations, "\n".join(violations)


def listed(agent: StdioAgent, request_id: int) -> list[str]:
    reply = agent.call(request_id, "session/list", {"cwd": CWD}, timeout=20)
    return [s["sessionId"] for s in reply["result"]["sessions"]]


def test_a_fifo_named_like_a_conversation_hangs_nothing(
    store: dict[str, str], agent: StdioAgent, workdir: Path
) -> None:
    """It is not listed, and resuming it is refused at once; lists beyond the worker threads
    all answer, a new session still opens, and the agent exits when its input ends."""
    fifo = str(uuid.uuid4())
    os.mkfifo(project(store) / f"{fifo}.jsonl")
    for request_id in range(1, LISTS + 1):
        assert listed(agent, request_id) == [RECORDED_SESSION]
    resumed = agent.call(100, "session/resume", {"sessionId": fifo, "cwd": str(workdir)}, timeout=20)
    assert resumed["error"]["code"] == -32603 and fifo in resumed["error"]["message"], resumed
    assert "result" in agent.call(101, "session/new", {"cwd": str(workdir), "mcpServers": []}, timeout=20)


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_summary_file_that_is_no_file_is_not_read(store: dict[str, str], kind: str) -> None:
    kept = Path(summaries.file(store))
    kept.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(kept)
    else:
        kept.symlink_to("/dev/zero")
    agent = StdioAgent(env=store)
    agent.call(0, "initialize", V2_INIT)
    assert listed(agent, 1) == [RECORDED_SESSION]
    assert agent.close(timeout=20) == 0, agent.stderr
    assert "session summaries in" in agent.stderr


def test_a_summary_directory_that_is_a_link_is_not_written_through(
    store: dict[str, str], agent: StdioAgent, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Path(summaries.file(store)).parent.symlink_to(elsewhere)
    assert listed(agent, 1) == [RECORDED_SESSION]
    assert list(elsewhere.iterdir()) == []


def test_a_lone_surrogate_in_a_first_prompt_is_listed(store: dict[str, str], agent: StdioAgent) -> None:
    transcript = project(store) / f"{RECORDED_SESSION}.jsonl"
    lines = transcript.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"type":"user"' in line.replace(" ", ""))
    entry = json.loads(lines[first])
    entry["message"]["content"] = "A lone \ud800 surrogate"
    lines[first] = json.dumps(entry)  # ASCII: the surrogate as its escape, as JSON allows
    transcript.write_text("\n".join(lines) + "\n")
    reply = agent.call(1, "session/list", {"cwd": CWD}, timeout=20)
    (session,) = reply["result"]["sessions"]
    assert session["title"] == "A lone \ud800 surrogate"
    assert json.loads(Path(summaries.file(store)).read_text())["format"] == summaries.FORMAT
