"""The perf bench's in-process "before" store builds with its own revision's trajectory builder
(``STORE_COMPANIONS``), so a faster builder is measured against the old one, and both give the
same trajectory."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BASELINE, _has_revision
from span_factory import fabricate_run

from benchmarks.perf.store import head_store_module
from causal_middleware.spans import builder
from causal_middleware.store.sqlite import SqliteSpanStore


@pytest.mark.skipif(not _has_revision(BASELINE), reason=f"revision {BASELINE} is not in this checkout")
def test_the_before_store_builds_with_its_own_builder(tmp_path: Path) -> None:
    head = head_store_module(BASELINE)
    assert head is not None
    assert head.build_trajectory is not builder.build_trajectory
    assert head.build_trajectory.__module__.startswith(head.__name__)
    assert head.read_trajectory.__module__.startswith(head.__name__)
    run_id, records = fabricate_run()
    old = head.SqliteSpanStore(tmp_path / "old.db")
    new = SqliteSpanStore(tmp_path / "new.db")
    try:
        old.write_spans(records)
        new.write_spans(records)
        assert old.get_trajectory(run_id) == new.get_trajectory(run_id)
        assert old.list_runs() == new.list_runs()
    finally:
        old.close()
        new.close()
