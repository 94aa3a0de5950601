"""The background rules (RFD v2 Background Work), checked on a transcript as a client reads it.

``BackgroundRules.see(session_id, update)`` takes each ``session/update`` in order and raises
``Violation`` as soon as one breaks a rule; ``check_updates`` runs a whole transcript. Every
replay golden, every live transcript and the property tests go through it. Per session:

1. every ``state_update`` carries a ``background`` list (v2; for others, every one after the
   first that did);
2. an item is announced (``terminal_update`` / ``tool_call`` / ``tool_call_update`` /
   ``subagent_update``) before the first snapshot that lists it;
3. a terminal's ``exitStatus``, a tool call's final status, a child's ``idle`` (with its own list
   empty) goes out before the snapshot that removes it; nothing is listed after its final
   status, no status follows a final one (not even the same again), nothing sends output after
   an exit, or still advertises ``cancel`` then;
4. each piece of work is listed at most once per snapshot, and process work is listed as its
   terminal, never as the tool call that references the terminal;
5. terminal output comes only for a terminal that was announced, and a tool call references
   only announced terminals;
6. (JetBrains AIR) an async task is spawned once, before its progress and state updates, and
   nothing follows its final state (``completed``, ``failed``, ``stopped``);
7. (the draft subagent form) a child's ``subagent_state_update`` and its own updates (stamped
   ``_meta.claudeCode.parentToolUseId``) come after its ``subagent_spawned``;
8. (a session that reports its state) between two completed turns there is an ``idle``
   (RFD v2 prompt lifecycle: consecutive completed turns have an idle boundary). A turn's end
   is its ``usage_update``: the agent sends one at the end of each turn of the main conversation
   (``core/usage.py``), so two of them with no ``idle`` between are two turns without one;
9. a tool call's ``rawInput`` and ``rawOutput`` are JSON objects when they are there, and no
   update carries ``_meta: null`` (strictly typed clients such as Toad reject anything else);
10. a tool call's status never goes back to ``pending`` once it was ``in_progress`` or
    ``paused`` (``in_progress`` and ``paused`` may alternate);
11. (v2) a child's state as its parent mirrors it (``subagent_update``) is the child's own latest
    ``state_update`` (the same snapshot on both paths), whenever the parent reports its state;
12. no ``user_message`` or ``user_message_chunk`` in a child session: children are never
    prompted by the user, live or replayed (Subagent Sessions: a message to a child is a
    ``session_message``);
13. (v2) a replay is marked: between a request that asks for one and its answer,
    ``replay_complete`` once on the session, and once on each child announced before that (at
    most once on one announced after it), and never anywhere else;
14. while a replay is under way, until its answer, no ``subagent_update`` grants ``cancel``:
    what comes before the answer is history, and history authorizes nothing (Subagent Sessions,
    the freshness boundary);
15. a tool call is shown in one session only: an interaction issued in one session is never
    moved to another (Subagent Sessions), nor is any other tool call.

v1 transcripts have no snapshots: rules 3 (final statuses, exits, cancel), 5, 6, 7, 9, 10, 12,
14 and 15 still
apply, also to the terminals of the ``_meta`` extension (Zed's): announced by
``terminal_info`` on a ``tool_call``, fed by ``terminal_output`` / ``terminal_output_delta``,
ended by ``terminal_exit``.

A client that loads or resumes a session forgets what it knew of it and of its children
(``forget``), as the RFDs require: from there on everything must be announced anew, whether the
agent replays the history or restates only what is live. Until the answer comes (``attached``),
output of a terminal the client knew may still arrive: the agent sent it before it read the
request; after it, an update of a child that was not announced again breaks rule 2. A
transcript given to ``check_updates`` says where the client asked (``Reattach``, with whether
it asked for a replay) and where it was answered (``Answered``) among the updates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

FINAL = ("completed", "failed", "cancelled")
TASK_FINAL = ("completed", "failed", "stopped")
USER_MESSAGES = ("user_message", "user_message_chunk")


class Violation(AssertionError):
    pass


@dataclass(frozen=True)
class Reattach:
    """The client asked to load or resume ``session_id``; ``replay``: with its history replayed
    (v1 ``session/load``, v2 ``session/resume`` with ``replayFrom``)."""

    session_id: str
    replay: bool = False


@dataclass(frozen=True)
class Answered:
    """The agent answered the client's load or resume of ``session_id`` (``ok``: not with an
    error, which tells the client that the replay could not finish)."""

    session_id: str
    ok: bool = True


Seen = tuple[str, dict[str, Any]] | Reattach | Answered
"""One step of a transcript as the rules follow it: an update sent to a session, or a
re-attachment's request or answer."""


