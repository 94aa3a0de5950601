"""The text of the file a ``Write`` would overwrite, for the permission request to show.

Claude Code's question names the path; the model's call holds only the new text, so without
this the user would approve a "new file" diff. The file is read only inside the folders the
client gave the session (its ``cwd`` and ``additionalDirectories``), after resolving symbolic
links, so a path the model chose cannot show the client anything outside them; only a regular
file of UTF-8 text up to ``LIMIT`` bytes is read (opened without blocking: a FIFO is not a
file to wait on). Anything else shows as before: no old text.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any

import anyio

LIMIT = 256 * 1024
"""The largest file whose text a permission request carries."""


async def replaced_text(tool_name: str, tool_input: dict[str, Any], folders: Sequence[str]) -> str | None:
    path = tool_input.get("file_path")
    if tool_name != "Write" or not isinstance(path, str) or not os.path.isabs(path):
        return None
    return await anyio.to_thread.run_sync(read_inside, path, tuple(folders))


def read_inside(path: str, folders: tuple[str, ...]) -> str | None:
    real = os.path.realpath(path)
    if not any(_inside(real, os.path.realpath(folder)) for folder in folders if os.path.isabs(folder)):
        return None
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None  # a new file (or one the agent cannot open)
    try:
        data = os.read(fd, LIMIT + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        data = None
    finally:
        os.close(fd)
    if data is None or len(data) > LIMIT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder
