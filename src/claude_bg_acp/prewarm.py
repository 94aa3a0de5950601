"""The Claude side imported ahead of need, a module at a time, out of a listing's way.

Importing what sessions need (the SDK, the core, the session host) takes a few hundred
milliseconds of CPU, most of the wait of a first ``session/new`` or ``session/load``. The agent
starts it in a thread of its own once it has answered ``initialize`` (``start``), so that a
session the client opens later finds it done. Python runs one thread at a time, though, and an
editor asks for ``session/list`` as its thread list opens, right after ``initialize``: a
listing that shared the interpreter with the import would take about as long as the import. So
the import goes a module at a time (``STEPS``, none longer than about 50 ms, the last one all
of it), and while a listing runs (``held``) it waits before its next step. A request that needs
a module imports it itself (the import system has it wait for a module that this thread is
importing, and never imports one twice), so nothing ever waits for the prewarm as such.

===========  ========================  ==========================================
phase        on                        next
===========  ========================  ==========================================
not started  ``start``                 importing
importing    a listing (``held``)      held: the step under way ends, no next one
held         every listing is done     importing
importing    the last step done        done
===========  ========================  ==========================================
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterator
from types import ModuleType

STEPS = (
    "claude_bg_acp.claude.runner",  # first: a new session starts Claude Code with it alone
    "claude_bg_acp.claude.listing",
    "claude_bg_acp.claude.store",
    "claude_bg_acp.acp.updates",
    "claude_bg_acp.core.background",
    "claude_bg_acp.core.history",
    "claude_bg_acp.core.presenting",
    "claude_bg_acp.session.host",
)
"""In the order a session needs them; each step imports what earlier ones did not."""


class Prewarm:
    def __init__(
        self,
        steps: tuple[str, ...] = STEPS,
        importer: Callable[[str], ModuleType] = importlib.import_module,
    ) -> None:
        self._steps = steps
        self._import = importer
        self._thread: threading.Thread | None = None
        self._listings = 0
        self._clear = threading.Event()
        """Set while no listing runs: the import may take its next step."""
        self._clear.set()

    def start(self, first: Callable[[], object] = lambda: None) -> None:
        """Start importing, unless it was started before (a later ``initialize``), ``first``
        done first (as a step)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(first,), name="prewarm", daemon=True)
            self._thread.start()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """While this runs, the import takes no further step (call it from one thread only: the
        event loop's)."""
        self._listings += 1
        self._clear.clear()
        try:
            yield
        finally:
            self._listings -= 1
            if not self._listings:
                self._clear.set()

    def _run(self, first: Callable[[], object]) -> None:
        self._clear.wait()
        first()
        for name in self._steps:
            self._clear.wait()
            self._import(name)
