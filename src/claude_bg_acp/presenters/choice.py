"""The presenter for a client: chosen once, at ``session/new``, from what ``initialize`` said."""

from __future__ import annotations

from typing import Any

from claude_bg_acp.acp.schema import air_capabilities
from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.presenters.air import ASYNC_TASKS, NATIVE_SUBAGENTS, AirPresenter
from claude_bg_acp.presenters.v1 import V1Presenter
from claude_bg_acp.presenters.v2 import V2Presenter
from claude_bg_acp.presenters.zed import ZedPresenter


def presenter_for(version: int, capabilities: dict[str, Any]) -> Presenter:
    if version >= 2:
        return V2Presenter()
    air = air_capabilities(capabilities) or frozenset()
    subagents = capabilities.get("subagents") is not None or NATIVE_SUBAGENTS in air
    meta = capabilities.get("_meta")
    plain: V1Presenter = V1Presenter(subagents)
    if isinstance(meta, dict) and meta.get("terminal_output") is True:
        plain = ZedPresenter(subagents, "delta" if meta.get("terminal_output_delta") is True else "replace")
    if air & {ASYNC_TASKS, NATIVE_SUBAGENTS}:
        return AirPresenter(plain, air)
    return plain
