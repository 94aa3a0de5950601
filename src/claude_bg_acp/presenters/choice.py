"""The presenter for a client: chosen once, at ``session/new``, from what ``initialize`` said
(``acp.capabilities``).

The rule, by negotiated version and declared ``clientCapabilities``:

- v2: ``V2Presenter`` (terminals, background tool calls, child sessions: the RFDs' forms).
- v1 declaring ``_meta.terminal_output`` (Zed): ``ZedPresenter``. Shells are terminals fed
  through ``_meta`` (``terminal_output_delta`` when that is declared too). Subagents' work stays
  in the session that launched them even when ``subagents`` is declared: capabilities cannot
  tell Zed's reading of ``subagents`` from the RFD's, and Zed's source (at the time of writing)
  reads only an earlier draft of child sessions (``subagent_spawned`` /
  ``subagent_state_update``), which the v1 schema does not have; the RFD's ``subagent_update``
  would leave it updates for sessions it never heard of, which it drops.
- a v1 client that declares ``session.configOptions.boolean`` gets toggles as boolean options
  (every v2 client does), the others as on/off selects.
- a v1 client that declares ``session.notices`` is sent ``notice`` updates (the v1 schema
  allows them only then); every v2 client is.
- JetBrains AIR (``_meta.jetbrains.air`` with ``asyncTasks`` or ``nativeSubagentSessions``):
  ``AirPresenter`` around the v1 presenter it otherwise gets (Zed's, or ``V1Presenter``),
  adding async tasks and child sessions in the draft form AIR reads. AIR keeps the draft
  whichever signal it declares (the subagents PR): ``subagents`` alone gives it no child
  sessions in the RFD's form.
- v1 clients that declare neither extension, Zed's nor AIR's (Toad, acpx, clients of the
  Python SDK, acp-client): ``PlainPresenter``, background work as tool calls that live as long
  as the work. A plain client is known by what it does not declare, never by ``fs`` or
  ``terminal``: acpx declares both, acp-client neither, the Python SDK's default nothing.
  With ``subagents`` declared, subagents are child sessions in the RFD's form
  (``subagent_update``, ``session_message``).
- a client that declares AIR's extension without either of those two capabilities:
  ``V1Presenter``. AIR reads background work in its own form, and the plain form is for
  clients that declare neither extension.

Each presenter comes with the ``Policy`` the core follows for its client (``core.policy``):
v1 clients have their prompts' answers wait for the subagents their turns started; subagents
are sessions for v2, for v1 clients that declare ``subagents`` (not Zed, not AIR) and for AIR with
native subagent sessions; Claude's questions are forms for clients that declare
``elicitation.form``, whichever presenter they get.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from claude_bg_acp.acp.capabilities import ASYNC_TASKS, NATIVE_SUBAGENTS, ClientCapabilities
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.presenters.air import AirPresenter
from claude_bg_acp.presenters.base import BasePresenter
from claude_bg_acp.presenters.plain import PlainPresenter
from claude_bg_acp.presenters.v1 import V1Presenter
from claude_bg_acp.presenters.v2 import V2Presenter
from claude_bg_acp.presenters.zed import ZedPresenter

P = TypeVar("P", bound=BasePresenter)


def presenter_for(client: ClientCapabilities, folder: str = "") -> Presenter:
    """``folder``: the session's, which tool call titles name paths from."""
    presenter = _presenter(client)
    inner = presenter.plain if isinstance(presenter, AirPresenter) else presenter
    inner.folder = folder
    if isinstance(inner, V1Presenter) and client.booleans:
        inner.booleans = True
    return presenter


def _presenter(client: ClientCapabilities) -> V2Presenter | V1Presenter | AirPresenter:
    if client.version >= 2:
        return _asks_forms(V2Presenter(), client)
    air = client.air
    v1: V1Presenter
    if client.terminal_output:
        delta = client.terminal_output_delta
        v1 = ZedPresenter("terminal_output_delta" if delta else "terminal_output", client.notices)
    elif air is None:
        return _asks_forms(PlainPresenter(client.child_sessions, client.notices), client)
    elif air & {ASYNC_TASKS, NATIVE_SUBAGENTS}:
        v1 = V1Presenter(False, client.notices)  # AIR reads the draft form of children, or none
    else:
        v1 = V1Presenter(client.child_sessions, client.notices)
    v1 = _asks_forms(v1, client)  # before AIR's wraps it: AIR's policy is the one it wraps, changed
    if air is not None and air & {ASYNC_TASKS, NATIVE_SUBAGENTS}:
        return AirPresenter(v1, air)
    return v1


def _asks_forms(presenter: P, client: ClientCapabilities) -> P:
    presenter.policy = replace(presenter.policy, questions_as_forms=client.elicitation_form)
    return presenter
