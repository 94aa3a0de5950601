"""The agent's own ``/tasks`` and ``/stop`` through the core, for every kind of client: offered
beside Claude Code's commands, answered by the agent (no query to Claude Code, ``end_turn``; a
v2 prompt with its own ``running`` and ``idle``), the numbered listing, a stop by number or by
text (the same ``stop_task`` as ``terminal/cancel``), the refusals, numbers that stay while an
item lives and are never given again, and a command that waits for the running turn. Every
transcript is valid for its client's version (and Toad's rules), keeps the background rules and
shows nothing a Zed or plain client would trip on."""

from __future__ import annotations

import re
from typing import Any

import pytest

from claude_bg_acp.claude.conventions import ExitInfo
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.effects import Effect, Notify, Query, Reply, StopTask
from tests.support.driver import CLIENTS, CoreDriver, as_jsonrpc, check_transcript, recorded_server_info
from tests.support.frames import TaskSpec, commands_changed, result, state_changed, text
from tests.support.plain import PlainView

ONE = TaskSpec("shell", "bash01", description="first job")
TWO = TaskSpec("shell", "bash02", description="second job")
WATCH = TaskSpec("monitor", "mon01", description="watch the log")
INFO = recorded_server_info()


def started(client: str) -> CoreDriver:
    d = CoreDriver.for_client(client)
    d.start(INFO, "claude-opus-5-5", "medium")
    d.open()
    return d


def launched(d: CoreDriver, *specs: TaskSpec) -> None:
    """A prompt whose turn starts ``specs`` in the background and ends."""
    d.prompt("Start the jobs.")
    d.frames(state_changed("running"))
    for spec in specs:
        d.frames(spec.launch(), spec.started(), spec.hand_off())
    d.frames(text("Started."), result())


def said(effects: list[Effect]) -> str:
    """The agent's message text among ``effects``."""
    return "".join(
        e.update.wire()["content"]["text"]
        for e in effects
        if isinstance(e, Notify) and e.update.wire()["sessionUpdate"] == "agent_message_chunk"
    )


def command(d: CoreDriver, words: str, dt: float = 0.01) -> tuple[int, list[Effect]]:
    """The prompt ``words``, answered by the agent itself at once: nothing goes to Claude Code."""
    ticket, effects = d.prompt(words, dt=dt)
    assert not [e for e in effects if isinstance(e, Query)], "no model request for an agent command"
    replies = [e for e in effects if isinstance(e, Reply) and e.ticket == ticket]
    if d.version == 1:
        assert [r.result for r in replies] == [{"stopReason": "end_turn"}]
    else:
        assert len(replies) == 1 and "messageId" in replies[0].result
        assert states(effects) == [("running", None), ("idle", "end_turn")], "its own running, then idle"
    return ticket, effects


def states(effects: list[Effect]) -> list[tuple[str, str | None]]:
    """The v2 states reported among ``effects``, with their stop reasons."""
    return [
        (u["state"], u.get("stopReason"))
        for e in effects
        if isinstance(e, Notify) and (u := e.update.wire())["sessionUpdate"] == "state_update"
    ]


def numbered(listing: str) -> dict[int, str]:
    return {int(m[1]): m[2] for m in re.finditer(r"^(\d+)\. (.*)$", listing, re.MULTILINE)}


def checked(d: CoreDriver, client: str) -> None:
    """Claude Code goes, and what it ran with it (so that every item ends), and the transcript
    is checked."""
    d.handle(ev.ClaudeDied("Claude Code exited"))
    check_transcript(d, d.effects, client)


def stopped(effects: list[Effect]) -> list[str]:
    return [e.task_id for e in effects if isinstance(e, StopTask)]


