"""The retrieval benchmark on a small corpus: report shape, JSON round trip, plausible figures."""

from __future__ import annotations

import importlib.util
import json

import pytest

from benchmarks.suites.retrieval import format_table, run_retrieval_bench
from causal_middleware.retrieval.dense import DENSE_INSTALL_HINT

HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None


def test_lexical_rows_are_measured_and_serialisable():
    report = run_retrieval_bench(sizes=(1_500,), retrievers=("bm25", "bm25s"), n_queries=12, n_upserts=2)
    assert json.loads(json.dumps(report)) == report
    rows = report["results"]
    assert [(r["retriever"], r["backend"], r["n_passages"]) for r in rows] == [
        ("bm25", "rank_bm25", 1_500),
        ("bm25s", "bm25s", 1_500),
    ]
    for row in rows:
        assert row["method"] == "measured"
        assert row["build_s"] > 0 and 0 < row["query_ms"]["p50"] <= row["query_ms"]["p95"]
        assert row["query_cpu_ms"]["p50"] >= 0 and row["build_cpu_s"] > 0
        assert row["upsert_then_query_ms"]["p50"] > 0
        assert 0.5 <= row["recall_at_k"] <= 1.0  # gold sub-questions name their entity: BM25 finds most
    assert rows[0]["recall_at_k"] == rows[1]["recall_at_k"]  # the two backends rank identically
    assert "bm25s" in format_table(report)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown retrievers"):
        run_retrieval_bench(sizes=(1_500,), retrievers=("tfidf",))
    with pytest.raises(ValueError, match="sizes must be positive"):
        run_retrieval_bench(sizes=(0,), retrievers=("bm25",))


@pytest.mark.dense
@pytest.mark.skipif(not HAVE_ST, reason=f"sentence-transformers missing: {DENSE_INSTALL_HINT}")
def test_dense_row_above_the_limit_is_estimated():
    report = run_retrieval_bench(
        sizes=(1_500,), retrievers=("dense",), n_queries=3, dense_max_passages=1_000, dense_sample=16
    )
    (row,) = report["results"]
    assert row["method"].startswith("estimated")
    assert row["recall_at_k"] is None
    assert row["encode_passages_per_s"] > 0 and row["build_s"] > 0 and row["query_ms"]["p50"] > 0
