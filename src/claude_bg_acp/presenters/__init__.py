"""How a session looks on the wire, one presenter per client kind, chosen at ``session/new``.

- ``v2``: session state with the ``background`` list, agent-owned terminals, background tool
  calls and child sessions.
- ``v1``: the prompt's answer ends the turn (held while the turn's subagents run); child
  sessions when the client declares ``subagents``.
- ``zed``: v1 for clients that declare ``_meta.terminal_output`` (Zed): every shell tool call
  is a display terminal fed through ``_meta``, and subagents' work stays in the session that
  launched them.
- ``air``: JetBrains AIR, the v1 (or Zed-like) client it otherwise is, plus background tasks
  as async tasks and subagents in the draft form (``draft_subagents``), as it declares in
  ``_meta.jetbrains.air``.

The core states the same facts to every presenter (every background shell a terminal with its
output read, every task an item, the children, the lists, scheduled work); each drops or
reshapes what its client does not show, and may keep what it told its client to tell only what
changed (AIR's async tasks). ``choice.presenter_for`` reads the negotiated version and the
client's capabilities; nothing outside this package looks at either to decide how something is
shown.
"""
