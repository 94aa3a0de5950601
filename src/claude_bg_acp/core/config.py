"""Session config options: the permission mode, Claude Code's model, its effort level and fast mode.

The client sees one list (``Options``): the mode (owned by ``permission_modes``), the model (one
choice per model Claude Code offers), the effort (the levels the current model supports; left
out when it has none) and fast mode (on or off, for a model that supports it; Claude Code takes
it from an SDK host only through its flag settings, ``fastMode``, so it is on only when they
say so: ``server_info.read_applied``). Claude Code is their source
of truth: what it offers comes from its initialize answer, what is in effect from its applied
settings, read after it starts, after each switch we ask for and after each turn (a ``/model``
or ``/effort`` prompt switches too), and from the model and mode each turn starts with. A
client's choice goes to Claude Code as a command ahead of anything sent after it, so the next
model request uses it, followed by a read that confirms it; until that read answers, Claude
Code's reports may predate the switch and are not taken. The settings and the current model also
tell facts about the permission modes (``disabled_modes``, ``runs_auto``), from which
``permission_modes`` decides what to offer.

What the client knows of the options (``Introduction``):

==============  ===========  =========================================================  ==============
introduction    trigger      what happens                                               next
==============  ===========  =========================================================  ==============
any             ``ANSWER``   an answer that carries the options is built (``answer``:   ``ANSWERED``
                             ``session/new``, and load or resume)
any             ``WRITTEN``  the answer was written to the client (``answer_written``): ``OPEN``
                             what changed since it was built goes out as one
                             ``OptionsChanged``
==============  ===========  =========================================================  ==============

Until the session is ``OPEN`` nothing is sent: an update must not reach the client before the
answer that tells it of the session. Once it is, an option that changes (Claude Code's doing,
or a mode set with ``session/set_mode``) goes out as ``OptionsChanged``, and the answer to
``session/set_config_option`` carries them (``OptionsAnswered``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from claude_bg_acp.acp.answers import SessionMode
from claude_bg_acp.claude.server_info import Applied, Model
from claude_bg_acp.core.effects import ReadSettings, SetEffort, SetFast, SetModel, Ticket
from claude_bg_acp.core.errors import Refusal, Refused
from claude_bg_acp.core.lifecycle import Transitions

MODE, MODEL, EFFORT, FAST = "mode", "model", "effort", "fast_mode"
SWITCH = {True: True, False: False, "on": True, "off": False}
"""A toggle's values: a boolean, or (as a select, for a client without boolean options) on/off."""


@dataclass(frozen=True)
class Options:
    """The session's config options as the client sees them."""

    modes: tuple[SessionMode, ...]
    mode: str
    models: tuple[Model, ...]
    model: str | None
    """The value of the current model (None until Claude Code said which it uses)."""
    efforts: tuple[str, ...]
    """The current model's effort levels (none: no effort option)."""
    effort: str | None
    fast: bool | None = None
    """Fast mode is on (None: the current model has no fast mode: no such option)."""


@dataclass(frozen=True)
class OptionsChanged:
    """The options changed after the client was told them: ``config_option_update``."""

    session_id: str
    options: Options


@dataclass(frozen=True)
class OptionsAnswered:
    """The answer to ``session/set_config_option``: the options after the change."""

    ticket: Ticket
    options: Options


class Introduction(enum.Enum):
    """How far the client has been told of the session (the table above)."""

    NONE = "none"
    ANSWERED = "answered"
    OPEN = "open"


class Told(enum.Enum):
    """What moves the introduction (the trigger column of its table)."""

    ANSWER = "answer"
    WRITTEN = "written"


INTRODUCTIONS: Transitions[Introduction, Told] = Transitions.of(
    "introduction",
    Introduction,
    Told,
    (tuple(Introduction), Told.ANSWER, Introduction.ANSWERED),
    (tuple(Introduction), Told.WRITTEN, Introduction.OPEN),
)


