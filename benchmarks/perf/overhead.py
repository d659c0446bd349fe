"""Per-run instrumentation overhead, measured in one process, interleaved, by medians.

Variants, each on its own copy of the graph (:mod:`benchmarks.perf.graphs`):

* ``none``: the bare graph;
* ``floor``: the bare graph with a no-op LangChain callback, then the same span tree as ours
  (names and parents of a recorded run) emitted with plain OTel onto an in-memory exporter: the
  least any callback-based tracer can cost;
* ``ours_memory``: ``instrument(store=None)`` onto an in-memory exporter;
* ``ours_sqlite``: the default, ``instrument(store=<file>)`` (background store writer);
* ``ours_otlp``: the default plus OTLP export with the content policy and redaction, the
  exporter encoding every span to OTLP protobuf (no network);
* ``openinference``: OpenInference's ``LangChainInstrumentor`` onto an in-memory exporter.

Each round runs every variant once in a rotated order. ``overhead_ms`` is the median caller
wall time minus ``none``'s; background writers are flushed after each timed call (untimed), so
one variant's writes never land inside another's timing; ``drained_ms`` adds that flush (what
the run costs in all, the background work included). ``caller_store_write`` is the time the
run's end spends handing the run to the store (on the caller's thread): p50 / p99.
"""

from __future__ import annotations

import gc
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from causal_middleware.integrations.langgraph.extract import value_attributes
from causal_middleware.integrations.langgraph.instrument import SPAN_LIMITS, _resource, instrument
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from causal_middleware.spans import attributes as A
from causal_middleware.spans.export import (
    BoundedBatchSpanProcessor,
    FailOpenExporter,
    RunSpanProcessor,
    build_otlp_processor,
)

from .graphs import ANSWER, build_chain_graph, chain_input
from .redaction import STORE_COMPANIONS, head_module

VARIANTS = ("none", "floor", "ours_memory", "ours_sqlite", "ours_otlp", "openinference")


class NoopHandler(BaseCallbackHandler):
    run_inline = True


class EncodingExporter(SpanExporter):
    """Encodes each batch to OTLP protobuf bytes (what the OTLP HTTP exporter sends) and drops it."""

    def __init__(self) -> None:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self._encode = encode_spans
        self.bytes = 0
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.bytes += len(self._encode(spans).SerializePartialToString())
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _tree(spans: Sequence[ReadableSpan]) -> list[tuple[str, int | None]]:
    """(name, parent position) of one trace's spans in start order."""
    ordered = sorted(spans, key=lambda s: s.start_time or 0)
    position = {s.context.span_id: i for i, s in enumerate(ordered)}
    return [(s.name, position.get(s.parent.span_id) if s.parent else None) for s in ordered]


def _emit_tree(tracer: Any, tree: list[tuple[str, int | None]]) -> None:
    live: list[Any] = []
    for name, parent in tree:
        ctx = set_span_in_context(live[parent], Context()) if parent is not None else Context()
        live.append(tracer.start_span(name, context=ctx, attributes={"causal.span.type": "node"}))
    for span in reversed(live):
        span.end()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


