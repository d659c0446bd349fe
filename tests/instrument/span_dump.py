"""Span dumps for the span-identity test (test_spans_identical.py): run a fixed set of graphs
under whatever ``causal_middleware`` this interpreter imports (the working tree, or an earlier
revision unpacked from git and put first on ``sys.path``) and write what every sink received,
normalised (ids and uuids -> ordinals, times -> their rank within the trace, our own source
frames dropped from stack traces), as JSON.

Sinks per scenario:

* ``user``: ``instrument(store=None, tracer_provider=<a provider of the user's>)`` onto an
  in-memory exporter (the SDK checks every attribute);
* ``own``: the default ``instrument(store=<sqlite file>)`` (our own provider, attributes put
  without the SDK's checks), seen three ways: an in-memory exporter added to its provider, the
  ``SpanRecord``s the background writer hands the store, and the OTLP protobuf the export path
  (content policy + redaction) encodes.

Run as ``python span_dump.py OUT.json`` (the caller puts the tree to test first on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import json
import operator
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TRACE_FRAME = re.compile(r'^  File "([^"]+)", line \d+, in .*$')


# --- scenarios -----------------------------------------------------------------------------------
def _command_graph() -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command

    class S(TypedDict, total=False):
        query: str
        answer: str

    def start(state: S) -> Command:
        return Command(update={"query": "x"}, goto="finish")

    def finish(state: S) -> dict[str, Any]:
        return {"answer": "done " + state["query"]}

    g = StateGraph(S)
    g.add_node("start", start, destinations=("finish",))
    g.add_node("finish", finish)
    g.add_edge(START, "start")
    g.add_edge("finish", END)
    return g.compile()


def _interrupt_graph() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class S(TypedDict, total=False):
        draft: str
        approved: bool

    def write(state: S) -> dict[str, Any]:
        return {"draft": "a draft"}

    def review(state: S) -> dict[str, Any]:
        return {"approved": interrupt({"draft": state["draft"]}) == "yes"}

    g = StateGraph(S)
    g.add_node("write", write)
    g.add_node("review", review)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=InMemorySaver())


class _GrowState(TypedDict, total=False):
    question: str
    items: Annotated[list[Any], operator.add]
    blob: dict[str, Any]
    answer: str


def _odd_values_graph() -> Any:
    """State values of many shapes: nested dicts, tuples, non-ascii text, floats, None, bytes."""
    from langgraph.graph import END, START, StateGraph

    def a(state: _GrowState) -> dict[str, Any]:
        return {"items": [{"k": 1.5, "t": ("x", None)}, "é ✓"], "blob": {"n": [1, 2, {"b": b"xy"}]}}

    def b(state: _GrowState) -> dict[str, Any]:
        return {"items": [3, True], "blob": {**state["blob"], "m": "ü"}}

    def c(state: _GrowState) -> dict[str, Any]:
        return {"answer": f"{len(state['items'])} items"}

    g = StateGraph(_GrowState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile()


def _failing_loop() -> Any:
    from instrument_graphs import KeywordRetriever, build_loop_graph

    retriever = KeywordRetriever()

    def retrieve(state: dict[str, Any]) -> dict[str, Any]:
        if state.get("hops", 0) >= 1:
            raise ValueError("index unavailable on hop 2")
        docs = retriever.invoke(state.get("query") or state["question"])
        return {"evidence": [d.id or "" for d in docs], "hops": state.get("hops", 0) + 1}

    return build_loop_graph(retrieve_fn=retrieve)


def _runs(name: str) -> tuple[Callable[[], Any], dict[str, Any], Callable[[Any, int], Any], bool]:
    """(graph factory, instrument kwargs, run(instrumented, i), ordered)."""
    import instrument_graphs as G
    from langgraph.types import Command

    from benchmarks.perf.graphs import build_chain_graph, chain_input

    def invoke(inp: Callable[[], Any], cfg: Callable[[int], dict[str, Any]] = lambda i: {}) -> Any:
        return lambda ig, i: ig.invoke(inp(), cfg(i))

    def thread(i: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"t-{i}"}}

    if name == "rag_loop":  # 3 hops: retrieval + LLM each, a router, an answer; checkpointed

        def cfg(i: int) -> dict[str, Any]:
            return {
                "configurable": {"thread_id": f"loop-{i}"},
                "metadata": {
                    "causal_reference": "Quarn" if i == 0 else "Lusk",
                    "causal_labels": {"split": "dev", "i": i},
                    "team": "search",
                },
            }

        return lambda: G.build_loop_graph(checkpointer=G.new_saver()), {}, invoke(G.loop_input, cfg), True
    if name == "rag_loop_explicit":  # hop / answer / side-effecting nodes named
        kwargs = {"hop_nodes": ["retrieve"], "answer_nodes": ["answer"], "side_effecting": ["read"]}
        return G.build_loop_graph, kwargs, invoke(G.loop_input), True
    if name == "agent":  # create_agent: LLM with tool calls, tools running a retriever
        inp = lambda: {"messages": [("user", "Where was the founder of Zorvex Labs born?")]}  # noqa: E731
        return G.build_agent, {"side_effecting": ["search"]}, invoke(inp), True
    if name == "subgraph":
        return (
            lambda: G.build_subgraph_graph(checkpointer=G.new_saver()),
            {},
            invoke(lambda: {"question": "Who founded Zorvex Labs?"}, thread),
            True,
        )
    if name == "fanout":  # Send fan-out: parallel branches, so no time ranks
        return G.build_fanout_graph, {}, invoke(lambda: {"question": "q"}), False
    if name == "node_error":  # an error raised in a node on hop 2

        def run(ig: Any, i: int) -> Any:
            try:
                return ig.invoke(G.loop_input())
            except ValueError as exc:
                return f"raised {exc}"

        return _failing_loop, {}, run, True
    if name == "async_loop":
        return G.build_async_loop_graph, {}, lambda ig, i: asyncio.run(ig.ainvoke(G.loop_input())), True
    if name == "stream":
        return (
            G.build_loop_graph,
            {},
            lambda ig, i: list(ig.stream(G.loop_input(), stream_mode="updates")),
            True,
        )
    if name == "command_goto":
        return _command_graph, {}, invoke(lambda: {}), True
    if name == "interrupt":

        def run(ig: Any, i: int) -> Any:
            cfg = {"configurable": {"thread_id": f"int-{i}"}}
            first = ig.invoke({}, cfg)
            return [str(first.get("__interrupt__", ""))[:0], ig.invoke(Command(resume="yes"), cfg)]

        return _interrupt_graph, {}, run, True
    if name == "odd_values":
        return _odd_values_graph, {}, invoke(lambda: {"question": "q", "items": []}), True
    if name == "bench_a":
        return lambda: build_chain_graph(3), {}, invoke(lambda: chain_input(3)), True
    if name == "bench_b":
        from langgraph.checkpoint.memory import InMemorySaver

        return (
            lambda: build_chain_graph(3, checkpointer=InMemorySaver()),
            {},
            invoke(lambda: chain_input(3), thread),
            True,
        )
    if name == "bench_b_8_hops":
        from langgraph.checkpoint.memory import InMemorySaver

        return (
            lambda: build_chain_graph(8, checkpointer=InMemorySaver()),
            {},
            invoke(lambda: chain_input(8), thread),
            True,
        )
    raise KeyError(name)


SCENARIOS = (
    "rag_loop",
    "rag_loop_explicit",
    "agent",
    "subgraph",
    "fanout",
    "node_error",
    "async_loop",
    "stream",
    "command_goto",
    "interrupt",
    "odd_values",
    "bench_a",
    "bench_b",
    "bench_b_8_hops",
)
RUNS_PER_GRAPH = 2


# --- capture ---------------------------------------------------------------------------------
def _plain_span(span: Any) -> dict[str, Any]:
    ctx, parent = span.context, span.parent
    return {
        "trace": format(ctx.trace_id, "032x"),
        "id": format(ctx.span_id, "016x"),
        "parent": format(parent.span_id, "016x") if parent is not None else None,
        "name": span.name,
        "kind": span.kind.name,
        "start": span.start_time,
        "end": span.end_time,
        "status": [span.status.status_code.name, span.status.description],
        "attributes": [[k, _value(v)] for k, v in (span.attributes or {}).items()],
        "events": [
            {
                "name": e.name,
                "time": e.timestamp,
                "attributes": [[k, _value(v)] for k, v in (e.attributes or {}).items()],
            }
            for e in span.events
        ],
        "links": [
            [
                format(li.context.trace_id, "032x"),
                format(li.context.span_id, "016x"),
                dict(li.attributes or {}),
            ]
            for li in span.links
        ],
        "resource": sorted((k, _value(v)) for k, v in span.resource.attributes.items()),
        "scope": [span.instrumentation_scope.name, span.instrumentation_scope.version],
    }


def _value(v: Any) -> Any:
    if isinstance(v, tuple):
        return {"tuple": [_value(x) for x in v]}
    return {type(v).__name__: v}


def _plain_record(r: Any) -> dict[str, Any]:
    d = r.model_dump()
    return {
        "trace": d["trace_id"],
        "id": d["span_id"],
        "parent": d["parent_span_id"],
        "name": d["name"],
        "kind": d["kind"],
        "start": d["start_time_ns"],
        "end": d["end_time_ns"],
        "status": [d["status_code"], d["status_message"]],
        "attributes": [[k, _value(v)] for k, v in d["attributes"].items()],
        "events": [
            {
                "name": e["name"],
                "time": e["time_ns"],
                "attributes": [[k, _value(v)] for k, v in e["attributes"].items()],
            }
            for e in d["events"]
        ],
        "links": [[li["trace_id"], li["span_id"], li["attributes"]] for li in d["links"]],
        "resource": sorted((k, _value(v)) for k, v in d["resource"].items()),
        "scope": [d["scope"]],
    }


def _plain_otlp(data: bytes) -> list[dict[str, Any]]:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    req.ParseFromString(data)
    out = []
    for rs in req.resource_spans:
        resource = MessageToDict(rs.resource)
        for ss in rs.scope_spans:
            scope = MessageToDict(ss.scope)
            for s in ss.spans:
                d = MessageToDict(s)
                out.append(
                    {
                        "trace": d.pop("traceId"),
                        "id": d.pop("spanId"),
                        "parent": d.pop("parentSpanId", None),
                        "name": d.pop("name"),
                        "start": int(d.pop("startTimeUnixNano")),
                        "end": int(d.pop("endTimeUnixNano")),
                        "events": [_otlp_event(e) for e in d.pop("events", [])],
                        "rest": d,
                        "resource": resource,
                        "scope": scope,
                    }
                )
    return out


def _otlp_event(event: dict[str, Any]) -> dict[str, Any]:
    time = int(event.pop("timeUnixNano"))
    return {**event, "time": time}


# --- normalisation -----------------------------------------------------------------------------
def _source_roots() -> list[str]:
    import causal_middleware.integrations

    import causal_middleware

    return [
        str(Path(causal_middleware.__file__).parent),
        str(Path(causal_middleware.integrations.__file__).parent),
    ]


def _clean_stacktrace(text: str, roots: Sequence[str]) -> str:
    """Frames from our own source dropped (their files and lines differ between trees)."""
    lines = text.splitlines()
    out: list[str] = []
    skip_code = False
    for line in lines:
        m = _TRACE_FRAME.match(line)
        if m:
            ours = any(m.group(1).startswith(r) for r in roots)
            skip_code = ours
            if not ours:
                out.append(line)
            continue
        if skip_code and line.startswith("    "):
            continue
        skip_code = False
        out.append(line)
    return "\n".join(out)


def normalise(spans: list[dict[str, Any]], ordered: bool, roots: Sequence[str]) -> list[Any]:
    """Each trace as a canonical tree: ids gone (children sorted by content), uuids replaced,
    times replaced by their dense rank among the trace's times (``ordered``) or dropped."""
    text = json.dumps(spans, sort_keys=False, default=str)
    text = _UUID.sub("<uuid>", text)
    spans = json.loads(text)
    for s in spans:
        for e in s["events"]:
            for kv in e.get("attributes", []):
                if "rest" in s:  # OTLP: key/value objects; the content policy cut the trace at a
                    # length that depends on the tree's paths: the other sinks compare it whole
                    if kv.get("key") == "exception.stacktrace":
                        kv["value"]["stringValue"] = "<stacktrace>"
                elif kv[0] == "exception.stacktrace":
                    kv[1] = {"str": _clean_stacktrace(kv[1]["str"], roots)}
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_trace.setdefault(s["trace"], []).append(s)
    out = []
    for trace_spans in by_trace.values():
        times = sorted({t for s in trace_spans for t in _times(s) if t is not None})
        rank = {t: i for i, t in enumerate(times)}
        children: dict[str | None, list[dict[str, Any]]] = {}
        ids = {s["id"] for s in trace_spans}
        for s in trace_spans:
            parent = s["parent"] if s["parent"] in ids else None
            children.setdefault(parent, []).append(s)

        def canon(s: dict[str, Any], rank: dict[int, int] = rank, children: dict[Any, Any] = children) -> Any:
            body = {
                k: v for k, v in s.items() if k not in ("trace", "id", "parent", "start", "end", "events")
            }
            body["events"] = [{k: v for k, v in e.items() if k != "time"} for e in s["events"]]
            if ordered:
                body["times"] = [
                    rank.get(s["start"]),
                    rank.get(s["end"]),
                    [rank.get(e["time"]) for e in s["events"]],
                ]
            body["children"] = sorted(
                (canon(c) for c in children.get(s["id"], [])), key=lambda c: json.dumps(c, sort_keys=True)
            )
            return body

        roots_ = [canon(s) for s in children.get(None, [])]
        out.append(sorted(roots_, key=lambda c: json.dumps(c, sort_keys=True)))
    return out


