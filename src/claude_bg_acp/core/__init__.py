"""The sans-IO core: events in (``events``), effects out (``effects``), through ``SessionCore``.

Nothing here reads a pipe, a file or a clock; the time comes in as ``now``. Each module owns
one lifecycle (``foreground``, ``tasks``, ``background``, ``subagents``, ``tool_uses``,
``schedules``, ``permission_modes``) or one translation (``transcript``, ``prompts``), and
reports facts that ``session`` routes and a presenter (``presenting``) renders. The core knows
no kind of client: it states the same facts to each, and follows the ``Policy`` it is given
where a kind of client needs it to behave otherwise (``policy`` lists them, each with why it is
no presenter's choice). It refuses requests and reports failures in its own words
(``errors``); the edge gives them their JSON-RPC codes.
"""
