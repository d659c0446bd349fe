"""The Postgres server the scale benchmark runs against: ``--postgres URL``, or a throwaway cluster
started by the tests' helper (``tests/_postgres.py``: initdb + pg_ctl on a temp dir, free port)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

HELPER = Path(__file__).resolve().parents[2] / "tests" / "_postgres.py"


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    if not HELPER.is_file():
        raise SystemExit(
            f"no --postgres URL and no server helper at {HELPER}: pass --postgres postgresql://..."
        )
    spec = importlib.util.spec_from_file_location("_causal_bench_postgres", HELPER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        with module.postgres_server() as started:
            yield started
    except module.PostgresUnavailable as exc:
        raise SystemExit(
            f"cannot start PostgreSQL for the benchmark: {exc} (or pass --postgres URL)"
        ) from None
