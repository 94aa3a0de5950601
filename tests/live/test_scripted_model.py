"""The scripted local model: its HTTP/SSE surface, scenario choice, and the real CLI against it.

Server tests talk plain HTTP to loopback with ``http.client``. The live test (marked
``live``) runs the bundled Claude Code CLI through ``build_client``, in the ``default``
permission mode the agent uses, against the ``text`` scenario.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import AssistantMessage, Message, ResultMessage, TextBlock
from claude_agent_sdk.types import StreamEvent

from claude_bg_acp.claude.options import build_client, session_options
from claude_bg_acp.scripted_model import (
    SCENARIOS,
    ScriptedModel,
    env_overrides,
    offline_env,
    serve,
    serve_in_thread,
)

SSE_ORDER = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
]


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with serve_in_thread(scenario="text") as running:
        yield running


def _post(model: ScriptedModel, path: str, body: Any) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(model.host, model.port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return connection.getresponse()


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode("utf-8").split("\n\n"):
        if chunk.strip():
            lines = dict(line.split(": ", 1) for line in chunk.split("\n"))
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def _request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "stream": True, "messages": list(messages)}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _ask(model: ScriptedModel, *messages: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    response = _post(model, "/v1/messages?beta=true", _request(*messages))
    assert response.status == 200
    return _events(response.read())


def _stop_reason(events: list[tuple[str, dict[str, Any]]]) -> str:
    return str(next(data for name, data in events if name == "message_delta")["delta"]["stop_reason"])


def _blocks(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [data["content_block"] for name, data in events if name == "content_block_start"]


def test_text_scenario_streams_a_complete_sse_message(model: ScriptedModel) -> None:
    response = _post(model, "/v1/messages?beta=true", _request(_user("[scenario:text] hi")))
    body = response.read()
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    assert response.getheader("Content-Length") == str(len(body))
    events = _events(body)
    assert [name for name, _ in events] == SSE_ORDER
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == [] and start["stop_reason"] is None
    assert set(start["usage"]) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert events[2][1]["delta"]["type"] == "text_delta" and events[2][1]["delta"]["text"]
    assert _stop_reason(events) == "end_turn"


def test_tool_use_scenario_then_text_after_the_result(model: ScriptedModel) -> None:
    first = _user("[scenario:fg_bash] run it")
    events = _ask(model, first)
    (block,) = _blocks(events)
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["input"] == {}
    delta = next(data["delta"] for name, data in events if name == "content_block_delta")
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"])["command"] == "echo hello-fg"
    assert _stop_reason(events) == "tool_use"
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "hello-fg"}],
    }
    assistant = {"role": "assistant", "content": [{**block, "input": json.loads(delta["partial_json"])}]}
    after = _ask(model, first, assistant, result)
    assert [b["type"] for b in _blocks(after)] == ["text"]
    assert _stop_reason(after) == "end_turn"


def test_marker_anywhere_in_user_text_picks_the_scenario(model: ScriptedModel) -> None:
    events = _ask(
        model, _user("<system-reminder>x</system-reminder>"), _user("please [scenario:max_tokens] now")
    )
    assert _stop_reason(events) == "max_tokens"
    assert model.requests[-1].scenario == "max_tokens"


def test_without_marker_the_default_scenario_answers(model: ScriptedModel) -> None:
    events = _ask(model, _user("no marker here"))
    assert _stop_reason(events) == "end_turn"
    served = model.requests[-1]
    assert (served.path, served.query, served.scenario) == ("/v1/messages", "beta=true", "text")
    assert served.body["messages"][0]["content"][0]["text"] == "no marker here"


def test_notification_turn_is_acknowledged(model: ScriptedModel) -> None:
    launch = _user("[scenario:bg_completed] go")
    (tool,) = _blocks(_ask(model, launch))
    assert tool["name"] == "Bash"
    history = [
        launch,
        {"role": "assistant", "content": [tool]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "running"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "started"}]},
        {"role": "system", "content": "interleaved system message"},
        _user("<system-reminder><task-notification>done</task-notification></system-reminder>"),
    ]
    text = next(
        data["delta"]["text"] for name, data in _ask(model, *history) if name == "content_block_delta"
    )
    assert "ACK" in text


def test_a_held_answer_is_released_by_its_file(model: ScriptedModel, tmp_path: Path) -> None:
    """``bg_slow_follow_up`` holds its acknowledgement for seconds; a ``[release:PATH]`` marker
    in the first prompt lets it go as soon as that file exists."""
    release = tmp_path / "release"
    launch = _user(f"[scenario:bg_slow_follow_up] [release:{release}] go")
    (tool,) = _blocks(_ask(model, launch))
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "ok"}],
    }
    notified = [launch, {"role": "assistant", "content": [tool]}, result]
    notified += [{"role": "assistant", "content": [{"type": "text", "text": "started"}]}]
    notified += [_user("<task-notification>done</task-notification>")]
    served = len(model.requests)
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(_ask, model, *notified)
        while len(model.requests) == served:  # the request is in: its answer is held
            time.sleep(0.01)  # another thread's list: no event to await
        assert not answer.done()
        started = time.monotonic()
        release.touch()
        events = answer.result(timeout=30)
    assert time.monotonic() - started < 8.0, "released, not the delay run out"
    assert "ACK" in next(data["delta"]["text"] for name, data in events if name == "content_block_delta")


def test_tool_use_ids_are_stable_and_unrelated(model: ScriptedModel) -> None:
    tools = _blocks(_ask(model, _user("[scenario:two_shells] go")))
    again = _blocks(_ask(model, _user("[scenario:two_shells] go")))
    assert [t["id"] for t in tools] == [t["id"] for t in again]
    first, second = (t["id"] for t in tools)
    assert not second.startswith(first) and not first.startswith(second)


def test_subagent_requests_get_the_subagent_script(model: ScriptedModel) -> None:
    (agent,) = _blocks(_ask(model, _user("[scenario:agent_bg] go")))
    assert agent["name"] in ("Agent", "Task")
    (sub,) = _blocks(_ask(model, _user("[scenario:agent_bg] [subagent:one] work")))
    assert sub["name"] == "Bash" and sub["id"] != agent["id"]


def _message_id(events: list[tuple[str, dict[str, Any]]]) -> str:
    return str(next(data for name, data in events if name == "message_start")["message"]["id"])


def test_two_subagents_launched_by_different_turns_get_their_own_ids(model: ScriptedModel) -> None:
    """Two subagents with one tag, launched by the parent's first and third turns, are two
    conversations: no message or tool use id of one is the other's."""
    first = _ask(model, _user("[scenario:agent_bg] [subagent:one] [launch:0] work"))
    second = _ask(model, _user("[scenario:agent_bg] [subagent:one] [launch:2] work"))
    assert _message_id(first) != _message_id(second)
    assert {b["id"] for b in _blocks(first)}.isdisjoint(b["id"] for b in _blocks(second))