# --- offered --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_the_agents_commands_are_offered_first_and_replace_claude_codes_of_that_name(version: int) -> None:
    d = CoreDriver(version)
    d.start(INFO, "claude-opus-5-5", "medium")
    _, opened = d.open()
    [commands] = [e.update.wire()["availableCommands"] for e in opened if isinstance(e, Notify)]
    assert [c["name"] for c in commands[:2]] == ["tasks", "stop"]
    assert "number from /tasks" in commands[1]["input"]["hint"]
    assert "input" not in commands[0]
    clashing = [*INFO["commands"], {"name": "tasks", "description": "Claude Code's own", "argumentHint": ""}]
    assert d.frame(commands_changed(clashing)) == [], "ours stands in for it: the list is the same"
    checked(d, "v2" if version == 2 else "v1-plain")


# --- listing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_tasks_lists_every_live_item_numbered_with_what_it_is_its_time_and_latest_line(client: str) -> None:
    d = started(client)
    launched(d, ONE, TWO, WATCH)
    d.output("bash01", b"building\n\x1b[0Kstep 1\rstep 2\n")
    _, effects = command(d, "/tasks", dt=125)
    listing = said(effects)
    assert numbered(listing) == {
        1: "shell: sleep 5; echo bash01 — running 2m 05s — last output: step 2",
        2: "shell: sleep 5; echo bash02 — running 2m 05s — no output yet",
        3: "monitor: watch the log — running 2m 05s",
    }
    assert "```text\n1. " in listing, "in a code block: Markdown would renumber a list"
    checked(d, client)


def test_tasks_says_so_when_nothing_runs() -> None:
    d = started("v2")
    _, effects = command(d, "/tasks")
    assert said(effects) == "No background work is running."


def test_a_shell_that_ended_is_not_listed_while_its_file_is_read_to_the_end() -> None:
    d = started("v2")
    launched(d, ONE, TWO)
    # Claude Code stopped it (no follow-up turn); its output is still being read: it stays listed.
    d.frames(ONE.updated("killed"), ONE.notification("stopped"))
    assert [entry["terminalId"] for entry in d.updates_of(d.effects, "state_update")[-1]["background"]] == [
        "bash01",
        "bash02",
    ]
    _, effects = command(d, "/tasks")
    assert [line.split(" — ")[0] for line in numbered(said(effects)).values()] == [
        "shell: sleep 5; echo bash02"
    ]
    d.drained("bash01")
    checked(d, "v2")


def test_a_background_subagent_is_listed_by_its_description_and_stopped_as_its_child_is() -> None:
    d = started("v2")
    agent = TaskSpec("agent", "agent01", description="survey the code")
    launched(d, agent)
    _, effects = command(d, "/tasks")
    assert numbered(said(effects)) == {1: "subagent: survey the code — running 0s"}
    _, effects = command(d, "/stop survey")
    assert stopped(effects) == ["agent01"]
    checked(d, "v2")


# --- stopping -------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_stop_n_stops_exactly_that_item_and_numbers_stay_while_items_live(client: str) -> None:
    d = started(client)
    launched(d, ONE, TWO, WATCH)
    _, effects = command(d, "/stop 2")
    assert stopped(effects) == ["bash02"] and said(effects) == "Stopping 2. shell: sleep 5; echo bash02"
    _, effects = command(d, "/stop 2")
    assert (
        stopped(effects) == [] and said(effects) == "2. shell: sleep 5; echo bash02 is being stopped already."
    )
    d.frames(TWO.updated("killed"), TWO.notification("stopped"))
    d.drained("bash02", b"", ExitInfo(None, "SIGKILL"))
    three = TaskSpec("shell", "bash03")
    launched(d, three)
    _, effects = command(d, "/tasks")
    assert list(numbered(said(effects))) == [1, 3, 4], "2 is never given again"
    _, effects = command(d, "/stop 2")
    assert (
        stopped(effects) == [] and said(effects) == "No background work numbered 2 is running (see `/tasks`)."
    )
    checked(d, client)


