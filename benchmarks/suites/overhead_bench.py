"""Per-run instrumentation overhead: ``instrument()`` against no instrumentation and against
OpenInference's ``LangChainInstrumentor``, on the same 3-hop graph, in one process, interleaved.

The graph is deliberately light (a keyword retriever and a rule-based reader) so the figures show
the tracing cost itself rather than model time. Each round runs every variant once in a rotated
order; per-run wall times are compared by their medians, as ratios to the uninstrumented run.
"""

from __future__ import annotations

import gc
import operator
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from causal_middleware.integrations.langgraph.instrument import instrument
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_CHAIN = {
    "start": ("Velra Institute founder", "Velra Institute was founded by Osk Denn."),
    "Osk Denn": ("Osk Denn born", "Osk Denn was born in Marrow Vale."),
    "Marrow Vale": ("Marrow Vale country", "Marrow Vale lies in the country of Thessen."),
}
_PASSAGES = {f"p{i}": text for i, (_, text) in enumerate(_CHAIN.values())} | {
    f"d{i}": f"Distractor passage number {i} about an unrelated archive." for i in range(20)
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class _KeywordRetriever(BaseRetriever):
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        q = _words(query)
        scored = sorted(
            ((len(q & _words(t)) / max(len(q), 1), pid, t) for pid, t in _PASSAGES.items()),
            key=lambda x: (-x[0], x[1]),
        )
        return [Document(id=pid, page_content=t, metadata={"score": s}) for s, pid, t in scored[:3]]


class _RuleReader(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "rule-reader"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        text = str(messages[-1].content)
        if "Thessen" in text:
            reply = "ANSWER: Thessen"
        elif "Marrow Vale" in text:
            reply = "NEXT: Marrow Vale country"
        elif "Osk Denn" in text:
            reply = "NEXT: Osk Denn born"
        else:
            reply = "ANSWER: unknown"
        n = len(text.split())
        message = AIMessage(
            content=reply, usage_metadata={"input_tokens": n, "output_tokens": 3, "total_tokens": n + 3}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class _State(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    answer: str


def build_bench_graph() -> Any:
    """retrieve -> read -(route)-> retrieve | answer; three hops to the answer."""
    retriever, reader = _KeywordRetriever(), _RuleReader()

    def retrieve(state: _State) -> dict[str, Any]:
        return {"evidence": [d.page_content for d in retriever.invoke(state["query"])[:1]]}

    def read(state: _State) -> dict[str, Any]:
        reply = str(
            reader.invoke(f"QUESTION: {state['question']}\nEVIDENCE: {state['evidence'][-1]}").content
        )
        if reply.startswith("ANSWER:"):
            return {"answer": reply.removeprefix("ANSWER:").strip()}
        return {"query": reply.removeprefix("NEXT:").strip()}

    def answer(state: _State) -> dict[str, Any]:
        return {"answer": state["answer"]}

    g = StateGraph(_State)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges(
        "read", lambda s: "answer" if s.get("answer") else "retrieve", ["retrieve", "answer"]
    )
    g.add_edge("answer", END)
    return g.compile()


BENCH_INPUT = {
    "question": "In which country was the founder of Velra Institute born?",
    "query": "Velra Institute founder",
}


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_overhead_bench(runs: int = 200, warmup: int = 10) -> dict[str, Any]:
    """Median per-run wall time of each variant and its ratio to the uninstrumented graph.

    Variants: ``none``; ``ours`` (``instrument()`` with an in-memory exporter and no local store,
    the like-for-like comparison); ``ours_sqlite`` (the default: spans also written to a SQLite
    store); ``openinference`` (``LangChainInstrumentor`` onto an in-memory exporter).
    """
    from openinference.instrumentation.langchain import LangChainInstrumentor

    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    graph = build_bench_graph()
    result = graph.invoke(dict(BENCH_INPUT))
    if result.get("answer") != "Thessen":
        raise RuntimeError(f"benchmark graph answered {result.get('answer')!r}, expected 'Thessen'")

    tmp = tempfile.TemporaryDirectory()
    ours_exporter, sqlite_exporter, oi_exporter = (InMemorySpanExporter() for _ in range(3))
    ours_tp, sqlite_tp, oi_tp = TracerProvider(), TracerProvider(), TracerProvider()
    ours_tp.add_span_processor(SimpleSpanProcessor(ours_exporter))
    sqlite_tp.add_span_processor(SimpleSpanProcessor(sqlite_exporter))
    oi_tp.add_span_processor(SimpleSpanProcessor(oi_exporter))
    ours = instrument(build_bench_graph(), store=None, tracer_provider=ours_tp)
    ours_sqlite = instrument(
        build_bench_graph(), store=str(Path(tmp.name) / "bench.db"), tracer_provider=sqlite_tp
    )
    oi = LangChainInstrumentor()

    def run_oi() -> None:
        graph.invoke(dict(BENCH_INPUT))

    variants: dict[str, Callable[[], Any]] = {
        "none": lambda: graph.invoke(dict(BENCH_INPUT)),
        "ours": lambda: ours.invoke(dict(BENCH_INPUT)),
        "ours_sqlite": lambda: ours_sqlite.invoke(dict(BENCH_INPUT)),
        "openinference": run_oi,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    spans_per_run: dict[str, int] = {}
    names = list(variants)
    try:
        for i in range(warmup + runs):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                if name == "openinference":
                    oi.instrument(tracer_provider=oi_tp)
                gc.collect()
                elapsed = _timed(variants[name])
                if name == "openinference":
                    oi.uninstrument()
                if i >= warmup:
                    times[name].append(elapsed)
        total = warmup + runs
        spans_per_run = {
            "ours": len(ours_exporter.get_finished_spans()) // total,
            "ours_sqlite": len(sqlite_exporter.get_finished_spans()) // total,
            "openinference": len(oi_exporter.get_finished_spans()) // total,
        }
    finally:
        ours.shutdown()
        ours_sqlite.shutdown()
        tmp.cleanup()

    base = statistics.median(times["none"])
    summary = {
        name: {
            "median_ms": round(statistics.median(ts) * 1e3, 4),
            "mean_ms": round(statistics.fmean(ts) * 1e3, 4),
            "p90_ms": round(sorted(ts)[int(0.9 * (len(ts) - 1))] * 1e3, 4),
            "ratio_to_none": round(statistics.median(ts) / base, 4),
            "overhead_ms": round((statistics.median(ts) - base) * 1e3, 4),
        }
        for name, ts in times.items()
    }
    oi_over = summary["openinference"]["overhead_ms"]
    return {
        "runs": runs,
        "warmup": warmup,
        "graph": "3-hop retrieve/read loop (keyword retriever, rule reader)",
        "spans_per_run": spans_per_run,
        "variants": summary,
        "ours_overhead_vs_openinference": round(summary["ours"]["overhead_ms"] / oi_over, 4)
        if oi_over > 0
        else None,
        "target_met": summary["ours"]["overhead_ms"] <= oi_over,
    }
