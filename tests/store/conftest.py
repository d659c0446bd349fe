"""Fixtures for the span-store tests: every contract test runs against every store (in-memory,
SQLite, and Postgres on a server the tests start themselves: tests/_postgres.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _postgres import fresh_schema_url
from _postgres import postgres_url as postgres_url  # noqa: F401 - the session fixture

from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

TRAIL_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "trail" / "traces" / "gaia"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], SpanStore]]:
    """A factory of fresh, empty stores of one backend (several per test when needed)."""
    made: list[SpanStore] = []

    def factory() -> SpanStore:
        store: SpanStore
        if request.param == "memory":
            store = InMemorySpanStore()
        elif request.param == "postgres":
            from causal_middleware.store.postgres import PostgresSpanStore

            store = PostgresSpanStore(fresh_schema_url(request.getfixturevalue("postgres_url")))
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
