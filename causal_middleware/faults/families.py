"""The seven fault families of AgenticRAG-FP, as pure functions of a recorded hop and the corpus.

Each family takes a :class:`FaultContext` (the base run's trajectory, its question, the corpus
and the agent's :class:`~causal_middleware.replay.adapter.AgentAdapter`) and a hop, and returns
a :class:`FaultAction`: the :class:`~causal_middleware.spans.model.Intervention` to fork with
(the node whose output changes and its new output) plus what was planted, for the label. No
family runs the agent; the sweep forks with ``mode="regenerate"`` so the suffix runs live.

=====================  ==============================================================  =========
family                 what changes at hop *h*                                          node
=====================  ==============================================================  =========
empty_retrieval        the evidence becomes empty                                      retrieval
irrelevant_documents   the evidence becomes as many corpus passages sharing no token   retrieval
                       with the hop's gold value or its subject
query_drift            the sub-query: its subject swapped for a near-namesake entity,  decision
                       else its relation terms dropped; retrieval then runs live
false_premise          a confidently asserted wrong value of the hop's fact is put at  retrieval
                       rank 1 of the evidence
stale_evidence         a superseded dated statement of the fact is put at rank 1 (the  retrieval
                       corpus's own when it has one, else a fabricated dated variant)
content_corruption     one certified span of one passage is changed (``corruption``)   retrieval
early_termination      the agent answers at hop *h* instead of searching               decision
=====================  ==============================================================  =========

Random choices (which off-topic passages, which distractor, which template) come from a
generator seeded by (sweep seed, trace, family, hop), so a unit is reproducible.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from causal_middleware.faults.corpus import FaultCorpus
from causal_middleware.faults.corruption import (
    NotCertifiable,
    certify_corruption,
    corruption_seed,
    replacement_for,
    span_pattern,
)
from causal_middleware.faults.eligibility import check_eligibility
from causal_middleware.faults.grammar import CONFIDENCE_MARKERS, QuestionGrammar
from causal_middleware.faults.model import (
    PERSISTABLE_FAMILIES,
    CorruptionRecord,
    FaultFamily,
    FaultLabel,
    PlantedPassage,
    QueryDrift,
    ReasonCode,
    Stage,
)
from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.spans.model import Document, Intervention, Trajectory
from causal_middleware.tasks.model import HopGold, Passage, Question
from causal_middleware.tasks.scoring import contains_answer, normalize_answer

__all__ = [
    "FAMILIES",
    "FaultAction",
    "FaultContext",
    "FaultPlan",
    "HopTarget",
    "NotCertifiable",
    "hop_target",
    "plan_fault",
]

_FUNCTION_WORDS = frozenset(
    "a an and are as at by did do does for from has have he her his how in is it its of on or she the they to was were what "
    "when where which who whom whose why with".split()
)
_SIMPLE_SLOTS = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class FaultContext:
    """One base run and what the families need around it."""

    trajectory: Trajectory
    question: Question
    corpus: FaultCorpus
    adapter: AgentAdapter
    seed: int = 0
    trace: str | None = None  # seeds the unit's choices; default the question id
    k: int = 5  # passages for irrelevant_documents when the hop retrieved none

    @property
    def trace_key(self) -> str:
        return self.trace or self.question.id

    def rng(self, family: str, hop: int) -> random.Random:
        return random.Random(corruption_seed(self.seed, f"{self.trace_key}|{family}", hop))


@dataclass(frozen=True)
class FaultAction:
    """A family's output: the intervention, and what it planted (for the label)."""

    intervention: Intervention
    detail: str
    planted: list[PlantedPassage] = field(default_factory=list)
    drift: QueryDrift | None = None
    corruption: CorruptionRecord | None = None
    upserts: list[Passage] = field(default_factory=list)  # passages a persistent fault writes to the index


@dataclass(frozen=True)
class HopTarget:
    """What hop *h* of a run was looking for: its sub-query, relation, subject and gold hop."""

    sub_query: str
    relation: str | None
    subject: str | None
    gold: HopGold | None


