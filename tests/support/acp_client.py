"""Pytest helpers that drive an ACP agent with the official ACP client (``tests/client``).

``run_client(script)`` runs ``node tests/client/drive.mjs`` with a script (the format is
documented at the top of ``drive.mjs``), parses the one JSON object it prints and, unless ``check=False``,
asserts that:

- the run did not error (every step succeeded, nothing timed out);
- every line the agent wrote is JSON and validates against the official schema of the
  negotiated protocol version (:func:`tests.support.schema.validate_transcript`, strict mode);
  for a client that declares JetBrains AIR, the updates only AIR is sent validate against
  AIR's contract instead (:mod:`tests.support.air`);
- the client dropped no notification (no ``Error handling notification`` on its stderr), but
  for an AIR client exactly one per update only AIR is sent (the official client does not
  know those);
- the agent's updates keep the background rules (:mod:`tests.support.rules`).

Node and npm are required: if they are missing the helpers fail loudly, they never skip.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .air import air_update_count, declares_air
from .rules import Answered, BackgroundRules, Reattach, Seen, Violation
from .schema import CLIENT_DIR, SDK_PACKAGE_DIR, SDK_VERSION, validate_transcript

DRIVER = CLIENT_DIR / "drive.mjs"
MIN_NODE_MAJOR = 20
ECHO_AGENT = Path(__file__).resolve().parent / "echo_agent.py"

JsonObject = dict[str, Any]

_client_ready = False


class NodeClientUnavailableError(RuntimeError):
    """Node, npm or the pinned ACP client package cannot be made available."""


def _installed_sdk_version() -> str | None:
    package_json = SDK_PACKAGE_DIR / "package.json"
    if not package_json.is_file():
        return None
    version = json.loads(package_json.read_text(encoding="utf-8")).get("version")
    return version if isinstance(version, str) else None


def _check_node() -> str:
    node = shutil.which("node")
    if node is None:
        raise NodeClientUnavailableError(
            "`node` is not on PATH: Node.js >= 20 is required to run the ACP client tests"
        )
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError as error:
        raise NodeClientUnavailableError(f"cannot parse `node --version` output {version!r}") from error
    if major < MIN_NODE_MAJOR:
        raise NodeClientUnavailableError(f"Node.js {version} is too old; >= {MIN_NODE_MAJOR} is required")
    return node


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialises npm installs between concurrent test processes (e.g. pytest-xdist workers)."""
    path = Path(tempfile.gettempdir()) / f"claude-bg-acp-npm-ci-{os.getuid()}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_node_client() -> None:
    """Makes sure node/npm exist and the pinned client package is installed (runs ``npm ci`` in
    ``tests/client`` when ``node_modules`` is missing or holds another version).

    Raises :class:`NodeClientUnavailableError` (never skips) when that is impossible.
    """
    global _client_ready
    if _client_ready:
        return
    _check_node()
    npm_ci(CLIENT_DIR, lambda: _installed_sdk_version() == SDK_VERSION)
    _client_ready = True


