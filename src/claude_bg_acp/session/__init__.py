"""One live session's host: it turns the editor's requests, Claude Code's messages, tailed
output and ticks into the core's events, and hands the effects the core returns to its parts
(``host``; the ``outbox`` performs them in order, the ``supervisor`` starts and restarts Claude
Code, ``permissions`` bridges its questions, ``trust`` asks about a folder first, ``lifecycle``
holds the host's phases to a table, a ``waiter`` is an answer a task waits for, and
``overwritten`` reads the file a Write would replace)."""
