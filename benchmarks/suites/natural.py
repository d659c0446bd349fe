"""Natural failures, certified by single-step intervention, and the diagnosers scored on them.

A base run that answers wrong with no fault injected is a natural failure of the agent's model.
Its label is certified the way a fault's is, by intervention: each step that went wrong is
replaced on its own, in run order, by what a correct step would have made **from the inputs it
had**, and the suffix re-runs live:

* ``decide``: the hop's gold sub-question with each ``#N`` filled with what the run read at gold
  hop N (its gold answer when the reading stated it, else the run's own reading), tried only when
  the hop's evidence holds no passage with the gold hop answer (the search itself went wrong);
  HotpotQA has no gold sub-questions, so no ``decide`` step is tried there;
* ``retrieve``: the hop's gold supporting passages first, then what the retriever returned, tried
  only when no retrieved passage holds the gold hop answer and every gold hop the sub-question
  refers to (``#N``) was read right (a search for a wrong bridge is not the retriever's fault);
* ``read``: the hop's gold answer as the fact, tried only when the fact is not it and the hop's
  evidence states it (a reader handed passages without the answer did not misread them).

Clean replacements are bounded by the step's inputs so that no replacement smuggles in what the
step could not know: a gold answer written as the last hop's reading flips every run, whatever
went wrong before it. The first step whose clean replacement alone makes the run answer right is
the certified cause (``kind`` ``single``). When none does and the last reading states the answer,
the answer step is the cause (``answer``; inferred, not flipped). Otherwise the failure has more
than one error: the first wrong step is replaced, the fork's own wrong steps after it are found
the same way, and the first of those is replaced on the fork, until the run answers right
(``chain``: the label is the first step, ``chain`` lists every step replaced) or no wrong step is
left (``uncertified``, left out of the scores, never guessed). A base run that raises is counted
in ``errors``. The gold alignment is the fault sweep's: hop *h* works on the first gold hop whose
answer no earlier hop's evidence held.

Results (``results["natural"]`` of ``bench fp --natural``): ``failures``, ``certified`` (single
and answer), ``chained``, ``uncertified``, ``errors``, ``forks`` (re-executions spent),
``by_cause`` (``decide`` / ``retrieve`` / ``read`` / ``answer`` counts over the certified),
``labels`` (per run: ``run_id``, ``question_id``, ``hop``, ``node``, ``kind``, ``chain``,
``tried``), and ``diagnosers.<spec>``: ``run``, ``n`` (every certified failure), ``correct``,
``acc``, ``ci`` (exact hop, the answer stage counting as hop n+1, as in the fault benchmark; a
diagnosis that did not run counts as wrong, and a diagnoser that ran on none is ``run: false``),
``chained`` (``n``, ``correct``, ``acc``, ``ci`` on the chained failures, scored against their
first step), ``named`` (per certified or chained run id, the hop it named; the answer stage is
n+1, None: it did not run).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from benchmarks.reference_agent.graph import gold_plan
from benchmarks.reference_agent.prompts import fill_plan_step
from causal_middleware.attribution.base import Diagnosis, DiagnosisContext, blind
from causal_middleware.evaluation.stats import bootstrap_ci
from causal_middleware.faults.families import hop_target
from causal_middleware.faults.sweep import SweepEnvironment, base_run
from causal_middleware.spans.model import Document, Intervention, NodeStep, Outcome, Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import contains_answer, is_correct

__all__ = ["NATURAL_RECORD", "NaturalLabel", "certify_failure", "natural_failures", "score_natural"]

NATURAL_RECORD = "natural_label"
# Stored labels made under another certification rule are made again, never reused.
CERTIFY_RULE = 2
Diagnose = Callable[[str, Trajectory, DiagnosisContext], Diagnosis]
_REF = re.compile(r"#(\d+)")


class NaturalLabel(BaseModel):
    """The certified cause of one natural failure (``hop`` None: uncertified)."""

    run_id: str
    question_id: str
    hop: int | None = Field(default=None, description="the hop of the cause; n_hops + 1 for the answer step")
    node: str | None = Field(default=None, description="decide, retrieve, read or answer")
    kind: Literal["single", "answer", "chain"] | None = Field(
        default=None, description="how it was certified (module docstring); None: uncertified"
    )
    chain: list[tuple[int, str]] = Field(
        default_factory=list, description="every (hop, node) replaced, in order; one for single"
    )
    tried: int = Field(default=0, description="re-executions it took")
    n_hops: int = 0
    rule: int = Field(default=1, description="the certification rule that made it (CERTIFY_RULE)")
    error: str | None = Field(default=None, description="the agent raised: no base run to certify")


def _clean_query(question: Question, index: int, read: dict[int, str]) -> str | None:
    """Gold hop ``index``'s step of the gold plan with each ``#N`` filled with what the run read at
    gold hop N (``read``); None when the dataset has no question-form decomposition."""
    try:
        step = gold_plan(question)[index - 1]
    except ValueError:  # HotpotQA: its annotated steps are not questions
        return None
    return fill_plan_step(step, [{"fact": read.get(n)} for n in range(1, len(question.hops) + 1)])


def _candidates(
    env: SweepEnvironment, run: Trajectory, question: Question, *, after: int = 0
) -> list[tuple[int, str, Intervention]]:
    """(hop, node, intervention) for every step of ``run`` (at hops from ``after`` on) that went
    wrong given its inputs, in run order, each with its clean replacement."""
    corpus = env.fault_corpus()
    by_id = {p.id: p for p in env.dataset.passages}
    read: dict[int, str] = {}  # gold hop index -> what the run read for it (gold when it was right)
    right: set[int] = set()  # gold hops the run read right
    out: list[tuple[int, str, Intervention]] = []
    for hop in run.hops:
        if not hop.sub_query:
            continue  # the stop decision: no search to make clean
        gold = hop_target(question, run, hop.index, corpus).gold
        if gold is None:
            continue
        served = any(contains_answer(d.text, gold.answer, gold.aliases) for d in hop.documents)
        fact = _fact_of(run, hop.index)
        reads = bool(fact) and contains_answer(fact or "", gold.answer, gold.aliases)
        if hop.index >= after:
            clean_query = _clean_query(question, gold.index, read)
            if (
                not served
                and clean_query is not None
                and clean_query.strip().casefold() != hop.sub_query.strip().casefold()
            ):
                out.append((hop.index, "decide", env.adapter.subquery_update(run, hop.index, clean_query)))
            inputs_right = all(int(n) in right for n in _REF.findall(gold.question))
            have = {d.id for d in hop.documents}
            missing = [pid for pid in gold.supporting_passage_ids if pid not in have]
            passages = [by_id[pid] for pid in missing if pid in by_id]
            if passages and not served and inputs_right:
                docs = [Document(id=p.id, text=p.text, metadata={"title": p.title}) for p in passages]
                evidence = [*docs, *hop.documents][: max(len(hop.documents), len(docs))]
                out.append((hop.index, "retrieve", env.adapter.evidence_update(run, hop.index, evidence)))
            has_read = any(s.kind == "node" and s.node == "read" for s in hop.steps)
            if has_read and served and not reads:
                out.append((hop.index, "read", env.adapter.fact_update(run, hop.index, gold.answer)))
        if reads:
            right.add(gold.index)
        read.setdefault(gold.index, gold.answer if reads else (fact or ""))
    return out


def _fact_of(trajectory: Trajectory, hop: int) -> str | None:
    """The fact the hop's ``read`` reported (its update's ``fact``)."""
    for step in trajectory.hop(hop).steps:
        if isinstance(step, NodeStep) and step.node == "read" and isinstance(step.output, dict):
            fact = step.output.get("fact")
            return str(fact) if fact else None
    return None


def _fork(env: SweepEnvironment, run: Trajectory, intervention: Intervention, base: Trajectory) -> Trajectory:
    return env.backend.fork(
        run.run_id,
        hop=intervention.hop,
        node=intervention.node,
        values=intervention.values,
        mode="regenerate",
        intervention_kind="certify:clean_step",
        labels={"natural.certify": base.run_id},
    )


def certify_failure(env: SweepEnvironment, base: Trajectory, question: Question) -> NaturalLabel:
    """The certified cause of ``base``'s failure (see the module docstring)."""
    label = NaturalLabel(
        run_id=base.run_id, question_id=question.id, n_hops=len(base.hops), rule=CERTIFY_RULE
    )
    candidates = _candidates(env, base, question)
    first: Trajectory | None = None  # the first single-step fork, where a chain starts
    for hop, node, intervention in candidates:
        fork = _fork(env, base, intervention, base)
        if first is None:
            first = fork
        label.tried += 1
        if is_correct(fork.answer, question):
            return label.model_copy(
                update={"hop": hop, "node": node, "kind": "single", "chain": [(hop, node)]}
            )
    facts = [_fact_of(base, h.index) for h in base.hops if h.sub_query]
    last = facts[-1] if facts else None
    if last is not None and contains_answer(last, question.answer, question.aliases):
        n = len(base.hops) + 1
        return label.model_copy(
            update={"hop": n, "node": "answer", "kind": "answer", "chain": [(n, "answer")]}
        )
    if first is None:
        return label
    # more than one error: the first replaced, then the fork's first wrong step after it, and so on
    run = first
    chain = [candidates[0][:2]]
    for _ in range(3 * len(question.hops)):  # a bound: a (hop, node) is never replaced twice
        later = [c for c in _candidates(env, run, question, after=chain[-1][0]) if c[:2] not in chain]
        if not later:
            return label
        hop, node, intervention = later[0]
        chain.append((hop, node))
        run = _fork(env, run, intervention, base)
        label.tried += 1
        if is_correct(run.answer, question):
            first_hop, first_node = chain[0]
            return label.model_copy(
                update={"hop": first_hop, "node": first_node, "kind": "chain", "chain": chain}
            )
    return label


