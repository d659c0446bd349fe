"""A real OpenInference trace: the official LangChain instrumentor on a small LangGraph graph,
exported with the SDK's in-memory exporter, written as OTLP/JSON and imported.

The graph runs two retrieval rounds (plan > retrieve > read, twice, then answer); the reading
step calls a calculator tool. Expected: two hops (the calculator does not start one) and the
documents' own ids (``d1``, ``d2``, which the retriever's ``output.value`` holds), not content hashes.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("openinference.instrumentation.langchain")

from google.protobuf import json_format
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware.spans import attributes as A
from causal_middleware.store.base import SpanStore

CORPUS = {
    "d1": ("Zorvex Labs was founded by Ilka Morrow in 1990.", {"source": "corpus"}),
    "d2": ("Ilka Morrow was born in Tessaly.", {"source": "corpus"}),
    "d3": ("Tessaly is a town in Quarn.", {"source": "corpus", "doc_id": "meta-d3"}),
}


class _Retriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
        if "founder" in query:
            return [Document(id="d1", page_content=CORPUS["d1"][0], metadata=CORPUS["d1"][1])]
        # second round: one document with its own id, one whose id only its metadata holds
        return [
            Document(id="d2", page_content=CORPUS["d2"][0], metadata=CORPUS["d2"][1]),
            Document(page_content=CORPUS["d3"][0], metadata=CORPUS["d3"][1]),
        ]


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression of two integers and '-'."""
    left, right = expression.split("-")
    return str(int(left) - int(right))


class _State(TypedDict, total=False):
    question: str
    queries: list[str]
    notes: list[str]
    answer: str


def _graph() -> Any:
    llm = FakeListChatModel(responses=["founder of Zorvex Labs", "Ilka Morrow birthplace", "Tessaly"])
    retriever = _Retriever()

    def plan(s: _State) -> _State:
        return {"queries": [*s.get("queries", []), str(llm.invoke(s["question"]).content)]}

    def retrieve(s: _State) -> _State:
        docs = retriever.invoke(s["queries"][-1])
        return {"notes": [*s.get("notes", []), *(d.page_content for d in docs)]}

    def read(s: _State) -> _State:
        return {"notes": [*s["notes"], calculator.invoke({"expression": "2024-1990"})]}

    def answer(s: _State) -> _State:
        return {"answer": str(llm.invoke("answer: " + " ".join(s["notes"])).content)}

    g = StateGraph(_State)
    for name, fn in (("plan", plan), ("retrieve", retrieve), ("read", read), ("answer", answer)):
        g.add_node(name, fn)  # type: ignore[call-overload]
    g.add_edge(START, "plan")
    g.add_edge("plan", "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: "plan" if len(s["queries"]) < 2 else "answer")
    g.add_edge("answer", END)
    return g.compile()


@pytest.fixture(scope="module")
def otlp_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        result = _graph().invoke({"question": "Where was the founder of Zorvex Labs born?"})
    finally:
        instrumentor.uninstrument()
    assert result["answer"] == "Tessaly"
    spans = exporter.get_finished_spans()
    doc = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc["resourceSpans"]:  # OTLP/JSON ids are hex (proto3 JSON writes base64)
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = base64.b64decode(s[key]).hex()
    path = tmp_path_factory.mktemp("oi") / "langgraph.otlp.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_trace_is_what_the_instrumentor_writes(otlp_file: Path) -> None:
    spans = [
        s
        for rs in json.loads(otlp_file.read_text())["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    kinds = [
        next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == A.OPENINFERENCE_SPAN_KIND)
        for s in spans
    ]
    assert kinds.count("RETRIEVER") == 2 and kinds.count("TOOL") == 2 and kinds.count("LLM") == 3
    retriever = next(s for s in spans if s["name"] == "_Retriever")
    attrs = {a["key"] for a in retriever["attributes"]}
    assert "retrieval.documents.0.document.id" not in attrs  # the instrumentor writes no id attribute


def test_one_hop_per_retrieval_round_and_the_documents_own_ids(store: SpanStore, otlp_file: Path) -> None:
    [run_id] = store.import_otlp_json(otlp_file)
    t = store.get_trajectory(run_id)
    assert t.graph == "LangGraph" and t.answer == "Tessaly"
    assert len(t.hops) == 2
    assert store.list_runs()[0].n_hops == 2  # the listing agrees with the trajectory
    assert [[d.id for d in h.documents] for h in t.hops] == [["d1"], ["d2", "meta-d3"]]
    assert [h.sub_query for h in t.hops] == ["founder of Zorvex Labs", "Ilka Morrow birthplace"]
    tools = t.steps_of("tool")
    assert [s.tool_name for s in tools] == ["calculator", "calculator"]
    assert [s.hop for s in tools] == [1, 2]  # the calculator is part of its reading step's round
    # each round's planner is in its round, not in the round before (the answer node ends hop 2)
    nodes = [[s.node for s in hop.steps if s.kind == "node" and s.parent_step_id is None] for hop in t.hops]
    assert nodes == [["plan", "retrieve", "read"], ["plan", "retrieve", "read", "answer"]]


def test_the_trace_round_trips_through_export(
    store: SpanStore, make_store: Any, otlp_file: Path, tmp_path: Path
) -> None:
    [run_id] = store.import_otlp_json(otlp_file)
    store.annotate(run_id, outcome="failure", reference="Quarn", labels={"gold_hop": 2})
    out = tmp_path / "again.json"
    store.export_otlp_json(out)
    fresh = make_store()
    fresh.import_otlp_json(out)
    assert fresh.get_trajectory(run_id) == store.get_trajectory(run_id)
    assert [r.run_id for r in fresh.list_runs(outcome="failure")] == [run_id]
