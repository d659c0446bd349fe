"""The interface: blinding, context verdicts, the registry, not-run diagnoses."""

from __future__ import annotations

import pytest
from attribution_sim import context_for, faulted_run

from causal_middleware.attribution import (
    DIAGNOSERS,
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    available,
    blind,
    get_diagnoser,
    register,
)
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.tasks.model import Question

ALL = [
    "rule",
    "coverage",
    "llm_judge",
    "frozen_hop",
    "suffix_regen",
    "holistic",
    "holistic_llm",
    "iterative",
    "iterative_llm",
    "crs",
    "path_aware",
    "information_flow",
    "decisive_step",
    "all_at_once",
]


def test_registry_has_every_method_and_rejects_bad_names() -> None:
    assert available() == ALL
    assert get_diagnoser("coverage").uses_gold is True
    assert get_diagnoser("rule").uses_gold is False
    with pytest.raises(KeyError, match="unknown diagnoser 'nope'"):
        get_diagnoser("nope")
    with pytest.raises(ValueError, match="bad options for diagnoser 'rule'"):
        get_diagnoser("rule", colour="red")
    with pytest.raises(TypeError, match="Diagnoser subclass"):
        register(int)  # type: ignore[arg-type]

    class Clash(Diagnoser):
        name = "rule"

        def _diagnose(self, trajectory, context):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(ValueError, match="already registered"):
        register(Clash)
    assert DIAGNOSERS["rule"] is not Clash


def test_blind_removes_labels_lineage_reference_and_fork_marks(world) -> None:
    run = faulted_run(world, "empty_retrieval", 2)
    assert run.labels["fault"]["injected_hop"] == 2 and run.lineage is not None
    assert any(s.attributes.get("causal.intervened") for s in run.steps)  # the store's stitcher marks it
    blinded = blind(run)
    assert blinded.labels == {} and blinded.lineage is None and blinded.reference is None
    assert blinded.metadata == {}
    for step in blinded.steps + [s for h in blinded.hops for s in h.steps]:
        assert not any(m in k for k in step.attributes for m in ("intervened", "replay", "frozen", "fault"))
        assert step.start_time is None
    assert [s.step_id for s in blinded.steps] == [s.step_id for s in run.steps]
    assert blinded.answer == run.answer and len(blinded.hops) == len(run.hops)


def test_every_diagnoser_sees_only_the_blinded_run(world) -> None:
    run = faulted_run(world, "content_corruption", 1)
    seen = []

    class Spy(Diagnoser):
        name = "spy"

        def _diagnose(self, trajectory, context):
            seen.append(trajectory)
            return Diagnosis(method=self.name)

    result = Spy().diagnose(run, DiagnosisContext())
    assert seen[0].labels == {} and seen[0].lineage is None
    assert result.method == "spy" and result.run_id == run.run_id


def test_context_judges_with_callable_verifier_object_or_gold(world) -> None:
    run = world.backend.run(world.questions["q1-3"])  # answers Kelvik, correctly
    assert DiagnosisContext(question=world.questions["q1-3"]).judge(run) is True
    assert DiagnosisContext(reference="Lostra").judge(run) is False
    assert DiagnosisContext(verifier=lambda answer: answer == "Kelvik").judge(run) is True
    assert DiagnosisContext(verifier=lambda answer: None).judge(run) is None
    assert DiagnosisContext(reference="Kelvik", verifier=ReferenceVerifier()).judge(run) is True
    assert DiagnosisContext().judge(run) is None
    assert DiagnosisContext().can_judge() is False
    with pytest.raises(TypeError, match="verifier must be callable"):
        DiagnosisContext(verifier=42).judge(run)


def test_missing_capabilities_give_not_run_diagnoses_naming_them(world) -> None:
    run = faulted_run(world, "empty_retrieval", 2)
    bare = DiagnosisContext()
    frozen = get_diagnoser("frozen_hop").diagnose(run.model_copy(update={"reference": None}), bare)
    assert frozen.ran is False and frozen.hop is None
    # without an adapter a probe needs only a live agent and a verdict (the index is optional)
    assert "fork backend" in frozen.reason and "verifier or a gold answer" in frozen.reason
    assert "retrieval index" not in frozen.reason
    judge = get_diagnoser("llm_judge").diagnose(run, bare)
    assert judge.ran is False and "judge chat model" in judge.reason
    coverage = get_diagnoser("coverage").diagnose(run.model_copy(update={"reference": None}), bare)
    assert coverage.ran is False and "gold answer" in coverage.reason and coverage.uses_gold is True
    # the run's stored reference is gold enough for coverage
    assert get_diagnoser("coverage").diagnose(run, bare).ran is True


def test_bad_input_raises_clear_errors() -> None:
    with pytest.raises(TypeError, match="needs a Trajectory"):
        get_diagnoser("rule").diagnose({"run_id": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DiagnosisContext"):
        from attribution_sim import make_world

        w = make_world()
        get_diagnoser("rule").diagnose(w.backend.run(w.questions["q0-2"]), {"index": None})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        DiagnosisContext(max_reexecutions=-1)


def test_misleading_fault_labels_change_no_diagnosis(world) -> None:
    """Diagnosers never read fault labels: relabelling the injected hop changes nothing."""
    run = faulted_run(world, "false_premise", 2)
    lying = run.model_copy(
        update={
            "labels": {**run.labels, "fault": {**run.labels["fault"], "injected_hop": 3, "requested_hop": 3}}
        }
    )
    stripped = run.model_copy(update={"labels": {}, "lineage": None})
    ctx = context_for(world)
    for name in ("rule", "coverage", "holistic", "iterative", "path_aware", "frozen_hop", "suffix_regen"):
        d = get_diagnoser(name)
        a, b, c = d.diagnose(run, ctx), d.diagnose(lying, ctx), d.diagnose(stripped, ctx)
        assert (
            (a.hop, a.stage, a.candidates) == (b.hop, b.stage, b.candidates) == (c.hop, c.stage, c.candidates)
        )


def test_question_without_gold_hops_still_gives_gold_answer() -> None:
    q = Question(id="x", text="?", answer="Paris", aliases=["City of Light"])
    assert DiagnosisContext(question=q).expected_answer() == ("Paris", ["City of Light"])
    assert DiagnosisContext(reference="Rome").expected_answer() == ("Rome", [])