def natural_failures(
    env: SweepEnvironment, questions: Sequence[Question], *, seed: int = 0
) -> list[tuple[Trajectory | None, Question, NaturalLabel]]:
    """Every question whose base run (the sweep's, made if missing) failed, with its certified
    label; labels are kept in the store (``natural_label`` records) and reused when present and
    made under the current rule (``CERTIFY_RULE``)."""
    store = env.store
    kept = {
        p["run_id"]: NaturalLabel.model_validate(p)
        for p in store.get_records(NATURAL_RECORD)
        if "run_id" in p and p.get("rule") == CERTIFY_RULE
    }
    out: list[tuple[Trajectory | None, Question, NaturalLabel]] = []
    for question in questions:
        try:
            base = base_run(env, question, seed=seed)
            if base.outcome == Outcome.SUCCESS or is_correct(base.answer, question):
                continue
            label = kept.get(base.run_id)
            if label is None:
                label = certify_failure(env, base, question)
                store.put_record(NATURAL_RECORD, base.run_id, label.model_dump(mode="json"))
        except Exception as exc:  # one question's agent error must not end the benchmark
            label = NaturalLabel(run_id="", question_id=question.id, error=f"{type(exc).__name__}: {exc}")
            out.append((None, question, label))
            continue
        out.append((base, question, label))
    return out


