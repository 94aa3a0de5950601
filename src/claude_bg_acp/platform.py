"""What the agent takes from the operating system, decided in one place.

Everything else asks :func:`host` what it may use; nothing else looks at ``sys.platform``. There
are three kinds of host:

===========  ==============================================================  =====================
kind         what the agent uses                                             where
===========  ==============================================================  =====================
``linux``    inotify for output files; a child subreaper and ``/proc`` for   Linux
             what a Claude Code leaves running, pidfds to wait for it;
             ``setpriv``'s parent-death signal; 1 MiB pipes
``posix``    watchfiles' watcher; process groups, found with ``lsof`` and    macOS, other POSIX
             checked with ``ps`` (``claude.leftovers``); POSIX signals       systems; Linux with
                                                                             ``PORTABLE_ENV=1``
``windows``  watchfiles' watcher; Claude Code's own ``stop_task`` and        Windows
             process termination; no process groups, no POSIX signals
===========  ==============================================================  =====================

``CLAUDE_BG_ACP_PORTABLE=1`` is for testing: it makes an agent on Linux take exactly the
``posix`` paths, the ones macOS runs, so that they are tested where the tests run. It is read
once, when the agent first asks.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

PORTABLE_ENV = "CLAUDE_BG_ACP_PORTABLE"
"""Set to 1 (for testing): use only what every POSIX system has, as on macOS."""

Kind = Literal["linux", "posix", "windows"]


@dataclass(frozen=True, slots=True)
class Host:
    kind: Kind

    @property
    def linux(self) -> bool:
        """inotify, a child subreaper with ``/proc`` and pidfds, the parent-death signal and
        pipe sizes: the Linux kernel's own interfaces."""
        return self.kind == "linux"

    @property
    def posix(self) -> bool:
        """Process groups, POSIX signals, ``O_NOFOLLOW`` and directory descriptors."""
        return self.kind != "windows"


LINUX = Host("linux")
POSIX = Host("posix")
WINDOWS = Host("windows")


def detect(system: str, environ: Mapping[str, str]) -> Host:
    """The host for ``sys.platform`` = ``system`` and the environment ``environ``."""
    if system == "win32":
        return WINDOWS
    if system.startswith("linux") and environ.get(PORTABLE_ENV, "") in ("", "0"):
        return LINUX
    return POSIX


@functools.cache
def host() -> Host:
    """This process's host (see the module docstring)."""
    return detect(sys.platform, os.environ)


def is_root() -> bool:
    """Whether the agent runs as root (never on Windows, which has no such user)."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0
