"""Test-only faults for the agent under test, which loads this module at start-up when its
``PYTHONPATH`` names this directory (``tests.support.fault_hook.env``). Nothing of it is in the
agent: it stands in for what the real parts cannot be made to do on demand.

``CLAUDE_BG_ACP_TEST_FAULT`` names the fault:

- ``output``: the session core raises on background output that contains ``FAULT_MARK``, as a
  bug would: one session's task raises (the agent checks what clients send, so no input of
  theirs can make it; before issue 19 a malformed ``mcpServers`` entry did);
- ``restart``: building the options of a Claude Code that resumes a conversation (a restart
  after a crash) raises, as a malformed ``mcpServers`` entry did;
- ``late-watcher``: asyncio's child watcher collects an exited Claude Code half a second late,
  as it does on a loaded machine, where its thread is not scheduled at once.
"""

from __future__ import annotations

import os
import time
from typing import Any

FAULT_MARK = b"FAULT-INJECTED-HERE"
LATE = 0.5

fault = os.environ.get("CLAUDE_BG_ACP_TEST_FAULT")

if fault == "output":
    from claude_bg_acp.core import events
    from claude_bg_acp.core.session import SessionCore

    handle = SessionCore.handle

    def faulty_handle(self: SessionCore, event: events.Event, now: float) -> Any:
        if isinstance(event, events.OutputRead) and FAULT_MARK in event.data:
            raise RuntimeError("injected fault")
        return handle(self, event, now)

    SessionCore.handle = faulty_handle  # type: ignore[method-assign]

elif fault == "restart":
    from claude_bg_acp.claude import options

    session_options = options.session_options

    def faulty_options(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("resume") is not None:
            raise KeyError("name")
        return session_options(*args, **kwargs)

    options.session_options = faulty_options

elif fault == "late-watcher":
    from asyncio import unix_events

    do_waitpid = unix_events.ThreadedChildWatcher._do_waitpid  # type: ignore[attr-defined]  # private, not in typeshed

    def late_waitpid(self: Any, loop: Any, pid: int, callback: Any, args: Any) -> None:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # until it ended, leaving it a zombie
        time.sleep(LATE)
        do_waitpid(self, loop, pid, callback, args)

    unix_events.ThreadedChildWatcher._do_waitpid = late_waitpid  # type: ignore[attr-defined]
