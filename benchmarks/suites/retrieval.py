"""Retrieval benchmark: index build time, query latency and gold-passage recall at corpus sizes.

Run ``python -m benchmarks.suites.retrieval --sizes 10000 100000 --out bench.json`` or call
:func:`run_retrieval_bench`. The corpus is the generated world padded to each size
(``generate_world(n_passages=...)``); queries are the questions' gold sub-questions with ``#k``
filled in by hop *k*'s answer, so recall@k says whether the gold supporting passage came back.

Dense retrieval encodes every passage with all-MiniLM-L6-v2, which on a few CPU cores takes
minutes at 100k passages. Above ``dense_max_passages`` the dense row is therefore *estimated*:
build time = measured encoding throughput on ``dense_sample`` passages x corpus size (+ the
measured faiss add); query latency is measured for real (query encoding + a flat inner-product
scan) over an index of that many random unit vectors, since a flat scan costs the same whatever
the vectors hold. Recall is not reported for estimated rows. Each row says which it is.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from causal_middleware.retrieval.bm25 import BM25Index, passage_document
from causal_middleware.tasks.model import Dataset, Passage

RETRIEVERS = ("bm25", "bm25s", "dense")
_HOP_REF = re.compile(r"#(\d+)")


def run_retrieval_bench(
    sizes: Sequence[int] = (10_000, 100_000),
    retrievers: Sequence[str] = ("bm25", "bm25s", "dense"),
    n_queries: int = 50,
    *,
    k: int = 5,
    seed: int = 0,
    n_upserts: int = 5,
    dense_max_passages: int = 10_000,
    dense_sample: int = 2_000,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure each retriever at each corpus size; a JSON-serialisable dict (see the module docstring).

    ``bm25`` is :class:`BM25Index` on rank-bm25, ``bm25s`` the same index on bm25s, ``dense``
    :class:`DenseIndex` with the default encoder (needs the ``[dense]`` extra).
    """
    unknown = [r for r in retrievers if r not in RETRIEVERS]
    if unknown:
        raise ValueError(f"unknown retrievers {unknown}; choose from {list(RETRIEVERS)}")
    if n_queries <= 0 or k <= 0:
        raise ValueError(f"n_queries and k must be positive, got n_queries={n_queries}, k={k}")
    if any(not isinstance(s, int) or s <= 0 for s in sizes):
        raise ValueError(f"sizes must be positive integers, got {list(sizes)}")
    say = progress or (lambda _msg: None)
    rows: list[dict[str, Any]] = []
    corpus_kind = ""
    for size in sizes:
        dataset, corpus_kind = _corpus(size, seed)
        queries = _queries(dataset, n_queries)
        for retriever in retrievers:
            say(f"{retriever} @ {size} passages")
            if retriever == "dense":
                row = _dense_row(dataset, queries, k, dense_max_passages, dense_sample)
            else:
                backend = "rank_bm25" if retriever == "bm25" else "bm25s"
                row = _lexical_row(dataset, queries, k, backend, n_upserts)
            rows.append({"retriever": retriever, "n_passages": len(dataset.passages), **row})
            say(f"  {json.dumps(rows[-1])}")
    return {
        "k": k,
        "n_queries": n_queries,
        "corpus": corpus_kind,
        "seed": seed,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "results": rows,
    }


def _corpus(size: int, seed: int) -> tuple[Dataset, str]:
    try:
        from benchmarks.world.generator import generate_world
    except ImportError:
        return _synthetic(size, seed), "synthetic"
    return generate_world(50, seed=seed, n_passages=size), "generated world (50 questions, padded)"


