"""The user's support agent recorded with ``instrument()`` into a SQLite span store."""

from __future__ import annotations

from pathlib import Path

import pytest

from causal_middleware import instrument
from causal_middleware.store.sqlite import SqliteSpanStore

from .support_agent import SESSIONS, build_agent, write_workspace


def record(root: Path, db: Path, sessions: dict[str, list[str]]) -> SqliteSpanStore:
    store = SqliteSpanStore(db)
    graph = instrument(build_agent(root), store=store)
    for thread, turns in sessions.items():
        for text in turns:
            graph.invoke(
                {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread}}
            )
    graph.force_flush()
    return store


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace root, store path) after the three sessions of :data:`SESSIONS`."""
    root = write_workspace(tmp_path / "acme-support")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    db = tmp_path / "runs.db"
    record(root, db, SESSIONS)
    return root, db
