"""A task's output, from Claude Code's file to the core: the tailer (``tail``) follows output
files byte-exact, told of changes by a watcher (``watch``), opening a task's own file only
(``task_output``), and keeping Claude Code's closing line out of the bytes (``closing_line``).
It knows no ACP and no core: the host turns what it reads into the core's events."""
