"""An instrumented run exported over OTLP (HTTP and gRPC) to a real Arize Phoenix, read back via REST."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from benchmarks.reference_agent.graph import (
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_world_agent,
    run_question,
)
from benchmarks.world.generator import generate_world
from causal_middleware import instrument
from causal_middleware.store.memory import InMemorySpanStore

pytestmark = [pytest.mark.collector, pytest.mark.xdist_group("phoenix")]


@pytest.fixture(scope="module")
def world():
    return generate_world(12, seed=3)


def _export_one_run(world, protocol: str, endpoint: str, project: str):
    question = next(q for q in world.questions if q.n_hops >= 2)
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    store = InMemorySpanStore()
    agent = instrument(
        build_world_agent(world),
        store=store,
        hop_nodes=REFERENCE_HOP_NODES,
        answer_nodes=REFERENCE_ANSWER_NODES,
        tracer_provider=provider,
        otlp_endpoint=endpoint,
        otlp_protocol=protocol,
    )
    run = run_question(agent, question)
    agent.force_flush()
    provider.shutdown()
    return store.get_trajectory(run.run_id), len(store.get_spans(run.run_id))


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_phoenix_receives_typed_hop_spans(phoenix, world, protocol: str) -> None:
    project = f"causal-{protocol.split('/')[0]}"
    endpoint = phoenix.otlp_http_endpoint if protocol == "http/protobuf" else phoenix.otlp_grpc_endpoint
    trajectory, n_spans = _export_one_run(world, protocol, endpoint, project)
    assert trajectory.hops, "the local store should hold the run's hops"

    spans = phoenix.spans(project, expect=n_spans)
    assert len(spans) == n_spans
    by_id = {s["context"]["span_id"]: s for s in spans}
    assert {s["context"]["trace_id"] for s in spans} == {trajectory.run_id}

    # Parent links survive the trip: exactly one root, every other parent is a received span.
    roots = [s for s in spans if s["parent_id"] is None]
    assert len(roots) == 1 and roots[0]["attributes"]["causal.span.type"] == "run"
    assert all(s["parent_id"] in by_id for s in spans if s["parent_id"] is not None)

    hop_spans = sorted(
        (s for s in spans if s["attributes"].get("causal.span.type") == "hop"),
        key=lambda s: s["attributes"]["causal.hop.index"],
    )
    assert [s["attributes"]["causal.hop.index"] for s in hop_spans] == [h.index for h in trajectory.hops]
    assert all(s["parent_id"] == roots[0]["context"]["span_id"] for s in hop_spans)

    first_hop = trajectory.hops[0]
    assert hop_spans[0]["attributes"]["causal.hop.sub_query"] == first_hop.sub_query

    retrievals = [s for s in spans if s["attributes"].get("causal.span.type") == "retrieval"]
    assert retrievals and all(s["span_kind"] == "RETRIEVER" for s in retrievals)
    first = min(retrievals, key=lambda s: s["start_time"])
    node = by_id[first["parent_id"]]
    assert node["attributes"]["causal.node"] == "retrieve"
    assert by_id[node["parent_id"]]["attributes"]["causal.span.type"] == "hop"
    received_ids = []
    i = 0
    while f"retrieval.documents.{i}.document.id" in first["attributes"]:
        received_ids.append(first["attributes"][f"retrieval.documents.{i}.document.id"])
        assert isinstance(first["attributes"][f"retrieval.documents.{i}.document.score"], float)
        i += 1
    assert received_ids == [d.id for d in first_hop.documents]

    llm = [s for s in spans if s["span_kind"] == "LLM"]
    assert llm and all(s["attributes"]["llm.token_count.prompt"] > 0 for s in llm)
