"""Named scripts for the scripted model: what to answer, given the request so far.

A scenario is a function of a ``Turn`` (a read-only view of one ``/v1/messages`` request)
returning a ``Reply``: content blocks, a stop reason and an optional delay before answering.
Scenarios are stateless: everything they need (launch, after the tool result, follow-up on a
``<task-notification>``, a subagent's own requests) is visible in the request itself, so any
number of CLI processes can share one server.

A held answer (a ``delay``) is released early once the file named by a ``[release:PATH]``
marker in the conversation's first prompt exists: a test creates it when its client has done
what the hold waited for, instead of waiting out the delay.

A conversation picks its scenario with a ``[scenario:NAME]`` marker in its user text; a
subagent's prompt carries the marker too, plus ``[subagent:TAG]`` so its requests are told
apart from the parent's, and ``[launch:STEP]`` names the parent's turn that launched it. Ids are
hashes of (scenario, conversation, step, index): stable across runs, distinct for every
response (two subagents launched by different turns are different conversations), and
unrelated to each other, because CLI 2.1.332 merges the results of two tool uses whose ids
differ only by a ``_<digits>`` suffix.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

DEFAULT_SCENARIO = "text"

MARKER = re.compile(r"\[scenario:([A-Za-z0-9_\-]+)\]")
SUBAGENT_MARKER = re.compile(r"\[subagent:([A-Za-z0-9_\-]+)\]")
LAUNCH_MARKER = re.compile(r"\[launch:(\d+)\]")
RELEASE_MARKER = re.compile(r"\[release:([^\]]+)\]")
NOTIFICATION_TAG = "<task-notification>"

StopReason = Literal["end_turn", "tool_use", "max_tokens"]


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


Block = Text | Thinking | ToolUse
# A tool call to make: (tool name, input).
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Reply:
    """One assistant message. ``delay`` holds the answer back (seconds) to keep a turn open, or
    less: until the file ``release`` names exists."""

    blocks: tuple[Block, ...]
    stop_reason: StopReason
    key: str
    delay: float = 0.0
    release: str | None = None
    input_tokens: int = 12
    """What the answer says its request held (Claude Code's count of the context)."""

    @property
    def message_id(self) -> str:
        return "msg_" + _digest("message", self.key)

    @property
    def request_id(self) -> str:
        return "req_" + _digest("request", self.key)

    @property
    def output_tokens(self) -> int:
        return max(1, sum(len(json.dumps(_block_json(b))) for b in self.blocks) // 4)

    def message(self, model: str) -> dict[str, Any]:
        """The whole message as a non-streaming answer would carry it."""
        return {
            **_message_head(self, model),
            "content": [_block_json(b) for b in self.blocks],
            "stop_reason": self.stop_reason,
            "usage": {**_usage(self), "output_tokens": self.output_tokens},
        }


@dataclass(frozen=True)
class Turn:
    """What a scenario may look at in one request."""

    scenario: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        tools = self.body.get("tools")
        if not isinstance(tools, list):
            return {}
        return {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}

    @property
    def step(self) -> int:
        """How many assistant messages the conversation already has."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def first_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return "\n".join(_texts(users[0].get("content"))) if users else ""

    @property
    def release(self) -> str | None:
        match = RELEASE_MARKER.search(self.first_user_text)
        return match.group(1) if match else None

    @property
    def subagent_tag(self) -> str | None:
        # A subagent's conversation starts with the prompt its parent wrote.
        match = SUBAGENT_MARKER.search(self.first_user_text)
        return match.group(1) if match else None

    @property
    def is_subagent(self) -> bool:
        return self.subagent_tag is not None

    @property
    def conversation(self) -> str:
        """``main``, or the subagent's tag and the step of its parent that launched it (two
        subagents with one tag, launched by different turns, are two conversations)."""
        if not self.is_subagent:
            return "main"
        launch = LAUNCH_MARKER.search(self.first_user_text)
        return f"sub-{self.subagent_tag}" + (f"-{launch.group(1)}" if launch else "")

    @property
    def pending_user_blocks(self) -> list[Any]:
        """The user content since the last assistant message.

        The CLI splits one user turn over several messages (reminders, notifications) and
        interleaves ``system`` role messages, so the whole tail is gathered.
        """
        blocks: list[Any] = []
        for message in reversed(self.messages):
            role = message.get("role")
            if role == "assistant":
                break
            if role == "user":
                content = message.get("content")
                blocks[:0] = [content] if isinstance(content, str) else list(content or [])
        return blocks

    @property
    def has_tool_result(self) -> bool:
        return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in self.pending_user_blocks)

    @property
    def tool_results(self) -> list[str]:
        """The text of each tool result since the last assistant message."""
        return [
            "\n".join(_texts(block.get("content")))
            for block in self.pending_user_blocks
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    @property
    def is_notification(self) -> bool:
        return any(NOTIFICATION_TAG in text for text in _texts(self.pending_user_blocks))

    def key(self, *parts: object) -> str:
        return "/".join([self.scenario, self.conversation, str(self.step), *map(str, parts)])

    def tool_id(self, index: int = 0) -> str:
        return "toolu_" + _digest("tool", self.key(index))

    def agent_tool_name(self) -> str:
        """The subagent tool as this CLI names it (``Agent`` in newer builds, ``Task`` before)."""
        return "Agent" if "Agent" in self.tools else "Task"


Scenario = Callable[[Turn], Reply]


def choose_scenario(body: dict[str, Any], default: str) -> str:
    """The scenario named by the latest marker in the request's user text, else ``default``.

    The latest, so that a later prompt of a conversation can switch to another scenario.
    """
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            for text in reversed(_texts(message.get("content"))):
                match = MARKER.search(text)
                if match:
                    return match.group(1)
    return default


def reply_for(name: str, body: dict[str, Any]) -> Reply:
    turn = Turn(name, body)
    scenario = SCENARIOS.get(name)
    if scenario is None:
        return _say(turn, f"The scripted model has no scenario named {name!r}.")
    reply = scenario(turn)
    return replace(reply, release=turn.release) if reply.delay else reply


def reply_sse(reply: Reply, model: str) -> str:
    """The reply as a complete Messages API event stream."""
    events: list[Call] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **_message_head(reply, model),
                    "content": [],
                    "stop_reason": None,
                    "usage": {**_usage(reply), "output_tokens": 1},
                },
            },
        ),
    ]
    for index, block in enumerate(reply.blocks):
        events.extend(_block_events(index, block))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def _block_events(index: int, block: Block) -> Iterator[Call]:
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    if isinstance(block, Text):
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block.text}]
    elif isinstance(block, Thinking):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block.thinking},
            {"type": "signature_delta", "signature": block.signature},
        ]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.input)}]
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _block_json(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _message_head(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_sequence": None,
    }


def _usage(reply: Reply) -> dict[str, int]:
    # Fixed numbers: token counts end up in recorded frames, which must not churn.
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _texts(content: Any) -> list[str]:
    """The plain text of a message's content (tool results excluded)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    texts: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
    return texts


def _digest(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}:{key}".encode()).hexdigest()[:24]


# --- building blocks ----------------------------------------------------------------------


def _say(turn: Turn, text: str, stop_reason: StopReason = "end_turn", delay: float = 0.0) -> Reply:
    return Reply((Text(text),), stop_reason, turn.key("text"), delay)


def _use(turn: Turn, *calls: Call, delay: float = 0.0) -> Reply:
    blocks = tuple(ToolUse(turn.tool_id(i), name, args) for i, (name, args) in enumerate(calls))
    return Reply(blocks, "tool_use", turn.key("tools"), delay)


def _bash(command: str, description: str, background: bool = False) -> Call:
    args: dict[str, Any] = {"command": command, "description": description}
    if background:
        args["run_in_background"] = True
    return "Bash", args


STARTED = "Started the background work; I will report back when it finishes."
ACK = "BG_DONE_ACK: saw the background task notification."
DELEGATED = "The subagent is working in the background; I will report back."
REPORTED = "finished its work"
"""The end of a subagent's report: ``subagent TAG finished its work``."""


def _tool_then_text(
    calls: Callable[[Turn], list[Call]],
    after: str,
    after_delay: float = 0.0,
    ack_delay: float = 0.0,
) -> Scenario:
    """Launch tools, say ``after`` once their results are in, acknowledge notifications (after
    ``ack_delay`` seconds: a follow-up turn held open)."""

    def scenario(turn: Turn) -> Reply:
        if turn.is_notification:
            return _say(turn, ACK, delay=ack_delay)
        if turn.has_tool_result:
            return _say(turn, after, delay=after_delay)
        return _use(turn, *calls(turn))

    return scenario


def _fixed(*calls: Call) -> Callable[[Turn], list[Call]]:
    return lambda _turn: list(calls)


# --- the scenarios ------------------------------------------------------------------------


def text(turn: Turn) -> Reply:
    return _say(turn, "Hello from the scripted model.")


def thinking(turn: Turn) -> Reply:
    blocks: tuple[Block, ...] = (
        Thinking("The user wants a short answer; no tools needed.", "c2NyaXB0ZWQtc2lnbmF0dXJl"),
        Text("Here is my answer after thinking."),
    )
    return Reply(blocks, "end_turn", turn.key("thinking"))


def max_tokens(turn: Turn) -> Reply:
    return _say(turn, "This answer is cut off because it ran out of tok", "max_tokens")


fg_bash = _tool_then_text(_fixed(_bash("echo hello-fg", "say hello")), "The command printed hello-fg.")

fg_failed = _tool_then_text(
    _fixed(_bash("echo out-line; echo err-line >&2; exit 3", "fail in the foreground")),
    "The command failed.",
)

# A foreground command that keeps its turn open, for faults that must strike mid-turn.
# A foreground command that runs long enough (five seconds) for Claude Code to report it as a
# task (after about two), whose output file is then followed live.
fg_lines = _tool_then_text(
    _fixed(_bash("for i in $(seq 1 10); do echo fg-line-$i; sleep 0.5; done", "print ten lines slowly")),
    "The lines are printed.",
)

# A foreground command Claude Code runs without asking (read-only) that outlasts the grace after
# which a call no question came for shows ``in_progress`` (``tool_uses.START_GRACE``).
fg_sleep = _tool_then_text(_fixed(_bash("sleep 3", "wait a moment")), "Waited.")

fg_long = _tool_then_text(
    _fixed(_bash("for i in $(seq 1 600); do echo waiting-$i; sleep 0.2; done", "a long foreground wait")),
    "The wait is over.",
)

# A tool input nested deeper than any encoder of the agent's takes (300 levels).
deep_input = _tool_then_text(
    _fixed(
        (
            "Bash",
            {
                "command": "echo deep",
                "description": "deep input",
                "deep": json.loads("[" * 300 + "]" * 300),
            },
        )
    ),
    "The input was deep.",
)

permission = _tool_then_text(
    _fixed(_bash("touch perm-test.txt", "create a file")), "Tried to create perm-test.txt."
)

bg_completed = _tool_then_text(
    _fixed(_bash("echo hello-from-bg; sleep 2; echo bg-finished", "background job", True)), STARTED
)

# A quick shell (it ends after the turn that started it) whose follow-up answer is held back,
# so that a client can stop that turn.
bg_slow_follow_up = _tool_then_text(
    _fixed(_bash("sleep 1; echo quick-job-done", "quick background job", True)), STARTED, ack_delay=8.0
)

# Forty lines over about two seconds: a client must see them arrive while the shell runs.
bg_lines = _tool_then_text(
    _fixed(_bash("for i in $(seq 1 40); do echo line-$i; sleep 0.05; done", "forty lines", True)),
    STARTED,
)

bg_failed_exit3 = _tool_then_text(
    _fixed(_bash("echo failing-job; sleep 1; exit 3", "failing background job", True)), STARTED
)

# The delay keeps the turn open after launch so that the recorder can interrupt it mid-turn.
bg_long = _tool_then_text(
    _fixed(_bash("for i in $(seq 1 300); do echo line-$i; sleep 0.2; done", "long background job", True)),
    STARTED,
    after_delay=1.0,
)

two_shells = _tool_then_text(
    _fixed(
        _bash("echo shell-one-start; sleep 1; echo shell-one-end", "first shell", True),
        _bash("echo shell-two-start; sleep 2; echo shell-two-end", "second shell", True),
    ),
    STARTED,
)

# Invalid bytes, then a euro sign and a colour escape each split across two writes in time,
# so that a live tail sees them cut in half.
bg_invalid_utf8 = _tool_then_text(
    _fixed(
        _bash(
            r"printf 'a\xffb\xc3(c\x1b[31mred\x1b[0m\n'; printf '\xe2\x82'; sleep 0.3; "
            r"printf '\xac euro \x1b['; sleep 0.3; printf '32mgreen\x1b[0m\n'",
            "bytes that are not UTF-8",
            True,
        )
    ),
    STARTED,
)

bg_burst = _tool_then_text(
    _fixed(_bash("yes burst-0123456789abcdefghijklmnopqrstuvwxyz | head -c 10485760", "10 MB burst", True)),
    STARTED,
)


# CLI 2.1.332 lists Monitor among the deferred tools (schema behind ToolSearch) but runs a
# direct call all the same; every line the script prints is a notification of its own.
def _monitor_calls(turn: Turn) -> list[Call]:
    return [
        (
            "Monitor",
            {
                "description": "tick watcher",
                "timeout_ms": 20000,
                "command": "for i in 1 2 3; do echo tick-$i; sleep 0.5; done",
            },
        )
    ]


monitor = _tool_then_text(_monitor_calls, "Watching the ticks.")


def _agent_call(turn: Turn, tag: str, description: str, background: bool = True) -> Call:
    # The parent's release marker goes along: the file that releases the parent releases its
    # subagents' held reports too.
    release = f" [release:{turn.release}]" if turn.release else ""
    markers = f"[scenario:{turn.scenario}] [subagent:{tag}] [launch:{turn.step}]{release}"
    prompt = f"{markers} Do the small job and report."
    return turn.agent_tool_name(), {
        "description": description,
        "prompt": prompt,
        "subagent_type": "general-purpose",
        "run_in_background": background,
    }


def _subagent(command: Call | Callable[[Turn], Call], done_delay: float, stagger: float = 0.0) -> Scenario:
    """A subagent runs one command (or the one its turn gets), then reports after
    ``done_delay`` seconds.

    Each later subagent (in order of tag) starts ``stagger`` seconds later and reports as much
    later again, so that concurrent subagents finish in a stable order.
    """

    def scenario(turn: Turn) -> Reply:
        offset = stagger * _tag_rank(turn.subagent_tag)
        # A notification of the subagent's own background shell, should it come after the
        # report, is answered like the command's result: the command runs once.
        if turn.has_tool_result or turn.is_notification:
            text = f"subagent {turn.subagent_tag} {REPORTED}"
            return _say(turn, text, delay=done_delay + offset)
        return _use(turn, command(turn) if callable(command) else command, delay=offset)

    return scenario


def _tag_rank(tag: str | None) -> int:
    return SUBAGENT_TAGS.index(tag) if tag in SUBAGENT_TAGS else 0


SUBAGENT_TAGS = ("one", "two", "three")


def _agent_scenario(
    tags: list[tuple[str, str]], sub: Scenario, after_delay: float = 0.0, background: bool = True
) -> Scenario:
    parent = _tool_then_text(
        lambda turn: [_agent_call(turn, tag, desc, background) for tag, desc in tags],
        DELEGATED,
        after_delay,
    )

    def scenario(turn: Turn) -> Reply:
        return sub(turn) if turn.is_subagent else parent(turn)

    return scenario


# The parent's answer after the launch is held back so that the recorder can interrupt the
# turn, and the subagent outlives that interrupt before it reports.
agent_bg = _agent_scenario(
    [("one", "background helper")],
    _subagent(_bash("echo from-subagent", "subagent echo"), done_delay=2.0),
    after_delay=1.0,
)

agent_two = _agent_scenario(
    [("one", "first helper"), ("two", "second helper")],
    _subagent(_bash("echo from-subagent", "subagent echo"), done_delay=0.5, stagger=0.4),
)

# The subagent's own work is a background shell: it is the child's terminal, not the root's.
agent_shell = _agent_scenario(
    [("one", "helper with a shell")],
    _subagent(
        _bash("echo child-shell-one; sleep 1; echo child-shell-two", "child shell", True), done_delay=2.5
    ),
)

# The same subagent in the foreground: its parent's turn waits on it, its shell outlives it.


def _shell_until_released(turn: Turn) -> Call:
    """A background shell that must outlive its subagent's report: it runs until the file of the
    turn's release marker exists (at most 30 s), else for two seconds."""
    wait = "sleep 2"
    if turn.release is not None:
        wait = f"for i in $(seq 600); do [ -e {shlex.quote(turn.release)} ] && break; sleep 0.05; done"
    return _bash(f"echo child-shell-one; {wait}; echo child-shell-two", "child shell", True)


agent_sync_shell = _agent_scenario(
    [("one", "synchronous helper with a shell")],
    _subagent(_shell_until_released, done_delay=0.5),
    background=False,
)

agent_permission = _agent_scenario(
    [("one", "helper that writes a file")],
    _subagent(_bash("touch sub-perm.txt", "create a file"), done_delay=0.5),
)

# The same question, asked 1.5 s after the launch: the parent's turn has ended by then.
agent_permission_late = _agent_scenario(
    [("two", "helper that writes a file later")],
    _subagent(_bash("touch sub-perm.txt", "create a file"), done_delay=0.5, stagger=1.5),
)


# The benchmarks and the demo choose their own commands: every ``<command>...</command>`` in the
# user's latest prompt becomes one background Bash call, all in one assistant message (so one
# prompt can start hundreds of shells). A prompt without one gets a plain answer.
COMMAND_TAG = re.compile(r"<command>(.*?)</command>", re.DOTALL)


def _prompt_commands(turn: Turn) -> list[str]:
    return [c.strip() for text in _texts(turn.pending_user_blocks) for c in COMMAND_TAG.findall(text)]


def bg_from_prompt(turn: Turn) -> Reply:
    if turn.is_notification:
        return _say(turn, ACK)
    if turn.has_tool_result:
        return _say(turn, STARTED)
    commands = _prompt_commands(turn)
    if not commands:
        return _say(turn, "No <command> in the prompt; nothing to start.")
    return _use(turn, *(_bash(c, f"prompt command {i + 1}", True) for i, c in enumerate(commands)))


fg_from_prompt = _tool_then_text(
    lambda turn: [_bash(c, f"prompt command {i + 1}") for i, c in enumerate(_prompt_commands(turn))],
    "Ran the commands.",
)
"""The prompt's ``<command>`` tags run in the foreground (each asked about as Claude Code asks)."""


# The same, with the answer after the hand-off held back: the turn lasts while the commands run
# (a model that waits on its background work), so a client that stops listening at the prompt's
# answer (acpx) sees them end.
IN_TURN_WAIT = 4.0


def bg_in_turn(turn: Turn) -> Reply:
    if turn.has_tool_result and not turn.is_notification:
        return _say(turn, "The background work is done.", delay=IN_TURN_WAIT)
    return bg_from_prompt(turn)


def _todo(content: str, status: str, active: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": active}


PLAN_STEPS: list[Call] = [
    (
        "TodoWrite",
        {
            "todos": [
                _todo("Write the parser", "in_progress", "Writing the parser"),
                _todo("Write the tests", "pending", "Writing the tests"),
            ]
        },
    ),
    (
        "TodoWrite",
        {
            "todos": [
                _todo("Write the parser", "completed", "Writing the parser"),
                _todo("Write the tests", "in_progress", "Writing the tests"),
            ]
        },
    ),
]
"""Claude Code offers ``TodoWrite`` only with ``CLAUDE_CODE_ENABLE_TODO_TOOLS=1`` and
``CLAUDE_CODE_ENABLE_TASKS=0`` (CLI 2.1.332); it runs a direct call although the tool is deferred."""

TASK_STEPS: list[Call] = [
    (
        "TaskCreate",
        {"subject": "Write the parser", "description": "The parser", "activeForm": "Writing the parser"},
    ),
    ("TaskCreate", {"subject": "Write the tests", "description": "The tests"}),
    ("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
    ("TaskList", {}),
]
"""Claude Code's task tools (``CLAUDE_CODE_ENABLE_TODO_TOOLS=1``, tasks on by default)."""


def _steps(calls: list[Call], done: str) -> Scenario:
    """One tool call per model request, in order, then ``done``."""

    def scenario(turn: Turn) -> Reply:
        if turn.step < len(calls):
            return _use(turn, calls[turn.step])
        return _say(turn, done)

    return scenario


todo = _steps(PLAN_STEPS, "The parser is written; the tests are next.")

# Tools whose calls must read well: lines of a file, two searches, a picture and an MCP tool
# (the editor's ``probe`` server), all in one message, in the directory the prompt names as
# ``<dir>...</dir>``. CLI 2.1.332 offers no Grep nor Glob: it answers those two with an error.
DIR_TAG = re.compile(r"<dir>(.*?)</dir>")


def _look_around_calls(turn: Turn) -> list[Call]:
    found = DIR_TAG.search(turn.first_user_text)
    where = found.group(1) if found else "."
    return [
        ("Read", {"file_path": f"{where}/notes.txt", "offset": 2, "limit": 2}),
        ("Grep", {"pattern": "TODO", "path": where, "glob": "*.txt"}),
        ("Glob", {"pattern": "*.png", "path": where}),
        ("Read", {"file_path": f"{where}/dot.png"}),
        ("mcp__probe__probe_echo", {"text": "echoed by the probe"}),
    ]


look_around = _tool_then_text(_look_around_calls, "Looked around.")

# Edits to review in the thread, one tool call per model request: read ``app.py`` in the
# directory the prompt names (Claude Code edits only a file it has read), change one line of it
# (``return 1`` becomes ``return 2``), then write it over whole (``return 2`` becomes ``return 3``),
# then read it again from its third line.
EDITED = "Edited app.py twice."


def edits(turn: Turn) -> Reply:
    found = DIR_TAG.search(turn.first_user_text)
    path = f"{found.group(1) if found else '.'}/app.py"
    written = "".join(f"# line {i}\n" for i in range(1, 9)) + "def answer():\n    return 3\n"
    calls: list[Call] = [
        ("Read", {"file_path": path}),
        ("Edit", {"file_path": path, "old_string": "    return 1\n", "new_string": "    return 2\n"}),
        ("Write", {"file_path": path, "content": written}),
        ("Read", {"file_path": path, "offset": 3, "limit": 4}),
    ]
    return _steps(calls, EDITED)(turn)


# Foreground commands that only print the words of Claude Code's hand-off, one for each
# ``<path>...</path>`` in the user's latest prompt, naming that path as their "output file": what
# a command's output says is not a background task (nor a file the agent reads for an editor).
PATH_TAG = re.compile(r"<path>(.*?)</path>")


def hand_off_words(turn: Turn) -> Reply:
    if turn.has_tool_result:
        return _say(turn, "Printed the words of a hand-off.")
    paths = [p for text in _texts(turn.pending_user_blocks) for p in PATH_TAG.findall(text)]
    if not paths:
        return _say(turn, "No <path> in the prompt; nothing to print.")
    words = (
        "Command running in background with ID: bfake{}. Output is being written to: {}. "
        "You will be notified when it completes."
    )
    calls = [
        _bash(f"echo {shlex.quote(words.format(i, path))}", f"print the words of a hand-off {i}")
        for i, path in enumerate(paths)
    ]
    return _use(turn, *calls)


# In plan mode: the model presents its plan, and leaving plan mode is the user's to approve.
PLAN = "1. Write the parser\n2. Test it"
exit_plan = _tool_then_text(_fixed(("ExitPlanMode", {"plan": PLAN})), "On it.")
tasks = _steps(TASK_STEPS, "Two tasks, the first one started.")

QUESTIONS: list[dict[str, Any]] = [
    {
        "question": "Which colour should the button be?",
        "header": "Colour",
        "options": [
            {"label": "Red", "description": "Warm and loud"},
            {"label": "Blue", "description": "Calm"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which checks should run?",
        "header": "Checks",
        "options": [{"label": "Lint", "description": "ruff"}, {"label": "Tests", "description": "pytest"}],
        "multiSelect": True,
    },
]
HEARD = "Claude Code told me: "


def ask_question(turn: Turn) -> Reply:
    """Claude asks the user two questions, then repeats what the tool result told it."""
    if turn.has_tool_result:
        return _say(turn, HEARD + " | ".join(turn.tool_results))
    return _use(turn, ("AskUserQuestion", {"questions": QUESTIONS}))


# Claude Code compacts by itself (CLI 2.1.332) before a request once its count of the context
# (the latest answer's ``usage``, and an estimate of what came after it) reaches its threshold:
# the window less the summary's room, lowered to that percentage of it by
# CLAUDE_AUTOCOMPACT_PCT_OVERRIDE; past the window less a margin it blocks instead. Under
# ``AUTOCOMPACT_ENV`` (5 %: 49,000 tokens of a 1M window, 9,000 of a 200k one; blocked past
# 977,000 and 177,000), an answer saying it read FULL_CONTEXT tokens has the request after it
# compacted first, and the short conversations of the other scenarios (12 tokens an answer)
# never do.
FULL_CONTEXT = 100_000
AUTOCOMPACT_ENV = {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "5"}
FILLED = "Filled the context."
SUMMARY_ASKED = "<summary>"
"""What only Claude Code's instructions for a compaction's summary ask for."""


def context_full(turn: Turn) -> Reply:
    """A command whose call says the context is full: Claude Code compacts before asking for the
    turn's next answer, which is ``FILLED``. Its summary request (the conversation, then Claude
    Code's instructions, which want a ``<summary>`` block: a plain answer is asked for again)
    gets one, which names this scenario so that the request after it, all the summary's, is
    answered here too."""
    if SUMMARY_ASKED in "\n".join(_texts(turn.pending_user_blocks)):
        return _say(
            turn, f"<summary>[scenario:{turn.scenario}] The user had a command fill the context.</summary>"
        )
    if turn.has_tool_result:
        return _say(turn, FILLED)
    return replace(_use(turn, _bash("echo filling", "fill the context")), input_tokens=FULL_CONTEXT)


SCENARIOS: dict[str, Scenario] = {
    "text": text,
    "thinking": thinking,
    "fg_bash": fg_bash,
    "fg_failed": fg_failed,
    "fg_long": fg_long,
    "fg_lines": fg_lines,
    "fg_sleep": fg_sleep,
    "deep_input": deep_input,
    "permission": permission,
    "bg_completed": bg_completed,
    "bg_lines": bg_lines,
    "bg_failed_exit3": bg_failed_exit3,
    "bg_long": bg_long,
    "two_shells": two_shells,
    "bg_invalid_utf8": bg_invalid_utf8,
    "bg_burst": bg_burst,
    "monitor": monitor,
    "agent_bg": agent_bg,
    "agent_two": agent_two,
    "agent_permission": agent_permission,
    "agent_permission_late": agent_permission_late,
    "agent_shell": agent_shell,
    "agent_sync_shell": agent_sync_shell,
    "bg_slow_follow_up": bg_slow_follow_up,
    "max_tokens": max_tokens,
    "bg_from_prompt": bg_from_prompt,
    "bg_in_turn": bg_in_turn,
    "fg_from_prompt": fg_from_prompt,
    "todo": todo,
    "tasks": tasks,
    "exit_plan": exit_plan,
    "look_around": look_around,
    "edits": edits,
    "hand_off_words": hand_off_words,
    "ask_question": ask_question,
    "context_full": context_full,
}
