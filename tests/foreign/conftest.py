"""Fixtures for traces the project did not record (OTLP/JSON round trips, OpenInference, Who&When).

Every store test runs against both backends; the store tests' span factory is reused.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))  # span_factory

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
WHO_AND_WHEN = DATA / "who_and_when"


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], SpanStore]]:
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
def who_and_when() -> Path:
    if not WHO_AND_WHEN.is_dir():
        pytest.skip(
            f"Who&When logs not present at {WHO_AND_WHEN} (../shared/data is absent in this checkout)"
        )
    return WHO_AND_WHEN
