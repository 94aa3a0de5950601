"""The trust question: whether the folder's own Claude Code settings may act in this session.

How it works. A session in a folder Claude Code does not trust, whose settings would act
(``claude.trust``), runs Claude Code with the user's settings alone, and its first prompt first
asks the user (``settle``, which every prompt awaits before it reaches the core; prompts that
come meanwhile wait for the one question). The question is a ``session/request_permission``
of its own, shown as a tool call that lists what the settings would do; the tool call ends
with the answer. "Trust this folder" has the supervisor start Claude Code again with the
folder's settings, on the same conversation, and Claude Code record the trust where its
terminal would; "Not now" goes on without them (a later session asks again). A question the
client cancels (``session/cancel``) decides nothing: it is asked again at the next prompt, and
the prompt is cancelled (``settle`` says so: it reaches Claude Code, with the user's settings
alone, cancelled at once, as a ``session/cancel`` right after it would). The session's end
withdraws an open question (``$/cancel_request``):

============  ==================  ==============================================================  ============
trust         trigger             what happens                                                    next
============  ==================  ==============================================================  ============
(new)         ``UNTRUSTED``       the folder's settings would act, and Claude Code has no trust   ``OPEN``
                                  record for it: Claude Code starts with the user's settings
                                  alone
(new)         ``NOTHING_TO_ASK``  nothing to ask (trusted, no settings, ``--trust-all-folders``)  ``SETTLED``
``OPEN``      ``PROMPT``          a prompt comes: the question goes out (other prompts wait)      ``ASKING``
``OPEN``      ``SETTINGS_GONE``   a prompt comes, and the folder's settings are gone meanwhile    ``SETTLED``
``ASKING``    ``UNANSWERED``      the question is cancelled, withdrawn or fails: the prompt is    ``OPEN``
                                  cancelled
``ASKING``    ``TRUST``           "Trust this folder": Claude Code starts again with the          ``TRUSTING``
                                  folder's settings, on the same conversation, and records
                                  the trust
``ASKING``    ``NOT_NOW``         "Not now": the prompt goes on without the folder's settings     ``SETTLED``
``TRUSTING``  ``RESTARTED``       Claude Code runs with the folder's settings (or the session     ``SETTLED``
                                  ended, or Claude Code is gone): the prompt goes in
============  ==================  ==============================================================  ============
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Awaitable, Callable

import anyio

from claude_bg_acp.acp.jsonrpc import RequestId
from claude_bg_acp.acp.schema import PermissionResponse
from claude_bg_acp.acp.stdio import Endpoint
from claude_bg_acp.claude.trust import ProjectSettings, read_project_settings
from claude_bg_acp.core.effects import Notify
from claude_bg_acp.core.lifecycle import Transitions
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.core.tool_uses import ToolCallFinished
from claude_bg_acp.session.lifecycle import ENDING, HostLifecycle

log = logging.getLogger(__name__)

TRUST, NOT_NOW = "trust_folder", "not_now"
OPTIONS = [
    {"optionId": TRUST, "name": "Trust this folder", "kind": "allow_always"},
    {"optionId": NOT_NOW, "name": "Not now", "kind": "reject_once"},
]
TITLE = "Trust this folder?"
TRUSTED = "Trusted: Claude Code runs with this folder's settings."
NOT_TRUSTED = "Not trusted: Claude Code runs with your own settings only; a new session asks again."
UNANSWERED = "Not answered: the next prompt asks again."


class TrustPhase(enum.Enum):
    OPEN = "open"
    ASKING = "asking"
    TRUSTING = "trusting"
    SETTLED = "settled"


OPEN, ASKING, TRUSTING, SETTLED = TrustPhase.OPEN, TrustPhase.ASKING, TrustPhase.TRUSTING, TrustPhase.SETTLED


class TrustTrigger(enum.Enum):
    UNTRUSTED = "untrusted"
    NOTHING_TO_ASK = "nothing_to_ask"
    PROMPT = "prompt"
    SETTINGS_GONE = "settings_gone"
    UNANSWERED = "unanswered"
    TRUST = "trust"
    NOT_NOW = "not_now"
    RESTARTED = "restarted"


TRUST_TABLE: Transitions[TrustPhase, TrustTrigger] = Transitions.of(
    "trust",
    TrustPhase,
    TrustTrigger,
    ((None,), TrustTrigger.UNTRUSTED, OPEN),
    ((None,), TrustTrigger.NOTHING_TO_ASK, SETTLED),
    ((OPEN,), TrustTrigger.PROMPT, ASKING),
    ((OPEN,), TrustTrigger.SETTINGS_GONE, SETTLED),
    ((ASKING,), TrustTrigger.UNANSWERED, OPEN),
    ((ASKING,), TrustTrigger.TRUST, TRUSTING),
    ((ASKING,), TrustTrigger.NOT_NOW, SETTLED),
    ((TRUSTING,), TrustTrigger.RESTARTED, SETTLED),
)


class FolderTrust:
    def __init__(
        self,
        session_id: str,
        cwd: str,
        presenter: Presenter,
        endpoint: Endpoint,
        tell: Callable[[list[Notify]], Awaitable[None]],
        trust: Callable[[], Awaitable[None]],
        asks: bool,
        lifecycle: HostLifecycle,
    ) -> None:
        """``tell`` writes updates in order with the session's others; ``trust`` starts Claude
        Code with the folder's settings; ``asks``: the folder is yet to be trusted; the session
        ending (``lifecycle``) withdraws the question."""
        self._session_id = session_id
        self._cwd = cwd
        self._presenter = presenter
        self._endpoint = endpoint
        self._tell = tell
        self._trust = trust
        self._lifecycle = lifecycle
        self.phase: TrustPhase = TRUST_TABLE.move(
            None, TrustTrigger.UNTRUSTED if asks else TrustTrigger.NOTHING_TO_ASK
        )
        self._lock = anyio.Lock()

    async def settle(self) -> bool:
        """Ask the question if it is still open; False if it went unanswered (the prompt is
        cancelled then)."""
        async with self._lock:
            if self.phase is SETTLED:
                return True
            settings = await anyio.to_thread.run_sync(read_project_settings, self._cwd)
            if not settings.files:
                self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.SETTINGS_GONE)
                return True
            self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.PROMPT)
            return await self._ask(settings)

    async def _ask(self, settings: ProjectSettings) -> bool:
        call_id = f"trust-{uuid.uuid4().hex}"
        text = "\n".join([f"{self._cwd} has Claude Code settings of its own.", *settings.lines()])
        call = {
            "toolCallId": call_id,
            "title": TITLE,
            "kind": "other",
            "status": "pending",
            "rawInput": {"cwd": self._cwd, **settings.raw()},
            "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        }
        params = self._presenter.question(self._session_id, call, TITLE, OPTIONS)
        await self._tell([])  # its tool call comes after what the client was told before
        choice = await self._answer(params)
        if choice is None:
            self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.UNANSWERED)
            if self._lifecycle.phase not in ENDING:  # else nothing more is told
                await self._end(call_id, failed=True, text=UNANSWERED)
            return False
        if choice == TRUST:
            self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.TRUST)
            await self._trust()
            self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.RESTARTED)
        else:
            self.phase = TRUST_TABLE.move(self.phase, TrustTrigger.NOT_NOW)
        verdict = TRUSTED if choice == TRUST else NOT_TRUSTED
        await self._end(call_id, failed=choice != TRUST, text="\n".join([verdict, *settings.lines()]))
        return True

    async def _answer(self, params: dict[str, object]) -> str | None:
        """The option chosen, or None when the question went unanswered (or the session ended:
        the client is told to withdraw it then)."""
        request_id = self._endpoint.new_request_id()
        outcome = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._withdraw_at_end, tg.cancel_scope, request_id)
            try:
                result = await self._endpoint.request("session/request_permission", params, request_id)
                outcome = PermissionResponse.model_validate(result).outcome
            except Exception as exc:
                log.warning("session %s: the trust question failed: %s", self._session_id, exc)
            tg.cancel_scope.cancel()
        if outcome is None or outcome.outcome != "selected":
            return None
        return TRUST if outcome.option_id == TRUST else NOT_NOW

    async def _withdraw_at_end(self, scope: anyio.CancelScope, request_id: RequestId) -> None:
        await self._lifecycle.until(*ENDING)
        scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._endpoint.notify("$/cancel_request", {"requestId": request_id})

    async def _end(self, call_id: str, failed: bool, text: str) -> None:
        fact = ToolCallFinished(self._session_id, call_id, failed, text)
        await self._tell([effect for effect in self._presenter.render(fact) if isinstance(effect, Notify)])