class _Bench:
    """The variants of one graph shape, ready to run."""

    def __init__(
        self,
        hops: int,
        checkpointer: bool,
        folder: Path,
        variants: Sequence[str],
        before: tuple[ModuleType, ModuleType] | None = None,
    ) -> None:
        self.hops = hops
        self.checkpointer = checkpointer
        self.variants = list(variants)
        self.input = chain_input(hops)
        self._counter = 0
        self.closers: list[Callable[[], None]] = []
        self.flushers: dict[str, Callable[[], None]] = {}
        self.handover: list[float] = []
        self.run: dict[str, Callable[[], Any]] = {}
        make = lambda: build_chain_graph(hops, checkpointer=InMemorySaver() if checkpointer else None)  # noqa: E731

        bare = make()
        self.run["none"] = lambda: bare.invoke(dict(self.input), self._config())
        check = bare.invoke(dict(self.input), self._config())
        if check.get("answer") != ANSWER:
            raise RuntimeError(f"bench graph ({hops} hops) answered {check.get('answer')!r}")

        mem_exporter = InMemorySpanExporter()
        mem_tp = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
        mem_tp.add_span_processor(SimpleSpanProcessor(mem_exporter))
        ours_memory = instrument(make(), store=None, tracer_provider=mem_tp)
        self.closers.append(ours_memory.shutdown)
        self.run["ours_memory"] = lambda: ours_memory.invoke(dict(self.input), self._config())
        self.run["ours_memory"]()
        self.tree = _tree(mem_exporter.get_finished_spans())
        self.spans_per_run = len(self.tree)
        mem_exporter.clear()
        self._mem_exporter = mem_exporter

        floor_exporter = InMemorySpanExporter()
        floor_tp = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
        floor_tp.add_span_processor(SimpleSpanProcessor(floor_exporter))
        floor_tracer = floor_tp.get_tracer("floor")
        floor_graph, noop = make(), NoopHandler()

        def run_floor() -> None:
            floor_graph.invoke(dict(self.input), {**self._config(), "callbacks": [noop]})
            _emit_tree(floor_tracer, self.tree)
            floor_exporter.clear()

        self.run["floor"] = run_floor

        if "ours_sqlite" in self.variants:
            self.sqlite_path = folder / f"sqlite-{hops}-{int(checkpointer)}.db"
            ours_sqlite = instrument(make(), store=str(self.sqlite_path))
            self.ours_sqlite = ours_sqlite
            self.closers.append(ours_sqlite.shutdown)
            processor = next(p for p in ours_sqlite._processors if isinstance(p, RunSpanProcessor))
            self._time_handover(processor)
            self.run["ours_sqlite"] = lambda: ours_sqlite.invoke(dict(self.input), self._config())
            self.flushers["ours_sqlite"] = lambda: ours_sqlite.flush(30)

        if "ours_otlp" in self.variants:
            self.encoder = EncodingExporter()
            otlp_tp = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
            otlp_processor = build_otlp_processor(self.encoder)
            otlp_tp.add_span_processor(otlp_processor)
            ours_otlp = instrument(
                make(), store=str(folder / f"otlp-{hops}-{int(checkpointer)}.db"), tracer_provider=otlp_tp
            )
            self.closers.append(ours_otlp.shutdown)
            self.closers.append(otlp_tp.shutdown)
            self.run["ours_otlp"] = lambda: ours_otlp.invoke(dict(self.input), self._config())

            def flush_otlp() -> None:
                ours_otlp.flush(30)
                otlp_processor.force_flush(30_000)

            self.flushers["ours_otlp"] = flush_otlp

        if before is not None and "before_sqlite" in self.variants:
            old_store, old_content = before
            self.before_path = folder / f"before-{hops}-{int(checkpointer)}.db"
            old = _as_before(instrument(make(), store=old_store.SqliteSpanStore(self.before_path)))
            self.closers.append(old.shutdown)
            self.run["before_sqlite"] = lambda: old.invoke(dict(self.input), self._config())
            self.flushers["before_sqlite"] = lambda: old.flush(30)
            if "before_otlp" in self.variants:
                old_tp = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
                old_processor = BoundedBatchSpanProcessor(
                    FailOpenExporter(old_content.ContentFilterExporter(EncodingExporter()), "export.otlp")
                )
                old_tp.add_span_processor(old_processor)
                old_otlp = _as_before(
                    instrument(
                        make(),
                        store=old_store.SqliteSpanStore(
                            folder / f"before-otlp-{hops}-{int(checkpointer)}.db"
                        ),
                        tracer_provider=old_tp,
                    )
                )
                self.closers += [old_otlp.shutdown, old_tp.shutdown]
                self.run["before_otlp"] = lambda: old_otlp.invoke(dict(self.input), self._config())

                def flush_old_otlp() -> None:
                    old_otlp.flush(30)
                    old_processor.force_flush(30_000)

                self.flushers["before_otlp"] = flush_old_otlp

        if "openinference" in self.variants:
            from openinference.instrumentation.langchain import LangChainInstrumentor

            oi_exporter = InMemorySpanExporter()
            oi_tp = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
            oi_tp.add_span_processor(SimpleSpanProcessor(oi_exporter))
            oi_graph, oi = make(), LangChainInstrumentor()

            def run_oi() -> None:
                oi.instrument(tracer_provider=oi_tp)
                try:
                    oi_graph.invoke(dict(self.input), self._config())
                finally:
                    oi.uninstrument()
                oi_exporter.clear()

            self.run["openinference"] = run_oi
        self.variants = [n for n in self.variants if n in self.run]
        self.run = {name: self.run[name] for name in self.variants}

    def _config(self) -> dict[str, Any]:
        self._counter += 1
        return {"configurable": {"thread_id": f"bench-{self._counter}"}} if self.checkpointer else {}

    def _time_handover(self, processor: RunSpanProcessor) -> None:
        inner = processor.on_end

        def on_end(span: ReadableSpan) -> None:
            if span.parent is None:
                start = time.perf_counter()
                inner(span)
                self.handover.append(time.perf_counter() - start)
            else:
                inner(span)

        processor.on_end = on_end  # type: ignore[method-assign]

    def measure(self, rounds: int, warmup: int) -> dict[str, Any]:
        times: dict[str, list[float]] = {n: [] for n in self.variants}
        drained: dict[str, list[float]] = {n: [] for n in self.variants}
        names = self.variants
        for i in range(warmup + rounds):
            if i == warmup:
                self.handover.clear()
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                gc.collect()
                start = time.perf_counter()
                self.run[name]()
                elapsed = time.perf_counter() - start
                flush = self.flushers.get(name)
                if flush is not None:
                    flush()
                total = time.perf_counter() - start
                self._mem_exporter.clear()
                if i >= warmup:
                    times[name].append(elapsed)
                    drained[name].append(total)
        base = statistics.median(times["none"])
        out: dict[str, Any] = {
            "hops": self.hops,
            "checkpointer": "InMemorySaver" if self.checkpointer else None,
            "rounds": rounds,
            "spans_per_run": self.spans_per_run,
            "variants": {},
        }
        for name in names:
            med = statistics.median(times[name])
            out["variants"][name] = {
                "median_ms": round(med * 1e3, 3),
                "overhead_ms": round((med - base) * 1e3, 3),
                "drained_ms": round((statistics.median(drained[name]) - base) * 1e3, 3),
                "ratio_to_none": round(med / base, 3),
            }
        v = out["variants"]
        floor = v.get("floor", {}).get("overhead_ms")
        oi = v.get("openinference", {}).get("overhead_ms")
        for name in ("ours_memory", "ours_sqlite", "ours_otlp", "before_sqlite", "before_otlp"):
            if name in v and floor:
                v[name]["x_floor"] = round(v[name]["overhead_ms"] / floor, 2)
            if name in v and oi:
                v[name]["x_openinference"] = round(v[name]["overhead_ms"] / oi, 2)
        if self.handover:
            out["caller_store_write_ms"] = {
                "p50": round(statistics.median(self.handover) * 1e3, 4),
                "p99": round(_percentile(self.handover, 0.99) * 1e3, 4),
                "max": round(max(self.handover) * 1e3, 4),
                "n": len(self.handover),
            }
        for key, path, graph in (
            ("stored_bytes_per_run", getattr(self, "sqlite_path", None), getattr(self, "ours_sqlite", None)),
            ("before_stored_bytes_per_run", getattr(self, "before_path", None), None),
        ):
            if path is None:
                continue
            if graph is not None:
                graph.flush(30)
            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                n_runs = conn.execute("SELECT count(*) FROM runs WHERE is_run = 1").fetchone()[0]
            size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
            out[key] = round(size / max(n_runs, 1))
        return out

    def close(self) -> None:
        for close in self.closers:
            try:
                close()
            except Exception:  # noqa: BLE001 - a bench's teardown
                pass


