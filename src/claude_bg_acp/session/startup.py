"""A session's start-up state: how far its Claude Code's first start went, and whether a Claude
Code's stream is open.

Theory of operation. The supervisor (``session.supervisor``) moves both as Claude Code goes,
beside the host's phase (``session.lifecycle``): the phase says where the session is with its
Claude Code; these say what the requests opening the session wait for, and whether a closing
line may still come. The first start (``FirstStart``) is what those requests wait for: its
process exists (``spawned``), it said what it offers (``ready``: models, commands, the settings
in effect), it has the conversation (``outcome``), or why it could not start:

==============  ======================  ======================================================  ==============
first start     trigger                 what happens                                            next
==============  ======================  ======================================================  ==============
(new)           ``MADE``                the session is made: its Claude Code starts (or the     ``STARTING``
                                        start begun before the session existed goes on)
``STARTING``    ``SPAWN``               its process exists: a later ``session/new`` in the      ``SPAWNED``
                                        folder goes on (a start the system refuses fails the
                                        request, one that runs is answered)
``READY``       ``SPAWN``               a start after it went down spawns: nothing more to      ``READY``
                                        wait for
``STARTED``     ``SPAWN``               a restart spawns                                        ``STARTED``
``STARTING``,   ``ANNOUNCE``            it said what it offers: the first ``session/new`` in    ``READY``
``SPAWNED``,                            the folder is answered with real options (its spawn
``READY``                               told or not)
``STARTED``     ``ANNOUNCE``            a restart said what it offers                           ``STARTED``
``READY``       ``SERVE``               it has the conversation: ``session/load`` and           ``STARTED``
                                        ``session/resume`` attach
``STARTED``     ``SERVE``               a restart has it too                                    ``STARTED``
``STARTING``,   ``WENT_DOWN``           it went down once the client knew of the session: it    ``READY``
``SPAWNED``,                            starts again; no request waits for what it offers
``READY``
``STARTED``     ``WENT_DOWN``           it went down after the first start: it starts again     ``STARTED``
``STARTING``,   ``FAIL``                it failed before the client was told of the session,    ``FAILED``
``SPAWNED``,                            could not resume the stored conversation, failed for
``READY``                               good, or the session ended first: the requests
                                        waiting get why
``STARTED``     ``FAIL``                the session ends after the first start: nothing waits   ``STARTED``
``FAILED``      ``FAIL``                the session ends after it failed                        ``FAILED``
==============  ======================  ======================================================  ==============

Claude Code's stream (``Stream``), open from its connection until it ends or is stopped: while
it is open, Claude Code may still append a closing line to a shell's output file, which the
host waits for a moment (``session.host``'s ``TRAILER_WAIT``):

==============  ======================  ======================================================  ==============
stream          trigger                 what happens                                            next
==============  ======================  ======================================================  ==============
(new)           ``MADE``                no Claude Code is connected yet                         ``CLOSED``
``CLOSED``      ``CONNECTED``           a Claude Code connected                                 ``OPEN``
``OPEN``,       ``ENDED``               its stream ended (it exited, crashed, or was stopped    ``CLOSED``
``CLOSED``                              at the close: the reader and the stop both tell it)
==============  ======================  ======================================================  ==============

Each moves through its table (``FIRST_START``, ``STREAM``) with the trigger, as the host's does.
"""

from __future__ import annotations

import enum

import anyio

from claude_bg_acp.acp.jsonrpc import RpcError
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.session.waiter import Waiter


class FirstPhase(enum.Enum):
    STARTING = "starting"
    SPAWNED = "spawned"
    READY = "ready"
    STARTED = "started"
    FAILED = "failed"


class FirstTrigger(enum.Enum):
    """What moves the first start (the trigger column of its table)."""

    MADE = enum.auto()
    SPAWN = enum.auto()
    ANNOUNCE = enum.auto()
    SERVE = enum.auto()
    WENT_DOWN = enum.auto()
    FAIL = enum.auto()


