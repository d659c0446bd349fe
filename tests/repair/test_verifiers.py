"""Verifiers: reference answer, user callable, LLM outcome predictor."""

from __future__ import annotations

import pytest
from repair_fakes import ScriptedChatModel

from causal_middleware.counterfactual.verifiers import (
    CallableVerifier,
    LLMOutcomeVerifier,
    ReferenceVerifier,
    as_verifier,
)
from causal_middleware.protocols import Verifier
from causal_middleware.spans.model import Trajectory


def run(answer: str | None, reference: str | None = "Paris") -> Trajectory:
    return Trajectory(
        run_id="a" * 32, input="Where was the founder of Acme Corp born?", answer=answer, reference=reference
    )


def test_reference_verifier_uses_the_projects_correctness_rule() -> None:
    verifier = ReferenceVerifier()
    assert verifier.verify(run("Paris")).success is True
    assert verifier.verify(run("It was Paris.")).success is True
    bad = verifier.verify(run("Lyon"))
    assert bad.success is False and "'Paris'" in bad.feedback and "'Lyon'" in bad.feedback
    assert verifier.verify(run(None)).success is False
    assert verifier.verify(run("Paris", reference=None)).success is None
    assert (
        ReferenceVerifier("Lutetia", aliases=["Paris"]).verify(run("Paris", reference=None)).success is True
    )
    with pytest.raises(TypeError, match="aliases"):
        ReferenceVerifier("x", aliases="y")


def test_callable_verifier_on_answer_or_trajectory() -> None:
    on_answer = CallableVerifier(lambda a: a == "Paris")
    assert on_answer.verify(run("Paris")).success is True
    assert on_answer.verify(run("Lyon")).success is False
    on_traj = CallableVerifier(lambda t: t.reference == t.answer, on="trajectory")
    assert on_traj.verify(run("Paris")).success is True
    assert CallableVerifier(lambda a: None).verify(run("x")).success is None
    with pytest.raises(ValueError, match="on must be"):
        CallableVerifier(lambda a: True, on="span")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        CallableVerifier("yes")  # type: ignore[arg-type]


def test_as_verifier_wraps_plain_callables() -> None:
    def by_trajectory(t: Trajectory) -> bool:
        return t.answer == "Paris"

    assert isinstance(as_verifier(lambda a: a == "Paris"), Verifier)
    assert as_verifier(lambda a: a == "Paris").verify(run("Paris")).success is True
    assert as_verifier(by_trajectory).verify(run("Paris")).success is True  # type: ignore[arg-type]
    ref = ReferenceVerifier()
    assert as_verifier(ref) is ref
    with pytest.raises(TypeError):
        as_verifier(3)  # type: ignore[arg-type]


def test_llm_outcome_verifier_parses_and_counts() -> None:
    model = ScriptedChatModel(
        replies=['{"success": false, "confidence": 0.8, "reason": "Lyon is not where he was born"}']
    )
    verdict = LLMOutcomeVerifier(model).verify(run("Lyon"))
    assert verdict.success is False and verdict.confidence == 0.8
    assert "Lyon" in verdict.feedback
    assert verdict.cost.llm_calls == 1 and verdict.cost.input_tokens > 0
    assert 'Final answer: "Lyon"' in str(model.calls[0][-1].content)


@pytest.mark.parametrize("reply", ["looks right to me", '{"success": "yes"}', '{"confidence": 1}'])
def test_llm_outcome_verifier_never_guesses(reply: str) -> None:
    verdict = LLMOutcomeVerifier(ScriptedChatModel(replies=[reply]), include_trace=False).verify(run("Lyon"))
    assert verdict.success is None
    assert "unusable" in verdict.feedback
    assert verdict.cost.llm_calls == 1
