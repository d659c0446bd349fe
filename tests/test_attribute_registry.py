"""Every span attribute the instrumentation emits is registered in ``otel/attributes.yaml``.

Runs the instrumentation tests' graph shapes (loop, ReAct agent, subgraph, Send fan-out, markers,
errors, Command routing, the replay hook, run annotations) plus the export filter, and checks each
attribute of each span we emit (spans with ``causal.span.type``; other libraries' spans are theirs)
against the registry: the name (``N``/``M`` match indices), the span types it may appear on and its
value type. Also keeps ``causal_middleware/spans/attributes.py`` and the YAML in step.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import ContentFilterExporter
from causal_middleware.spans.model import Lineage

sys.path.insert(0, str(Path(__file__).parent / "instrument"))
import instrument_graphs as G  # noqa: E402

REGISTRY_PATH = Path(__file__).resolve().parents[1] / "otel" / "attributes.yaml"
PY_TYPES = {"string": (str,), "int": (int,), "double": (float, int), "boolean": (bool,)}


def _registry() -> dict[str, dict[str, Any]]:
    raw = yaml.safe_load(REGISTRY_PATH.read_text())["attributes"]
    return {name: dict(spec) for name, spec in raw.items()}


def _patterns(registry: dict[str, dict[str, Any]]) -> list[tuple[re.Pattern[str], str]]:
    out = []
    for name in registry:
        parts = [r"\d+" if p in ("N", "M") else re.escape(p) for p in name.split(".")]
        out.append((re.compile("^" + r"\.".join(parts) + "$"), name))
    return out


def _emit_all_shapes() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def run(graph: Any, inp: Any, config: dict | None = None, **kwargs: Any) -> None:
        ig = instrument(graph, store=None, tracer_provider=provider, **kwargs)
        try:
            ig.invoke(inp, config)
        except Exception:
            pass  # the error graph raises on purpose
        ig.shutdown()

    lineage = Lineage(
        parent_run_id="cd" * 16, fork_checkpoint_id="c1", fork_hop=1, fork_node="read", fork_step=2
    )
    run(
        G.build_loop_graph(checkpointer=G.new_saver()),
        G.loop_input(),
        {
            "configurable": {"thread_id": "reg"},
            "metadata": {
                "causal_reference": "Quarn",
                "causal_labels": {"k": 1},
                "causal_lineage": lineage,
                "user": "u",
            },
        },
        side_effecting=["answer"],
    )
    run(G.build_agent(), {"messages": [("user", "Where was the founder of Zorvex Labs born?")]})
    run(
        G.build_subgraph_graph(checkpointer=G.new_saver()),
        {"question": "q"},
        {"configurable": {"thread_id": "s"}},
    )
    run(G.build_fanout_graph(), {"question": "q"})
    run(
        G.build_loop_graph(),
        G.loop_input(),
        {"configurable": {"causal_node_override": lambda n, s, c: (n == "read", {"answer": "x"})}},
    )

    def broken(state: Any) -> dict:
        raise RuntimeError("boom")

    run(G.build_loop_graph(retrieve_fn=broken), G.loop_input())

    spans = list(exporter.get_finished_spans())
    # what leaves over OTLP: the truncating filter adds causal.content.truncated
    sink = InMemorySpanExporter()
    ContentFilterExporter(sink, capture_content="truncated", max_attribute_length=8).export(spans)
    return spans + list(sink.get_finished_spans())


@pytest.fixture(scope="module")
def emitted() -> list[ReadableSpan]:
    return _emit_all_shapes()


def test_every_emitted_attribute_is_registered_for_its_span_type(emitted):
    registry = _registry()
    patterns = _patterns(registry)
    ours = [s for s in emitted if (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE)]
    types = {s.attributes[A.CAUSAL_SPAN_TYPE] for s in ours}
    assert types == {"run", "hop", "node", "llm", "retrieval", "tool", "decision", "answer"}
    problems = set()
    seen = set()
    for span in ours:
        span_type = span.attributes[A.CAUSAL_SPAN_TYPE]
        for key, value in span.attributes.items():
            name = next((n for p, n in patterns if p.match(key)), None)
            if name is None:
                problems.add(f"unregistered attribute {key!r} on a {span_type} span")
                continue
            seen.add(name)
            spec = registry[name]
            if span_type not in spec.get("spans", []):
                problems.add(f"{key!r} is not registered for {span_type} spans (spans: {spec.get('spans')})")
            expected = PY_TYPES[spec["type"]]
            if not isinstance(value, expected) or (spec["type"] != "boolean" and isinstance(value, bool)):
                problems.add(
                    f"{key!r} on a {span_type} span is {type(value).__name__}, registry says {spec['type']}"
                )
    assert not problems, "\n".join(sorted(problems))
    # the run exercised the contract's attributes broadly (guards against a silently empty check)
    assert len(seen) >= 60, sorted(set(registry) - seen)


def test_constants_and_registry_are_the_same_set():
    registry = set(_registry())
    constants = {v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)}
    assert constants - registry == set(), "constants missing from otel/attributes.yaml"
    assert registry - constants == set(), "registry names without a constant in spans/attributes.py"


def test_registry_entries_are_well_formed():
    for name, spec in _registry().items():
        assert spec["type"] in PY_TYPES, name
        assert spec["source"] in {"openinference", "gen_ai", "causal"}, name
        assert spec["spans"] and all(isinstance(t, str) for t in spec["spans"]), name
