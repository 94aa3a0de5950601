"""A ``PATH`` without Node.js, to prove that something runs without it.

Node.js often lives in a directory with everything else (``/usr/bin``), so that directory cannot
just be dropped: it is replaced by a directory of links to all of its entries but Node.js and
its package managers.
"""

from __future__ import annotations

import os
from pathlib import Path

NODE_PROGRAMS = ("node", "nodejs", "npm", "npx", "corepack")


def path_without_node(path: str, shadows: Path) -> str:
    """``path`` with each directory that holds a Node.js program replaced by a shadow under
    ``shadows`` that holds everything else."""
    entries: list[str] = []
    for index, directory in enumerate(path.split(os.pathsep)):
        folder = Path(directory)
        if not any((folder / name).exists() for name in NODE_PROGRAMS):
            entries.append(directory)
            continue
        shadow = shadows / str(index)
        shadow.mkdir(parents=True)
        for entry in folder.iterdir():
            if entry.name not in NODE_PROGRAMS:
                (shadow / entry.name).symlink_to(entry)
        entries.append(str(shadow))
    return os.pathsep.join(entries)
