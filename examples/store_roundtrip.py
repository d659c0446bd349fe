"""The span store on its own: record a run with a plain OpenTelemetry tracer, read it back as a
typed trajectory, annotate it, list runs, and move it through an OTLP/JSON file.

Run: ``python examples/store_roundtrip.py`` (offline, a second or two).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from causal_middleware.spans import attributes as A
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

HOPS = [
    ("founder of Zorvex Labs", "p1", "Zorvex Labs was founded by Ilka Morrow.", 12.5),
    ("Ilka Morrow birthplace", "p2", "Ilka Morrow was born in Tessaly.", 9.0),
]


def record_run(provider: TracerProvider) -> str:
    """Emit the spans an instrumented 2-hop agent would emit (docs/span-contract.md)."""
    tracer = provider.get_tracer("example")
    with tracer.start_as_current_span(
        "my_agent",
        attributes={
            A.CAUSAL_SPAN_TYPE: "run",
            A.SESSION_ID: "thread-42",
            A.INPUT_VALUE: json.dumps({"question": "Where was the founder of Zorvex Labs born?"}),
        },
    ) as run:
        for index, (query, doc_id, text, score) in enumerate(HOPS, start=1):
            with tracer.start_as_current_span(
                f"hop {index}", attributes={A.CAUSAL_SPAN_TYPE: "hop", A.CAUSAL_HOP_INDEX: index}
            ):
                with tracer.start_as_current_span(
                    "retrieve",
                    attributes={
                        A.CAUSAL_SPAN_TYPE: "node",
                        A.CAUSAL_NODE: "retrieve",
                        A.CAUSAL_HOP_INDEX: index,
                    },
                ):
                    with tracer.start_as_current_span(
                        "bm25",
                        attributes={
                            A.CAUSAL_SPAN_TYPE: "retrieval",
                            A.INPUT_VALUE: query,
                            "retrieval.documents.0.document.id": doc_id,
                            "retrieval.documents.0.document.content": text,
                            "retrieval.documents.0.document.score": score,
                        },
                    ):
                        pass
        with tracer.start_as_current_span(
            "answer", attributes={A.CAUSAL_SPAN_TYPE: "answer", A.CAUSAL_ANSWER_TEXT: "Tessaly"}
        ):
            pass
        return format(run.get_span_context().trace_id, "032x")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="causal-store-") as tmp:
        workdir = Path(tmp)
        store = SqliteSpanStore(workdir / "runs.db")
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(store))  # the store is an OTel SpanExporter
        run_id = record_run(provider)

        trajectory = store.get_trajectory(run_id)
        print(f"run {run_id}: thread {trajectory.thread_id}, answer {trajectory.answer!r}")
        for hop in trajectory.hops:
            docs = ", ".join(f"{d.id} ({d.score})" for d in hop.documents)
            print(f"  hop {hop.index}: {hop.sub_query!r} -> {docs}")

        store.annotate(run_id, outcome="success", reference="Tessaly", labels={"split": "demo"})
        print(
            "listed:",
            [(r.run_id[:8], r.outcome.value, r.n_hops) for r in store.list_runs(label="split=demo")],
        )

        export = workdir / "runs.json"
        store.export_otlp_json(export)
        copy = InMemorySpanStore()
        print("imported from OTLP/JSON:", copy.import_otlp_json(export))
        assert copy.get_trajectory(run_id).hops == trajectory.hops
        provider.shutdown()  # also closes the store


if __name__ == "__main__":
    main()
