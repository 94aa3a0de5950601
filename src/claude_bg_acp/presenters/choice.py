"""The presenter for a client: chosen once, at ``session/new``, from what ``initialize`` said."""

from __future__ import annotations

from typing import Any

from claude_bg_acp.core.presenting import Presenter
from claude_bg_acp.presenters.v1 import V1Presenter
from claude_bg_acp.presenters.v2 import V2Presenter
from claude_bg_acp.presenters.zed import ZedPresenter


def presenter_for(version: int, capabilities: dict[str, Any]) -> Presenter:
    if version >= 2:
        return V2Presenter()
    subagents = capabilities.get("subagents") is not None
    meta = capabilities.get("_meta")
    if isinstance(meta, dict) and meta.get("terminal_output") is True:
        return ZedPresenter(subagents, "delta" if meta.get("terminal_output_delta") is True else "replace")
    return V1Presenter(subagents)
