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
   update carries ``_meta: null`` (strictly typed clients such as Toad reject anything else).

v1 transcripts have no snapshots: rules 3 (final statuses, exits, cancel), 5, 6, 7 and 9 still
apply, also to the terminals of the ``_meta`` extension (Zed's): announced by
``terminal_info`` on a ``tool_call``, fed by ``terminal_output`` / ``terminal_output_delta``,
ended by ``terminal_exit``.

A client that loads or resumes a session forgets what it knew of it and of its children
(``forget``), as the RFDs require: from there on everything must be announced anew, whether the
agent replays the history or restates only what is live. Until the answer comes (``attached``),
output of a terminal the client knew may still arrive: the agent sent it before it read the
request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

FINAL = ("completed", "failed", "cancelled")
TASK_FINAL = ("completed", "failed", "stopped")


class Violation(AssertionError):
    pass


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

    def view(self, session_id: str) -> SessionView:
        return self.sessions.setdefault(session_id, SessionView())

    in_flight: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    """Per session being re-attached to (or a child of one): the session the client asked for,
    and the terminals it knew before it asked."""

    def forget(self, session_id: str, asked: str | None = None) -> None:
        """The client (re)attaches to the session: what it knew of it and its children is gone."""
        view = self.sessions.pop(session_id, None)
        self.in_flight[session_id] = (asked or session_id, set(view.terminals) if view else set())
        for child in view.children if view is not None else ():
            self.forget(child, asked or session_id)

    def attached(self, session_id: str) -> None:
        """The agent answered the re-attachment: nothing it sent before reading it can follow."""
        for stale in [sid for sid, (asked, _) in self.in_flight.items() if asked == session_id]:
            del self.in_flight[stale]

    def see(self, session_id: str, update: dict[str, Any]) -> None:
        view = self.view(session_id)
        kind = update.get("sessionUpdate")
        typed(update)
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
            self._tool_call(view, update)
        elif kind == "subagent_update":
            state = update.get("state")
            child = update["sessionId"]
            view.children[child] = (
                str(state.get("state")) if isinstance(state, dict) else view.children.get(child, "running")
            )
            if isinstance(state, dict) and isinstance(state.get("background"), list):
                view.children_work[child] = bool(state["background"])
            self._capabilities(view, ("subagent", child), update)
        elif kind == "state_update":
            self._snapshot(session_id, view, update)
        elif kind == "usage_update":
            self._turn_ended(session_id, view)
        elif kind is not None and str(kind).startswith("async_task_"):
            self._task(view, update)
        elif kind == "subagent_spawned":
            self.drafts.add(update["subagentSessionId"])
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


def check_updates(updates: Iterable[tuple[str, dict[str, Any]]], version: int) -> BackgroundRules:
    """Run the rules over ``(session id, update)`` pairs in the order they were sent."""
    rules = BackgroundRules(lists=version >= 2)
    for session_id, update in updates:
        rules.see(session_id, update)
    return rules
