"""Fault labels: the certified record of what was injected where, kept on the faulted run.

A fork produced by fault injection carries ``labels["fault"] = FaultLabel(...).model_dump()``;
attribution benchmarks score diagnosers against ``injected_hop`` and ``stage``. The sweep keeps
one :class:`UnitRecord` per (question, family, depth, ...) unit as an ``"intervention"`` record.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from causal_middleware.tasks.model import Passage

FaultFamily = Literal[
    "empty_retrieval",
    "irrelevant_documents",
    "query_drift",
    "false_premise",
    "stale_evidence",
    "content_corruption",
    "early_termination",
]
STRUCTURAL_FAMILIES: tuple[FaultFamily, ...] = (
    "empty_retrieval",
    "irrelevant_documents",
    "false_premise",
    "stale_evidence",
)
CONTENT_FAMILIES: tuple[FaultFamily, ...] = ("content_corruption",)
ALL_FAMILIES: tuple[FaultFamily, ...] = (
    "empty_retrieval",
    "irrelevant_documents",
    "query_drift",
    "false_premise",
    "stale_evidence",
    "content_corruption",
    "early_termination",
)
FAULT_SETS: dict[str, tuple[FaultFamily, ...]] = {
    "structural": STRUCTURAL_FAMILIES,
    "content": CONTENT_FAMILIES,
    "all": ALL_FAMILIES,
}
# Families whose injected passages can also be written into the index (--persistent).
PERSISTABLE_FAMILIES: tuple[FaultFamily, ...] = ("content_corruption", "false_premise", "stale_evidence")
Stage = Literal["retrieval", "tool", "planning", "answer", "none"]
Outcome = Literal["recovered", "failed"]
ContentOutcome = Literal["absorbed", "resisted", "derailed"]
UnitStatus = Literal["done", "ineligible", "skipped", "error"]
ReasonCode = Literal["base_incorrect", "hop_mismatch", "not_certifiable", "not_retrieved"]
# Where a fault is put: into the hop's recorded evidence (``trace``: the fork replaces the
# retrieval's output) or into a private copy of the corpus (``corpus``: the fork re-runs the
# retrieval live, so the trace holds what the retriever really returned).
FaultSite = Literal["trace", "corpus"]
CorruptionKind = Literal["answer_fact", "bridge_entity", "salient_entity", "number"]


class CorruptionRecord(BaseModel):
    """The certified span pair of a content corruption."""

    kind: CorruptionKind
    original: str
    corrupted: str
    passage_id: str
    seed: int
    occurrences: int = Field(default=1, ge=1, description="occurrences of the span replaced in the passage")
    rank: int | None = Field(default=None, ge=1, description="the passage's rank in the hop's evidence")


class PlantedPassage(BaseModel):
    """A passage a fault put into a hop's evidence (a false premise, stale or off-topic passage)."""

    kind: Literal["false_premise", "stale", "off_topic"]
    passage_id: str
    text: str
    rank: int = Field(ge=1, description="1-based position in the faulted evidence")
    value: str | None = Field(default=None, description="the value the passage states for the hop's fact")
    gold_value: str | None = Field(default=None, description="the hop's gold value it contradicts")
    fabricated: bool = Field(default=False, description="written by the injector, not taken from the corpus")
    date: str | None = Field(default=None, description="ISO date of a dated (stale) passage")


class QueryDrift(BaseModel):
    """The sub-query a query-drift fault substituted."""

    original: str
    drifted: str
    strategy: Literal["namesake", "drop_relation"]
    replaced: str | None = Field(default=None, description="the span of the original query that changed")
    replacement: str | None = None


class FaultLabel(BaseModel):
    """What was injected where: the certified label attribution is scored against."""

    family: FaultFamily
    stage: Stage
    requested_hop: int = Field(ge=1)
    injected_hop: int = Field(ge=1)
    base_run_id: str
    question_id: str | None = None
    persistent: bool = False
    site: FaultSite = "trace"
    corruption: CorruptionRecord | None = None
    detail: str | None = None
    node: str | None = Field(default=None, description="the node whose output the fork replaced")
    seed: int | None = Field(default=None, description="the seed the fault's choices were drawn with")
    planted: list[PlantedPassage] = Field(default_factory=list)
    drift: QueryDrift | None = None

    @property
    def eligible(self) -> bool:
        """The paper's rule: the actual injected hop equals the requested depth."""
        return self.injected_hop == self.requested_hop


class UnitRecord(BaseModel):
    """One sweep unit as stored (``store.put_record("intervention", run_id, record.model_dump())``).

    ``status``: ``done`` (forked and scored), ``ineligible`` (base answer wrong, or the family
    cannot be applied at the requested hop), ``skipped`` (nothing certifiable to inject) or
    ``error`` (the unit raised; re-running the sweep retries it).
    """

    key: str
    status: UnitStatus
    family: FaultFamily
    requested_hop: int = Field(ge=1)
    injected_hop: int | None = None
    stage: Stage = "none"
    seed: int
    persistent: bool = False
    site: FaultSite = "trace"
    upserts: list[Passage] = Field(
        default_factory=list, description="passages the fork's private corpus copy held (persistent, corpus)"
    )
    dataset: str
    retriever: str
    question_id: str
    base_run_id: str | None = None
    fork_run_id: str | None = None
    label: FaultLabel | None = None
    intervention: dict[str, Any] | None = Field(default=None, description="the Intervention the fork applied")
    outcome: Outcome | None = None
    content_outcome: ContentOutcome | None = None
    query_contamination: bool | None = None
    base_answer: str | None = None
    fork_answer: str | None = None
    reason: str | None = Field(default=None, description="why a unit is ineligible or skipped")
    reason_code: ReasonCode | None = None
    error: str | None = None
    question: dict[str, Any] | None = Field(default=None, description="the Question, as JSON")
    elapsed_s: float | None = None

    @property
    def recovered(self) -> bool | None:
        return None if self.outcome is None else self.outcome == "recovered"
