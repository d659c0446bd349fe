"""Bootstrap intervals (causal_middleware.evaluation.stats)."""

from __future__ import annotations

import pytest

from causal_middleware.evaluation.stats import bootstrap_ci, proportion_ci


def test_bootstrap_ci_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    lo, hi = bootstrap_ci(values, B=1000, seed=0)  # type: ignore[misc]
    assert lo <= 0.7 <= hi and 0.0 <= lo < hi <= 1.0
    assert bootstrap_ci(values, B=1000, seed=0) == (lo, hi)
    spread = [i * 0.37 % 1 for i in range(40)]
    assert bootstrap_ci(spread, seed=0) != bootstrap_ci(spread, seed=1)


def test_constant_values_give_a_point_interval_and_empty_gives_none() -> None:
    assert bootstrap_ci([1.0] * 20) == (1.0, 1.0)
    assert bootstrap_ci([]) is None


def test_custom_statistic_over_items() -> None:
    items = [("a", 1), ("b", 0), ("c", 1), ("d", 1)]
    lo, hi = bootstrap_ci(items, stat=lambda arr: sum(x[1] for x in arr) / len(arr))  # type: ignore[misc]
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0


def test_proportion_ci_forms() -> None:
    assert proportion_ci(7, 10) == proportion_ci([True] * 7 + [False] * 3)
    assert proportion_ci(0, 0) is None
    with pytest.raises(ValueError, match="successes <= n"):
        proportion_ci(3, 2)
    with pytest.raises(ValueError, match="B must be"):
        bootstrap_ci([1.0], B=0)