def _gold_index(question: Question, trajectory: Trajectory, hop: int) -> int | None:
    """0-based gold hop the agent was working on at ``hop``: one past the gold hops whose answers
    the earlier hops' evidence held, in order."""
    if not question.hops:
        return None
    k = 0
    for h in trajectory.hops:
        if h.index >= hop or k >= len(question.hops):
            continue
        text = " ".join(d.text for d in h.documents)
        gold = question.hops[k]
        if contains_answer(text, gold.answer, gold.aliases):
            k += 1
    return min(k, len(question.hops) - 1)


def hop_target(question: Question, trajectory: Trajectory, hop: int, corpus: FaultCorpus) -> HopTarget:
    """Parse hop ``hop``'s sub-query and map it to its gold hop.

    The subject is the sub-query's subject by the corpus's question grammar; else the previous gold
    hop's answer when the sub-query names it; else the longest known entity the sub-query names
    (``corpus``); else the question's first entity (world metadata)."""
    sub_query = trajectory.hop(hop).sub_query or ""
    k = _gold_index(question, trajectory, hop)
    gold = question.hops[k] if k is not None else None
    parsed = corpus.grammar.parse_sub_query(sub_query) if sub_query else None
    if parsed is not None:
        return HopTarget(sub_query, parsed[0], parsed[1], gold)
    subject: str | None = None
    previous = question.hops[k - 1] if gold is not None and k else None
    named = (
        [n for n in (previous.answer, *previous.aliases) if contains_answer(sub_query, n)] if previous else []
    )
    if named:
        subject = named[0]
    elif in_query := corpus.names_in(sub_query):
        subject = in_query[0]
    elif question.metadata.get("entities"):
        subject = str(question.metadata["entities"][0])
    return HopTarget(sub_query, gold.relation if gold else None, subject, gold)


def _hop_question(question: Question, target: HopTarget) -> Question:
    """The hop as a question of its own, to certify a value wrong for the hop (not just the answer)."""
    if target.gold is None:
        return question
    return Question(
        id=f"{question.id}#hop", text=target.sub_query or question.text, answer=target.gold.answer,
        aliases=list(target.gold.aliases), dataset=question.dataset,
    )  # fmt: skip


def _evidence_doc(passage: Passage, rank_score: float | None) -> Document:
    metadata: dict[str, object] = {"title": passage.title}
    if passage.date is not None:
        metadata["date"] = passage.date.isoformat()
    return Document(id=passage.id, text=passage.text, score=rank_score, metadata=metadata)


def _top_score(documents: list[Document]) -> float | None:
    scores = [d.score for d in documents if d.score is not None]
    return max(scores) if scores else None


def _simple_templates(
    templates: tuple[str, ...], slots: set[str], *, subject_first: bool = True
) -> list[str]:
    """Templates that use only ``slots`` (and, with ``subject_first``, open with the subject)."""
    return [
        t
        for t in templates
        if set(_SIMPLE_SLOTS.findall(t)) <= slots and (t.startswith("{s}") or not subject_first)
    ]


def _statement(target: HopTarget, value: str, rng: random.Random, grammar: QuestionGrammar) -> str | None:
    relation = grammar.relation(target.relation) if target.relation else None
    if relation is None or not target.subject:
        return None
    templates = _simple_templates(relation.statements, {"s", "o"})
    return rng.choice(templates).format(s=target.subject, o=value) if templates else None


def _wrong_value(ctx: FaultContext, target: HopTarget, rng: random.Random) -> str:
    if target.gold is None:
        raise NotCertifiable("the question has no gold decomposition, so no certified wrong value")
    wrong = replacement_for(target.gold.answer, _hop_question(ctx.question, target), ctx.corpus, rng)
    if wrong is None:
        raise NotCertifiable(f"no certified wrong value for {target.gold.answer!r}")
    return wrong


