"""Statistics shared by the benchmarks: bootstrap confidence intervals and exact McNemar tests.

Percentile bootstrap over the evaluated items: resample the items with replacement ``B`` times
(seeded), recompute the statistic, take the alpha/2 and 1-alpha/2 quantiles. Paired comparisons
of two methods on the same items count the discordant pairs and test them with the exact
(binomial) McNemar test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field


def mean(values: Any) -> float:
    return float(np.mean(values))


def resample_indices(n: int, B: int = 1000, seed: int = 0) -> np.ndarray:  # noqa: N803
    """The ``(B, n)`` index matrix every interval here resamples with (shared, so custom vectorised
    statistics see exactly the resamples :func:`bootstrap_ci` would)."""
    return np.random.default_rng(seed).integers(0, n, size=(B, n))


def percentile_interval(stats: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return round(float(low), 4), round(float(high), 4)


def bootstrap_ci(
    values: Sequence[Any],
    B: int = 1000,  # noqa: N803 - the usual name
    seed: int = 0,
    stat: Callable[[Any], float] = mean,
    alpha: float = 0.05,
) -> tuple[float, float] | None:
    """``(low, high)`` percentile interval of ``stat`` over ``values``; None when ``values`` is empty.

    ``values`` may be numbers or any items (``stat`` then receives an object array of the resampled
    items, e.g. to recompute F1 from per-item outcomes).
    """
    if B < 1:
        raise ValueError(f"B must be >= 1, got {B}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    n = len(values)
    if n == 0:
        return None
    try:
        data = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        data = np.empty(n, dtype=object)
        data[:] = list(values)
    idx = resample_indices(n, B=B, seed=seed)
    if stat is mean and data.dtype != object:
        stats = data[idx].mean(axis=1)
    else:
        stats = np.array([stat(data[row]) for row in idx], dtype=float)
    return percentile_interval(stats, alpha)


def proportion_ci(
    successes: int | Sequence[bool | int | float],
    n: int | None = None,
    B: int = 1000,  # noqa: N803
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float] | None:
    """Bootstrap interval of a proportion: ``proportion_ci(k, n)`` or ``proportion_ci([True, False, ...])``.

    None when there are no items.
    """
    if not isinstance(successes, int):
        outcomes = [1.0 if bool(v) else 0.0 for v in successes]
        if n is not None and n != len(outcomes):
            raise ValueError(f"n={n} does not match the {len(outcomes)} outcomes given")
        return bootstrap_ci(outcomes, B=B, seed=seed, alpha=alpha)
    if n is None or n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    return bootstrap_ci([1.0] * successes + [0.0] * (n - successes), B=B, seed=seed, alpha=alpha)


# --- paired comparisons (attribution benchmark) -------------------------------------------------
# The exact McNemar test is a two-sided binomial test of b successes out of b + c at p = 0.5: a few
# lines with math.comb and exact integer arithmetic, so scipy (not a project dependency) is not
# needed for it.


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` (only A right) and ``c`` (only B right).

    ``p = min(1, 2 * sum_{i <= min(b, c)} C(b + c, i) / 2^(b + c))``; 1.0 when there is no
    discordant pair.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(1.0, 2 * tail / 2**n))


class PairedComparison(BaseModel):
    """Two methods scored on the same items: discordant pairs and the exact McNemar test."""

    a: str
    b: str
    n: int = Field(description="items both methods were scored on")
    both: int = Field(description="items both got right")
    a_only: int = Field(description="items only A got right (McNemar's b)")
    b_only: int = Field(description="items only B got right (McNemar's c)")
    neither: int
    p_value: float


def paired_comparison(
    a: str, b: str, a_correct: Sequence[bool], b_correct: Sequence[bool]
) -> PairedComparison:
    """Compare two methods' per-item correctness (same items, same order)."""
    if len(a_correct) != len(b_correct):
        raise ValueError(
            f"paired comparison needs the same items: {a} has {len(a_correct)}, {b} has {len(b_correct)}"
        )
    pairs = list(zip(a_correct, b_correct, strict=True))
    both = sum(1 for x, y in pairs if x and y)
    a_only = sum(1 for x, y in pairs if x and not y)
    b_only = sum(1 for x, y in pairs if y and not x)
    return PairedComparison(
        a=a,
        b=b,
        n=len(pairs),
        both=both,
        a_only=a_only,
        b_only=b_only,
        neither=len(pairs) - both - a_only - b_only,
        p_value=mcnemar_exact(a_only, b_only),
    )