def npm_ci(directory: Path, installed: Callable[[], bool], command: tuple[str, ...] = ("ci",)) -> None:
    """``npm ci`` in ``directory`` (the versions its lock pins; or another ``command`` that
    installs them) unless ``installed`` says they are there already; one test process at a time.
    Raises :class:`NodeClientUnavailableError` when it cannot be done."""
    if installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise NodeClientUnavailableError(
            f"`npm` is not on PATH: it is needed to install {directory}/node_modules"
        )
    with _install_lock():
        if installed():
            return
        # From npm's cache where it holds the pinned tarballs (the lock pins their integrity, which
        # npm checks either way): asking the registry again for each fresh clone downloaded them
        # anew, and once a download stalled until the timeout below.
        result = subprocess.run(
            [npm, *command, "--no-audit", "--no-fund", "--prefer-offline"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if result.returncode != 0 or not installed():
            raise NodeClientUnavailableError(
                f"`npm {' '.join(command)}` in {directory} failed (exit {result.returncode}):\n"
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            )


def echo_agent_argv() -> list[str]:
    """argv of the harness's own stand-in agent (only for testing the harness itself)."""
    return [sys.executable, str(ECHO_AGENT)]


# -- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientRun:
    """The parsed result of one ``drive.mjs`` run with convenient accessors."""

    raw: JsonObject
    script: JsonObject
    violations: list[str] = field(default_factory=list)
    driver_stderr: str = ""

    # -- plain fields ---------------------------------------------------------------------------

    @property
    def air(self) -> bool:
        """The client declared JetBrains AIR (see :mod:`tests.support.air`)."""
        return declares_air(self.script.get("capabilities"))

    @property
    def ok(self) -> bool:
        return bool(self.raw.get("ok"))

    @property
    def error(self) -> str | None:
        error = self.raw.get("error")
        return None if error is None else str(error)

    @property
    def protocol_version(self) -> int:
        """The negotiated version (the agent's initialize answer), else the client entry's."""
        version = self.raw.get("protocolVersion")
        if isinstance(version, int) and version in (1, 2):
            return version
        return 2 if str(self.raw.get("client", "v2")).startswith("v2") else 1

    @property
    def agent_lines(self) -> list[Any]:
        return list(self.raw.get("agentLines", []))

    @property
    def client_lines(self) -> list[Any]:
        return list(self.raw.get("clientLines", []))

    @property
    def agent_line_times(self) -> list[float]:
        """When the client read each of ``agent_lines`` (ms since the run started)."""
        return list(self.raw.get("agentLineTimes", []))

    @property
    def client_line_times(self) -> list[float]:
        """When the client wrote each of ``client_lines`` (ms since the run started)."""
        return list(self.raw.get("clientLineTimes", []))

    @property
    def agent_non_json_lines(self) -> list[str]:
        return [str(entry.get("text")) for entry in self.raw.get("agentNonJsonLines", [])]

    @property
    def client_stderr(self) -> list[str]:
        return list(self.raw.get("clientStderr", []))

    @property
    def dropped_notifications(self) -> list[str]:
        return list(self.raw.get("droppedNotifications", []))

    @property
    def agent_stderr(self) -> str:
        return str(self.raw.get("agentStderr", ""))

    @property
    def exit_code(self) -> int | None:
        code = self.raw.get("exitCode")
        return code if isinstance(code, int) else None

    @property
    def shutdown(self) -> JsonObject:
        return dict(self.raw.get("shutdown", {}))

    @property
    def responses(self) -> JsonObject:
        return dict(self.raw.get("responses", {}))

    def response(self, step: str | int) -> JsonObject:
        """What the driver recorded for a step (by its ``id``, or its index in ``steps``)."""
        key = str(step)
        found = self.raw.get("responses", {}).get(key)
        if not isinstance(found, dict):
            raise KeyError(f"no response recorded for step {key!r}; have {sorted(self.responses)}")
        return found

    def session_id(self, session: str = "main") -> str:
        return str(self.raw["sessions"][session]["sessionId"])

    # -- updates ----------------------------------------------------------------------------------

    def update_entries(self, kind: str | None = None, session: str | None = "main") -> list[JsonObject]:
        """Entries ``{t, sessionId, session, update}`` the client surfaced, in arrival order.

        ``session`` is a session name from the script (``"main"`` is the first one), or
        ``None`` for every session including child sessions the driver did not create.
        """
        entries: list[JsonObject] = []
        for entry in self.raw.get("updates", []):
            if session is not None and entry.get("session") != session:
                continue
            if kind is not None and entry.get("update", {}).get("sessionUpdate") != kind:
                continue
            entries.append(entry)
        return entries

    def updates(self, kind: str | None = None, session: str | None = "main") -> list[JsonObject]:
        """The ``update`` objects (as the client library parsed them) of :meth:`update_entries`."""
        return [entry["update"] for entry in self.update_entries(kind, session)]

    def updates_for_session_id(self, session_id: str, kind: str | None = None) -> list[JsonObject]:
        return [
            entry["update"]
            for entry in self.raw.get("updates", [])
            if entry.get("sessionId") == session_id
            and (kind is None or entry.get("update", {}).get("sessionUpdate") == kind)
        ]

    def state_updates(self, session: str | None = "main") -> list[JsonObject]:
        return self.updates("state_update", session)

    def agent_text(self, session: str | None = "main") -> str:
        """Concatenated text of the ``agent_message_chunk`` updates."""
        parts: list[str] = []
        for update in self.updates("agent_message_chunk", session):
            content = update.get("content")
            if isinstance(content, dict) and content.get("type") == "text":
                parts.append(str(content.get("text", "")))
        return "".join(parts)

    # -- prompts and stop reasons -------------------------------------------------------------------

    def prompt_responses(self, session: str | None = None) -> list[JsonObject]:
        """Every settled ``session/prompt`` in settle order: ``{step, session, t, result|error}``."""
        return [
            entry
            for entry in self.raw.get("promptResponses", [])
            if session is None or entry.get("session") == session
        ]

    def stop_reasons(self, session: str = "main") -> list[str | None]:
        """v1: ``stopReason`` of each prompt response; v2: ``stopReason`` of each idle
        ``state_update`` (``None`` where omitted)."""
        if self.protocol_version >= 2:
            return [
                update.get("stopReason")
                for update in self.state_updates(session)
                if update.get("state") == "idle"
            ]
        return [
            (entry.get("result") or {}).get("stopReason")
            for entry in self.prompt_responses(session)
            if "result" in entry
        ]

    # -- terminals and background --------------------------------------------------------------------

    @property
    def terminal_ids(self) -> list[str]:
        return list(self.raw.get("terminals", {}))

    def terminal_bytes(self, terminal_id: str) -> bytes:
        """The bytes the client assembled for a terminal (v2: ``terminal_update.output``
        snapshots and ``terminal_output_chunk`` data; v1: the ``_meta`` terminal output)."""
        terminals = self.raw.get("terminals", {})
        if terminal_id not in terminals:
            raise KeyError(f"no output for terminal {terminal_id!r}; have {sorted(terminals)}")
        return base64.b64decode(terminals[terminal_id])

    def terminal_info(self, terminal_id: str) -> JsonObject:
        """Merged ``terminal_update`` fields (command, cwd, exitStatus, capabilities) plus
        ``chunks`` and ``bytes`` counts."""
        return dict(self.raw.get("terminalInfo", {}).get(terminal_id, {}))

    @property
    def background(self) -> list[JsonObject] | None:
        """The client's latest ``background`` list for the first session (``None`` while not
        reported, as the client library sees it)."""
        background = self.raw.get("background")
        return None if background is None else list(background)

    def session_background(self, session: str = "main") -> list[JsonObject] | None:
        background = self.raw.get("sessions", {}).get(session, {}).get("background")
        return None if background is None else list(background)

    def background_lists(self, session: str = "main") -> list[list[JsonObject] | None]:
        """The ``background`` field of each ``state_update`` of the session, in order."""
        return [update.get("background") for update in self.state_updates(session)]

    # -- raw messages -------------------------------------------------------------------------------

    def agent_messages(self, method: str | None = None) -> list[JsonObject]:
        """Raw agent lines that are requests/notifications (optionally of one method)."""
        return [
            line
            for line in self.agent_lines
            if isinstance(line, dict)
            and "method" in line
            and (method is None or line.get("method") == method)
        ]

    def raw_updates(self, session_id: str | None = None) -> list[JsonObject]:
        """``params.update`` of every raw ``session/update`` line the agent wrote (before the
        client library parsed, stripped or dropped anything)."""
        return [
            line["params"]["update"]
            for line in self.agent_messages("session/update")
            if isinstance(line.get("params"), dict)
            and (session_id is None or line["params"].get("sessionId") == session_id)
        ]

    @property
    def permission_requests(self) -> list[JsonObject]:
        return list(self.raw.get("permissionRequests", []))

    @property
    def elicitations(self) -> list[JsonObject]:
        """Every ``elicitation/create`` the client was sent: ``{t, params, answer, answeredAt}``."""
        return list(self.raw.get("elicitations", []))

    # -- checks -----------------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Everything that makes the run unclean; empty means clean."""
        problems: list[str] = []
        if not self.ok:
            problems.append(f"the run failed: {self.error}")
        problems.extend(f"schema violation: {violation}" for violation in self.violations)
        problems.extend(
            f"agent wrote a non-JSON line on stdout: {line!r}" for line in self.agent_non_json_lines
        )
        dropped = self.dropped_notifications
        if self.air:
            expected = air_update_count(self.agent_lines)
            if len(dropped) != expected:
                problems.append(f"the client dropped {len(dropped)} notifications; AIR's own: {expected}")
            dropped = []
        problems.extend(f"the client dropped a notification: {line}" for line in dropped)
        problems.extend(f"background rule broken: {broken}" for broken in self.broken_rules())
        return problems

    def broken_rules(self) -> list[str]:
        """The first background rule (``tests.support.rules``) the agent's updates break, if any.

        A ``session/load`` or ``session/resume`` the client sent makes the rules forget that
        session from then on, as the client does.
        """
        rules = BackgroundRules(lists=self.protocol_version >= 2)
        try:
            for _, seen in self._timeline():
                rules.take(seen)
            rules.finish()
        except Violation as broken:
            return [str(broken)]
        return []

    def _timeline(self) -> list[tuple[float, Seen]]:
        """Updates the agent sent (and the tool call of each permission request, which a client
        applies as an update), the sessions the client re-attached to (when it asked, and
        whether with a replay) and the answers to those requests, by time."""
        events: list[tuple[float, Seen]] = []
        attaching: dict[Any, str] = {}
        for line, t in zip(self.client_lines, self.client_line_times, strict=False):
            if isinstance(line, dict) and line.get("method") in ("session/load", "session/resume"):
                params = line.get("params") or {}
                session_id = str(params.get("sessionId"))
                attaching[line.get("id")] = session_id
                replay = line["method"] == "session/load" or params.get("replayFrom") is not None
                events.append((t, Reattach(session_id, replay)))
        for line, t in zip(self.agent_lines, self.agent_line_times, strict=False):
            params = line.get("params") if isinstance(line, dict) else None
            update = params.get("update") if isinstance(params, dict) else None
            if (
                line.get("method") == "session/update"
                and isinstance(params, dict)
                and isinstance(update, dict)
            ):
                events.append((t, (str(params.get("sessionId")), update)))
            elif line.get("method") == "session/request_permission" and isinstance(params, dict):
                # A client applies the request's tool call as a tool_call_update (v2 says so).
                call = params.get("toolCall") or (params.get("subject") or {}).get("toolCall")
                if isinstance(call, dict):
                    events.append(
                        (t, (str(params.get("sessionId")), {"sessionUpdate": "tool_call_update", **call}))
                    )
            elif "method" not in line and line.get("id") in attaching:
                events.append((t, Answered(attaching[line["id"]], "result" in line)))
        # A request goes out before anything the agent sends about it: at equal times it is first.
        return sorted(events, key=lambda event: (event[0], not isinstance(event[1], Reattach)))

    def assert_clean(self) -> None:
        problems = self.problems()
        if problems:
            raise AssertionError(self.describe(problems))

    def describe(self, problems: list[str] | None = None) -> str:
        shown = problems if problems is not None else self.problems()
        lines = [f"ACP client run ({self.raw.get('client')}) is not clean:"]
        lines.extend(f"  - {problem}" for problem in shown[:60])
        if len(shown) > 60:
            lines.append(f"  ... and {len(shown) - 60} more")
        failed = [step for step in self.raw.get("steps", []) if not step.get("ok")]
        if failed:
            lines.append(f"failed step: {json.dumps(failed[0])}")
        if self.client_stderr:
            lines.append("client stderr (last 20 lines):")
            lines.extend(f"  {line}" for line in self.client_stderr[-20:])
        if self.agent_stderr:
            lines.append("agent stderr (tail):")
            lines.append(self.agent_stderr[-3000:])
        if self.driver_stderr:
            lines.append("driver stderr (tail):")
            lines.append(self.driver_stderr[-2000:])
        lines.append(f"agent exit code {self.exit_code}, shutdown {json.dumps(self.shutdown)}")
        return "\n".join(lines)


def _with_defaults(script: Mapping[str, Any], timeout: float) -> JsonObject:
    prepared = dict(script)
    prepared.setdefault("timeoutMs", int(timeout * 1000))
    return prepared


def run_client(
    script: Mapping[str, Any], timeout: float = 30.0, *, check: bool = True, strict: bool = True
) -> ClientRun:
    """Runs the official ACP client against the agent described by ``script``.

    ``timeout`` (seconds) bounds the script's steps (it becomes ``timeoutMs`` unless the script
    sets one); stopping the agent afterwards may add up to ``shutdownGraceMs`` + 4 s. With
    ``check`` (the default) the run must be clean, see :meth:`ClientRun.assert_clean`; with
    ``strict`` the schema validation rejects unknown non-``_`` variants and bad base64.
    """
    ensure_node_client()
    prepared = _with_defaults(script, timeout)
    grace_s = float(prepared.get("shutdownGraceMs", 5000)) / 1000
    budget = float(prepared["timeoutMs"]) / 1000 + grace_s + 4 + 10
    node = _check_node()
    proc = subprocess.Popen(
        [node, str(DRIVER), "-"],
        cwd=CLIENT_DIR.parent.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(json.dumps(prepared), timeout=budget)
    except subprocess.TimeoutExpired:
        # The driver stops its agent and prints what it has on SIGTERM.
        proc.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
    try:
        raw = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict):
        raise AssertionError(
            f"drive.mjs printed no result (exit {proc.returncode}).\n"
            f"stdout: {stdout[-3000:]!r}\nstderr: {stderr[-3000:]}"
        )
    guess = ClientRun(raw=raw, script=prepared)
    violations = validate_transcript(
        raw.get("agentLines", []),
        raw.get("clientLines", []),
        guess.protocol_version,
        strict=strict,
        air=guess.air,
    )
    run = ClientRun(raw=raw, script=prepared, violations=violations, driver_stderr=stderr)
    if check:
        run.assert_clean()
    return run
