"""Sessions that outlive the agent, end to end: list, load, resume, fork, delete and titles.

Two agent processes share one Claude Code config directory (the ``live`` fixture's), as two
editor sessions on one machine do: the first runs a conversation with the real CLI against the
scripted model, the second finds it, replays it and continues it. The official ACP client
drives both (``drive.mjs``), every message is validated against the schema and the background
rules, which forget a session when the client loads or resumes it (as the client must).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from claude_bg_acp.claude.conventions import tasks_root
from claude_bg_acp.claude.options import claude_cli
from claude_bg_acp.scripted_model import AUTOCOMPACT_ENV, env_overrides
from claude_bg_acp.scripted_model.scenarios import FILLED
from tests.conftest import LiveModel
from tests.conftest import run_live as run
from tests.support.acp_client import ClientRun
from tests.support.driver import PLAIN_CAPABILITIES
from tests.support.plain import PlainView
from tests.support.processes import processes_with
from tests.support.rules import Answered, Reattach, Seen, check_updates
from tests.support.schema import validate_transcript
from tests.support.stdio_agent import StdioAgent

pytestmark = pytest.mark.live

LONG_SHELL: list[dict[str, Any]] = [
    {"op": "prompt", "text": "[scenario:bg_long] Run a long job."},
    {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
]
"""A turn that leaves a shell printing a line every 0.2 s for a minute."""
FIRST_PROMPT = "[scenario:fg_bash] Run echo in the foreground."
FIRST_ANSWER = "The command printed hello-fg."


def first_conversation(live: LiveModel, workdir: Path, client: str) -> str:
    """The first agent process: one prompt with a tool call; its session id."""
    first = run(live, workdir, client, [{"op": "prompt", "text": FIRST_PROMPT}, {"op": "waitIdle"}])
    return first.session_id()


REOPENING = ("session/load", "session/resume")


def sent_before_answer(run: ClientRun, nth: int = 0) -> list[dict[str, Any]]:
    """The ``session/update`` params the agent wrote between the client's ``nth`` load or resume
    request and its answer (the client reads them in that window)."""
    requests = [
        (line, t)
        for line, t in zip(run.client_lines, run.client_line_times, strict=True)
        if line.get("method") in REOPENING
    ]
    request, sent_at = requests[nth]
    window: list[dict[str, Any]] = []
    for line, t in zip(run.agent_lines, run.agent_line_times, strict=True):
        if "method" not in line and line.get("id") == request["id"]:
            assert "result" in line, line
            return window
        if t >= sent_at and line.get("method") == "session/update":
            window.append(line["params"])
    raise AssertionError(f"no answer to {request}")


def carries_first_conversation(live: LiveModel) -> None:
    """The model request of the next prompt has the earlier prompt and answer in it."""
    messages = json.dumps(live.model.messages_requests()[-1].body["messages"])
    assert "Run echo in the foreground." in messages and FIRST_ANSWER in messages
    assert "hello-fg" in messages, "the earlier tool result is part of the conversation"


def test_a_second_agent_lists_loads_and_continues_the_first_ones_session(
    live: LiveModel, workdir: Path
) -> None:
    session_id = first_conversation(live, workdir, "v1")
    second = run(
        live,
        workdir,
        "v1",
        [
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
            {"op": "loadSession", "id": "load", "sessionId": session_id},
            {"op": "prompt", "text": "[scenario:text] And now?"},
        ],
        autoSession=False,
    )
    (listed,) = second.response("list")["sessions"]
    assert listed["sessionId"] == session_id and listed["cwd"] == str(workdir)
    assert listed["title"] == FIRST_PROMPT and listed["updatedAt"].endswith("Z")
    replayed = sent_before_answer(second)
    assert {params["sessionId"] for params in replayed} == {session_id}
    updates = [params["update"] for params in replayed]
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "session_info_update",
    ]
    assert updates[4]["title"] == FIRST_PROMPT, "the title the list shows, before the answer"
    assert updates[0]["content"] == {"type": "text", "text": FIRST_PROMPT}
    assert updates[1]["title"] == "echo hello-fg" and updates[1]["rawInput"]["command"] == "echo hello-fg"
    assert updates[2]["status"] == "completed" and "hello-fg" in json.dumps(updates[2]["content"])
    assert updates[3]["content"]["text"] == FIRST_ANSWER
    assert second.response("load")["result"]["modes"]["currentModeId"] == "default"
    assert second.prompt_responses()[-1]["result"]["stopReason"] == "end_turn"
    carries_first_conversation(live)


def test_a_plain_client_reopens_a_background_subagent_as_it_ended(live: LiveModel, workdir: Path) -> None:
    """Toad and the Python SDK's accumulator reopen the card as it ended live: what the subagent
    was asked, then its report; the launch message and the answer to its notification are not
    adjacent (a client that ignores ``messageId`` would glue them)."""
    plain = {"capabilities": PLAIN_CAPABILITIES, "clientInfo": {"name": "toad"}}
    first = run(live, workdir, "v1", [{"op": "prompt", "text": "[scenario:agent_bg] Delegate."}], **plain)
    steps = [{"op": "loadSession", "id": "load", "sessionId": first.session_id()}]
    second = run(live, workdir, "v1", steps, autoSession=False, **plain)
    sent = sent_before_answer(second)
    view = PlainView.replay({"jsonrpc": "2.0", "method": "session/update", "params": p} for p in sent)
    assert not view.problems, view.problems
    agent = view.call("background helper")
    assert (agent.status, agent.text) == ("completed", "subagent one finished its work")
    assert not [s for s in agent.shown if "agentId" in s.text], "never Claude Code's hand-off"
    kinds = [p["update"]["sessionUpdate"] for p in sent]
    said = [i for i, kind in enumerate(kinds) if kind == "agent_message_chunk"]
    assert said[-1] - said[-2] > 1, "the subagent's work comes between its launch and its report"


def test_a_session_never_prompted_opens_in_the_next_process_as_it_was_left(
    live: LiveModel, workdir: Path
) -> None:
    """acpx creates a session in one process and prompts it in the next: Claude Code stores
    nothing before the first prompt, so the agent's own record opens it, empty, in its folder
    and mode; it is not listed (it has no conversation), and once prompted Claude Code has it."""
    first = run(
        live,
        workdir,
        "v1",
        [
            {
                "op": "request",
                "method": "session/set_mode",
                "params": {"sessionId": "$sessionId", "modeId": "plan"},
            }
        ],
    )
    session_id = first.session_id()
    second = run(
        live,
        workdir,
        "v1",
        [
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
            {"op": "loadSession", "id": "load", "sessionId": session_id},
            {"op": "prompt", "text": "[scenario:text] Hello."},
        ],
        autoSession=False,
    )
    assert second.response("list")["sessions"] == []
    assert sent_before_answer(second) == [], "nothing to replay"
    assert second.response("load")["result"]["modes"]["currentModeId"] == "plan"
    assert second.prompt_responses()[-1]["result"]["stopReason"] == "end_turn"
    third = run(
        live,
        workdir,
        "v1",
        [{"op": "resumeSession", "id": "resume", "sessionId": session_id}],
        autoSession=False,
    )
    assert third.response("resume")["result"]["modes"]["currentModeId"] == "plan", "Claude Code stored it"
    assert not list((Path(live.env["CLAUDE_CONFIG_DIR"]) / "claude-bg-acp" / "created").glob("*.json"))


def test_a_session_never_prompted_keeps_its_fast_mode_through_the_next_processes(
    live: LiveModel, workdir: Path
) -> None:
    """Fast mode chosen in the process that created the session is in the record: the next
    process starts Claude Code with it and records it again with a later choice (the mode), and
    the one after that runs the first prompt fast."""

    def fast_mode(run_: ClientRun, step: str) -> Any:
        [option] = [o for o in run_.response(step)["result"]["configOptions"] if o["id"] == "fast_mode"]
        return option["currentValue"]

    fast = {"sessionId": "$sessionId", "configId": "fast_mode", "value": "on"}
    first = run(
        live, workdir, "v1", [{"op": "request", "method": "session/set_config_option", "params": fast}]
    )
    session_id = first.session_id()
    load = {"op": "loadSession", "id": "load", "sessionId": session_id}
    plan = {"sessionId": "$sessionId", "modeId": "plan"}
    second = run(
        live,
        workdir,
        "v1",
        [load, {"op": "request", "method": "session/set_mode", "params": plan}],
        autoSession=False,
    )
    assert fast_mode(second, "load") == "on", "Claude Code has it in effect"
    record = Path(live.env["CLAUDE_CONFIG_DIR"]) / "claude-bg-acp" / "created" / f"{session_id}.json"
    assert {key: json.loads(record.read_text())[key] for key in ("mode", "fast")} == {
        "mode": "plan",
        "fast": True,
    }
    third = run(
        live, workdir, "v1", [load, {"op": "prompt", "text": "[scenario:text] Hello."}], autoSession=False
    )
    assert fast_mode(third, "load") == "on"
    assert third.prompt_responses()[-1]["result"]["stopReason"] == "end_turn"
    speeds = [request.body.get("speed") for request in live.model.messages_requests()]
    assert speeds and set(speeds) == {"fast"}


def test_v2_an_unprompted_session_resumes_in_the_next_process_with_an_empty_replay(
    live: LiveModel, workdir: Path
) -> None:
    session_id = run(live, workdir, "v2", []).session_id()
    resume = {"op": "resumeSession", "id": "resume", "sessionId": session_id, "replayFrom": {"type": "start"}}
    prompt = {"op": "prompt", "text": "[scenario:text] Hello."}
    second = run(live, workdir, "v2", [resume, prompt, {"op": "waitIdle"}], autoSession=False)
    replayed = [params["update"] for params in sent_before_answer(second)]
    assert replayed == [
        {"sessionUpdate": "replay_complete"},
        {"sessionUpdate": "state_update", "state": "idle", "background": []},
    ], "the replay's end marked on an empty history"
    assert "Hello from the scripted model." in second.agent_text()


def claude_in_a_terminal(live: LiveModel, workdir: Path, prompt: str, resume: str | None = None) -> str:
    """Claude Code run the way a terminal user runs it (one prompt, ``claude -p``, through the
    SDK's one-shot ``query``), resuming ``resume`` if given: the session id it went on with."""

    async def one_prompt() -> str:
        options = ClaudeAgentOptions(cwd=str(workdir), env=env_overrides(live.env), resume=resume)
        session_id = ""
        async for message in query(prompt=prompt, options=options):
            if isinstance(message, ResultMessage):
                session_id = message.session_id
        return session_id

    return anyio.run(one_prompt)


def test_one_id_for_the_editor_and_the_terminal(live: LiveModel, workdir: Path) -> None:
    """What the editor started, ``claude --resume <id>`` continues; what the terminal started,
    the editor lists and loads."""
    session_id = first_conversation(live, workdir, "v2")
    assert (
        claude_in_a_terminal(live, workdir, "[scenario:text] Back in the terminal.", session_id) == session_id
    )
    carries_first_conversation(live)
    started = claude_in_a_terminal(live, workdir, "[scenario:text] Started in the terminal.")
    second = run(
        live,
        workdir,
        "v1",
        [
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
            {"op": "loadSession", "sessionId": started},
            {"op": "loadSession", "sessionId": session_id},
        ],
        autoSession=False,
    )
    assert {s["sessionId"] for s in second.response("list")["sessions"]} == {session_id, started}
    assert "Started in the terminal." in json.dumps(sent_before_answer(second, 0))
    both = json.dumps(sent_before_answer(second, 1))
    assert FIRST_ANSWER in both and "Back in the terminal." in both


def test_a_conversation_changed_in_a_terminal_meanwhile_is_listed_anew(
    live: LiveModel, workdir: Path
) -> None:
    """The agent listed the sessions; Claude Code in a terminal goes on with one and renames it:
    the same agent's next listing shows it with its new title and time, first."""
    older = first_conversation(live, workdir, "v1")
    session_id = first_conversation(live, workdir, "v1")
    agent = StdioAgent(env=live.env)
    agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    before = agent.call(1, "session/list", {"cwd": str(workdir)})["result"]["sessions"]
    assert [s["sessionId"] for s in before] == [session_id, older]
    claude_in_a_terminal(live, workdir, "[scenario:text] Back in the terminal.", older)
    claude_in_a_terminal(live, workdir, "/rename Renamed in the terminal", older)
    after = agent.call(2, "session/list", {"cwd": str(workdir)})["result"]["sessions"]
    assert [s["sessionId"] for s in after] == [older, session_id]
    assert after[0]["title"] == "Renamed in the terminal" and after[1] == before[0]
    assert after[0]["updatedAt"] > before[0]["updatedAt"]
    assert agent.close() == 0


def test_v2_resume_with_replay_from_the_start_continues_the_session(live: LiveModel, workdir: Path) -> None:
    session_id = first_conversation(live, workdir, "v2")
    second = run(
        live,
        workdir,
        "v2",
        [
            {"op": "listSessions", "id": "list"},
            {"op": "resumeSession", "id": "resume", "sessionId": session_id, "replayFrom": {"type": "start"}},
            {"op": "prompt", "text": "[scenario:text] And now?"},
            {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
        ],
        autoSession=False,
    )
    assert [s["sessionId"] for s in second.response("list")["sessions"]] == [session_id]
    replayed = [params["update"] for params in sent_before_answer(second)]
    assert {params["sessionId"] for params in sent_before_answer(second)} == {session_id}
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds == [
        "user_message",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
        "replay_complete",
        "session_info_update",
        "state_update",
    ]
    assert replayed[5]["title"] == FIRST_PROMPT
    assert replayed[0]["content"] == [{"type": "text", "text": FIRST_PROMPT}]
    assert replayed[2]["status"] == "completed"
    assert replayed[3]["content"]["text"] == FIRST_ANSWER
    assert replayed[-1] == {"sessionUpdate": "state_update", "state": "idle", "background": []}
    carries_first_conversation(live)


def resumed_from_start(live: LiveModel, workdir: Path, session_id: str, *steps: dict[str, Any]) -> ClientRun:
    """A second agent process: a v2 client resumes the session with a replay, then ``steps``."""
    resume = {"op": "resumeSession", "sessionId": session_id, "replayFrom": {"type": "start"}}
    return run(live, workdir, "v2", [resume, *steps], autoSession=False)


def test_a_prompt_after_resuming_a_session_whose_shell_was_cut_short_runs_its_own_turn(
    live: LiveModel, workdir: Path
) -> None:
    """The first agent process ends while its shell still runs. Resumed in a second one, Claude
    Code starts with a turn of its own about that shell (its notification, no model request):
    not shown, so the client is told ``idle``, and the prompt it sends goes in once that turn is
    over, with no ``idle`` before it that a client could take for its end. The prompt reaches the
    model with the earlier conversation and ends ``end_turn`` with its own usage."""
    first = run(live, workdir, "v2", [*LONG_SHELL, {"op": "waitForTerminalBytes", "contains": "line-3"}])
    second = resumed_from_start(
        live,
        workdir,
        first.session_id(),
        {"op": "prompt", "id": "p", "text": "[scenario:text] And now?"},
        {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
    )
    assert sent_before_answer(second)[-1]["update"] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "background": [],
    }
    message_id = second.response("p")["result"]["messageId"]
    (resume,) = [line for line in second.client_lines if line.get("method") == "session/resume"]
    answered = next(i for i, line in enumerate(second.agent_lines) if line.get("id") == resume["id"])
    after = [
        line["params"]["update"]
        for line in second.agent_lines[answered:]
        if line.get("method") == "session/update"
        and line["params"]["update"]["sessionUpdate"] in ("state_update", "user_message")
    ]
    assert [(u["sessionUpdate"], u.get("state"), u.get("stopReason")) for u in after] == [
        ("state_update", "running", None),
        ("user_message", None, None),
        ("state_update", "idle", "end_turn"),
    ]
    assert after[1]["messageId"] == message_id
    assert after[2]["usage"]["outputTokens"] > 0, "the idle is the prompt's, with its usage"
    messages = json.dumps(live.model.messages_requests()[-1].body["messages"])
    assert (
        "And now?" in messages and "Run a long job." in messages and "Started the background work" in messages
    )


def test_a_replayed_prompt_has_the_message_id_it_had_live(live: LiveModel, workdir: Path) -> None:
    first = run(live, workdir, "v2", [{"op": "prompt", "id": "p", "text": FIRST_PROMPT}, {"op": "waitIdle"}])
    live_id = first.response("p")["result"]["messageId"]
    second = resumed_from_start(live, workdir, first.session_id())
    replayed = [params["update"] for params in sent_before_answer(second)]
    (message,) = [u for u in replayed if u["sessionUpdate"] == "user_message"]
    assert message["messageId"] == live_id


HELLO_AGAIN = "[scenario:text] Say hello again."


def compaction_card(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The updates of the one compaction card among ``updates``."""
    (card_id,) = {u["toolCallId"] for u in updates if str(u.get("toolCallId")).startswith("compaction-")}
    return [u for u in updates if u.get("toolCallId") == card_id]


def told(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The prompts, the compaction card's statuses, any other tool call (its id, once, where it
    opens) and the agent's text, in order (v1 or v2)."""
    story: list[tuple[str, str]] = []
    for update in updates:
        kind, content = update["sessionUpdate"], update.get("content") or {}
        if kind in ("user_message", "user_message_chunk"):
            story.append(("prompt", (content[0] if isinstance(content, list) else content)["text"]))
        elif str(update.get("toolCallId")).startswith("compaction-"):
            story.append(("card", update["status"]))
        elif "toolCallId" in update:
            if ("tool", update["toolCallId"]) not in story:
                story.append(("tool", update["toolCallId"]))
        elif kind == "agent_message_chunk":
            story.append(("agent", content["text"]))
    return story


def test_a_reopened_conversation_shows_its_compaction_where_it_happened(
    live: LiveModel, workdir: Path
) -> None:
    """``/compact``, then a turn; reopened by a second agent (v1 ``session/load``) and a third
    (v2 ``session/resume`` with replay): the card is there, completed, after the command and
    before the turn that followed, with the tokens before and after it had live. The replay
    starts there, but for the answer before ``/compact``, which Claude Code kept as it was (and
    links back when it resumes): the rest of what came before is the summary's, which is not the
    user's to see."""
    first = run(
        live,
        workdir,
        "v1",
        [
            {"op": "prompt", "text": FIRST_PROMPT},
            {"op": "prompt", "text": "/compact"},
            {"op": "prompt", "text": "[scenario:text] After the compaction."},
        ],
    )
    assert [r["result"]["stopReason"] for r in first.prompt_responses()] == ["end_turn"] * 3
    live_story = told(first.raw_updates())
    kept = live_story[live_story.index(("card", "in_progress")) - 1]
    assert kept[0] == "agent"
    live_card = compaction_card(first.raw_updates())
    (live_text,) = [c["content"]["text"] for c in live_card[-1]["content"]]
    assert re.fullmatch(r"Compacted the conversation: [\d,]+ tokens before, [\d,]+ after\.", live_text)
    load = {"op": "loadSession", "sessionId": first.session_id()}
    resume = {**load, "op": "resumeSession", "replayFrom": {"type": "start"}}
    for client, reopen in (("v1", load), ("v2", resume)):
        again = run(live, workdir, client, [reopen], autoSession=False)
        replayed = [params["update"] for params in sent_before_answer(again)]
        assert told(replayed) == [
            kept,
            ("prompt", "/compact"),
            ("card", "in_progress"),
            ("card", "completed"),
            ("prompt", "[scenario:text] After the compaction."),
            ("agent", "Hello from the scripted model."),
        ], client
        card = compaction_card(replayed)
        assert card[0]["title"] == "Compact conversation", client
        assert [c["content"]["text"] for c in card[-1]["content"]] == [live_text], client


def test_claude_codes_own_compaction_is_shown_live_and_where_it_happened_when_reopened(
    live: LiveModel, workdir: Path
) -> None:
    """Claude Code compacts by itself mid-turn (the context it counts is full after a command:
    ``context_full`` under ``AUTOCOMPACT_ENV``): a v2 and a v1 client see the card open at
    ``compacting``, automatic, and complete at the boundary with the tokens before and after,
    between the command and the turn's answer, and the turn ends as any other. Reopened by an
    agent of the other kind (v1 ``session/load``, v2 ``session/resume`` with replay), the
    conversation shows the same card where Claude Code stored it: before the turn's answer and
    the next prompt, after the command's tool call and result, which Claude Code kept as they
    were (stored before the boundary, linked back when it resumes), each once. Not the prompt
    that started the turn: Claude Code keeps it only in the summary (the replay starts at the
    boundary, as for ``/compact``, but for what it kept)."""
    live.env.update(AUTOCOMPACT_ENV)
    prompts = ["[scenario:text] Say hello.", "[scenario:context_full] Fill the context.", HELLO_AGAIN]
    load = {"op": "loadSession"}
    resume = {"op": "resumeSession", "replayFrom": {"type": "start"}}
    for client, other, reopen in (("v2", "v1", load), ("v1", "v2", resume)):
        # Each prompt's turn ends before the next is sent (a v2 prompt is answered at once: sent
        # during the compacting turn, it would join that turn).
        steps = [step for text in prompts for step in ({"op": "prompt", "text": text}, {"op": "waitIdle"})]
        first = run(live, workdir, client, steps)
        assert first.stop_reasons() == ["end_turn"] * 3, client
        hello = ("agent", "Hello from the scripted model.")
        card = [("card", "in_progress"), ("card", "completed"), ("agent", FILLED)]
        answers = [said for said in told(first.raw_updates()) if said[0] != "prompt"]
        tool = answers[1]
        assert tool[0] == "tool" and answers == [hello, tool, *card, hello], client
        live_card = compaction_card(first.raw_updates())
        assert live_card[0]["title"] == "Compact conversation (automatic)", client
        assert live_card[0]["rawInput"] == {"trigger": "auto"}, client
        (live_text,) = [c["content"]["text"] for c in live_card[-1]["content"]]
        assert re.fullmatch(r"Compacted the conversation: [\d,]+ tokens before, [\d,]+ after\.", live_text)
        again = run(live, workdir, other, [{**reopen, "sessionId": first.session_id()}], autoSession=False)
        replayed = [params["update"] for params in sent_before_answer(again)]
        assert told(replayed) == [tool, *card, ("prompt", HELLO_AGAIN), hello], other
        call = [u for u in replayed if u.get("toolCallId") == tool[1]]
        assert [u.get("status") for u in call].count("completed") == 1 == len(call) - 1, other
        assert [c["content"]["text"] for c in compaction_card(replayed)[-1]["content"]] == [live_text], other


def test_v2_resume_without_replay_sends_only_the_current_state(live: LiveModel, workdir: Path) -> None:
    session_id = first_conversation(live, workdir, "v2")
    second = run(
        live,
        workdir,
        "v2",
        [
            {"op": "resumeSession", "id": "resume", "sessionId": session_id},
            {
                "op": "resumeSession",
                "id": "later",
                "sessionId": session_id,
                "replayFrom": {"type": "later"},
                "expectError": -32602,
            },
        ],
        autoSession=False,
    )
    title, state = [params["update"] for params in sent_before_answer(second)]
    assert title["sessionUpdate"] == "session_info_update" and title["title"] == FIRST_PROMPT
    assert state == {"sessionUpdate": "state_update", "state": "idle", "background": []}


def test_resuming_a_live_session_restates_its_running_shell_first(live: LiveModel, workdir: Path) -> None:
    """A v2 client re-attaches to a session of this process while a background shell runs: a
    current terminal_update (command, cwd, output so far, cancel) comes before the state_update
    that lists it, then the shell goes on; no second Claude Code is started."""
    run_ = run(
        live,
        workdir,
        "v2-unstable",
        [
            *LONG_SHELL,
            {"op": "waitForTerminalBytes", "contains": "line-3"},
            {"op": "resumeSession", "id": "resume", "sessionId": "$session:main"},
            {"op": "waitForTerminalBytes", "contains": "line-12"},
            {"op": "cancelTerminal", "force": True},
            {"op": "waitBackground", "empty": True},
        ],
    )
    (terminal_id,) = run_.terminal_ids
    # Live output may come in between: the shell prints all the while.
    restated = [
        params["update"]
        for params in sent_before_answer(run_)
        if params["update"]["sessionUpdate"] != "terminal_output_chunk"
    ]
    assert [u["sessionUpdate"] for u in restated] == ["terminal_update", "state_update"]
    terminal, state = restated
    assert terminal["terminalId"] == terminal_id and terminal["cwd"] == str(workdir)
    assert terminal["command"].startswith("for i in $(seq 1 300)")
    assert terminal["capabilities"] == {"cancel": {}} and "exitStatus" not in terminal
    shown = base64.b64decode(terminal["output"]["data"])
    assert shown.startswith(b"line-1\nline-2\nline-3")
    assert state["background"] == [{"type": "terminal", "terminalId": terminal_id}]
    # It keeps running after the resume: later lines arrive, until it is cancelled.
    assert b"line-12" in run_.terminal_bytes(terminal_id)
    assert run_.terminal_info(terminal_id)["exitStatus"]["signal"] == "SIGKILL"
    assert list(run_.response("resume")["result"]) == ["configOptions"], "v2 resume: the options only"


def test_loading_a_session_open_in_this_process_starts_no_second_claude_code(
    live: LiveModel, workdir: Path
) -> None:
    agent = StdioAgent(env=live.env)
    agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": FIRST_PROMPT}]}
    assert agent.call(2, "session/prompt", prompt, timeout=60)["result"]["stopReason"] == "end_turn"
    marker = "CLAUDE_CODE_TMPDIR=" + live.env["CLAUDE_CODE_TMPDIR"]
    before = [pid for pid, cmd in processes_with(marker).items() if "_bundled/claude" in cmd]
    first = len(agent.lines)
    loaded = agent.call(3, "session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    assert "modes" in loaded["result"]
    answered = agent.lines.index(loaded)
    replayed = [
        m["params"]["update"]["sessionUpdate"] for m in agent.lines[first:answered] if m.get("method")
    ]
    assert replayed == ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
    after = [pid for pid, cmd in processes_with(marker).items() if "_bundled/claude" in cmd]
    assert len(before) == 1 and after == before
    prompt["prompt"] = [{"type": "text", "text": "[scenario:text] Still there?"}]
    assert agent.call(4, "session/prompt", prompt, timeout=60)["result"]["stopReason"] == "end_turn"
    assert agent.close() == 0


def test_two_loads_of_one_stored_session_at_once_start_one_claude_code(
    live: LiveModel, workdir: Path
) -> None:
    """Claude Code starts resuming a stored conversation before the rest of the session is
    loaded; two loads of it that arrive together still give it one Claude Code (two would write
    one transcript): the second waits for the first and re-attaches to its session. Claude Code
    runs through a wrapper that notes each start, then runs it."""
    session_id = first_conversation(live, workdir, "v1")
    starts = workdir.parent / "claude-starts"
    wrapper = workdir.parent / "claude-noting-its-starts"
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(starts))}\nexec {shlex.quote(claude_cli(None))} "$@"\n'
    )
    wrapper.chmod(0o700)
    agent = StdioAgent(env=live.env, args=["--cli-path", str(wrapper)])
    agent.call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    load = {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []}
    since = len(agent.lines)
    agent.send_raw(
        b"".join(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "session/load", "params": load}).encode() + b"\n"
            for n in (1, 2)
        )
    )
    for n in (1, 2):

        def answers(message: dict[str, Any], n: int = n) -> bool:
            return message.get("id") == n

        answer = agent.lines[agent.wait_for(answers, 60, f"load {n}", since)]
        assert "modes" in answer["result"], answer
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "[scenario:text] Still there?"}]}
    assert agent.call(3, "session/prompt", prompt, timeout=60)["result"]["stopReason"] == "end_turn"
    assert agent.close() == 0
    (started,) = starts.read_text().splitlines()
    assert f"--resume={session_id}" in started
    assert not validate_transcript(agent.lines, agent.sent, 1)


