"""Judge-free outcome labels of a faulted run.

* **recovered** / **failed**: the fork's answer is still correct (``world.scoring.is_correct``).
* For content corruption, from the certified span pair (AgenticRAG-FP item 5):
  **resisted** (the answer is correct; correctness wins when the corrupted span also appears),
  **absorbed** (otherwise, the answer contains the corrupted span's tokens as a whole-token
  span), **derailed** (neither).
* **query contamination**: the corrupted span appears in a sub-query issued after the injected hop.
"""

from __future__ import annotations

from causal_middleware.faults.model import ContentOutcome, CorruptionRecord, Outcome
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import contains_answer, is_correct


def outcome_of(answer: str | None, question: Question) -> Outcome:
    """``recovered`` when ``answer`` is correct for ``question``, else ``failed``."""
    return "recovered" if is_correct(answer, question) else "failed"


def content_outcome(answer: str | None, question: Question, corruption: CorruptionRecord) -> ContentOutcome:
    """``resisted`` / ``absorbed`` / ``derailed`` (see the module docstring)."""
    if is_correct(answer, question):
        return "resisted"
    if answer and contains_answer(answer, corruption.corrupted):
        return "absorbed"
    return "derailed"


def later_sub_queries(trajectory: Trajectory, injected_hop: int) -> list[str]:
    """Sub-queries of the hops after ``injected_hop``, in order."""
    return [h.sub_query for h in trajectory.hops if h.index > injected_hop and h.sub_query]


def query_contaminated(trajectory: Trajectory, corruption: CorruptionRecord, injected_hop: int) -> bool:
    """True when the corrupted span appears (whole tokens) in a sub-query after ``injected_hop``."""
    return any(contains_answer(q, corruption.corrupted) for q in later_sub_queries(trajectory, injected_hop))