# --- the families ------------------------------------------------------------------------------
def empty_retrieval(ctx: FaultContext, hop: int) -> FaultAction:
    before = len(ctx.trajectory.hop(hop).documents)
    return FaultAction(
        intervention=ctx.adapter.evidence_update(ctx.trajectory, hop, []),
        detail=f"hop {hop}'s {before} retrieved documents removed",
    )


def irrelevant_documents(ctx: FaultContext, hop: int) -> FaultAction:
    target = hop_target(ctx.question, ctx.trajectory, hop, ctx.corpus)
    base_docs = ctx.trajectory.hop(hop).documents
    avoid = [n for n in (target.subject,) if n]
    if target.gold is not None:
        avoid += [target.gold.answer, *target.gold.aliases]
    n = len(base_docs) or ctx.k
    chosen = ctx.corpus.off_topic(
        avoid, n, ctx.rng("irrelevant_documents", hop), exclude_ids=[d.id for d in base_docs]
    )
    if not chosen:
        raise NotCertifiable(f"no corpus passage shares no token with {avoid}")
    docs = [_evidence_doc(p, None) for p in chosen]
    planted = [
        PlantedPassage(kind="off_topic", passage_id=p.id, text=p.text, rank=i)
        for i, p in enumerate(chosen, 1)
    ]
    return FaultAction(
        intervention=ctx.adapter.evidence_update(ctx.trajectory, hop, docs),
        detail=f"hop {hop}'s evidence replaced by {len(docs)} off-topic passages (no token of {avoid})",
        planted=planted,
    )


def _relation_terms(sub_query: str, subject: str | None) -> list[str]:
    subject_tokens = set(normalize_answer(subject or "").split())
    return [
        w
        for w in re.findall(r"[A-Za-z][\w'-]*", sub_query)
        if w.casefold() not in _FUNCTION_WORDS and normalize_answer(w) not in subject_tokens
    ]


def query_drift(ctx: FaultContext, hop: int) -> FaultAction:
    target = hop_target(ctx.question, ctx.trajectory, hop, ctx.corpus)
    original = target.sub_query
    if not original:
        raise NotCertifiable(f"hop {hop} recorded no sub-query to drift")
    rng = ctx.rng("query_drift", hop)
    subject = target.subject
    match = span_pattern(subject).search(original) if subject else None
    if match is not None:
        namesakes = [n for n in ctx.corpus.near_namesakes(match.group(0)) if not contains_answer(original, n)]
        if namesakes:
            namesake = rng.choice(namesakes)
            drifted = original[: match.start()] + namesake + original[match.end() :]
            drift = QueryDrift(
                original=original,
                drifted=drifted,
                strategy="namesake",
                replaced=match.group(0),
                replacement=namesake,
            )
            return FaultAction(
                intervention=ctx.adapter.subquery_update(ctx.trajectory, hop, drifted),
                detail=f"hop {hop}'s sub-query subject {match.group(0)!r} swapped for near-namesake {namesake!r}",
                drift=drift,
            )
    terms = _relation_terms(original, match.group(0) if match else subject)
    if not terms:
        raise NotCertifiable(
            f"hop {hop}'s sub-query {original!r} has no namesake subject and no relation term"
        )
    drifted = original
    for term in terms:
        drifted = re.sub(rf"\s*(?<![\w]){re.escape(term)}(?![\w])", "", drifted, count=1)
    drifted = " ".join(drifted.split()).strip()
    if not drifted or normalize_answer(drifted) == normalize_answer(original):
        raise NotCertifiable(f"dropping {terms} from {original!r} leaves nothing to search")
    return FaultAction(
        intervention=ctx.adapter.subquery_update(ctx.trajectory, hop, drifted),
        detail=f"hop {hop}'s sub-query lost its relation terms {terms}",
        drift=QueryDrift(
            original=original, drifted=drifted, strategy="drop_relation", replaced=" ".join(terms)
        ),
    )


