"""A client attaching to a stored or live session: the replay, then the current state.

The stored conversation is replayed by ``History`` (apart from everything live, as of the
replay's start; part by part as it is read, other events may come in between, and what they
say waits for the replay's end: ``attaching``), its end marked, and then the current state:
each listed item and each child the client must know of restated by its owner (a child before
its own work, its state with its own list after), and the state snapshot; after a replay, the
working children's current state and ``cancel`` once it has the answer.
"""

from __future__ import annotations

from claude_bg_acp.core import background_list
from claude_bg_acp.core import events as ev
from claude_bg_acp.core.attaching import Attach, ReplayCompleted
from claude_bg_acp.core.background_facts import WorkRestated
from claude_bg_acp.core.effects import Effect
from claude_bg_acp.core.history import History, Live
from claude_bg_acp.core.plan import Plan
from claude_bg_acp.core.presenting import Fact
from claude_bg_acp.core.routes import Parts, Routes
from claude_bg_acp.core.task_routing import TaskRouting


class AttachRouting:
    def __init__(
        self, parts: Parts, attach: Attach, plans: dict[str, Plan], tasks: TaskRouting, routes: Routes
    ) -> None:
        """``plans``: the sessions' plans, which a replay's task tools fold into."""
        self.session_id, self.policy, self.foreground = parts.session_id, parts.policy, parts.foreground
        self.background, self.subagents = parts.background, parts.subagents
        self.schedules, self.tool_uses = parts.schedules, parts.tool_uses
        self.attach = attach
        self.plans = plans
        self.tasks = tasks
        self.routes = routes
        self.history: History | None = None
        """The replay under way, between its first part and its end."""

    def hold(self) -> list[Effect]:
        """A client asks to re-attach with a replay: what the session says waits for it."""
        self.attach.hold()
        return []

    def recall(self, conversation: ev.StoredConversation | ev.OutputRecalled) -> list[Effect]:
        """A part of the stored conversation; the first says what runs here now (left to the
        live session), as of the replay's start."""
        self.attach.hold()
        if self.history is None:
            live = Live(
                tasks=self.background.unfinished() | {task.task_id for task in self.tasks.registry.live()},
                children=self.subagents.working(),
            )
            self.history = History(
                self.session_id, self.background.cwd, self.policy.subagents_are_sessions, live
            )
        return self.routes.present(self.history.replay(conversation))

    def recalled(self, complete: bool) -> list[Effect]:
        """The replay's end, marked when all of it was sent; then the working children it did
        not announce, what it lacked, and what was said live meanwhile."""
        history, self.history = self.history, None
        facts: list[Fact] = [*history.unnoted()] if history is not None else []
        facts += [ReplayCompleted(self.session_id)] if complete else []
        if history is not None:
            for session_id, plan in history.plans.items():
                self.plans.setdefault(session_id, plan)  # the task tools fold into what is known
            facts += self._unreplayed(history, complete)
            facts += history.incomplete() if complete else []
        return self.routes.present(facts) + list(self.attach.replayed(complete))

    def _unreplayed(self, history: History, marked: bool) -> list[Fact]:
        """The children working when the replay began that it did not announce (their
        conversation is not stored yet), with their ancestors: announced before anything live
        of theirs that was held, not cancellable (what the client hears before the answer is
        history), parents first."""
        wanted: set[str] = set()
        for working in history.live.children:
            child = self.subagents.children.get(working)
            while child is not None and child.session_id not in history.subagents.children:
                wanted.add(child.session_id)
                child = self.subagents.children.get(child.parent_id)
        facts: list[Fact] = []
        for child_id in self.subagents.children:  # in the order they were announced
            if child_id in wanted:
                facts.append(self.subagents.restate(child_id, cancellable=False))
                facts += [ReplayCompleted(child_id)] if marked else []
        return facts

    def resync(self) -> list[Effect]:
        """Each listed item and each child the client must know of as it is now, then the state
        with the list (RFD: resume restores it)."""
        restated = self._restated(self.session_id, cancellable=not self.attach.synced())
        return self.routes.present(restated) + self.routes.present([self.foreground.snapshot()])

    def _restated(self, session_id: str, cancellable: bool) -> list[Fact]:
        """What ``session_id`` lists, each as it is now, and its children that the client must
        know of; a child is introduced before its own work is restated, and its state (with its
        own list) follows that. Scheduled work cannot be cancelled (``schedules``)."""
        restated = background_list.restate(
            self.background.items, session_id, self.background.cwd, self.tool_uses.get
        )
        facts: list[Fact] = list(restated)
        for ref in self.schedules.listed(session_id):
            use = self.tool_uses.get(ref)
            name, tool_input = (use.name, use.tool_input) if use is not None else (None, {})
            facts.append(
                WorkRestated(session_id, ref, "pending", None if use else ref, name, tool_input, False)
            )
        for child in self._restating(session_id):
            facts += [
                self.subagents.restate(child, cancellable),
                *self._restated(child, cancellable),
                self.subagents.snapshot(child),
            ]
        return facts

    def _restating(self, session_id: str) -> list[str]:
        """The children of ``session_id`` a client (re)attaching must know of: those it lists,
        those working (a foreground child is not listed, and its traffic goes on), and those on
        the way to one (a child is never heard of before its parent)."""
        entries = background_list.listed(self.background.items, session_id)
        listed = {entry.ref for entry in entries if entry.kind == "subagent"}
        working = self.subagents.working()
        return [
            child.session_id
            for child in self.subagents.children.values()
            if child.parent_id == session_id
            and (
                child.session_id in listed or child.session_id in working or self._restating(child.session_id)
            )
        ]
