"""The replaying stand-in CLI, driven by the real Agent SDK over recorded fixtures.

Each test starts ``ClaudeSDKClient`` (built exactly as the agent builds it) with
``cli_path=tests/support/replay_cli.py`` and checks that the SDK parses the same messages, in
the same order, as its own parser makes of the recorded ``in`` frames. Where the recorder
acted mid-session (a stop_task, an interrupt), the test does the same once it has received
as many messages as the recorder had. No real CLI runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from claude_agent_sdk import ClaudeSDKClient, Message, PermissionResultAllow, ToolPermissionContext
from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk.types import PermissionResult

from claude_bg_acp.claude.options import build_client, session_options

HERE = Path(__file__).resolve().parents[1]
REPLAY_CLI = HERE / "support" / "replay_cli.py"
FIXTURES = HERE / "fixtures" / "sdk_events"
PLACEHOLDER = "/tmp/claude-bg-acp"
CONTROL = ("control_request", "control_response", "control_cancel_request")
ALL_FIXTURES = sorted(path.stem for path in FIXTURES.glob("*.jsonl"))


def _fixture_lines(name: str, root: Path) -> list[dict[str, Any]]:
    text = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line.replace(PLACEHOLDER, str(root))) for line in text.splitlines()]


def _parsed(line: dict[str, Any]) -> Message | None:
    if line["dir"] != "in" or line["msg"].get("type") in CONTROL:
        return None
    return parse_message(line["msg"])


def _expected_messages(lines: list[dict[str, Any]]) -> list[Message]:
    return [message for message in map(_parsed, lines) if message is not None]


@dataclass(frozen=True)
class Cue:
    """Something the recorder sent once it had received ``after`` messages."""

    after: int
    frame: dict[str, Any]


def _cues(lines: list[dict[str, Any]]) -> list[Cue]:
    cues: list[Cue] = []
    seen = 0
    for line in lines:
        seen += _parsed(line) is not None
        if line["dir"] != "out":
            continue
        msg = line["msg"]
        subtype = (msg.get("request") or {}).get("subtype")
        if msg.get("type") == "user" or subtype in ("interrupt", "stop_task"):
            cues.append(Cue(seen, msg))
    return cues


async def _act(client: ClaudeSDKClient, frame: dict[str, Any]) -> None:
    if frame.get("type") == "user":
        await client.query(str(frame["message"]["content"]))
    elif frame["request"]["subtype"] == "interrupt":
        await client.interrupt()
    else:
        await client.stop_task(str(frame["request"]["task_id"]))


async def _allow(tool: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
    return PermissionResultAllow()


def _client(name: str, root: Path) -> ClaudeSDKClient:
    (root / "work").mkdir(exist_ok=True)
    options = session_options(str(root / "work"), _allow, cli_path=REPLAY_CLI)
    options.env.update(
        {
            "CLAUDE_BG_ACP_REPLAY_FIXTURE": str(FIXTURES / f"{name}.jsonl"),
            "CLAUDE_BG_ACP_REPLAY_SPEED": "0",
            "CLAUDE_BG_ACP_REPLAY_ROOT": str(root),
            "CLAUDE_BG_ACP_REPLAY_REPORT": str(root / "unexpected.jsonl"),
        }
    )
    return build_client(options)


def _unexpected(root: Path) -> list[str]:
    """What the stand-in CLI got that the recording does not have."""
    report = root / "unexpected.jsonl"
    return report.read_text().splitlines() if report.exists() else []


async def _replay(name: str, root: Path) -> list[Message]:
    lines = _fixture_lines(name, root)
    count, cues = len(_expected_messages(lines)), _cues(lines)
    client = _client(name, root)
    received: list[Message] = []
    await client.connect()
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                cues = _fire_due(tg, client, cues, 0)
                async for message in client.receive_messages():
                    received.append(message)
                    cues = _fire_due(tg, client, cues, len(received))
                    if len(received) == count:
                        break
    finally:
        await client.disconnect()
    return received


def _fire_due(tg: anyio.abc.TaskGroup, client: ClaudeSDKClient, cues: list[Cue], received: int) -> list[Cue]:
    # Actions run beside the reader: a control request waits for a response only the reader
    # can route, and the SDK's message buffer is bounded.
    while cues and cues[0].after <= received:
        tg.start_soon(_act, client, cues.pop(0).frame)
    return cues


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_replay_yields_the_recorded_messages(name: str, tmp_path: Path) -> None:
    expected = _expected_messages(_fixture_lines(name, tmp_path))
    received = anyio.run(_replay, name, tmp_path)
    assert received == expected
    assert _unexpected(tmp_path) == []


def test_the_required_fixtures_exist() -> None:
    assert {"text", "bg_completed"} <= set(ALL_FIXTURES)


def _recorded_bytes(line: dict[str, Any]) -> bytes:
    if "data_b64" in line:
        return base64.b64decode(line["data_b64"])
    return zlib.decompress(base64.b64decode(line["data_zlib_b64"]))


@pytest.mark.parametrize("name", ["bg_completed", "bg_invalid_utf8", "bg_burst"])
def test_replay_recreates_output_files(name: str, tmp_path: Path) -> None:
    anyio.run(_replay, name, tmp_path)
    assert _unexpected(tmp_path) == []
    files = [line for line in _fixture_lines(name, tmp_path) if line["dir"] == "file"]
    assert files
    for line in files:
        written = Path(line["path"]).read_bytes()
        assert written == _recorded_bytes(line)
        if "sha256" in line:
            assert hashlib.sha256(written).hexdigest() == line["sha256"]
            assert len(written) == line["length"]
