"""A session host's lifecycle: where the session is with its Claude Code, as one phase.

Theory of operation. The supervisor (``session.supervisor``) moves the phase as Claude Code
starts, is served, goes down and is started again; ``close`` and a failure end it, and the
host's ``run`` returning ends it for good:

==============  ================================================================  ==============
host            what happens                                                      next
==============  ================================================================  ==============
(new)           the session is made, and Claude Code starts for it (or the start  ``STARTING``
                begun before the session existed goes on)
``STARTING``    Claude Code has connected: its messages are read and the core's   ``SERVING``
                commands performed
``STARTING``,   Claude Code could not start, or its stream ended (it exited or    ``DOWN``
``SERVING``     crashed): the command in flight is dropped, what it left running
                is stopped, and the core is told
``DOWN``        ``RESTART_DELAY`` (times the failures in a row) passes: Claude    ``STARTING``
                Code is started again, resuming the conversation (at once, with
                the folder's settings, when it was stopped for the user's trust)
``DOWN``        that was the ``MAX_RESTARTS``-th failure in a row: Claude Code    ``GONE``
                is gone for good, and prompts are refused with the reason
``SERVING``     ``close``: the tasks the close stops get ``STOP_WAIT`` to         ``STOPPING``
                confirm their end through Claude Code (which still takes
                commands), then it is stopped (``EXIT_GRACE`` per step), and
                what it left running; the files of stopped terminals get
                ``DRAIN_BOUND`` to be read to their end
``CLOSING``     a start under way at the close connects: it is stopped as above   ``STOPPING``
``STARTING``,   ``close`` while no Claude Code is served                          ``CLOSING``
``DOWN``,
``GONE``
``DOWN``,       the first start failed before the client was told of the          ``FAILED``
``CLOSING``     session, or Claude Code cannot resume the stored conversation:
                the request waiting for the session gets why
``STARTING``,   a task of the session raised: Claude Code and what it left        ``FAILED``
``SERVING``,    running are stopped, the client's permission requests withdrawn,
``DOWN``,       and every request waiting on the session fails with the reason
``GONE``,
``STOPPING``,
``CLOSING``
any             ``run`` returns: the last updates are written (within             ``ENDED``
                ``FLUSH_BOUND``) and nothing of the session runs any more
==============  ================================================================  ==============

Every change goes through ``HostLifecycle.move``, held to that table (``HOST``), and is
logged (DEBUG). A task waits for a phase with ``until``: each move wakes whoever waits, and
each checks again. What the phase decides besides: the core's commands go to the Claude Code
connected last in ``SERVING`` and ``STOPPING`` only (once stopped, it fails them at once), and
wait in the other phases; from ``STOPPING`` on (``ENDING``) a close has begun or the session is
over, and it takes no request.
"""

from __future__ import annotations

import enum
import logging

import anyio

from claude_bg_acp.core.lifecycle import Lifecycle

log = logging.getLogger(__name__)


class HostPhase(enum.Enum):
    STARTING = "starting"
    SERVING = "serving"
    DOWN = "down"
    GONE = "gone"
    STOPPING = "stopping"
    CLOSING = "closing"
    FAILED = "failed"
    ENDED = "ended"


STARTING, SERVING, DOWN, GONE = HostPhase.STARTING, HostPhase.SERVING, HostPhase.DOWN, HostPhase.GONE
STOPPING, CLOSING, FAILED, ENDED = HostPhase.STOPPING, HostPhase.CLOSING, HostPhase.FAILED, HostPhase.ENDED

ENDING = (STOPPING, CLOSING, FAILED, ENDED)
"""A close has begun, or the session is over."""
WITH_CLAUDE = (SERVING, STOPPING)
"""A connected Claude Code takes the core's commands."""

HOST = Lifecycle.of(
    "host",
    HostPhase,
    ((None,), STARTING),
    ((STARTING,), SERVING),
    ((STARTING, SERVING), DOWN),
    ((DOWN,), STARTING),
    ((DOWN,), GONE),
    ((SERVING, CLOSING), STOPPING),
    ((STARTING, DOWN, GONE), CLOSING),
    ((DOWN, CLOSING), FAILED),
    ((STARTING, SERVING, DOWN, GONE, STOPPING, CLOSING), FAILED),
    (tuple(HostPhase), ENDED),
)


class HostLifecycle:
    """The phase of one session host, which its tasks can wait for."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.phase = HOST.move(None, STARTING)
        self._moved = anyio.Event()

    def move(self, to: HostPhase) -> None:
        """Go to ``to`` if the table leads there (raises ``IllegalTransition`` if not), and wake
        whoever waits."""
        was = self.phase
        self.phase = HOST.move(was, to)
        if to is not was:
            log.debug("session %s: %s -> %s", self._session_id, was.name, to.name)
            self._moved.set()
            self._moved = anyio.Event()

    async def until(self, *phases: HostPhase) -> None:
        """Return once the phase is one of ``phases``."""
        while self.phase not in phases:
            await self._moved.wait()
