"""Forks on a PostgresSaver, against a PostgreSQL server (Debian's packages) the ``postgres_saver``
fixture (conftest) starts itself.

The server runs from a fresh data directory in a temp dir, on a free loopback port, and is stopped
at the end. Skipped, with the reason, when the PostgreSQL server binaries or the Python packages
(langgraph-checkpoint-postgres, psycopg) are not installed.
"""

from __future__ import annotations

import collections
from typing import Any

from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer

from causal_middleware.store.memory import InMemorySpanStore

from .conftest import build_custom, checkpoint_rows, run_snapshot


def test_forks_on_postgres(postgres_saver: Any) -> None:
    shape = build_custom(postgres_saver, InMemorySpanStore())
    run_id = shape.run()
    before, snapshot = checkpoint_rows(postgres_saver), run_snapshot(shape.graph.store, run_id)
    replayer = Replayer(shape.graph, max_concurrency=4)
    shape.reset()
    modes = ("regenerate", "frozen", "replay")
    forks = replayer.fork_many(
        [
            ForkRequest(
                run_id=run_id,
                hop=2,
                mode=modes[i % 3],
                values={"docs": [{"id": f"P{i}", "text": "", "score": 0}]},
            )
            for i in range(6)
        ]
    )
    for i, fork in enumerate(forks):
        assert fork.answer == ("q1-d,q2-d,q3-d" if i % 3 == 2 else f"q1-d,P{i},q3-d")  # type: ignore[union-attr]
    assert shape.effects == collections.Counter()
    assert shape.nodes == collections.Counter({"decide": 4, "retrieve": 2, "answer": 4})  # 2 regen + 2 frozen
    after = checkpoint_rows(postgres_saver)
    assert len(after) > len(before) and {k: after[k] for k in before} == before
    assert run_snapshot(shape.graph.store, run_id) == snapshot
