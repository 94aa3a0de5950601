"""The core's policies: where a kind of client needs the core to behave differently, not only
to look different.

Everything else the core does is the same for every client: it states facts (every background
shell a terminal with its output tailed, every task without a process an item, the children,
the ``background`` lists, scheduled work...), and each client kind's presenter drops or
reshapes what its client does not show. A policy is chosen with the presenter, per session, and
passed to ``SessionCore`` when it is built; each one names what the core does:

- ``answers_wait_for_subagents`` (v1 clients): a prompt's answer waits for the subagents its
  turn started (a held turn, ``foreground``). A v1 client stops listening to a turn at its
  answer, so the subagents' work and questions must come before it. It cannot be a
  presenter's choice: holding the answer changes the turn's lifecycle (what releases it: the
  follow-up turn, the next prompt, a cancel), which only the foreground follows.
- ``subagents_are_sessions`` (clients that read child sessions): a subagent's conversation is a
  session of its own. It cannot be a presenter's choice: it decides how Claude Code's messages
  are routed, not how they look: into which transcript (the message ids and what was streamed
  are a transcript's), whether a subagent's messages wait until its parent is known (a child
  is never put under a guessed parent) or are shown as they come, under which session its
  permission questions are asked, and whose list its own shells join.
- ``questions_as_forms`` (clients that declare ``elicitation.form``): Claude's questions are one
  form rather than a permission request per question (``core.user_questions``). It cannot be a
  presenter's choice: it decides how many client requests a question takes and how their
  answers are read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    answers_wait_for_subagents: bool
    """A prompt's answer waits for the subagents its turn started (see the module docstring)."""
    subagents_are_sessions: bool
    """A subagent's conversation is a child session (see the module docstring)."""
    questions_as_forms: bool = False
    """Claude's questions are put as one form (see the module docstring)."""
