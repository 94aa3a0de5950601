"""The core tier runs in process: a test here that starts a subprocess fails, so the tier stays
fast and needs nothing but Python (a test that must start one belongs in ``tests/edges``)."""

from __future__ import annotations

import subprocess
from typing import Any, NoReturn

import pytest


@pytest.fixture(autouse=True)
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> NoReturn:
        raise AssertionError(f"a core test started a subprocess: {args!r}; move the test to tests/edges")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
