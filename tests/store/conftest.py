"""Fixtures for the span-store tests: every contract test runs against both stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

TRAIL_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "trail" / "traces" / "gaia"


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], SpanStore]]:
    """A factory of fresh, empty stores of one backend (several per test when needed)."""
    made: list[SpanStore] = []

    def factory() -> SpanStore:
        store: SpanStore
        if request.param == "memory":
            store = InMemorySpanStore()
        else:
            store = SqliteSpanStore(tmp_path / f"store{len(made)}.db")
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[[], SpanStore]) -> SpanStore:
    return make_store()


@pytest.fixture
def trail_dir() -> Path:
    if not TRAIL_DIR.is_dir():
        pytest.skip(f"TRAIL traces not present at {TRAIL_DIR} (../shared/data is absent in this checkout)")
    return TRAIL_DIR
