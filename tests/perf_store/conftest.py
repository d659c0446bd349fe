"""Fixtures for the indexed-read tests: stores filled with runs synthesised from one fabricated run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))  # span_factory

from span_factory import fabricate_run  # noqa: E402

from causal_middleware.spans.record import SpanRecord  # noqa: E402


@pytest.fixture(scope="session")
def template() -> list[SpanRecord]:
    return fabricate_run()[1]


@pytest.fixture
def synth(template: list[SpanRecord]) -> Callable[[int, int], list[SpanRecord]]:
    """``synth(i, n)``: run ``i`` of ``n`` (benchmarks.perf.store's synthesiser: labels ``i``,
    ``split=a`` on every fourth run, ``split=b`` on the next, ``needle=1`` on run n // 2)."""
    from benchmarks.perf.store import synthesise

    return lambda i, n: synthesise(template, i, n)
