"""A session host's lifecycle: where the session is with its Claude Code, as one phase.

Theory of operation. The supervisor (``session.supervisor``) moves the phase as Claude Code
starts, is served, goes down and is started again; ``close`` and a failure end it, and the
host's ``run`` returning ends it for good:

==============  ======================  ======================================================  ==============
host            trigger                 what happens                                            next
==============  ======================  ======================================================  ==============
(new)           ``MADE``                the session is made, and Claude Code starts for it (or  ``STARTING``
                                        the start begun before the session existed goes on)
``STARTING``    ``CONNECTED``           Claude Code has connected: its messages are read and    ``SERVING``
                                        the core's commands performed
``STARTING``    ``START_FAILED``        Claude Code could not start                             ``DOWN``
``SERVING``     ``STREAM_ENDED``        its stream ended (it exited or crashed): the command    ``DOWN``
                                        in flight is dropped, what it left running is
                                        stopped, and the core is told
``DOWN``        ``RESTART``             ``RESTART_DELAY`` (times the failures in a row)         ``STARTING``
                                        passes: Claude Code is started again, resuming the
                                        conversation
``DOWN``        ``TRUSTED``             it was stopped for the user's trust: started again at   ``STARTING``
                                        once, with the folder's settings
``DOWN``        ``FATAL``               that was the ``MAX_RESTARTS``-th failure in a row:      ``GONE``
                                        Claude Code is gone for good, and prompts are refused
                                        with the reason
``SERVING``     ``CLOSE``               ``close``: the tasks the close stops get ``STOP_WAIT``  ``STOPPING``
                                        to confirm their end through Claude Code (which still
                                        takes commands), then it is stopped (``EXIT_GRACE``
                                        per step), and what it left running; the files of
                                        stopped terminals get ``DRAIN_BOUND`` to be read to
                                        their end
``CLOSING``     ``CONNECTED``           a start under way at the close connects: it is          ``STOPPING``
                                        stopped as above
``STARTING``,   ``CLOSE``               ``close`` while no Claude Code is served                ``CLOSING``
``DOWN``,
``GONE``
``DOWN``,       ``FIRST_START_FAILED``  the first start failed before the client was told of    ``FAILED``
``CLOSING``                             the session, or Claude Code cannot resume the stored
                                        conversation: the request waiting for the session
                                        gets why
``STARTING``,   ``TASK_RAISED``         a task of the session raised: Claude Code and what it   ``FAILED``
``SERVING``,                            left running are stopped, the client's permission
``DOWN``,                               requests withdrawn, and every request waiting on the
``GONE``,                               session fails with the reason
``STOPPING``,
``CLOSING``,
``FAILED``
any             ``RUN_RETURNED``        ``run`` returns: the last updates are written (within   ``ENDED``
                                        ``FLUSH_BOUND``) and nothing of the session runs any
                                        more
==============  ======================  ======================================================  ==============

Every change goes through ``HostLifecycle.move`` with its trigger, held to that table (``HOST``), and is
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

from claude_bg_acp.core.lifecycle import Transitions

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


class HostTrigger(enum.Enum):
    """What moves the host (the trigger column of its table)."""

    MADE = enum.auto()
    CONNECTED = enum.auto()
    START_FAILED = enum.auto()
    STREAM_ENDED = enum.auto()
    RESTART = enum.auto()
    TRUSTED = enum.auto()
    FATAL = enum.auto()
    CLOSE = enum.auto()
    FIRST_START_FAILED = enum.auto()
    TASK_RAISED = enum.auto()
    RUN_RETURNED = enum.auto()


HOST: Transitions[HostPhase, HostTrigger] = Transitions.of(
    "host",
    HostPhase,
    HostTrigger,
    ((None,), HostTrigger.MADE, STARTING),
    ((STARTING,), HostTrigger.CONNECTED, SERVING),
    ((STARTING,), HostTrigger.START_FAILED, DOWN),
    ((SERVING,), HostTrigger.STREAM_ENDED, DOWN),
    ((DOWN,), HostTrigger.RESTART, STARTING),
    ((DOWN,), HostTrigger.TRUSTED, STARTING),
    ((DOWN,), HostTrigger.FATAL, GONE),
    ((SERVING,), HostTrigger.CLOSE, STOPPING),
    ((CLOSING,), HostTrigger.CONNECTED, STOPPING),
    ((STARTING, DOWN, GONE), HostTrigger.CLOSE, CLOSING),
    ((DOWN, CLOSING), HostTrigger.FIRST_START_FAILED, FAILED),
    ((STARTING, SERVING, DOWN, GONE, STOPPING, CLOSING, FAILED), HostTrigger.TASK_RAISED, FAILED),
    (tuple(HostPhase), HostTrigger.RUN_RETURNED, ENDED),
)


class HostLifecycle:
    """The phase of one session host, which its tasks can wait for."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.phase: HostPhase = HOST.move(None, HostTrigger.MADE)
        self._moved = anyio.Event()

    def move(self, trigger: HostTrigger) -> None:
        """Go where the table leads on ``trigger`` (raises ``IllegalTransition`` if nowhere), and
        wake whoever waits."""
        was = self.phase
        self.phase = to = HOST.move(was, trigger)
        if to is not was:
            log.debug("session %s: %s -> %s", self._session_id, was.name, to.name)
            self._moved.set()
            self._moved = anyio.Event()

    async def until(self, *phases: HostPhase) -> None:
        """Return once the phase is one of ``phases``."""
        while self.phase not in phases:
            await self._moved.wait()