def test_a_fork_starts_with_no_background_work_and_the_history(live: LiveModel, workdir: Path) -> None:
    run_ = run(
        live,
        workdir,
        "v2-unstable",
        [
            *LONG_SHELL,
            {"op": "waitBackground", "contains": {"type": "terminal"}},
            {"op": "forkSession", "id": "fork", "sessionId": "$session:main", "name": "fork"},
            {"op": "prompt", "session": "fork", "text": "[scenario:text] What did we do?"},
            {"op": "waitIdle", "session": "fork", "match": {"stopReason": "end_turn"}},
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
            {"op": "cancelTerminal", "session": "main"},
            {"op": "waitBackground", "session": "main", "empty": True},
        ],
    )
    fork_id = run_.session_id("fork")
    assert fork_id != run_.session_id()
    fork_states = run_.state_updates("fork")
    # The fork's Claude Code may already run a turn of its own (the copied task's end) when the
    # state is first told: idle or running, never with the source's background work.
    assert fork_states[0]["state"] in ("idle", "running") and "stopReason" not in fork_states[0]
    assert all(u["background"] == [] for u in fork_states)
    assert run_.updates_for_session_id(fork_id, "terminal_update") == []
    titles = {s["sessionId"]: s.get("title") for s in run_.response("list")["sessions"]}
    assert titles[fork_id].endswith("(fork)") and set(titles) == {fork_id, run_.session_id()}
    messages = json.dumps(live.model.messages_requests()[-1].body["messages"])
    assert "Run a long job." in messages and "What did we do?" in messages


