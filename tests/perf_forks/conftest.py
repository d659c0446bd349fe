"""Fixtures for the builder-equality tests (issue 16): the trajectory builder of a fixed earlier
revision, loaded from git under a private name, and span corpora to build with both: real
reference-agent runs and their forks in every mode, fabricated contract runs, TRAIL and Who&When
imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))  # span_factory

from causal_middleware.spans.record import SpanRecord  # noqa: E402
from causal_middleware.store.sqlite import SqliteSpanStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# the revision before the builder was made faster (what every output must still equal)
BASELINE = "571ac77"
DATA = ROOT / ".." / "shared" / "data"


def _has_revision(ref: str) -> bool:
    try:
        subprocess.run(
            ["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


@pytest.fixture(scope="session")
def baseline_builder() -> ModuleType:
    if not _has_revision(BASELINE):
        pytest.skip(f"revision {BASELINE} is not in this checkout")
    from benchmarks.perf.redaction import head_module

    module = head_module("causal_middleware/spans/builder.py", "_perf_forks_baseline_builder", BASELINE)
    assert module is not None
    return module


@pytest.fixture(scope="session")
def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[SpanRecord]]:
    """Spans of reference-agent runs and of forks of them in every mode (and a fork of a fork),
    as the SQLite store reads them back."""
    pytest.importorskip("benchmarks.reference_agent", reason="the reference agent is not in this checkout")
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.world.generator import generate_world

    path = tmp_path_factory.mktemp("perf_forks") / "runs.db"
    world = generate_world(4, seed=0)
    store = SqliteSpanStore(path)
    env = reference_sweep_environment(world, store=store, seed=0)
    try:
        base = [env.run_base(q) for q in world.questions[:4]]
        forks = [
            env.backend.fork(run, hop=hop, mode=mode).run_id
            for run in base[:2]
            for hop in (1, 2)
            for mode in ("regenerate", "frozen", "replay")
        ]
        forks.append(env.backend.fork(forks[0], hop=2, mode="regenerate").run_id)
    finally:
        env.close()
    try:
        return {run_id: store.get_spans(run_id) for run_id in [*base, *forks]}
    finally:
        store.close()