def _synthetic(size: int, seed: int) -> Dataset:
    """Random short passages over a Zipf-ish vocabulary, for when the world generator is absent."""
    rng = np.random.default_rng(seed)
    vocab = [f"term{i}" for i in range(20_000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    passages = [
        Passage(id=f"s{i}", title=f"Entity {i}", text=" ".join(rng.choice(vocab, size=12, p=weights)))
        for i in range(size)
    ]
    return Dataset(name="synthetic", passages=passages, questions=[])


def _queries(dataset: Dataset, n: int) -> list[tuple[str, set[str]]]:
    """(query text, gold supporting passage ids) pairs: resolved gold sub-questions, cycled to ``n``."""
    pairs: list[tuple[str, set[str]]] = []
    for question in dataset.questions:
        answers: dict[str, str] = {}
        for hop in question.hops:
            text = _fill_refs(hop.question, answers)
            pairs.append((text, set(hop.supporting_passage_ids)))
            answers[str(hop.index)] = hop.answer
    if not pairs:  # synthetic corpus: query with a passage's own title and first words
        pairs = [(passage_document(p)[:60], {p.id}) for p in dataset.passages[:n]]
    return [pairs[i % len(pairs)] for i in range(n)]


def _fill_refs(question: str, answers: dict[str, str]) -> str:
    """``"Who founded #1?"`` with hop 1's answer in place of ``#1``."""
    return _HOP_REF.sub(lambda m: answers.get(m.group(1), ""), question)


class _Clock:
    """Wall and process-CPU seconds of a ``with`` block. On a shared machine the CPU time is the
    steadier figure for single-threaded work (it excludes time waiting for a core)."""

    def __enter__(self) -> _Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


def _latencies(
    search: Callable[[str], list[str]], queries: list[tuple[str, set[str]]]
) -> tuple[dict[str, dict[str, float]], float | None]:
    walls, cpus, found, graded = [], [], 0, 0
    for text, gold in queries:
        with _Clock() as clock:
            ids = search(text)
        walls.append(clock.wall)
        cpus.append(clock.cpu)
        if gold:
            graded += 1
            found += bool(gold & set(ids))
    return {"wall": _summary(walls), "cpu": _summary(cpus)}, (found / graded if graded else None)


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000.0
    return {
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p95": round(float(np.percentile(ms, 95)), 3),
        "mean": round(float(ms.mean()), 3),
    }


def _lexical_row(
    dataset: Dataset, queries: list[tuple[str, set[str]]], k: int, backend: str, n_upserts: int
) -> dict[str, Any]:
    with _Clock() as build:
        index = BM25Index(dataset.passages, backend=backend)  # type: ignore[arg-type]
        index.search(queries[0][0], k)  # bm25s builds its score matrix lazily, on the first search
    query_ms, recall = _latencies(lambda q: [h.passage.id for h in index.search(q, k)], queries)
    walls, cpus = [], []
    for i in range(n_upserts):
        victim = dataset.passages[(i * 7919) % len(dataset.passages)]
        with _Clock() as clock:
            index.upsert(victim.model_copy(update={"text": victim.text + " corrupted"}))
            index.search(queries[i % len(queries)][0], k)
        walls.append(clock.wall)
        cpus.append(clock.cpu)
    return {
        "backend": backend,
        "method": "measured",
        "build_s": round(build.wall, 3),
        "build_cpu_s": round(build.cpu, 3),
        "query_ms": query_ms["wall"],
        "query_cpu_ms": query_ms["cpu"],
        "upsert_then_query_ms": _summary(walls) if walls else None,
        "upsert_then_query_cpu_ms": _summary(cpus) if cpus else None,
        "recall_at_k": recall,
    }


def _dense_row(
    dataset: Dataset, queries: list[tuple[str, set[str]]], k: int, max_passages: int, sample: int
) -> dict[str, Any]:
    import faiss

    from causal_middleware.retrieval.dense import DenseIndex, default_encoder

    with _Clock() as load:
        encoder = default_encoder()
    passages = dataset.passages
    common = {"backend": f"faiss IndexFlatIP + {encoder.id}", "model_load_s": round(load.wall, 3)}
    if len(passages) <= max_passages:
        with tempfile.TemporaryDirectory() as cache:
            with _Clock() as build:
                index = DenseIndex(passages, encoder=encoder, cache_dir=cache)
            with _Clock() as cached:
                DenseIndex(passages, encoder=encoder, cache_dir=cache)
            cache_bytes = sum(f.stat().st_size for f in Path(cache).iterdir())
        query_ms, recall = _latencies(lambda q: [h.passage.id for h in index.search(q, k)], queries)
        return {
            **common,
            "method": "measured",
            "build_s": round(build.wall, 3),
            "build_cpu_s": round(build.cpu, 3),
            "encode_passages_per_s": round(len(passages) / build.wall, 1),
            "cache_load_s": round(cached.wall, 3),
            "cache_bytes": cache_bytes,
            "query_ms": query_ms["wall"],
            "query_cpu_ms": query_ms["cpu"],
            "recall_at_k": recall,
        }
    docs = [passage_document(p) for p in passages[: min(sample, len(passages))]]
    with _Clock() as encode:
        encoder.encode(docs)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(passages), encoder.dim)).astype(np.float32)
    faiss.normalize_L2(vectors)
    flat = faiss.IndexFlatIP(encoder.dim)
    with _Clock() as add:
        flat.add(vectors)

    def search(text: str) -> list[str]:
        query = encoder.encode([text])
        faiss.normalize_L2(query)
        flat.search(query, k)
        return []

    query_ms, _ = _latencies(search, queries)
    scale = len(passages) / len(docs)
    return {
        **common,
        "method": f"estimated: build from encoding {len(docs)} sampled passages; query measured on random vectors",
        "build_s": round(encode.wall * scale + add.wall, 1),
        "build_cpu_s": round(encode.cpu * scale + add.cpu, 1),
        "encode_passages_per_s": round(len(docs) / encode.wall, 1),
        "query_ms": query_ms["wall"],
        "query_cpu_ms": query_ms["cpu"],
        "recall_at_k": None,
    }


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of a report's rows."""
    lines = [
        f"{'retriever':<9} {'passages':>9} {'build s':>9} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} "
        f"{'recall@k':>8}  method"
    ]
    for row in report["results"]:
        recall = "-" if row.get("recall_at_k") is None else f"{row['recall_at_k']:.2f}"
        lines.append(
            f"{row['retriever']:<9} {row['n_passages']:>9} {row['build_s']:>9} {row['query_ms']['p50']:>8} "
            f"{row['query_ms']['p95']:>8} {row['query_cpu_ms']['p50']:>8} {recall:>8}  {row['method']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suites.retrieval", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--retrievers", nargs="+", choices=RETRIEVERS, default=list(RETRIEVERS))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args(argv)
    report = run_retrieval_bench(
        args.sizes, args.retrievers, args.queries, k=args.k, progress=lambda m: print(m, flush=True)
    )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    print(format_table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
