"""Verifiers: judge whether a run (original or fork) succeeded.

The kinds shipped, pluggable wherever a :class:`~causal_middleware.protocols.Verifier` is taken
(repair judges its forks with one; ``RepairQueue`` / ``RepairWorker`` decide which finished runs
failed with one):

* :class:`ReferenceVerifier` - the answer against a reference (and aliases) with the project's
  correctness rule (:func:`causal_middleware.tasks.scoring.is_correct`);
* :class:`CallableVerifier` - any user function of the answer (or of the whole trajectory);
* :class:`LLMOutcomeVerifier` - a chat model predicts the outcome from the question and answer;
* :class:`OutcomeVerifier` - the run's recorded outcome (e.g. annotated by the application).

The context package's :class:`~causal_middleware.context.judges.DissatisfactionVerifier` reads a
chat user's reaction instead.

:func:`as_verifier` turns a plain ``callable(answer) -> bool`` into a verifier.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel

from causal_middleware.counterfactual.llm import call_model, input_text, parse_json, render_trace
from causal_middleware.counterfactual.render import shorten
from causal_middleware.prompts import Fence
from causal_middleware.protocols import RepairCost, Verdict, Verifier
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct


class ReferenceVerifier:
    """Answer correctness against a reference answer.

    The reference is ``reference`` when given, else the trajectory's own ``reference`` (a fork
    inherits its parent's reference only when the caller passes it: pass it for forks). Correct
    means :func:`~causal_middleware.tasks.scoring.is_correct` against the reference and ``aliases``.
    """

    def __init__(self, reference: str | None = None, aliases: Sequence[str] = ()) -> None:
        if isinstance(aliases, str):
            raise TypeError("aliases must be a sequence of strings, not a single string")
        self.reference = reference
        self.aliases = list(aliases)

    def verify(self, trajectory: Trajectory) -> Verdict:
        reference = self.reference if self.reference is not None else trajectory.reference
        if reference is None:
            return Verdict(success=None, feedback=f"run {trajectory.run_id} has no reference answer")
        question = Question(id=trajectory.run_id, text="", answer=reference, aliases=self.aliases)
        ok = is_correct(trajectory.answer, question)
        if ok:
            return Verdict(success=True, feedback=f"answer {trajectory.answer!r} matches the reference")
        return Verdict(
            success=False,
            feedback=f"answer {trajectory.answer!r} does not match the reference answer {reference!r}",
        )


class CallableVerifier:
    """A user function as a verifier: ``fn(answer) -> bool`` (``on="answer"``, the default) or
    ``fn(trajectory) -> bool`` (``on="trajectory"``). Returning None means "cannot tell"."""

    def __init__(
        self,
        fn: Callable[..., bool | None],
        *,
        on: Literal["answer", "trajectory"] = "answer",
        name: str | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"CallableVerifier needs a callable, got {type(fn).__name__}")
        if on not in ("answer", "trajectory"):
            raise ValueError(f"on must be 'answer' or 'trajectory', got {on!r}")
        self.fn = fn
        self.on = on
        self.name = name or getattr(fn, "__name__", "verifier")

    def verify(self, trajectory: Trajectory) -> Verdict:
        result = self.fn(trajectory.answer if self.on == "answer" else trajectory)
        if result is None:
            return Verdict(success=None, feedback=f"{self.name} could not judge the run")
        ok = bool(result)
        word = "accepted" if ok else "rejected"
        return Verdict(success=ok, feedback=f"{self.name} {word} the answer {trajectory.answer!r}")


_OUTCOME_SYSTEM = (
    "You judge whether an AI agent answered a question correctly. Read the question, the agent's "
    'steps and its final answer. Reply with JSON only: {"success": true|false, "confidence": '
    '0.0-1.0, "reason": "one sentence"}.'
)


class LLMOutcomeVerifier:
    """A chat model predicts the run's outcome from the question, the trace and the answer.

    Replies that are not the JSON asked for give ``success=None`` (never a guess).
    """

    def __init__(self, model: BaseChatModel, *, include_trace: bool = True) -> None:
        self.model = model
        self.include_trace = include_trace

    def verify(self, trajectory: Trajectory) -> Verdict:
        cost = RepairCost()
        fence = Fence()
        if self.include_trace:
            user = render_trace(trajectory, fence=fence)
        else:
            user = fence.block(
                "run",
                f"Question: {fence.inline(input_text(trajectory.input))}\n"
                f"Final answer: {fence.inline(trajectory.answer)}",
            )
        text = call_model(self.model, fence.system(_OUTCOME_SYSTEM), user, cost).text
        try:
            data = parse_json(text, accept=lambda value: isinstance(value, dict) and "success" in value)
            success = data["success"]
            if not isinstance(success, bool):
                raise ValueError(f"'success' is {success!r}, not a boolean")
            confidence = _clamp(data.get("confidence"))
            reason = str(data.get("reason", ""))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return Verdict(success=None, feedback=f"outcome predictor reply unusable: {exc}", cost=cost)
        return Verdict(success=success, feedback=shorten(reason, 300), confidence=confidence, cost=cost)


def _clamp(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(1.0, max(0.0, float(value)))


class OutcomeVerifier:
    """Failed when the run's recorded outcome (e.g. annotated by the application) is ``failure``;
    cannot tell when it has none."""

    def verify(self, trajectory: Trajectory) -> Verdict:
        if trajectory.outcome is None or trajectory.outcome == Outcome.UNKNOWN:
            return Verdict(success=None, feedback="the run has no recorded outcome")
        success = trajectory.outcome != Outcome.FAILURE
        return Verdict(success=success, feedback=f"recorded outcome {trajectory.outcome.value}")


def as_verifier(obj: Verifier | Callable[..., bool | None]) -> Verifier:
    """``obj`` itself when it is a :class:`Verifier`; a plain callable becomes a
    :class:`CallableVerifier` on the answer (one positional parameter annotated ``Trajectory``
    makes it a verifier on the trajectory)."""
    if isinstance(obj, Verifier):
        return obj
    if not callable(obj):
        raise TypeError(f"expected a Verifier or a callable, got {type(obj).__name__}")
    on: Literal["answer", "trajectory"] = "answer"
    try:
        params = list(inspect.signature(obj).parameters.values())
        if params and params[0].annotation in (Trajectory, "Trajectory"):
            on = "trajectory"
    except (TypeError, ValueError):
        pass
    return CallableVerifier(obj, on=on)
