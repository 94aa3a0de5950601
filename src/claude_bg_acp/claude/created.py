"""Sessions this agent created that Claude Code has not stored yet.

Claude Code writes a conversation's transcript at its first prompt: a session created and
never prompted is unknown to the store, so the next agent process (acpx runs ``sessions new``,
then each ``prompt``, in a new one) could not open it. So ``session/new`` records the session
in ``claude-bg-acp/created/<session id>.json`` in Claude Code's config directory, beside its
store (as the listing's summaries are): its directory and the options the client chose (mode,
model, effort, fast mode; a record without ``fast``, from an older agent, has it never chosen),
written again when they change, forgotten once it was prompted. A record stands for a session
only while Claude Code has none stored: the store is asked first. It is not listed
(``session/list`` lists Claude Code's conversations, and an empty one is none).

Each record is its own small file (two processes never write one file), written to a
temporary file then renamed over it (a reader sees the old one or the new one), mode 0600 as
transcripts are. The id must be a UUID (it names the file). A record that cannot be read or
is not this format is none. At most ``KEPT`` are kept: an editor that opens a panel creates a
session each time, so the oldest go when a new one is written.

Plain blocking file I/O: call it in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import uuid
from dataclasses import asdict, dataclass

from claude_bg_acp.claude.conventions import projects_dir

log = logging.getLogger(__name__)

KEPT = 1000
"""Records kept (about 150 bytes each)."""
FORMAT = 1


@dataclass(frozen=True)
class Choices:
    """What a session starts with besides its directory (None: Claude Code's own)."""

    mode: str | None = None
    model: str | None = None
    effort: str | None = None
    fast: bool | None = None


@dataclass(frozen=True)
class Created:
    session_id: str
    cwd: str
    choices: Choices


def record(session_id: str, cwd: str, choices: Choices) -> None:
    """Record (or record again) a session created here; a failure to write is logged."""
    path = _path(session_id)
    if path is None:
        return
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".created-")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump({"format": FORMAT, "cwd": cwd, **asdict(choices)}, out, ensure_ascii=False)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
        _prune(folder)
    except OSError:
        log.warning("session %s not recorded in %s", session_id, folder, exc_info=True)


def find(session_id: str) -> Created | None:
    path = _path(session_id)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as kept:
            content = json.load(kept)
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        return None
    cwd, mode, model, effort, fast = (content.get(key) for key in ("cwd", "mode", "model", "effort", "fast"))
    if not isinstance(cwd, str) or not all(isinstance(value, str | None) for value in (mode, model, effort)):
        return None
    if not isinstance(fast, bool | None):
        return None
    return Created(session_id, cwd, Choices(mode, model, effort, fast))


def forget(session_id: str) -> bool:
    """Forget the record; False when there was none."""
    path = _path(session_id)
    if path is None:
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def folder(environ: dict[str, str] | None = None) -> str:
    return os.path.join(os.path.dirname(projects_dir(environ)), "claude-bg-acp", "created")


def _path(session_id: str) -> str | None:
    try:
        canonical = str(uuid.UUID(session_id))
    except ValueError:
        return None
    return os.path.join(folder(), f"{canonical}.json") if canonical == session_id else None


def _prune(where: str) -> None:
    with os.scandir(where) as entries:
        records = [(e.stat().st_mtime_ns, e.path) for e in entries if e.name.endswith(".json")]
    for _, path in sorted(records)[: max(0, len(records) - KEPT)]:
        with contextlib.suppress(OSError):
            os.unlink(path)
