"""The perf bench's in-process "before" store: another revision's SQLite store loaded together with
that revision's cache helpers (``store/_common.py``), so a change to the trajectory cache is
measured against the old cache, not against the old store running on the new one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from span_factory import fabricate_run

from benchmarks.perf.store import head_store_module
from causal_middleware.store import _common
from causal_middleware.store.sqlite import SqliteSpanStore

ROOT = Path(__file__).resolve().parents[2]


def _has_git_head() -> bool:
    try:
        subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


@pytest.mark.skipif(not _has_git_head(), reason="not a git checkout")
def test_the_head_store_runs_on_its_own_cache_helpers(tmp_path: Path) -> None:
    head = head_store_module("HEAD")
    assert head is not None
    helpers = head.read_trajectory.__module__
    assert helpers != _common.__name__ and helpers.startswith(head.__name__)
    run_id, records = fabricate_run()
    old = head.SqliteSpanStore(tmp_path / "old.db")
    new = SqliteSpanStore(tmp_path / "new.db")
    try:
        old.write_spans(records)
        new.write_spans(records)
        assert type(old._cache).__module__ == helpers
        assert old.get_trajectory(run_id) == new.get_trajectory(run_id)
    finally:
        old.close()
        new.close()
