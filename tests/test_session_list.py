"""``session/list`` pages: every stored session once, the latest change first, and a cursor that
survives sessions changing between two requests (the live tests list real sessions; a page
needs more sessions than a test can make with the CLI in reasonable time)."""

from __future__ import annotations

from typing import Any

import pytest

from claude_bg_acp.acp.jsonrpc import RpcError
from claude_bg_acp.acp.session_list import page


def info(n: int, when: str) -> dict[str, Any]:
    return {"sessionId": f"s{n:03d}", "cwd": "/w", "updatedAt": when}


def newest_first(infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(infos, key=lambda i: (i["updatedAt"], i["sessionId"]), reverse=True)


def all_pages(infos: list[dict[str, Any]], size: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        result = page(infos, cursor, size)
        pages.append([i["sessionId"] for i in result["sessions"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages


def test_pages_hold_every_session_once_in_order() -> None:
    infos = newest_first([info(n, f"2026-12-01T00:00:{n % 7:02d}.000Z") for n in range(23)])
    pages = all_pages(infos, 5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [s for p in pages for s in p] == [i["sessionId"] for i in infos]


def test_a_full_last_page_has_no_next_cursor() -> None:
    infos = newest_first([info(n, "2026-12-01T00:00:00.000Z") for n in range(4)])
    assert "nextCursor" not in page(infos, None, 4)
    assert page(infos, None, 3)["nextCursor"]


def test_a_session_that_changes_between_pages_shifts_nothing() -> None:
    infos = newest_first([info(n, f"2026-12-01T00:00:{n:02d}.000Z") for n in range(10)])
    first = page(infos, None, 4)
    touched = [i if i["sessionId"] != "s002" else info(2, "2026-12-01T00:01:00.000Z") for i in infos]
    second = page(newest_first(touched), first["nextCursor"], 4)
    shown = [i["sessionId"] for i in first["sessions"] + second["sessions"]]
    assert shown == ["s009", "s008", "s007", "s006", "s005", "s004", "s003", "s001"]


@pytest.mark.parametrize("cursor", ["", "offset:5", "bm90IGpzb24=", "WzEsMl0="])
def test_a_cursor_this_agent_did_not_give_is_refused(cursor: str) -> None:
    with pytest.raises(RpcError) as refused:
        page([info(1, "2026-12-01T00:00:00.000Z")], cursor)
    assert refused.value.code == -32602 and "cursor" in refused.value.message