def test_the_parent_names_its_turn_in_a_subagents_prompt(model: ScriptedModel) -> None:
    events = _ask(model, _user("[scenario:agent_bg] go"))
    deltas = [data["delta"].get("partial_json", "") for name, data in events if name == "content_block_delta"]
    assert "[subagent:one] [launch:0]" in json.loads("".join(deltas))["prompt"]


def test_a_subagents_prompt_carries_its_parents_release(model: ScriptedModel) -> None:
    events = _ask(model, _user("[scenario:agent_shell] [release:/tmp/go] go"))
    deltas = [data["delta"].get("partial_json", "") for name, data in events if name == "content_block_delta"]
    assert "[launch:0] [release:/tmp/go]" in json.loads("".join(deltas))["prompt"]


def test_count_tokens(model: ScriptedModel) -> None:
    response = _post(model, "/v1/messages/count_tokens?beta=true", _request(_user("hello")))
    assert response.status == 200
    assert json.loads(response.read())["input_tokens"] > 0


def test_unknown_path_is_a_json_404(model: ScriptedModel) -> None:
    response = _post(model, "/v1/complete", {"prompt": "x"})
    assert response.status == 404
    assert json.loads(response.read())["type"] == "error"


def test_malformed_requests_get_400_and_the_server_survives(model: ScriptedModel) -> None:
    with socket.create_connection((model.host, model.port), timeout=10) as raw:
        raw.sendall(b"GARBAGE\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400")
    response = _post(model, "/v1/messages", "not an object")
    assert response.status == 400
    assert _post(model, "/v1/messages", _request(_user("hi"))).status == 200


def test_every_named_scenario_answers(model: ScriptedModel) -> None:
    for name in SCENARIOS:
        events = _ask(model, _user(f"[scenario:{name}] go"))
        assert [n for n, _ in events][-2:] == ["message_delta", "message_stop"], name


def test_serve_inside_an_async_program() -> None:
    async def main() -> int:
        async with serve(scenario="text") as running:

            def call() -> int:
                return _post(running, "/v1/messages", _request(_user("hi"))).status

            return await anyio.to_thread.run_sync(call)

    assert anyio.run(main) == 200


def test_module_entry_point_prints_where_it_listens() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "claude_bg_acp.scripted_model", "--scenario", "text", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("listening http://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/v1/messages", json.dumps(_request(_user("hi"))))
        assert connection.getresponse().status == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.live
def test_real_cli_receives_the_text_scenario(tmp_path: Path) -> None:
    messages = anyio.run(_run_real_cli, tmp_path, "[scenario:text] Say hello.")
    texts = [
        block.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, TextBlock)
    ]
    assert texts == ["Hello from the scripted model."]
    assert any(isinstance(m, StreamEvent) for m in messages)
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.stop_reason == "end_turn" and not result.is_error


async def _run_real_cli(root: Path, prompt: str) -> list[Message]:
    (root / "work").mkdir()
    async with serve(scenario="text") as running:
        # default permission mode, as the agent runs it; nothing here needs a permission.
        options = session_options(str(root / "work"), None)
        options.env.update(env_overrides(offline_env(running.base_url, root)))
        client = build_client(options)
        messages: list[Message] = []
        await client.connect()
        try:
            with anyio.fail_after(60):
                await client.query(prompt)
                async for message in client.receive_messages():
                    messages.append(message)
                    if isinstance(message, ResultMessage):
                        break
        finally:
            await client.disconnect()
    return messages