def test_a_rename_becomes_the_title(live: LiveModel, workdir: Path) -> None:
    run_ = run(
        live,
        workdir,
        "v2",
        [
            {"op": "prompt", "text": "/rename Parser refactor"},
            {"op": "waitFor", "update": "session_info_update", "match": {"title": "Parser refactor"}},
            {"op": "waitIdle"},
            {"op": "listSessions", "id": "list"},
        ],
    )
    (info,) = run_.updates("session_info_update")
    assert info["updatedAt"].endswith("Z")
    assert [s["title"] for s in run_.response("list")["sessions"]] == ["Parser refactor"]


def test_v1_resume_replays_nothing_and_delete_removes_the_stored_session(
    live: LiveModel, workdir: Path
) -> None:
    session_id = first_conversation(live, workdir, "v1")
    second = run(
        live,
        workdir,
        "v1",
        [
            {"op": "resumeSession", "id": "resume", "sessionId": session_id},
            {
                "op": "request",
                "id": "delete",
                "method": "session/delete",
                "params": {"sessionId": session_id},
            },
            {"op": "listSessions", "id": "list", "cwd": str(workdir)},
            {"op": "loadSession", "id": "load", "sessionId": session_id, "expectError": -32002},
        ],
        autoSession=False,
    )
    (title,) = [params["update"] for params in sent_before_answer(second)]
    assert title["title"] == FIRST_PROMPT, "v1 resume is without replay (and has no state): its title"
    assert second.response("resume")["result"]["modes"]["currentModeId"] == "default"
    assert second.response("delete")["result"] == {}
    assert second.response("list")["sessions"] == []
    assert session_id in second.response("load")["error"]["message"]