def score_natural(
    env: SweepEnvironment,
    failures: Sequence[tuple[Trajectory | None, Question, NaturalLabel]],
    specs: Sequence[str],
    diagnose: Diagnose,
    *,
    chat_model: BaseChatModel | None = None,
    B: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Certify, diagnose (blinded) and score: the ``results["natural"]`` dict (module docstring)."""
    certified = [(b, q, lab) for b, q, lab in failures if b is not None and lab.kind in ("single", "answer")]
    chained = [(b, q, lab) for b, q, lab in failures if b is not None and lab.kind == "chain"]
    errors = [lab for b, _, lab in failures if b is None]
    diagnosers: dict[str, Any] = {}
    for spec in specs:
        named: dict[str, int | None] = {}  # run id -> the hop the diagnoser named (None: did not run)
        for base, question, label in [*certified, *chained]:
            assert base is not None
            context = DiagnosisContext(
                backend=env.backend,
                adapter=env.adapter,
                index=env.scoped_index,
                question=question,
                chat_model=chat_model,
            )
            diagnosis = diagnose(spec, blind(base), context)
            named[base.run_id] = (
                (diagnosis.hop if diagnosis.hop is not None else label.n_hops + 1) if diagnosis.ran else None
            )
        if not any(hop is not None for hop in named.values()):
            diagnosers[spec] = {
                "run": False,
                "n": 0,
                "correct": 0,
                "acc": None,
                "ci": None,
                "chained": _score([], B=B, seed=seed),
                "named": named,
            }
            continue
        diagnosers[spec] = {
            "run": True,
            **_score([named[lab.run_id] == lab.hop for _, _, lab in certified], B=B, seed=seed),
            "chained": _score([named[lab.run_id] == lab.hop for _, _, lab in chained], B=B, seed=seed),
            "named": named,
        }
    labelled = len(certified) + len(chained)
    return {
        "failures": len(failures) - len(errors),
        "certified": len(certified),
        "chained": len(chained),
        "uncertified": len(failures) - len(errors) - labelled,
        "errors": len(errors),
        "forks": sum(lab.tried for _, _, lab in failures),
        "by_cause": dict(Counter(lab.node for _, _, lab in certified)),
        "labels": [lab.model_dump(mode="json") for _, _, lab in failures],
        "diagnosers": diagnosers,
    }


def _score(flags: Sequence[bool], *, B: int, seed: int) -> dict[str, Any]:
    """``n``, ``correct``, ``acc`` and a bootstrap ``ci`` of exact-hop hits (None when empty)."""
    ci = bootstrap_ci([float(f) for f in flags], B=B, seed=seed) if flags else None
    return {
        "n": len(flags),
        "correct": sum(flags),
        "acc": round(sum(flags) / len(flags), 4) if flags else None,
        "ci": [round(ci[0], 4), round(ci[1], 4)] if ci is not None else None,
    }
