"""The lifeline: a Claude Code, and all it started, still stop when its agent dies.

A small Python process plays the agent (on Linux, and in the portable mode, as on macOS): it
starts two ``sleep`` processes in sessions of their own, as the SDK starts Claude Code, ties
both to the lifeline and unties one again (as the runner does once it has reaped a Claude Code),
and starts a third that carries its mark, as everything a Claude Code starts does, in a session
of its own with no descriptor of the agent's (a daemon a task started), which on Linux goes too.
Then it is SIGKILLed, which runs none of its cleanup. The live side is
``test_live_lifecycle``'s SIGKILL test and ``test_live_hardening``'s daemon.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import pytest

from claude_bg_acp.platform import PORTABLE_ENV
from tests.support.processes import processes_with, running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="looks at /proc")

AGENT = """
import os, subprocess, sys, time
from claude_bg_acp.claude import lifeline, orphans

tied = subprocess.Popen(["sleep", "60"], start_new_session=True)
untied = subprocess.Popen(["sleep", "60"], start_new_session=True)
lifeline.tie(tied.pid)
lifeline.tie(untied.pid)
lifeline.untie(untied.pid)
marked = subprocess.Popen(
    ["sleep", "60"],
    env={**os.environ, orphans.OWNER_ENV: lifeline.owner()},
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
print(tied.pid, untied.pid, marked.pid, flush=True)
time.sleep(60)
"""


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)  # another process's life: there is no event to await
    return False


def start_agent(portable: bool) -> tuple[subprocess.Popen[str], list[int], str]:
    """The agent, its tied, untied and marked process, and a marker every process it starts
    carries."""
    token = uuid.uuid4().hex
    env = {**os.environ, "LIFELINE_TEST": token}
    env.pop(PORTABLE_ENV, None)
    if portable:
        env[PORTABLE_ENV] = "1"
    agent = subprocess.Popen([sys.executable, "-c", AGENT], stdout=subprocess.PIPE, text=True, env=env)
    assert agent.stdout is not None
    return agent, list(map(int, agent.stdout.readline().split())), f"LIFELINE_TEST={token}"


@pytest.mark.parametrize("portable", [False, True], ids=["linux", "portable"])
def test_a_killed_agent_takes_what_it_tied_and_marked_along_and_nothing_else(portable: bool) -> None:
    agent, (tied, untied, marked), marker = start_agent(portable)
    try:
        assert running(tied) and running(untied) and running(marked)
        agent.kill()
        agent.wait(5)
        assert wait_until(lambda: not running(tied)), "the tied process outlived its agent"
        # The watcher is done once only what it leaves carries the agent's environment: the
        # untied process, and in the portable mode (macOS has no /proc) the marked one.
        left = {untied, marked} if portable else {untied}
        assert wait_until(lambda: set(processes_with(marker)) == left), processes_with(marker)
        assert running(untied)
    finally:
        for pid in (tied, untied, marked):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
