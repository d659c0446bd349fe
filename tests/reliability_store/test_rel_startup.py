"""Item 1: processes opening a new store path at the same moment all succeed."""

from __future__ import annotations

from benchmarks.reliability.harness import concurrent_fresh_opens


def test_concurrent_fresh_store_opens_never_fail() -> None:
    # before: 58 of 120 opens failed with "table spans already exists"
    result = concurrent_fresh_opens(n_procs=4, n_rounds=20)
    assert result["failures"] == 0, result["first_error"]
    assert result["opens"] == 80
