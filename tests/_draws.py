"""Drawing fixed-seed examples of the suite's hypothesis strategies, for the tests of
``conformance/helpers/strategies.py`` (``tests/unit/test_strategies.py`` and
``tests/runs/test_strategies_slow.py``).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

EXAMPLES = 300


FIXED = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "phases": [Phase.generate],
    "suppress_health_check": list(HealthCheck),
}


def draw_many(strategy: st.SearchStrategy, n: int = EXAMPLES) -> list:
    """``n`` examples of ``strategy``, the same ones on every run."""
    drawn: list = []

    @settings(max_examples=n, **FIXED)
    @given(strategy)
    def collect(example):
        drawn.append(example)

    collect()
    assert drawn, "# sanity: nothing drawn"  # fewer than n when the strategy has fewer examples
    return drawn


def missing(kinds: Counter, claimed: list[str]) -> list[str]:
    return [kind for kind in claimed if not kinds[kind]]


def can_draw(strategy: st.SearchStrategy, condition, n: int = 3000) -> None:
    """``strategy`` draws an example satisfying ``condition`` within ``n`` fixed-seed tries."""
    find(strategy, condition, settings=settings(max_examples=n, **FIXED))
