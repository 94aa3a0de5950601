"""The sans-IO core: events in (``events``), effects out (``effects``), through ``SessionCore``.

Nothing here reads a pipe, a file or a clock; the time comes in as ``now``. Each module owns
one lifecycle (``foreground``, ``tasks``, ``background``, ``subagents``, ``tool_uses``,
``schedules``, ``permission_modes``) or one translation (``transcript``, ``prompts``), and
reports facts that ``session`` routes and a presenter (``presenting``) renders.
"""