@dataclass
class ReplayWindow:
    """A replay under way: from the request that asked for it to its answer."""

    marked: bool
    """Whether the replay's end is marked (v2)."""
    announced: dict[str, bool] = field(default_factory=dict)
    """The children announced until the answer, and whether before the session's own marker
    (each of those has a marker of its own; one announced later may)."""
    markers: set[str] = field(default_factory=set)
    """The sessions whose replay is marked so far."""
    done: bool = False
    """The session's own marker came."""


@dataclass
class SessionView:
    """What a client knows of one session."""

    terminals: set[str] = field(default_factory=set)
    exited: set[str] = field(default_factory=set)
    tool_status: dict[str, str] = field(default_factory=dict)
    shell_calls: set[str] = field(default_factory=set)
    """Tool calls whose content references a terminal: their work is listed as the terminal."""
    children: dict[str, str] = field(default_factory=dict)
    """Announced subagent sessions and their latest state."""
    children_work: dict[str, bool] = field(default_factory=dict)
    """Whether a child's own ``background`` list (mirrored on its parent) names work."""
    mirrors: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each child's latest state as mirrored here (its parent)."""
    own_state: dict[str, Any] | None = None
    """The session's latest ``state_update`` (less ``sessionUpdate``)."""
    caps: dict[tuple[str, str], bool] = field(default_factory=dict)
    """(item type, id) -> whether it advertises cancel now."""
    listed: list[dict[str, Any]] | None = None
    tasks: dict[str, str] = field(default_factory=dict)
    """Spawned async tasks and their latest state."""
    reports_background: bool = False
    last_state: str | None = None
    snapshots: int = 0
    turn_ended: bool = False
    """A turn ended (its ``usage_update``) and no ``idle`` came since."""