def false_premise(ctx: FaultContext, hop: int) -> FaultAction:
    target = hop_target(ctx.question, ctx.trajectory, hop, ctx.corpus)
    rng = ctx.rng("false_premise", hop)
    wrong = _wrong_value(ctx, target, rng)
    marker = rng.choice(CONFIDENCE_MARKERS)
    statement = _statement(target, wrong, rng, ctx.corpus.grammar)
    if statement is None:
        text = f'{marker}the answer to "{target.sub_query}" is {wrong}.'
    else:
        text = marker + (statement[0].lower() + statement[1:] if statement.startswith("The ") else statement)
    pid = ctx.corpus.new_id("false_premise", ctx.trace_key, hop, ctx.seed)
    passage = Passage(id=pid, title=target.subject or "", text=text)
    base_docs = list(ctx.trajectory.hop(hop).documents)
    docs = [_evidence_doc(passage, _top_score(base_docs)), *base_docs]
    gold = target.gold.answer if target.gold else None
    return FaultAction(
        intervention=ctx.adapter.evidence_update(ctx.trajectory, hop, docs),
        detail=f"hop {hop}: confident false claim {wrong!r} (gold {gold!r}) added at rank 1",
        planted=[
            PlantedPassage(
                kind="false_premise",
                passage_id=pid,
                text=text,
                rank=1,
                value=wrong,
                gold_value=gold,
                fabricated=True,
            )
        ],
        upserts=[passage],
    )


def stale_evidence(ctx: FaultContext, hop: int) -> FaultAction:
    target = hop_target(ctx.question, ctx.trajectory, hop, ctx.corpus)
    rng = ctx.rng("stale_evidence", hop)
    base_docs = list(ctx.trajectory.hop(hop).documents)
    seen = {d.id for d in base_docs}
    gold = target.gold.answer if target.gold else None
    real = [p for p in ctx.corpus.stale_passages(target.subject or "", target.relation) if p.id not in seen]
    if target.subject and real:
        passage = rng.choice(real)
        planted = PlantedPassage(
            kind="stale", passage_id=passage.id, text=passage.text, rank=1, gold_value=gold, fabricated=False,
            date=passage.date.isoformat() if passage.date else None,
        )  # fmt: skip
        upserts: list[Passage] = []
        detail = f"hop {hop}: the corpus's superseded statement {passage.id} added at rank 1"
    else:
        old = _wrong_value(ctx, target, rng)
        year = rng.randint(1950, 1995)
        relation = ctx.corpus.grammar.relation(target.relation) if target.relation else None
        dated = (
            _simple_templates(relation.dated_statements, {"s", "o", "year"}, subject_first=False)
            if relation
            else []
        )
        # "Since {year}, ..." reads as current; an outdated statement is "As of {year}" / "In {year}"
        dated = [t for t in dated if not t.startswith("Since")]
        if relation is not None and target.subject and dated:
            text = rng.choice(dated).format(s=target.subject, o=old, year=year)
        elif (statement := _statement(target, old, rng, ctx.corpus.grammar)) is not None:
            text = f"{statement} This was recorded in {year}."
        else:
            text = f'As of {year}, the answer to "{target.sub_query}" was {old}.'
        pid = ctx.corpus.new_id("stale_evidence", ctx.trace_key, hop, ctx.seed)
        passage = Passage(id=pid, title=target.subject or "", text=text, date=dt.date(year, 1, 1))
        planted = PlantedPassage(
            kind="stale", passage_id=pid, text=text, rank=1, value=old, gold_value=gold, fabricated=True,
            date=passage.date.isoformat() if passage.date else None,
        )  # fmt: skip
        upserts = [passage]
        detail = f"hop {hop}: fabricated outdated statement ({year}: {old!r}, gold {gold!r}) added at rank 1"
    docs = [_evidence_doc(passage, _top_score(base_docs)), *base_docs]
    return FaultAction(
        intervention=ctx.adapter.evidence_update(ctx.trajectory, hop, docs),
        detail=detail,
        planted=[planted],
        upserts=upserts,
    )


