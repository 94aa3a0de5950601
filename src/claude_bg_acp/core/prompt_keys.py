"""Prompts named by an ``idempotencyKey``: each submission inserted at most once.

A prompt may name its submission with an ``idempotencyKey`` (v2), the same on every attempt: a
key's prompt is inserted at most once. An attempt while the first still waits joins it (answered
with it at its insertion, or cancelled and refused with it; withdrawing one attempt leaves the
others waiting); one after its insertion is answered with its message id at once
(``PromptRetried``): nothing is inserted, shown or run again. A key's prompt is stored under a
message id made of the session and the key alone (``keyed_id``), so every process that hosts
the session names the submission alike: once a Claude Code of the session took over the stored
conversation (``Foreground.resuming``: an earlier agent process may have inserted prompts this core never
heard of), a key the core does not know is looked for there first (``FindPrompt``, answered by
``looked_up``). The attempt waits meanwhile, and so does every prompt after it (prompts go in in
the order they came); when the stored conversation has the message, every attempt is answered
with its id and nothing is inserted, else it goes in as any other; when it could not be read,
the attempts are refused (a retry then asks again) rather than the prompt perhaps run twice. A
prompt that an earlier Claude Code was handed but had not stored yet when its process ended is
not found, and goes in again: the conversation taken over does not have it either.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable

from claude_bg_acp.core.effects import Fail, FindPrompt
from claude_bg_acp.core.errors import Failing, Failure
from claude_bg_acp.core.foreground_facts import ForegroundOut, PromptRetried, WaitingPrompt

NOT_LOOKED_UP = (
    "Could not read the session's stored conversation to tell whether this prompt "
    "(its idempotencyKey) was sent before; nothing was inserted"
)


class PromptKeys:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.inserted: dict[str, str] = {}
        """The ``idempotencyKey`` of each prompt inserted so far, and its message id."""
        self.looking_up: set[str] = set()
        """Keys looked for in the stored conversation, not found or not yet."""
        self.stored_before = False
        """A Claude Code of the session took over the stored conversation: it may hold prompts
        that another agent process inserted under keys this core does not know."""

    def attempt(self, prompt: WaitingPrompt, waiting: Iterable[WaitingPrompt]) -> list[ForegroundOut] | None:
        """Another attempt of a submission (``waiting``: the prompts that wait), answered or
        joined to the first; None for a prompt that goes in as any other."""
        if prompt.key is not None:
            # Another attempt of a submission: inserted at most once, whatever else is going on.
            if prompt.key in self.inserted:
                return [PromptRetried(prompt.ticket, self.inserted[prompt.key])]
            first = next((each for each in waiting if each.key == prompt.key), None)
            if first is not None:
                first.retries.append(prompt.ticket)
                return []
        return None

    def look_up(self, prompt: WaitingPrompt) -> list[ForegroundOut]:
        """A key this core does not know is looked for in a stored conversation taken over."""
        if prompt.key is not None and self.stored_before and prompt.key not in self.looking_up:
            self.looking_up.add(prompt.key)
            return [FindPrompt(prompt.key, self.keyed_id(prompt.key))]
        return []

    def looked_up(self, key: str, stored: bool | None, waiting: deque[WaitingPrompt]) -> list[ForegroundOut]:
        """Whether the stored conversation has the prompt of ``key`` (None: it could not be
        read): its attempts, taken out of ``waiting``, are answered or refused."""
        self.looking_up.discard(key)
        message_id = self.keyed_id(key)
        if stored:
            self.inserted[key] = message_id
        attempts = next((prompt for prompt in waiting if prompt.key == key), None)
        if attempts is None or stored is False:
            return []  # it goes in as any other (or was withdrawn or cancelled meanwhile)
        waiting.remove(attempts)
        if stored:
            return [PromptRetried(ticket, message_id) for ticket in attempts.tickets]
        return [Fail(ticket, Failure(Failing.ERROR, NOT_LOOKED_UP)) for ticket in attempts.tickets]

    def keyed_id(self, key: str) -> str:
        """The message id of the prompt of ``key``: the same in every process that hosts the
        session (a name-based UUID, as every prompt's, never named like an unkeyed one's)."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"acp:{self.session_id}/key:{key}"))