def _as_before(graph: Any) -> Any:
    """An instrumented graph whose node spans carry the whole input, as before issue 16."""
    handler = graph.handler
    handler._node_input = lambda run, inputs: value_attributes(A.INPUT_VALUE, A.INPUT_MIME_TYPE, inputs)
    return graph


def run(*, quick: bool = False, rounds: int | None = None, before_ref: str | None = None) -> dict[str, Any]:
    """Graphs (a) and (b) with every variant, then graph (b)'s shape at 30 hops (none, floor,
    ours_sqlite) for the growth ratio. With ``before_ref`` (a git revision), ``before_sqlite`` /
    ``before_otlp`` run that revision's store and redactor with node spans carrying the whole
    input, interleaved with the rest."""
    n = rounds or (40 if quick else 300)
    warmup = 5 if quick else 15
    folder = Path(tempfile.mkdtemp(prefix="perf-overhead-"))
    result: dict[str, Any] = {"rounds": n, "id": uuid.uuid4().hex[:8]}
    before = None
    if before_ref is not None:
        old_store = head_module(
            "causal_middleware/store/sqlite.py",
            "causal_middleware.store._sqlite_before",
            before_ref,
            companions=STORE_COMPANIONS,
        )
        old_content = head_module(
            "causal_middleware/spans/content.py", "causal_middleware.spans._content_before", before_ref
        )
        if old_store is not None and old_content is not None:
            before = (old_store, old_content)
            result["before_ref"] = before_ref
    extra = ("before_sqlite", "before_otlp") if before is not None else ()
    shapes = {
        "graph_a": (3, False, VARIANTS + extra, n),
        "graph_b": (3, True, VARIANTS + extra, n),
        "graph_b_30_hops": (30, True, ("none", "floor", "ours_sqlite", *extra[:1]), max(10, n // 4)),
    }
    for key, (hops, ckpt, variants, k) in shapes.items():
        bench = _Bench(hops, ckpt, folder, variants, before)
        try:
            result[key] = bench.measure(k, warmup)
        finally:
            bench.close()
    three = result["graph_b"]["variants"]["ours_sqlite"]["ratio_to_none"]
    thirty = result["graph_b_30_hops"]["variants"]["ours_sqlite"]["ratio_to_none"]
    result["growth"] = {
        "ratio_to_bare_3_hops": three,
        "ratio_to_bare_30_hops": thirty,
        "ratio_30_over_3": round(thirty / three, 3),
        "bytes_per_run_3_hops": result["graph_b"].get("stored_bytes_per_run"),
        "bytes_per_run_30_hops": result["graph_b_30_hops"].get("stored_bytes_per_run"),
    }
    b3, b30 = result["growth"]["bytes_per_run_3_hops"], result["growth"]["bytes_per_run_30_hops"]
    old3 = result["graph_b"]["variants"].get("before_sqlite", {}).get("ratio_to_none")
    old30 = result["graph_b_30_hops"]["variants"].get("before_sqlite", {}).get("ratio_to_none")
    if old3 and old30:
        result["growth"]["before_ratio_30_over_3"] = round(old30 / old3, 3)
        result["growth"]["before_bytes_per_run_3_hops"] = result["graph_b"].get("before_stored_bytes_per_run")
        result["growth"]["before_bytes_per_run_30_hops"] = result["graph_b_30_hops"].get(
            "before_stored_bytes_per_run"
        )
    if b3 and b30:
        result["growth"]["bytes_30_over_3"] = round(b30 / b3, 1)
    return result


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
