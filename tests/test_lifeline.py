"""The lifeline: where no parent-death signal is, a Claude Code still stops when its agent dies.

A small Python process plays the agent (in the portable mode, as on macOS): it starts two
``sleep`` processes in sessions of their own, as the SDK starts Claude Code, ties both to the
lifeline and unties one again (as the runner does once it has reaped a Claude Code). Then it is
SIGKILLed, which runs none of its cleanup. The live side is ``test_live_lifecycle``'s SIGKILL test
in the portable run.
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
import subprocess, sys, time
from claude_bg_acp.claude import lifeline

tied = subprocess.Popen(["sleep", "60"], start_new_session=True)
untied = subprocess.Popen(["sleep", "60"], start_new_session=True)
lifeline.tie(tied.pid)
lifeline.tie(untied.pid)
lifeline.untie(untied.pid)
print(tied.pid, untied.pid, flush=True)
time.sleep(60)
"""


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)  # another process's life: there is no event to await
    return False


def start_agent(portable: bool) -> tuple[subprocess.Popen[str], int, int, str]:
    """The agent, its tied and its untied process, and a marker every process it starts carries."""
    token = uuid.uuid4().hex
    env = {**os.environ, "LIFELINE_TEST": token}
    env.pop(PORTABLE_ENV, None)
    if portable:
        env[PORTABLE_ENV] = "1"
    agent = subprocess.Popen([sys.executable, "-c", AGENT], stdout=subprocess.PIPE, text=True, env=env)
    assert agent.stdout is not None
    tied, untied = map(int, agent.stdout.readline().split())
    return agent, tied, untied, f"LIFELINE_TEST={token}"


def test_a_killed_agent_takes_what_it_tied_along_and_nothing_else() -> None:
    agent, tied, untied, marker = start_agent(portable=True)
    try:
        assert running(tied) and running(untied)
        agent.kill()
        agent.wait(5)
        assert wait_until(lambda: not running(tied)), "the tied process outlived its agent"
        # The watcher is done once only the untied process carries the agent's environment.
        assert wait_until(lambda: set(processes_with(marker)) == {untied}), processes_with(marker)
        assert running(untied)
    finally:
        for pid in (tied, untied):
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_on_linux_there_is_no_watcher() -> None:
    """Linux has the parent-death signal: the lifeline starts nothing there."""
    agent, tied, untied, marker = start_agent(portable=False)
    try:
        assert set(processes_with(marker)) == {agent.pid, tied, untied}
    finally:
        agent.kill()
        agent.wait(5)
        for pid in (tied, untied):
            os.kill(pid, signal.SIGKILL)