STARTING, SPAWNED, READY = FirstPhase.STARTING, FirstPhase.SPAWNED, FirstPhase.READY
STARTED, FAILED = FirstPhase.STARTED, FirstPhase.FAILED

FIRST_START: Transitions[FirstPhase, FirstTrigger] = Transitions.of(
    "first start",
    FirstPhase,
    FirstTrigger,
    ((None,), FirstTrigger.MADE, STARTING),
    ((STARTING,), FirstTrigger.SPAWN, SPAWNED),
    ((READY,), FirstTrigger.SPAWN, READY),
    ((STARTED,), FirstTrigger.SPAWN, STARTED),
    ((STARTING, SPAWNED, READY), FirstTrigger.ANNOUNCE, READY),
    ((STARTED,), FirstTrigger.ANNOUNCE, STARTED),
    ((READY,), FirstTrigger.SERVE, STARTED),
    ((STARTED,), FirstTrigger.SERVE, STARTED),
    ((STARTING, SPAWNED, READY), FirstTrigger.WENT_DOWN, READY),
    ((STARTED,), FirstTrigger.WENT_DOWN, STARTED),
    ((STARTING, SPAWNED, READY), FirstTrigger.FAIL, FAILED),
    ((STARTED,), FirstTrigger.FAIL, STARTED),
    ((FAILED,), FirstTrigger.FAIL, FAILED),
)


class FirstStart:
    """The first start of the session's Claude Code, which the requests opening it wait for."""

    def __init__(self) -> None:
        self.phase = FIRST_START.move(None, FirstTrigger.MADE)
        self.spawned = anyio.Event()
        """Its process exists (or it will not start)."""
        self.ready = anyio.Event()
        """It said what it offers (or went down before)."""
        self.outcome = Waiter()
        """It has the conversation; or why it could not start."""

    @property
    def settled(self) -> bool:
        """It has the conversation, or could not start."""
        return self.phase in (STARTED, FAILED)

    def spawn(self) -> None:
        self.phase = FIRST_START.move(self.phase, FirstTrigger.SPAWN)
        self.spawned.set()

    def announce(self) -> None:
        self.phase = FIRST_START.move(self.phase, FirstTrigger.ANNOUNCE)
        self.ready.set()

    def serve(self) -> None:
        was, self.phase = self.phase, FIRST_START.move(self.phase, FirstTrigger.SERVE)
        if was is not STARTED:
            self.outcome.settle()

    def went_down(self) -> None:
        self.phase = FIRST_START.move(self.phase, FirstTrigger.WENT_DOWN)
        self.ready.set()

    def failed(self, error: RpcError) -> None:
        was, self.phase = self.phase, FIRST_START.move(self.phase, FirstTrigger.FAIL)
        if self.phase is FAILED and was is not FAILED:
            self.outcome.settle(error=error)
        self.spawned.set()
        self.ready.set()


class StreamPhase(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"


class StreamTrigger(enum.Enum):
    """What opens and closes Claude Code's stream (the trigger column of its table)."""

    MADE = enum.auto()
    CONNECTED = enum.auto()
    ENDED = enum.auto()


STREAM: Transitions[StreamPhase, StreamTrigger] = Transitions.of(
    "stream",
    StreamPhase,
    StreamTrigger,
    ((None,), StreamTrigger.MADE, StreamPhase.CLOSED),
    ((StreamPhase.CLOSED,), StreamTrigger.CONNECTED, StreamPhase.OPEN),
    ((StreamPhase.OPEN, StreamPhase.CLOSED), StreamTrigger.ENDED, StreamPhase.CLOSED),
)


class Stream:
    """Whether the latest Claude Code's stream is open."""

    def __init__(self) -> None:
        self.phase = STREAM.move(None, StreamTrigger.MADE)

    def move(self, trigger: StreamTrigger) -> None:
        self.phase = STREAM.move(self.phase, trigger)

    @property
    def open(self) -> bool:
        return self.phase is StreamPhase.OPEN