def _times(s: dict[str, Any]) -> list[int | None]:
    return [s["start"], s["end"], *(e["time"] for e in s["events"])]


# --- the dump ------------------------------------------------------------------------------------
def dump() -> dict[str, Any]:
    import causal_middleware.integrations.langgraph.handler as handler_module
    from causal_middleware.integrations.langgraph.instrument import SPAN_LIMITS, _resource
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from causal_middleware import instrument
    from causal_middleware.spans.export import build_otlp_processor
    from causal_middleware.spans.health import health

    class Encoding(SpanExporter):
        def __init__(self) -> None:
            self.chunks: list[bytes] = []

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            self.chunks.append(encode_spans(spans).SerializeToString())
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

    roots = _source_roots()
    result: dict[str, Any] = {"handler_file": handler_module.__file__, "scenarios": {}}
    folder = Path(tempfile.mkdtemp(prefix="span-dump-"))
    for name in SCENARIOS:
        make, kwargs, run, ordered = _runs(name)
        outputs: dict[str, Any] = {}
        sinks: dict[str, Any] = {}

        # the user's provider
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        ig = instrument(make(), store=None, tracer_provider=provider, **kwargs)
        outputs["user"] = [repr(run(ig, i)) for i in range(RUNS_PER_GRAPH)]
        ig.shutdown()
        sinks["user"] = normalise([_plain_span(s) for s in exporter.get_finished_spans()], ordered, roots)

        # the default: our own provider, the SQLite store's background writer, OTLP export
        ig = instrument(make(), store=str(folder / f"{name}.db"), **kwargs)
        own_exporter = InMemorySpanExporter()
        ig.tracer_provider.add_span_processor(SimpleSpanProcessor(own_exporter))
        encoder = Encoding()
        otlp = build_otlp_processor(encoder)
        ig.tracer_provider.add_span_processor(otlp)
        records: list[Any] = []
        store = ig.store
        original_write = store.write_batch

        def write_batch(
            batch: Any, *args: Any, _orig: Any = original_write, _records: list[Any] = records, **kw: Any
        ) -> Any:
            _records.extend(batch)
            return _orig(batch, *args, **kw)

        store.write_batch = write_batch
        outputs["own"] = [repr(run(ig, i)) for i in range(RUNS_PER_GRAPH)]
        assert ig.flush(30)
        otlp.force_flush(30_000)
        ig.shutdown()
        sinks["own_exporter"] = normalise(
            [_plain_span(s) for s in own_exporter.get_finished_spans()], ordered, roots
        )
        sinks["own_store"] = normalise([_plain_record(r) for r in records], ordered, roots)
        otlp_spans = [s for chunk in encoder.chunks for s in _plain_otlp(chunk)]
        sinks["own_otlp"] = normalise(otlp_spans, ordered, roots)
        text = _UUID.sub("<uuid>", json.dumps(outputs, default=str))
        result["scenarios"][name] = {"outputs": json.loads(text), "sinks": sinks}
    result["health_errors"] = dict(health.errors)
    result["health_dropped"] = dict(getattr(health, "dropped", {}) or {})
    return result


def main(argv: Sequence[str]) -> int:
    try:
        data = dump()
    except Exception:
        traceback.print_exc()
        return 1
    Path(argv[0]).write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
