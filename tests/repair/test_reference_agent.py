"""Repair on the real pieces: the reference agent (offline model, BM25), the instrumentation, the
LangGraph replayer, fault injection, and ``instrument(..., on_failure=...)``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import load_dataset
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from repair_agent import first_failing_fault

from benchmarks.reference_agent import run_question
from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.faults.sweep import SweepEnvironment
from causal_middleware.protocols import Verdict
from causal_middleware.repair import (
    OfflineProposer,
    ReferenceVerifier,
    RepairConfig,
    RepairQueue,
    RepairService,
    export_pairs,
    repair_run,
)
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct

GUARD = 30.0  # upper bound for waits, so a broken worker fails the test instead of hanging it


@pytest.fixture(scope="module")
def env() -> Iterator[SweepEnvironment]:
    environment = reference_sweep_environment(generate_world(12, seed=0), store=InMemorySpanStore(), seed=0)
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def corrupted(env: SweepEnvironment) -> tuple[Trajectory, Question]:
    """The first run whose hop-1 content corruption (fault injection's own family) makes it fail."""
    return first_failing_fault(env, "content_corruption")


def test_repairs_an_injected_failure_of_the_reference_agent(
    env: SweepEnvironment, corrupted: tuple[Trajectory, Question], tmp_path: Path
) -> None:
    faulted, question = corrupted
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=OfflineProposer(env.adapter, env.scoped_index),
        verifier=ReferenceVerifier(question.answer, question.aliases),
        store=env.store,
    )
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None
    # the corrupted passage is put back: the fork point itself, restored from the index
    assert (repair.node, repair.hop) == ("retrieve", 1)
    assert "restored to the index's text" in repair.description
    assert repair.minimality > 0.9
    assert is_correct(repair.answer_after, question)
    assert repair.validation.passed and repair.validation.only_change
    assert result.cost.naive_reexecutions > result.crs.cost.reexecutions
    fork = env.store.get_trajectory(repair.fork_run_id or "")
    assert fork.lineage is not None and fork.lineage.parent_run_id == faulted.run_id
    assert "Step 'retrieve' (hop 1" in result.explanation

    path = tmp_path / "pairs.jsonl"
    assert export_pairs(env.store, path) >= 1
    rows = load_dataset("json", data_files=str(path), split="train")
    row = next(r for r in rows if r["metadata"]["run_id"] == faulted.run_id)
    assert question.text in row["prompt"] and row["chosen"] != row["rejected"]


class GatedJudge:
    """A judge that waits for the test's go-ahead before judging (a slow detector)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.started = threading.Event()
        self.gate = threading.Event()
        self.released_in_time: bool | None = None
        self.thread: str | None = None

    def verify(self, trajectory: Trajectory) -> Verdict:
        self.thread = threading.current_thread().name
        self.started.set()
        self.released_in_time = self.gate.wait(GUARD)
        return self.inner.verify(trajectory)


def test_on_failure_never_blocks_the_run_and_repairs_in_the_background(env: SweepEnvironment) -> None:
    graph: Any = env.backend.graph  # type: ignore[attr-defined]
    exporter = InMemorySpanExporter()
    graph.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    question = env.dataset.questions[0]
    # judged against a wrong reference, so the run counts as failed and goes to repair
    judge = GatedJudge(ReferenceVerifier("not the answer"))
    service = RepairService(
        backend=env.backend,
        proposer=OfflineProposer(env.adapter, env.scoped_index),
        verifier=ReferenceVerifier("not the answer"),
        store=env.store,
        config=RepairConfig(max_reexecutions=2, validation_runs=1, validation_min_flips=1),
    )
    queue = RepairQueue(service, judge=judge, tracer_provider=graph.tracer_provider)
    graph.on_failure = queue
    try:
        run = run_question(graph, question)
        # invoke has returned while the judge is still held at the gate: the run did not wait for it
        assert not judge.gate.is_set()
        judge.gate.set()
        assert queue.wait_idle(GUARD)
    finally:
        graph.on_failure = None
        queue.close()
    assert judge.released_in_time is True  # had invoke waited on the judge, the gate would have timed out
    assert judge.thread == "causal-repair-worker"
    assert queue.stats.submitted == 1 and queue.stats.judged_failed == 1 and queue.stats.errors == 0
    assert run.run_id is not None
    [record] = env.store.get_records("repair", run.run_id)
    assert record["status"] in ("repaired", "no_flip", "unvalidated")
    assert record["crs"]["cost"]["reexecutions"] <= 2
    assert env.store.get_records("diagnosis", run.run_id)
    repair_spans = [
        s for s in exporter.get_finished_spans() if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "repair"
    ]
    [span] = repair_spans
    assert format(span.links[0].context.trace_id, "032x") == run.run_id
