"""The extension points: one verdict concept, typed boundaries, one import path per protocol."""

from __future__ import annotations

import importlib

import pytest

from causal_middleware.attribution.base import DiagnosisContext
from causal_middleware.counterfactual.verifiers import CallableVerifier, OutcomeVerifier, as_verifier
from causal_middleware.protocols import FailureSink, Proposer, Verdict, Verifier
from causal_middleware.repair.trigger import RepairQueue
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.store.memory import InMemorySpanStore


def _run(answer: str = "Kelvik", outcome: Outcome | None = None) -> Trajectory:
    return Trajectory(run_id="ab" * 16, answer=answer, outcome=outcome)


def test_a_verdict_that_blames_another_run_keeps_the_run_and_the_expected_answer() -> None:
    verdict = Verdict(success=False, feedback="the user said so", run_id="cd" * 16, expected="Canberra")
    assert verdict.failed is True and verdict.run_id == "cd" * 16 and verdict.expected == "Canberra"
    assert Verdict(success=None).failed is None and Verdict(success=True).failed is False


def test_outcome_verifier_reads_the_recorded_outcome() -> None:
    verifier = OutcomeVerifier()
    assert isinstance(verifier, Verifier)
    assert verifier.verify(_run(outcome=Outcome.FAILURE)).success is False
    assert verifier.verify(_run(outcome=Outcome.SUCCESS)).success is True
    unknown = verifier.verify(_run(outcome=Outcome.UNKNOWN))
    assert unknown.success is None and "no recorded outcome" in unknown.feedback


def test_diagnosis_context_types_its_verifier_and_wraps_a_plain_callable_once() -> None:
    context = DiagnosisContext(verifier=lambda answer: answer == "Kelvik")
    assert isinstance(context.verifier, CallableVerifier)
    assert context.judge(_run()) is True and context.judge(_run("Lostra")) is False
    outcome = OutcomeVerifier()
    assert DiagnosisContext(verifier=outcome).verifier is outcome
    with pytest.raises(TypeError, match="verifier must be callable or have verify"):
        DiagnosisContext(verifier=42)


def test_diagnosis_context_refuses_a_proposer_without_propose() -> None:
    class Proposes:
        def propose(self, trajectory, step, k, *, feedback=""):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

    assert isinstance(DiagnosisContext(proposer=Proposes()).proposer, Proposer)
    with pytest.raises(ValueError, match="proposer"):
        DiagnosisContext(proposer=object())


def test_the_repair_queue_is_a_failure_sink_and_judges_with_a_verifier() -> None:
    store = InMemorySpanStore()
    queue = RepairQueue(lambda run: None, judge=lambda answer: answer == "Kelvik", store=store)
    try:
        assert isinstance(queue, FailureSink)
        assert isinstance(queue.judge, CallableVerifier)
    finally:
        queue.close()
    assert as_verifier(queue.judge) is queue.judge


def test_instrument_refuses_an_on_failure_without_submit() -> None:
    pytest.importorskip("langgraph")
    from causal_middleware.integrations.langgraph.instrument import instrument
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        question: str

    builder = StateGraph(State)
    builder.add_node("answer", lambda state: {"question": state["question"]})
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    with pytest.raises(TypeError, match=r"on_failure needs an object with submit\(run_id\), got int"):
        instrument(builder.compile(), store=None, on_failure=42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("causal_middleware.replay", ["ForkBackend", "AsyncForkBackend", "DiscardingForkBackend"]),
        (
            "causal_middleware.repair",
            ["Verifier", "Verdict", "Proposer", "ProposalBatch", "FailureJudge", "Judgement"],
        ),
        ("causal_middleware.repair.trigger", ["FailureJudge", "Judgement", "OutcomeJudge", "VerifierJudge"]),
    ],
)
def test_each_protocol_has_one_import_path(module: str, names: list[str]) -> None:
    exported = set(getattr(importlib.import_module(module), "__all__", ()))
    assert not exported & set(names)
    if module.endswith("trigger"):
        assert not any(hasattr(importlib.import_module(module), n) for n in names)
