"""One answer that a task waits for: settled once, with a value or an error, by another task.

A session host keeps one per client request the core answers through a ticket
(``session.host``), per permission question of Claude Code's (``session.permissions``), and
one for the first start of its Claude Code (``session.supervisor``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from claude_bg_acp.acp.jsonrpc import RpcError


@dataclass
class Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None
    error: RpcError | None = None

    def settle(self, value: Any = None, error: RpcError | None = None) -> None:
        self.value, self.error = value, error
        self.done.set()

    async def wait(self) -> Any:
        """The value; raises the error."""
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value
