"""Runs read back from a real Arize Phoenix, diagnosed, and the verdict written back to it.

A small LangGraph graph (tests/collector/phoenix_graphs.py) is instrumented and exports OTLP to
Phoenix while the local store keeps the same runs; ``causal-mw runs pull`` copies them from
Phoenix's REST API into a fresh store, and the trajectories must equal the local ones on what
diagnosers read. The official OpenInference LangChain instrumentor's trace is checked the same
way. Then a diagnosis of the pulled run is written back with ``--write-back phoenix`` and read
back from Phoenix's annotation API, and a background repair writes its verdicts and exports its
``gen_ai.evaluation.result`` events.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from causal_middleware import instrument
from causal_middleware.cli.main import main
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.phoenix import PhoenixSpanSource
from causal_middleware.store.sqlite import SqliteSpanStore

sys.path.insert(0, str(Path(__file__).parent))
import phoenix_graphs as G  # noqa: E402

pytestmark = [pytest.mark.collector, pytest.mark.xdist_group("phoenix")]

TIME_KEYS = {"start_time", "end_time", "started_at", "ended_at"}


def _provider(project: str) -> TracerProvider:
    return TracerProvider(resource=Resource.create({"openinference.project.name": project}))


def _record(
    phoenix: Any, project: str, questions: list[str], folder: Path
) -> tuple[SqliteSpanStore, list[str], int]:
    """Run the graph once per question; the local store and Phoenix both get the spans."""
    provider = _provider(project)
    store = SqliteSpanStore(folder / "local.db")
    agent = instrument(
        G.rag_graph(),
        store=store,
        tracer_provider=provider,
        otlp_endpoint=phoenix.otlp_http_endpoint,
        otlp_protocol="http/protobuf",
    )
    run_ids = []
    for question in questions:
        config = {
            "configurable": {"thread_id": uuid.uuid4().hex},
            "metadata": {"causal_reference": G.REFERENCE},
        }
        agent.invoke({"question": question}, config)
        run_ids.append(agent.last_run_id)
        time.sleep(0.01)  # distinct start times: Phoenix lists newest first
    agent.force_flush()
    provider.shutdown()
    n_spans = sum(len(store.get_spans(r)) for r in run_ids)
    phoenix.spans(project, expect=n_spans)
    return store, run_ids, n_spans


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith(("{", "[")) else out), err


def _strip_times(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_times(v) for k, v in node.items() if k not in TIME_KEYS}
    if isinstance(node, list):
        return [_strip_times(v) for v in node]
    return node


def _assert_same_run(pulled: Trajectory, local: Trajectory) -> None:
    # what the diagnosers read, field by field (a failure names the field) ...
    assert [[d.id for d in h.documents] for h in pulled.hops] == [
        [d.id for d in h.documents] for h in local.hops
    ]
    assert [h.sub_query for h in pulled.hops] == [h.sub_query for h in local.hops]
    assert [(s.step_id, s.kind, s.node, s.name, s.hop) for s in pulled.steps] == [
        (s.step_id, s.kind, s.node, s.name, s.hop) for s in local.steps
    ]
    assert (pulled.answer, pulled.reference, pulled.outcome, pulled.labels) == (
        local.answer,
        local.reference,
        local.outcome,
        local.labels,
    )
    # ... and everything else too, times aside: Phoenix keeps microseconds, not nanoseconds
    assert _strip_times(pulled.model_dump(mode="json")) == _strip_times(local.model_dump(mode="json"))
    assert pulled.started_at is not None and local.started_at is not None
    assert abs(pulled.started_at - local.started_at) <= timedelta(microseconds=1)


@pytest.fixture(scope="module")
def recorded(
    phoenix: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SqliteSpanStore, list[str], int]:
    also = "Which river flows through the birthplace of the Zorvex Labs founder?"
    return _record(phoenix, "pull-rag", [G.QUESTION, also], tmp_path_factory.mktemp("pull-rag"))


def test_pulled_runs_equal_the_runs_recorded_locally(
    phoenix: Any, recorded: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local, run_ids, n_spans = recorded
    pulled_db = tmp_path / "pulled.db"
    code, out, _ = _cli(
        capsys,
        "runs",
        "pull",
        "--phoenix",
        phoenix.base_url,
        "--project",
        "pull-rag",
        "--store",
        str(pulled_db),
        "--json",
    )
    assert code == 0
    assert out["run_ids"] == list(reversed(run_ids))  # newest first
    assert sorted(out["new_run_ids"]) == sorted(run_ids)
    assert (out["spans_written"], out["spans_present"]) == (n_spans, 0)
    with SqliteSpanStore(pulled_db, create=False) as pulled:
        for run_id in run_ids:
            _assert_same_run(pulled.get_trajectory(run_id), local.get_trajectory(run_id))
        first = pulled.get_trajectory(run_ids[0])
        assert [[d.id for d in h.documents] for h in first.hops] == [["seo/morrow"], ["wiki/quell"]]
        assert first.outcome == Outcome.FAILURE and first.answer == "Marl"
        failed = {r.run_id for r in pulled.list_runs(outcome="failure")}
        assert failed == {r.run_id for r in local.list_runs(outcome="failure")} and run_ids[0] in failed


def test_pulling_again_duplicates_nothing(
    phoenix: Any, recorded: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_ids, n_spans = recorded
    db = str(tmp_path / "twice.db")
    args = ("runs", "pull", "--phoenix", phoenix.base_url, "--project", "pull-rag", "--store", db, "--json")
    assert _cli(capsys, *args)[0] == 0
    with SqliteSpanStore(db, create=False) as store:
        before = [(r.run_id, r.n_spans, r.n_hops) for r in store.list_runs(limit=None)]
    code, again, _ = _cli(capsys, *args)
    assert code == 0
    assert again["new_run_ids"] == [] and (again["spans_written"], again["spans_present"]) == (0, n_spans)
    with SqliteSpanStore(db, create=False) as store:
        assert [(r.run_id, r.n_spans, r.n_hops) for r in store.list_runs(limit=None)] == before
        assert sum(len(store.get_spans(r)) for r in run_ids) == n_spans


def test_limit_and_since_select_traces(phoenix: Any, recorded: Any, tmp_path: Path) -> None:
    _, run_ids, _ = recorded
    source = PhoenixSpanSource(phoenix.base_url)
    assert [t.trace_id for t in source.traces("pull-rag", limit=1)] == [run_ids[-1]]
    assert source.traces("pull-rag", since=datetime.now(UTC) + timedelta(hours=1)) == []
    result = source.pull(
        InMemorySpanStore(), "pull-rag", since=datetime.now(UTC) - timedelta(hours=1), limit=None
    )
    assert sorted(result.run_ids) == sorted(run_ids)


def test_an_openinference_trace_pulls_back_as_recorded(phoenix: Any) -> None:
    pytest.importorskip("openinference.instrumentation.langchain")
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    local = InMemorySpanStore()
    provider = _provider("pull-oi")
    provider.add_span_processor(SimpleSpanProcessor(local))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=phoenix.otlp_http_endpoint)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        G.rag_graph().invoke({"question": G.QUESTION}, {"configurable": {"thread_id": "oi"}})
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    [run] = local.list_runs()
    phoenix.spans("pull-oi", expect=len(local.get_spans(run.run_id)))
    pulled = InMemorySpanStore()
    result = PhoenixSpanSource(phoenix.base_url).pull(pulled, "pull-oi")
    assert result.run_ids == [run.run_id]
    trajectory = pulled.get_trajectory(run.run_id)
    _assert_same_run(trajectory, local.get_trajectory(run.run_id))
    # the OpenInference JSON attributes came back as JSON text: the langgraph_* metadata is read
    assert [[d.id for d in h.documents] for h in trajectory.hops] == [["seo/morrow"], ["wiki/quell"]]
    assert {s.node for s in trajectory.steps if s.kind == "node"} >= {"plan", "retrieve", "read", "answer"}


def test_a_diagnosis_is_written_back_on_the_blamed_span(
    phoenix: Any, recorded: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_ids, _ = recorded
    db = str(tmp_path / "diag.db")
    assert (
        _cli(capsys, "runs", "pull", "--phoenix", phoenix.base_url, "--project", "pull-rag", "--store", db)[0]
        == 0
    )
    argv = ("diagnose", run_ids[0], "--method", "iterative", "--store", db, "--json")
    argv_back = (*argv, "--write-back", "phoenix", "--phoenix", phoenix.base_url)
    code, diagnosis, _ = _cli(capsys, *argv_back)
    assert code == 0 and diagnosis["ran"]
    written = diagnosis["written_back"]
    with SqliteSpanStore(db, create=False) as store:
        blamed = next(s for s in store.get_trajectory(run_ids[0]).steps if s.step_id == diagnosis["step_id"])
    assert written["span_id"] == blamed.step_id and blamed.node == diagnosis["node"] == "retrieve"
    assert written["score"] == diagnosis["step_scores"][blamed.step_id]

    def annotations() -> list[Any]:
        notes = PhoenixSpanSource(phoenix.base_url).span_annotations("pull-rag", [blamed.step_id])
        return [n for n in notes if n.name == "root_cause"]

    [note] = annotations()
    assert note.id == written["annotation_id"]
    assert (note.label, note.score, note.explanation) == (
        diagnosis["stage"],
        diagnosis["step_scores"][blamed.step_id],
        diagnosis["root_cause"],
    )
    assert note.identifier == "iterative" and note.annotator_kind == "CODE"
    assert note.metadata["run_id"] == run_ids[0] and note.metadata["node"] == "retrieve"
    # writing the same verdict again replaces it: still one annotation
    assert _cli(capsys, *argv_back)[0] == 0
    assert len(annotations()) == 1
    # a verdict on the run's root span becomes a label when the run is pulled again; ours are skipped
    root = next(
        s
        for s in phoenix.spans("pull-rag", expect=1)
        if s["context"]["trace_id"] == run_ids[0] and s["parent_id"] is None
    )
    from causal_middleware.store.phoenix import SpanAnnotation

    PhoenixSpanSource(phoenix.base_url).annotate(
        [
            SpanAnnotation(
                span_id=root["context"]["span_id"],
                name="correctness",
                label="incorrect",
                annotator_kind="HUMAN",
            )
        ]
    )
    code, again, _ = _cli(
        capsys,
        "runs",
        "pull",
        "--phoenix",
        phoenix.base_url,
        "--project",
        "pull-rag",
        "--store",
        db,
        "--json",
    )
    assert code == 0 and again["labels"] == {run_ids[0]: {"phoenix.correctness": "incorrect"}}
    code, listed, _ = _cli(
        capsys, "runs", "list", "--label", "phoenix.correctness=incorrect", "--store", db, "--json"
    )
    assert [r["run_id"] for r in listed] == [run_ids[0]]


def test_a_background_repair_writes_its_verdicts_back(phoenix: Any, tmp_path: Path) -> None:
    from causal_middleware.integrations.langgraph.auto_repair import repair_on_failure

    from causal_middleware.repair.verdicts import phoenix_write_back

    project = "repair-back"
    provider = _provider(project)
    source = PhoenixSpanSource(phoenix.base_url)
    store = SqliteSpanStore(tmp_path / "repair.db")
    errors: list[Exception] = []
    build = repair_on_failure(on_result=phoenix_write_back(source, store, on_error=errors.append))

    def on_failure(graph: Any) -> Any:
        queue = build(graph)
        queue.tracer_provider = provider  # the repair spans go where the runs go
        return queue

    agent = instrument(
        G.rag_graph(),
        store=store,
        tracer_provider=provider,
        otlp_endpoint=phoenix.otlp_http_endpoint,
        otlp_protocol="http/protobuf",
        on_failure=on_failure,
    )
    config = {"configurable": {"thread_id": "r1"}, "metadata": {"causal_reference": G.REFERENCE}}
    assert agent.invoke({"question": G.QUESTION}, config)["answer"] == "Marl"
    run_id = agent.last_run_id
    agent.force_flush()
    assert agent.on_failure.wait_idle(timeout=120)
    agent.force_flush()
    [result] = store.get_records("repair", run_id)
    assert result["status"] == "repaired" and not errors
    blamed = result["repair"]["step_id"]

    spans = phoenix.spans(project, expect=1, timeout_s=5)
    deadline = time.monotonic() + 20
    while not any(s["name"] == "diagnosis" for s in spans) and time.monotonic() < deadline:
        time.sleep(0.25)
        spans = phoenix.spans(project, expect=1)
    diagnosis_span = next(s for s in spans if s["name"] == "diagnosis")
    repair_span = next(s for s in spans if s["name"].startswith("repair "))
    for span, name in ((diagnosis_span, "root_cause"), (repair_span, "repair")):
        [event] = [e for e in span["events"] if e["name"] == "gen_ai.evaluation.result"]
        assert event["attributes"]["gen_ai.evaluation.name"] == name
        assert event["attributes"]["causal.repair.step_id"] == blamed
    assert repair_span["events"][0]["attributes"]["gen_ai.evaluation.score.label"] == "repaired"
    assert repair_span["events"][0]["attributes"]["gen_ai.evaluation.score.value"] == result["repair"]["crs"]

    notes = {n.name: n for n in source.span_annotations(project, [blamed])}
    assert set(notes) == {"root_cause", "repair"}
    assert notes["repair"].label == "repaired" and notes["repair"].explanation == result["explanation"]
    assert notes["repair"].metadata["node"] == "retrieve" and notes["repair"].metadata["validated"] is True
    assert notes["root_cause"].identifier == "crs" and notes["root_cause"].label == "retrieval"
    agent.shutdown()
    provider.shutdown()
