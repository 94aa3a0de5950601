"""How many examples a property test tries. Each test names its full count; the exploring pass
(``--hypothesis-profile=explore``, once in CI) tries that many new ones per test, and the default
run (profile ``pinned``: the same examples every run) a fifth of them, so that the core tier
stays fast while every CI run still puts the full count of fresh examples to each property.

The profile is loaded before the test modules are imported (``tests/conftest.py``), so a
module-level ``examples(n)`` sees it."""

from __future__ import annotations

from hypothesis import settings

PINNED_SHARE = 5
"""The default run tries one example in this many of the full count."""


def examples(full: int) -> int:
    """The number of examples for a property whose full count is ``full``, in this profile."""
    if settings.get_current_profile_name() == "explore":
        return full
    return max(1, full // PINNED_SHARE)
