"""What the views of a client (``zed.ZedView``, ``plain.PlainView``) share: reading a
transcript in order.

A view applies the agent's messages one by one, each with the time it arrived (its index when
no times were kept), and tells a prompt's answer by the id of the client's request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def requests_of(client_lines: Iterable[Any]) -> dict[Any, str]:
    """The client's requests: id -> method."""
    return {
        line["id"]: str(line["method"])
        for line in client_lines
        if isinstance(line, Mapping) and "method" in line and "id" in line
    }


def option_held(agent_lines: Iterable[Any], config_id: str) -> Any:
    """The value of the config option ``config_id`` as a client holds it once it read
    ``agent_lines`` in order: what the latest answer or update that carried it said (None: none)."""
    held = None
    for line in (line for line in agent_lines if isinstance(line, Mapping)):
        params = line.get("params")
        for carrier in (line.get("result"), params.get("update") if isinstance(params, Mapping) else None):
            for option in carrier.get("configOptions", []) if isinstance(carrier, Mapping) else []:
                if option.get("id", option.get("configId")) == config_id:
                    held = option["currentValue"]
    return held


def stamped(agent_lines: Iterable[Any], times: Iterable[float] | None) -> list[tuple[Any, float]]:
    """Each of the agent's lines with when it arrived (seconds; its index without ``times``)."""
    lines = list(agent_lines)
    stamps = list(times) if times is not None else [float(i) for i in range(len(lines))]
    return list(zip(lines, stamps, strict=True))