class Config:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.models: tuple[Model, ...] = ()
        self.model: str | None = None
        self.effort: str | None = None
        self.fast = False
        self.disabled_modes: frozenset[str] = frozenset()
        """The permission modes Claude Code's settings disable."""
        self.chosen_model: str | None = None
        self.chosen_effort: str | None = None
        self.chosen_fast: bool | None = None
        """The client's choices (None: never chosen, Claude Code's own): a Claude Code started
        again (after a crash, or to take a trusted folder's settings) starts with them."""
        self.introduction: Introduction = Introduction.NONE
        self._shown: Options | None = None
        """The options as the client last had them."""
        self._reads = 0
        """Reads of Claude Code's settings asked for after a switch and not answered yet."""

    # --- what Claude Code says ----------------------------------------------------------------

    def started(self, models: tuple[Model, ...], applied: Applied | None) -> None:
        """Claude Code started: the models it offers, and (if it could say) what is in effect."""
        self.models = models
        if applied is not None:
            self._apply(applied)

    @property
    def settled(self) -> bool:
        """No switch of ours waits for its confirming read: Claude Code's reports are current."""
        return self._reads == 0

    def read(self, applied: Applied | None) -> None:
        """The answer to a ``ReadSettings`` (None: Claude Code could not say)."""
        self._reads = max(0, self._reads - 1)
        if self._reads == 0 and applied is not None:
            self._apply(applied)

    def model_reported(self, model_id: str) -> None:
        """The model a turn starts with (``system/init``)."""
        if self.settled:
            self.model = self._value_of(model_id)

    def _apply(self, applied: Applied) -> None:
        if applied.model is not None:
            self.model = self._value_of(applied.model)
        self.effort = applied.effort
        self.fast = applied.fast
        self.disabled_modes = applied.disabled_modes

    @property
    def runs_auto(self) -> bool:
        """The current model can run the ``auto`` permission mode, as far as Claude Code said (of
        a model it did not describe, or before it named one, it said nothing against it)."""
        current = self._model(self.model)
        return current is None or current.auto

    def _value_of(self, model_id: str) -> str:
        """The choice for a model id: the current one while it resolves to it, else the first
        that names it or resolves to it, else the id itself (a model Claude Code did not list)."""
        current = self._model(self.model)
        if current is not None and model_id in (current.value, current.resolved):
            return current.value
        named = [m for m in self.models if m.value == model_id] or [
            m for m in self.models if m.resolved == model_id
        ]
        return named[0].value if named else model_id

    def _model(self, value: str | None) -> Model | None:
        return next((m for m in self.models if m.value == value), None)

    # --- the client's choices -----------------------------------------------------------------

    def choose(
        self, config_id: str, value: Any, options: Options
    ) -> list[SetModel | SetEffort | SetFast | ReadSettings]:
        """A choice for the model, the effort or fast mode (the mode is ``permission_modes``');
        refuses an option or value the client was not offered."""
        command: SetModel | SetEffort | SetFast
        if config_id == MODEL:
            offered(config_id, value, [m.value for m in options.models])
            self.model = self.chosen_model = value
            command = SetModel(value)
        elif config_id == EFFORT and options.efforts:
            offered(config_id, value, options.efforts)
            self.effort = self.chosen_effort = value
            command = SetEffort(value)
        elif config_id == FAST and options.fast is not None:
            offered(config_id, value, list(SWITCH))
            self.fast = self.chosen_fast = SWITCH[value]
            command = SetFast(self.fast)
        else:
            raise Refused(Refusal.UNKNOWN, f"unknown config option {config_id!r}", "configId")
        return [command, *self.confirm()]

    def carry(self, model: str | None, effort: str | None, fast: bool | None) -> None:
        """Choices the client made in an earlier agent process, for a session it created there
        and never prompted (``claude.created``): kept as if made here, so that they are recorded
        again and a Claude Code started again starts with them."""
        self.chosen_model, self.chosen_effort, self.chosen_fast = model, effort, fast

    def confirm(self) -> list[ReadSettings]:
        """Read what Claude Code has in effect (after a switch, after a turn); its reports wait
        for the answer."""
        self._reads += 1
        return [ReadSettings()]

    # --- what the client is told --------------------------------------------------------------

    def options(self, modes: list[SessionMode], mode: str) -> Options:
        models = self.models
        current = self._model(self.model)
        if self.model is not None and current is None:
            current = Model(self.model, self.model, None, self.model, ())
            models = (*models, current)
        efforts = current.efforts if current is not None else ()
        if efforts and self.effort is not None and self.effort not in efforts:
            efforts = (*efforts, self.effort)
        if self.effort is None:
            efforts = ()  # no level to show as the current one: no effort option
        fast = self.fast if current is not None and current.fast else None
        return Options(
            tuple(modes), mode, models, self.model, efforts, self.effort if efforts else None, fast
        )

    def answer(self, options: Options) -> Options:
        """The options go into an answer that tells the client of the session."""
        self.introduction, self._shown = INTRODUCTIONS.move(self.introduction, Told.ANSWER), options
        return options

    def answer_written(self, options: Options) -> list[OptionsChanged]:
        """The client has the answer."""
        self.introduction = INTRODUCTIONS.move(self.introduction, Told.WRITTEN)
        return self.changed(options)

    def changed(self, options: Options) -> list[OptionsChanged]:
        """The options as they are now: an update when the client knows other ones."""
        if self.introduction is not Introduction.OPEN or options == self._shown:
            return []
        self._shown = options
        return [OptionsChanged(self.session_id, options)]

    def answered(self, ticket: Ticket, options: Options) -> OptionsAnswered:
        self._shown = options
        return OptionsAnswered(ticket, options)


def offered(config_id: str, value: Any, choices: Sequence[object]) -> None:
    if not any(value is choice or (isinstance(value, str) and value == choice) for choice in choices):
        raise Refused(Refusal.INVALID, f"{value!r} is not a choice of {config_id!r}", "value")