def content_corruption(ctx: FaultContext, hop: int) -> FaultAction:
    plan = certify_corruption(
        ctx.question, ctx.trajectory, hop, ctx.corpus, seed=ctx.seed, trace=ctx.trace_key
    )
    record = plan.record
    return FaultAction(
        intervention=ctx.adapter.evidence_update(ctx.trajectory, hop, plan.documents),
        detail=(
            f"hop {hop}: {record.kind} {record.original!r} -> {record.corrupted!r} in passage "
            f"{record.passage_id} (rank {record.rank})"
        ),
        corruption=record,
        upserts=[plan.passage],
    )


def early_termination(ctx: FaultContext, hop: int) -> FaultAction:
    return FaultAction(
        intervention=ctx.adapter.answer_now_update(ctx.trajectory, hop),
        detail=f"forced to answer at hop {hop} from the evidence of hops before it",
    )


FAMILIES: dict[FaultFamily, Callable[[FaultContext, int], FaultAction]] = {
    "empty_retrieval": empty_retrieval,
    "irrelevant_documents": irrelevant_documents,
    "query_drift": query_drift,
    "false_premise": false_premise,
    "stale_evidence": stale_evidence,
    "content_corruption": content_corruption,
    "early_termination": early_termination,
}


# --- planning a unit ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FaultPlan:
    """A unit, decided: ``ready`` (fork with ``intervention``, label the fork with ``label``),
    ``ineligible`` or ``skipped`` (with ``reason``)."""

    status: str
    family: FaultFamily
    requested_hop: int
    injected_hop: int | None
    stage: Stage
    reason: str | None = None
    reason_code: ReasonCode | None = None
    label: FaultLabel | None = None
    intervention: Intervention | None = None
    upserts: list[Passage] = field(default_factory=list)


def plan_fault(
    family: FaultFamily, ctx: FaultContext, requested_hop: int, *, persistent: bool = False
) -> FaultPlan:
    """Decide one unit: eligibility (:mod:`~causal_middleware.faults.eligibility`), then the family.

    ``persistent`` (families in ``PERSISTABLE_FAMILIES`` only) keeps the passages the fault wrote
    in ``upserts`` for the sweep to put in a copy of the index; for other families it is ignored
    and the label says ``persistent=False``.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown fault family {family!r}; expected one of {sorted(FAMILIES)}")
    verdict = check_eligibility(ctx.trajectory, ctx.question, family, requested_hop)
    common = {
        "family": family,
        "requested_hop": requested_hop,
        "injected_hop": verdict.injected_hop,
        "stage": verdict.stage,
    }
    if not verdict.eligible or verdict.injected_hop is None:
        return FaultPlan(status="ineligible", reason=verdict.reason, reason_code=verdict.code, **common)  # type: ignore[arg-type]
    try:
        action = FAMILIES[family](ctx, verdict.injected_hop)
    except NotCertifiable as exc:
        return FaultPlan(status="skipped", reason=str(exc), reason_code="not_certifiable", **common)  # type: ignore[arg-type]
    keep = persistent and family in PERSISTABLE_FAMILIES and bool(action.upserts)
    label = FaultLabel(
        family=family,
        stage=verdict.stage,
        requested_hop=requested_hop,
        injected_hop=verdict.injected_hop,
        base_run_id=ctx.trajectory.run_id,
        question_id=ctx.question.id,
        persistent=keep,
        corruption=action.corruption,
        detail=action.detail,
        node=action.intervention.node,
        seed=ctx.seed,
        planted=action.planted,
        drift=action.drift,
    )
    intervention = action.intervention.model_copy(
        update={"kind": f"fault:{family}", "description": action.detail}
    )
    return FaultPlan(
        status="ready",
        label=label,
        intervention=intervention,
        upserts=action.upserts if keep else [],
        **common,  # type: ignore[arg-type]
    )
