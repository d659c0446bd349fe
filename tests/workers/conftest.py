"""Fixtures for the repair-worker tests: a Postgres server the tests start themselves
(tests/_postgres.py), a fresh store schema per test, the README's agent on a PostgresSaver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _postgres import fresh_schema_url
from _postgres import postgres_url as postgres_url  # noqa: F401 - the session fixture


@pytest.fixture
def store_url(postgres_url: str) -> str:  # noqa: F811
    pytest.importorskip(
        "langgraph.checkpoint.postgres", reason="langgraph-checkpoint-postgres is not installed"
    )
    return fresh_schema_url(postgres_url, "work")


@pytest.fixture
def agent_graph(postgres_url: str) -> Iterator[Any]:  # noqa: F811
    import rag_agent

    graph = rag_agent.build(postgres_url)
    yield graph
    graph.checkpointer.conn.close()