def test_a_damaged_conversation_fails_clearly_and_spares_the_others(live: LiveModel, workdir: Path) -> None:
    """Copies of a real transcript, damaged in the ways a file can be: the ones with nothing
    left to go on with are refused with the reason (before or when Claude Code tries), one cut
    in its last line is replayed as far as it reads; the session that was open stays usable."""
    agent = StdioAgent(env=live.env)
    agent.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "damage", "version": "1"}})
    session_id = agent.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": FIRST_PROMPT}]}
    agent.call(2, "session/prompt", prompt)
    agent.next_message(lambda m: m.get("params", {}).get("update", {}).get("state") == "idle", timeout=60)
    (transcript,) = Path(live.env["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}.jsonl")
    text = transcript.read_text()

    def copy(content: str) -> str:
        new_id = str(uuid.uuid4())
        (transcript.parent / f"{new_id}.jsonl").write_text(content.replace(session_id, new_id))
        return new_id

    def resume(request_id: int, target: str, **extra: Any) -> dict[str, Any]:
        return agent.call(request_id, "session/resume", {"sessionId": target, "cwd": str(workdir), **extra})

    garbage = copy("not json at all\n{\n")
    failed = resume(3, garbage)["error"]
    assert failed["code"] == -32603 and "holds no conversation" in failed["message"], failed
    cut_early = copy(text[:40])
    assert resume(4, cut_early)["error"]["code"] == -32603
    # A title and a cwd, but no message: the SDK finds a session, Claude Code none to resume.
    record = {"type": "custom-title", "customTitle": "Only a title", "cwd": str(workdir), "sessionId": "x"}
    untitled = copy(json.dumps(record) + "\n")
    failed = resume(5, untitled)["error"]
    assert failed["code"] == -32603 and "Claude Code cannot resume" in failed["message"], failed
    cut_late = copy(text[: text.rindex('"type":"assistant"')])
    first = len(agent.lines)
    assert "configOptions" in resume(6, cut_late, replayFrom={"type": "start"})["result"]
    replayed = [m["params"]["update"] for m in agent.lines[first:] if m.get("method") == "session/update"]
    assert replayed[0]["content"] == [{"type": "text", "text": FIRST_PROMPT}]
    assert FIRST_ANSWER not in json.dumps(replayed), "the cut answer is not made up"
    unknown = str(uuid.uuid4())
    assert resume(7, unknown)["error"] == {
        "code": -32002,
        "message": f"Unknown session {unknown}",
        "data": {"sessionId": unknown},
    }
    assert resume(8, session_id, cwd="/")["error"]["code"] == -32602
    prompt["prompt"] = [{"type": "text", "text": "[scenario:text] Still fine?"}]
    agent.call(9, "session/prompt", prompt)
    agent.next_message(lambda m: m.get("params", {}).get("update", {}).get("state") == "idle", timeout=60)
    assert agent.close() == 0
    assert not validate_transcript(agent.lines, agent.sent, 2)


SECRET = "never-for-the-client-4f7c1e"


def shows(lines: list[Any], secret: str) -> bool:
    """Whether any line carries ``secret``: as text, or inside a base64 string (terminal output)."""

    def carries(value: Any) -> bool:
        if isinstance(value, dict):
            return any(carries(v) for v in value.values())
        if isinstance(value, list):
            return any(carries(v) for v in value)
        if not isinstance(value, str):
            return False
        try:
            decoded = base64.b64decode(value, validate=True)
        except ValueError:
            decoded = b""
        return secret in value or secret.encode() in decoded

    return carries(lines)


def test_words_of_a_hand_off_in_a_commands_output_open_no_file(
    live: LiveModel, workdir: Path, tmp_path: Path
) -> None:
    """Issue 19, defect 3: foreground commands print Claude Code's hand-off words naming a file
    outside the task directory, another session's output file (put in place for it: the layout
    is Claude Code's) and a FIFO. They are ordinary tool calls, live and replayed by two more
    agent processes (v1 load, v2 resume); nothing of those files reaches a client, and each
    reopening is answered (the FIFO made the load wait forever)."""
    outside = tmp_path / "secret.txt"
    outside.write_text(f"{SECRET} outside\n")
    other = Path(tasks_root(str(workdir), live.env)) / str(uuid.uuid4()) / "tasks" / "bother.output"
    other.parent.mkdir(parents=True)
    other.write_text(f"{SECRET} of another session\n")
    fifo = tmp_path / "fifo.output"
    os.mkfifo(fifo)
    named = "".join(f"<path>{path}</path>" for path in (outside, other, fifo))
    first = run(
        live,
        workdir,
        "v2",
        [
            {"op": "prompt", "text": f"[scenario:hand_off_words] {named}"},
            {"op": "waitIdle", "match": {"stopReason": "end_turn"}},
        ],
    )
    session_id = first.session_id()
    loaded = run(
        live, workdir, "v1", [{"op": "loadSession", "id": "load", "sessionId": session_id}], autoSession=False
    )
    resumed = run(
        live,
        workdir,
        "v2",
        [{"op": "resumeSession", "id": "resume", "sessionId": session_id, "replayFrom": {"type": "start"}}],
        autoSession=False,
    )
    for reopened in (loaded, resumed):
        replayed = [params["update"] for params in sent_before_answer(reopened)]
        ended = {u["toolCallId"]: u["status"] for u in replayed if "toolCallId" in u and "status" in u}
        assert list(ended.values()) == ["completed"] * 3, replayed
        assert all(str(path) in json.dumps(replayed) for path in (outside, other, fifo)), "words shown"
    for process in (first, loaded, resumed):
        assert not shows(process.agent_lines, SECRET)
        assert process.terminal_ids == []
        assert not [u for u in process.raw_updates() if u["sessionUpdate"].startswith("terminal")]
        contents = [c for u in process.raw_updates() for c in u.get("content") or [] if isinstance(c, dict)]
        assert not [c for c in contents if c.get("type") == "terminal"]
    assert first.background_lists() and all(b == [] for b in first.background_lists())


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_v2_a_prompt_retried_with_its_key_after_the_agent_restarted_is_not_run_again(
    live: LiveModel, workdir: Path, replay: bool
) -> None:
    """Idempotency Keys RFD, across agent processes: the first inserts a keyed prompt and its
    turn ends, then the process ends (the client lost the answer, say). A second process
    resumes the session and the client sends the same prompt with the same key: it is answered
    with the first ``messageId``, no user message is shown, and Claude Code is given nothing
    (the model's next request, for a new submission, has the prompt once)."""
    words = "[scenario:text] Say hello once."
    keyed = {"prompt": [{"type": "text", "text": words}], "idempotencyKey": "sub-1"}
    first = StdioAgent(env=live.env)
    first.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "retry", "version": "1"}})
    session_id = first.call(1, "session/new", {"cwd": str(workdir), "mcpServers": []})["result"]["sessionId"]
    original = first.call(2, "session/prompt", {"sessionId": session_id, **keyed}, timeout=60)["result"]
    first.next_message(lambda m: (state_update(m) or {}).get("stopReason") == "end_turn", timeout=60)
    assert first.close() == 0

    second = StdioAgent(env=live.env)
    second.call(0, "initialize", {"protocolVersion": 2, "info": {"name": "retry", "version": "1"}})
    resume = {"sessionId": session_id, "cwd": str(workdir)} | (
        {"replayFrom": {"type": "start"}} if replay else {}
    )
    assert "result" in second.call(1, "session/resume", resume, timeout=60)
    shown_before = len(user_messages(second.lines))
    retried = second.call(2, "session/prompt", {"sessionId": session_id, **keyed}, timeout=60)
    assert retried["result"] == original
    again = {"sessionId": session_id, "prompt": [{"type": "text", "text": "[scenario:text] Again."}]}
    second.call(3, "session/prompt", again | {"idempotencyKey": "sub-2"}, timeout=60)
    second.next_message(lambda m: (state_update(m) or {}).get("stopReason") == "end_turn", timeout=60)
    assert second.close() == 0

    for process in (first, second):
        assert not validate_transcript(process.lines, process.sent, 2)
    check_updates(seen_by(first), 2)
    check_updates([Reattach(session_id, replay), *seen_by(second, answered=(1, session_id))], 2)
    shown = user_messages(second.lines)
    assert [u["content"][0]["text"] for u in shown[shown_before:]] == ["[scenario:text] Again."]
    if replay:
        assert [u["messageId"] for u in shown[:shown_before]] == [original["messageId"]]
    assert str(live.model.messages_requests()[-1].body["messages"]).count("Say hello once.") == 1


def state_update(message: dict[str, Any]) -> dict[str, Any] | None:
    update = message.get("params", {}).get("update", {})
    return update if update.get("sessionUpdate") == "state_update" else None


def user_messages(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    updates = [m["params"]["update"] for m in lines if m.get("method") == "session/update"]
    return [u for u in updates if u["sessionUpdate"] == "user_message"]


def seen_by(agent: StdioAgent, answered: tuple[int, str] | None = None) -> list[Seen]:
    """What an agent process sent, for the rules: its updates, and where it answered the
    client's resume (``answered``: the request's id and the session)."""
    seen: list[Seen] = []
    for line in agent.lines:
        if line.get("method") == "session/update":
            seen.append((line["params"]["sessionId"], line["params"]["update"]))
        elif answered is not None and "method" not in line and line.get("id") == answered[0]:
            seen.append(Answered(answered[1]))
    return seen