@dataclass
class BackgroundRules:
    lists: bool = False
    """The agent keeps a ``background`` list (v2): then every ``state_update`` carries it."""
    sessions: dict[str, SessionView] = field(default_factory=dict)
    drafts: set[str] = field(default_factory=set)
    """Child sessions announced in the draft form (``subagent_spawned``)."""
    tool_calls: dict[str, str] = field(default_factory=dict)
    """Each tool call shown, and the session it is shown in."""

    def view(self, session_id: str) -> SessionView:
        return self.sessions.setdefault(session_id, SessionView())

    in_flight: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    """Per session being re-attached to (or a child of one): the session the client asked for,
    and the terminals it knew before it asked."""
    children: set[str] = field(default_factory=set)
    """Every session announced as a child."""
    forgotten: set[str] = field(default_factory=set)
    """Children the client forgot when it re-attached, and that were not announced again."""
    replays: dict[str, ReplayWindow] = field(default_factory=dict)
    """By the session asked for: the replays under way."""

    def take(self, seen: Seen) -> None:
        """One step of a transcript (see ``Seen``)."""
        if isinstance(seen, Reattach):
            self.forget(seen.session_id, replay=seen.replay)
        elif isinstance(seen, Answered):
            self.attached(seen.session_id, seen.ok)
        else:
            self.see(*seen)

    def forget(self, session_id: str, asked: str | None = None, replay: bool = False) -> None:
        """The client (re)attaches to the session: what it knew of it and its children is gone."""
        view = self.sessions.pop(session_id, None)
        self.in_flight[session_id] = (asked or session_id, set(view.terminals) if view else set())
        for call_id in view.tool_status if view is not None else ():
            self.tool_calls.pop(call_id, None)
        if asked is None and replay:
            self.replays[session_id] = ReplayWindow(marked=self.lists)
        for child in view.children if view is not None else ():
            self.forgotten.add(child)
            self.forget(child, asked or session_id)

    def attached(self, session_id: str, ok: bool = True) -> None:
        """The agent answered the re-attachment: nothing it sent before reading it can follow."""
        for stale in [sid for sid, (asked, _) in self.in_flight.items() if asked == session_id]:
            del self.in_flight[stale]
        window = self.replays.pop(session_id, None)
        if window is None or not window.marked or not ok:
            return
        if not window.done:
            raise Violation(f"rule 13: the replay of {session_id} was answered without its replay_complete")
        unmarked = [
            child for child, replayed in window.announced.items() if replayed and child not in window.markers
        ]
        if unmarked:
            raise Violation(f"rule 13: children the replay announced have no replay_complete: {unmarked}")

    def _replay_of(self, session_id: str) -> tuple[str, ReplayWindow] | None:
        """The replay under way that ``session_id`` is part of (the session asked for, or a child
        announced during it)."""
        for asked, window in self.replays.items():
            if session_id == asked or session_id in window.announced:
                return asked, window
        return None

    def _marked(self, session_id: str) -> None:
        found = self._replay_of(session_id)
        if found is None or not found[1].marked:
            raise Violation(f"rule 13: replay_complete on {session_id}, which no replay under way has")
        asked, window = found
        if session_id in window.markers:
            raise Violation(f"rule 13: a second replay_complete on {session_id}")
        window.markers.add(session_id)
        window.done = window.done or session_id == asked

    def _announced(self, parent: str, child: str, update: dict[str, Any]) -> None:
        self.children.add(child)
        self.forgotten.discard(child)
        found = self._replay_of(parent)
        if found is None:
            return
        window = found[1]
        window.announced.setdefault(child, not window.done)
        caps = update.get("capabilities")
        if isinstance(caps, dict) and caps.get("cancel") is not None:
            raise Violation(
                f"rule 14: child {child} is granted cancel by history (before the answer): {update}"
            )

    def see(self, session_id: str, update: dict[str, Any]) -> None:
        view = self.view(session_id)
        kind = update.get("sessionUpdate")
        typed(update)
        if session_id in self.forgotten and session_id not in self.in_flight:
            raise Violation(
                f"rule 2: an update of child {session_id}, which was not announced again since the "
                f"client re-attached: {update}"
            )
        if kind in USER_MESSAGES and session_id in self.children:
            raise Violation(f"rule 12: a {kind} in child session {session_id}: {update}")
        if kind == "replay_complete":
            self._marked(session_id)
        if kind == "terminal_update":
            self._terminal(view, update)
        elif kind == "terminal_output_chunk":
            terminal_id = update["terminalId"]
            if terminal_id not in view.terminals:
                if terminal_id in self.in_flight.get(session_id, ("", set()))[1]:
                    return  # sent before the agent read the re-attachment
                raise Violation(f"rule 5: output of terminal {terminal_id} before its terminal_update")
            if terminal_id in view.exited:
                raise Violation(f"rule 3: output of terminal {terminal_id} after its exitStatus")
        elif kind in ("tool_call", "tool_call_update"):
            shown_in = self.tool_calls.setdefault(update["toolCallId"], session_id)
            if shown_in != session_id:
                raise Violation(
                    f"rule 15: tool call {update['toolCallId']} of {shown_in} shown in {session_id}"
                )
            self._tool_call(view, update)
        elif kind == "subagent_update":
            state = update.get("state")
            child = update["sessionId"]
            self._announced(session_id, child, update)
            view.children[child] = (
                str(state.get("state")) if isinstance(state, dict) else view.children.get(child, "running")
            )
            if isinstance(state, dict) and isinstance(state.get("background"), list):
                view.children_work[child] = bool(state["background"])
            if isinstance(state, dict):
                view.mirrors[child] = state
            self._capabilities(view, ("subagent", child), update)
        elif kind == "state_update":
            self._snapshot(session_id, view, update)
        elif kind == "usage_update":
            self._turn_ended(session_id, view)
        elif kind is not None and str(kind).startswith("async_task_"):
            self._task(view, update)
        elif kind == "subagent_spawned":
            self.drafts.add(update["subagentSessionId"])
            self.children.add(update["subagentSessionId"])
        elif kind == "subagent_state_update" and update["subagentSessionId"] not in self.drafts:
            raise Violation(f"rule 7: the end of child {update['subagentSessionId']} before its spawn")
        meta = update.get("_meta")
        stamped = meta.get("claudeCode") if isinstance(meta, dict) else None
        if isinstance(stamped, dict) and "parentToolUseId" in stamped and session_id not in self.drafts:
            raise Violation(f"rule 7: an update of child {session_id} before its subagent_spawned: {update}")

    @staticmethod
    def _task(view: SessionView, update: dict[str, Any]) -> None:
        task, kind = update["asyncTaskId"], update["sessionUpdate"]
        if kind == "async_task_spawned":
            if task in view.tasks:
                raise Violation(f"rule 6: async task {task} spawned twice")
            view.tasks[task] = "running"
            return
        state = view.tasks.get(task)
        if state is None:
            raise Violation(f"rule 6: {kind} of async task {task} before its async_task_spawned")
        if state in TASK_FINAL:
            raise Violation(f"rule 6: {kind} of async task {task} after its final state {state}")
        if kind == "async_task_state_update":
            view.tasks[task] = update["state"]

    @staticmethod
    def _capabilities(view: SessionView, key: tuple[str, str], update: dict[str, Any]) -> None:
        if "capabilities" in update:  # omitted: unchanged; null: cleared; object: replaced
            caps = update["capabilities"]
            view.caps[key] = isinstance(caps, dict) and caps.get("cancel") is not None

    def _terminal(self, view: SessionView, update: dict[str, Any]) -> None:
        terminal_id = update["terminalId"]
        if terminal_id in view.exited and update.get("output") is not None:
            raise Violation(f"rule 3: output of terminal {terminal_id} after its exitStatus")
        view.terminals.add(terminal_id)
        self._capabilities(view, ("terminal", terminal_id), update)
        if update.get("exitStatus") is not None:
            view.exited.add(terminal_id)
        if terminal_id in view.exited and view.caps.get(("terminal", terminal_id)):
            raise Violation(f"rule 3: terminal {terminal_id} advertises cancel after its exit: {update}")

    def _tool_call(self, view: SessionView, update: dict[str, Any]) -> None:
        call_id = update["toolCallId"]
        status = update.get("status")
        before = view.tool_status.get(call_id)
        if before in FINAL and status is not None:
            raise Violation(f"rule 3: tool call {call_id}'s final status {before} is followed by {status}")
        if before in ("in_progress", "paused") and status == "pending":
            raise Violation(f"rule 10: tool call {call_id} goes back from {before} to pending")
        view.tool_status[call_id] = status or before or "pending"
        self._meta_terminal(view, update)
        for item in update.get("content") or []:
            if isinstance(item, dict) and item.get("type") == "terminal":
                if item.get("terminalId") not in view.terminals:
                    raise Violation(f"rule 5: tool call {call_id} references unannounced terminal: {item}")
                view.shell_calls.add(call_id)
        self._capabilities(view, ("tool_call", call_id), update)
        if view.tool_status[call_id] in FINAL and view.caps.get(("tool_call", call_id)):
            raise Violation(f"rule 3: tool call {call_id} advertises cancel at its final status: {update}")

    @staticmethod
    def _meta_terminal(view: SessionView, update: dict[str, Any]) -> None:
        """The ``_meta`` terminal extension: announced on a ``tool_call``, then fed on updates."""
        meta = update.get("_meta") or {}
        info = meta.get("terminal_info")
        if info is not None:
            if update["sessionUpdate"] != "tool_call":
                raise Violation(f"rule 5: terminal_info on a {update['sessionUpdate']}, where it is not read")
            view.terminals.add(info["terminal_id"])
        for key in ("terminal_output", "terminal_output_delta", "terminal_exit"):
            if key not in meta:
                continue
            terminal_id = meta[key]["terminal_id"]
            if terminal_id not in view.terminals:
                raise Violation(f"rule 5: {key} of terminal {terminal_id} before its terminal_info")
            if terminal_id in view.exited:
                raise Violation(f"rule 3: {key} of terminal {terminal_id} after its terminal_exit")
        if "terminal_exit" in meta:
            view.exited.add(meta["terminal_exit"]["terminal_id"])

    @staticmethod
    def final(view: SessionView, item: dict[str, Any]) -> bool:
        if item.get("type") == "terminal":
            return item["terminalId"] in view.exited
        if item.get("type") == "tool_call":
            return view.tool_status.get(item["toolCallId"]) in FINAL
        if item.get("type") == "subagent":
            # A child is done when it is idle with no work of its own still listed.
            child = item["sessionId"]
            return view.children.get(child) == "idle" and not view.children_work.get(child, False)
        return False

    @staticmethod
    def announced(view: SessionView, item: dict[str, Any]) -> bool:
        if item.get("type") == "terminal":
            return item["terminalId"] in view.terminals
        if item.get("type") == "tool_call":
            return item["toolCallId"] in view.tool_status
        if item.get("type") == "subagent":
            return item["sessionId"] in view.children
        return True

    @staticmethod
    def ref(item: dict[str, Any]) -> str:
        return str(item.get("terminalId") or item.get("toolCallId") or item.get("sessionId"))

    @staticmethod
    def _turn_ended(session_id: str, view: SessionView) -> None:
        if view.turn_ended and view.last_state is not None:
            raise Violation(f"rule 8: two turns of {session_id} ended with no idle between them")
        view.turn_ended = True

    def _snapshot(self, session_id: str, view: SessionView, update: dict[str, Any]) -> None:
        view.snapshots += 1
        view.last_state = update["state"]
        view.own_state = {key: value for key, value in update.items() if key != "sessionUpdate"}
        self.mirrored(session_id, view)
        if view.last_state == "idle":
            view.turn_ended = False
        background = update.get("background")
        if not isinstance(background, list):
            if view.reports_background or self.lists:
                raise Violation(
                    f"rule 1: state_update #{view.snapshots} of {session_id} has no background list"
                )
            return
        view.reports_background = True
        keys = [json.dumps(item, sort_keys=True) for item in background]
        if len(set(keys)) != len(keys):
            raise Violation(f"rule 4: an item is listed twice: {background}")
        for item in background:
            if not self.announced(view, item):
                raise Violation(f"rule 2: {item} is listed before it was announced")
            if self.final(view, item):
                raise Violation(f"rule 3: {item} is listed after its final status")
            if item.get("type") == "tool_call" and self.ref(item) in view.shell_calls:
                raise Violation(f"rule 4: a shell is listed as its tool call {self.ref(item)}: {background}")
            self.listing(view, item, background)
        for item in view.listed or []:
            if item not in background and not self.final(view, item):
                raise Violation(f"rule 3: {item} is removed before its final status (list: {background})")
        view.listed = background

    def mirrored(self, session_id: str, view: SessionView) -> None:
        """Rule 11: when a session reports its state, what it mirrors of each child is the child's
        own latest state (a child and its mirror are reported together, in either order)."""
        for child, mirror in view.mirrors.items():
            own = self.sessions[child].own_state if child in self.sessions else None
            if own is not None and own != mirror:
                raise Violation(f"rule 11: {session_id} mirrors child {child} as {mirror}, not as {own}")

    def finish(self) -> None:
        """The transcript ended: the last mirrors too must be the children's own states."""
        for session_id, view in list(self.sessions.items()):
            self.mirrored(session_id, view)

    def listing(self, view: SessionView, item: dict[str, Any], background: list[dict[str, Any]]) -> None:
        """A hook for checks of one listed item that need more than the transcript."""


def typed(update: dict[str, Any]) -> None:
    """Rule 9."""
    if "_meta" in update and not isinstance(update["_meta"], dict):
        raise Violation(f"rule 9: _meta that is not an object: {update}")
    if update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
        return
    for key in ("rawInput", "rawOutput"):
        if key in update and not isinstance(update[key], dict):
            raise Violation(f"rule 9: {key} that is not an object: {update}")


def check_updates(updates: Iterable[Seen], version: int) -> BackgroundRules:
    """Run the rules over a transcript: ``(session id, update)`` pairs in the order they were
    sent, and where the client re-attached (``Reattach``, ``Answered``)."""
    rules = BackgroundRules(lists=version >= 2)
    for seen in updates:
        rules.take(seen)
    rules.finish()
    return rules
