"""The ``record`` fixture: a user's graph compiled with a ``SqliteSaver`` in ``tmp_path``, wrapped
with ``instrument(graph, store=...)`` (a ``SqliteSpanStore`` in ``tmp_path``, or an in-memory
one) and run once with a ``causal_reference`` (see user_agent_harness.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider
from user_agent_harness import THREAD, Recorded, Recorder

from causal_middleware import instrument
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore


@pytest.fixture
def record(tmp_path: Path, tracer_provider: TracerProvider) -> Iterator[Recorder]:
    """``record(build, inputs, reference, sqlite_store=True, record_reference=True)``:
    ``build(checkpointer)`` returns the user's compiled graph; it is instrumented, run once on
    thread ``THREAD`` (with ``causal_reference`` in the run's metadata unless
    ``record_reference`` is False) and recorded."""
    opened: list[tuple[InstrumentedGraph, Any, SqliteSaver]] = []

    def run(
        build: Callable[[SqliteSaver], Any],
        inputs: Any,
        reference: str,
        *,
        sqlite_store: bool = True,
        record_reference: bool = True,
    ) -> Recorded:
        n = len(opened)
        saver = SqliteSaver(sqlite3.connect(str(tmp_path / f"checkpoints{n}.db"), check_same_thread=False))
        store = SqliteSpanStore(str(tmp_path / f"runs{n}.db")) if sqlite_store else InMemorySpanStore()
        ig = instrument(build(saver), store=store, tracer_provider=tracer_provider)
        opened.append((ig, store, saver))
        config: dict[str, Any] = {"configurable": {"thread_id": THREAD}}
        if record_reference:
            config["metadata"] = {"causal_reference": reference}
        output = ig.invoke(inputs, config)
        assert ig.last_run_id is not None
        return Recorded(
            ig=ig, store=store, saver=saver, reference=reference, output=output, run_id=ig.last_run_id
        )

    yield run
    for ig, store, saver in opened:
        ig.shutdown()
        store.close()
        saver.conn.close()