def test_a_plain_client_sees_the_stopped_shells_card_end_as_a_stopped_shell_ends() -> None:
    d = started("v1-plain")
    launched(d, ONE, TWO)
    d.output("bash02", b"working\n")
    command(d, "/stop 2")
    d.frames(TWO.updated("killed"), TWO.notification("stopped"))
    d.drained("bash02", b"", ExitInfo(None, "SIGKILL"))
    agent, client = as_jsonrpc(d.effects)
    view = PlainView.replay(agent, client)
    cards = {card.title: card for card in view.calls()}
    assert cards["sleep 5; echo bash02"].status == "failed"
    assert cards["sleep 5; echo bash02"].text == "working\n\nEnded by signal SIGKILL."
    assert cards["sleep 5; echo bash01"].status == "in_progress", "the other one runs on"
    checked(d, "v1-plain")


@pytest.mark.parametrize(
    ("words", "stops", "answer"),
    [
        ("/stop bash02", ["bash02"], "Stopping 2. shell: sleep 5; echo bash02"),
        ("/stop WATCH the", ["mon01"], "Stopping 3. monitor: watch the log"),
        ("/stop tail -f", ["mon01"], "Stopping 3. monitor: watch the log"),
        (
            "/stop sleep",
            [],
            "“sleep” is in more than one item (1, 2); nothing was stopped. Say which with `/stop N`.",
        ),
        (
            "/stop nothing",
            [],
            "No running background work has “nothing” in its command or description (see `/tasks`).",
        ),
        ("/stop 9", [], "No background work numbered 9 is running (see `/tasks`)."),
        ("/stop ²", [], "No running background work has “²” in its command or description (see `/tasks`)."),
        (
            "/stop",
            [],
            "Which one? `/stop N` stops the item numbered N in `/tasks`; `/stop TEXT` the one whose "
            "command or description contains TEXT.",
        ),
    ],
)
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_stop_by_text_stops_the_one_item_it_names_and_refuses_clearly(
    client: str, words: str, stops: list[str], answer: str
) -> None:
    d = started(client)
    launched(d, ONE, TWO, WATCH)
    _, effects = command(d, words)
    assert stopped(effects) == stops and said(effects) == answer
    checked(d, client)


def test_text_that_names_one_item_besides_one_being_stopped_stops_that_one() -> None:
    d = started("v2")
    launched(d, ONE, TWO)
    command(d, "/stop 1")
    _, effects = command(d, "/stop sleep")
    assert stopped(effects) == ["bash02"]


# --- turns ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", ["v1-terminal-meta", "v2"])
def test_a_command_during_a_turn_is_answered_once_the_turn_is_over(client: str) -> None:
    d = started(client)
    launched(d, ONE)
    d.prompt("Keep working.")
    d.frames(state_changed("running"), text("Working."))
    ticket, effects = d.prompt("/tasks")
    assert not said(effects) and not [e for e in effects if isinstance(e, Reply) and e.ticket == ticket]
    effects = d.frames(result())
    replies: list[Any] = [e.result for e in effects if isinstance(e, Reply) and e.ticket == ticket]
    assert len(replies) == 1 and "1. shell: sleep 5; echo bash01" in said(effects)
    assert not [e for e in effects if isinstance(e, Query)]
    if client == "v2":  # the turn's own idle, then the command's running and idle
        assert states(effects) == [("idle", "end_turn"), ("running", None), ("idle", "end_turn")]
    checked(d, client)


def test_a_command_answers_a_held_v1_turn_first_as_any_prompt_does() -> None:
    d = started("v1-terminal-meta")
    agent = TaskSpec("agent", "agent01", description="survey the code")
    held, _ = d.prompt("Delegate.")
    effects = d.frames(state_changed("running"), agent.launch(), agent.started(), agent.hand_off(), result())
    assert not [e for e in effects if isinstance(e, Reply)], "held while its subagent runs"
    ticket, effects = command(d, "/tasks")
    assert [e.ticket for e in effects if isinstance(e, Reply)] == [held, ticket]
    assert numbered(said(effects)) == {1: "subagent: survey the code — running 0s"}
    checked(d, "v1-terminal-meta")
