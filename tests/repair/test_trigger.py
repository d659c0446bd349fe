"""Repair on failure: the bounded background queue, judges, records and linked spans."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from repair_fakes import ScriptedProposer
from repair_sim import World

from causal_middleware.counterfactual.verifiers import OutcomeVerifier, ReferenceVerifier
from causal_middleware.protocols import Verdict
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import RepairService
from causal_middleware.repair.trigger import RepairQueue, root_span_id
from causal_middleware.spans import attributes as A
from causal_middleware.spans.health import health
from causal_middleware.spans.model import Outcome, Trajectory

GUARD = 10.0  # generous upper bound so a broken worker fails the test instead of hanging it


def _service(world: World) -> RepairService:
    return RepairService(
        backend=world.backend,
        proposer=ScriptedProposer({("read", 1): [{"fact": "Bob Smith"}]}),
        verifier=ReferenceVerifier(),
        store=world.backend.store,
    )


def test_submit_never_blocks_and_counts_drops(sloppy_world: World) -> None:
    started, gate = threading.Event(), threading.Event()
    handled: list[str] = []

    def slow_repair(trajectory: Trajectory) -> RepairResult:
        started.set()
        gate.wait(GUARD)
        handled.append(trajectory.run_id)
        return _service(sloppy_world).repair(trajectory, write=False)

    runs = [sloppy_world.backend.run() for _ in range(3)]
    queue = RepairQueue(slow_repair, judge=lambda answer: False, store=sloppy_world.backend.store, maxsize=1)
    assert queue.submit(runs[0].run_id)
    assert started.wait(GUARD)  # the worker holds run 0 inside the (blocked) repair
    assert queue.submit(runs[1].run_id)  # fills the one slot
    assert not queue.submit(runs[2].run_id)  # full: dropped, and submit returned anyway
    assert queue.stats.dropped == 1 and queue.stats.submitted == 3
    gate.set()
    assert queue.wait_idle(GUARD)
    assert handled == [runs[0].run_id, runs[1].run_id]
    assert queue.stats.processed == 2 and queue.stats.judged_failed == 2
    queue.close()


def test_failed_run_is_repaired_recorded_and_emitted_as_linked_spans(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    store = sloppy_world.backend.store
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[tuple[str, Verdict, RepairResult | None]] = []
    queue = RepairQueue(
        _service(sloppy_world),
        judge=ReferenceVerifier(),
        tracer_provider=provider,
        on_result=lambda run_id, judgement, result: seen.append((run_id, judgement, result)),
    )
    assert queue.submit(run.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()

    assert queue.stats.repaired == 1 and queue.stats.errors == 0
    [(run_id, judgement, result)] = seen
    assert run_id == run.run_id and judgement.failed and result is not None and result.status == "repaired"
    assert len(store.get_records("repair", run.run_id)) == 1
    assert len(store.get_records("diagnosis", run.run_id)) == 1

    spans = {s.name.split()[0]: s for s in exporter.get_finished_spans()}
    repair_span, diagnosis_span = spans["repair"], spans["diagnosis"]
    root = root_span_id(store, run.run_id)
    assert root is not None
    for span in (repair_span, diagnosis_span):
        [link] = span.links
        assert format(link.context.trace_id, "032x") == run.run_id
        assert format(link.context.span_id, "016x") == root
        assert span.attributes[A.CAUSAL_REPAIR_RUN_ID] == run.run_id
    assert diagnosis_span.parent is not None and diagnosis_span.parent.span_id == repair_span.context.span_id
    assert repair_span.context.trace_id != int(run.run_id, 16)  # its own trace, linked, not nested
    attrs: dict[str, Any] = dict(repair_span.attributes or {})
    assert attrs[A.CAUSAL_SPAN_TYPE] == "repair" and attrs[A.CAUSAL_REPAIR_STATUS] == "repaired"
    assert attrs[A.CAUSAL_NODE] == "read" and attrs[A.CAUSAL_HOP_INDEX] == 1
    assert attrs[A.CAUSAL_REPAIR_VALIDATED] is True
    assert attrs[A.CAUSAL_REPAIR_FORK_RUN_ID] == result.repair.fork_run_id  # type: ignore[union-attr]
    assert diagnosis_span.attributes[A.CAUSAL_DIAGNOSIS_METHOD] == "crs"


def test_successful_run_is_judged_and_left_alone(clean_world: World) -> None:
    run = clean_world.backend.run()
    seen: list[Any] = []
    queue = RepairQueue(_service(clean_world), judge=ReferenceVerifier(), on_result=lambda *a: seen.append(a))
    queue.submit(run.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert queue.stats.judged_ok == 1 and queue.stats.repaired == 0
    assert seen[0][2] is None
    assert clean_world.backend.fork_calls == []
    assert clean_world.backend.store.get_records("repair") == []


def test_worker_errors_are_counted_and_the_worker_survives(sloppy_world: World) -> None:
    calls: list[str] = []

    def explode(trajectory: Trajectory) -> RepairResult:
        calls.append(trajectory.run_id)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return _service(sloppy_world).repair(trajectory)

    queue = RepairQueue(explode, judge=lambda a: False, store=sloppy_world.backend.store, fetch_attempts=1)
    queue.submit(sloppy_world.backend.run().run_id)
    queue.submit("0" * 32)  # not in the store
    queue.submit(sloppy_world.backend.run().run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert queue.stats.errors == 2 and queue.stats.repaired == 1
    assert health.errors["repair.queue"] == 2
    assert "KeyError" in (health.last_error("repair.queue") or "")  # the unknown run, handled last


def test_closed_queue_drops_and_outcome_judge_reads_annotations(sloppy_world: World) -> None:
    queue = RepairQueue(_service(sloppy_world), judge=OutcomeVerifier())
    queue.close()
    assert not queue.submit("a" * 32) and queue.stats.dropped == 1
    run = sloppy_world.backend.run()
    assert OutcomeVerifier().verify(run).failed is True
    assert OutcomeVerifier().verify(run.model_copy(update={"outcome": Outcome.SUCCESS})).failed is False
    assert OutcomeVerifier().verify(run.model_copy(update={"outcome": None})).failed is None


def test_forks_are_not_judged(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    fork = sloppy_world.backend.fork(run.run_id, node="read", hop=1, step=3, values={"fact": "Bob Smith"})
    judged: list[str] = []

    def judge(trajectory: Trajectory) -> bool:
        judged.append(trajectory.run_id)
        return True

    queue = RepairQueue(_service(sloppy_world), judge=judge)
    queue.submit(fork.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert judged == [] and queue.stats.skipped_forks == 1 and queue.stats.processed == 0
