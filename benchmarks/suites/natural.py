"""Natural failures, certified by single-step intervention, and the diagnosers scored on them.

A base run that answers wrong with no fault injected is a natural failure of the agent's model.
Its label is certified the way a fault's is, by intervention: each step of each hop, in run order,
is replaced on its own by its clean version and the suffix re-runs live:

* ``decide``: the hop's gold sub-question (``#N`` filled with the gold answers), tried only when
  the hop's evidence holds no passage with the gold hop answer (the search itself went wrong);
* ``retrieve``: the hop's gold supporting passages first, then what the retriever returned, tried
  only when no retrieved passage holds the gold hop answer;
* ``read``: the hop's gold answer as the fact, tried when the hop's fact is not it.

The first step whose clean replacement alone makes the run answer right is the certified cause
(a later clean step also flips a chain whose root went wrong earlier, so the earliest is the
root). A step whose output already served the hop is not replaced: re-running the suffix after
it would change later outputs through the changed prefix alone (a sampled or prompt-seeded model)
and certify the wrong step. When no single step flips the run and the last search found the gold
answer, the answer step is taken as the cause (stage ``answer``; inferred, not flipped); otherwise
the failure stays ``uncertified`` and is left out of the scores, never guessed. A base run that
raises is counted in ``errors``. The gold alignment is the fault sweep's: hop *h* works on the
first gold hop whose answer no earlier hop's evidence held.

Results (``results["natural"]`` of ``bench fp --natural``): ``failures``, ``certified``,
``uncertified``, ``errors``, ``forks`` (re-executions spent), ``by_cause`` (``decide`` / ``retrieve`` /
``read`` / ``answer`` counts), ``labels`` (per run: ``run_id``, ``question_id``, ``hop``,
``node``, ``tried``), and ``diagnosers.<spec>``: ``run``, ``n`` (every certified failure),
``correct``, ``acc``, ``ci`` (exact hop, the answer stage counting as hop n+1, as in the fault
benchmark; a diagnosis that did not run counts as wrong, and a diagnoser that ran on none is
``run: false``), ``named`` (per certified run id, the hop it named; the answer stage is n+1, None:
it did not run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from benchmarks.reference_agent.graph import gold_plan
from benchmarks.reference_agent.prompts import fill_plan_step
from causal_middleware.attribution.base import Diagnosis, DiagnosisContext, blind
from causal_middleware.evaluation.stats import bootstrap_ci
from causal_middleware.faults.families import hop_target
from causal_middleware.faults.sweep import SweepEnvironment, base_run
from causal_middleware.spans.model import Document, Intervention, NodeStep, Outcome, Trajectory
from causal_middleware.tasks.model import HopGold, Question
from causal_middleware.tasks.scoring import contains_answer, is_correct

__all__ = ["NATURAL_RECORD", "NaturalLabel", "certify_failure", "natural_failures", "score_natural"]

NATURAL_RECORD = "natural_label"
Diagnose = Callable[[str, Trajectory, DiagnosisContext], Diagnosis]


class NaturalLabel(BaseModel):
    """The certified cause of one natural failure (``hop`` None: uncertified)."""

    run_id: str
    question_id: str
    hop: int | None = Field(default=None, description="the hop of the cause; n_hops + 1 for the answer step")
    node: str | None = Field(default=None, description="decide, retrieve, read or answer")
    tried: int = Field(default=0, description="single-step re-executions it took")
    n_hops: int = 0
    error: str | None = Field(default=None, description="the agent raised: no base run to certify")


def _filled(gold: HopGold, question: Question) -> str:
    """The gold hop's step of the gold plan, with each ``#N`` filled with gold hop N's answer (the
    agent's own filling, from the facts it should have found)."""
    return fill_plan_step(gold_plan(question)[gold.index - 1], [{"fact": h.answer} for h in question.hops])


def _candidates(
    env: SweepEnvironment, base: Trajectory, question: Question
) -> list[tuple[int, str, Intervention]]:
    """(hop, node, intervention) for every step whose clean version differs from what it did."""
    corpus = env.fault_corpus()
    by_id = {p.id: p for p in env.dataset.passages}
    out: list[tuple[int, str, Intervention]] = []
    for hop in base.hops:
        if not hop.sub_query:
            continue  # the stop decision: no search to make clean
        gold = hop_target(question, base, hop.index, corpus).gold
        if gold is None:
            continue
        served = any(contains_answer(d.text, gold.answer, gold.aliases) for d in hop.documents)
        clean_query = _filled(gold, question)
        if not served and clean_query.strip().casefold() != hop.sub_query.strip().casefold():
            out.append((hop.index, "decide", env.adapter.subquery_update(base, hop.index, clean_query)))
        have = {d.id for d in hop.documents}
        missing = [pid for pid in gold.supporting_passage_ids if pid not in have]
        passages = [by_id[pid] for pid in missing if pid in by_id]
        if passages and not served:
            docs = [Document(id=p.id, text=p.text, metadata={"title": p.title}) for p in passages]
            evidence = [*docs, *hop.documents][: max(len(hop.documents), len(docs))]
            out.append((hop.index, "retrieve", env.adapter.evidence_update(base, hop.index, evidence)))
        read = any(s.kind == "node" and s.node == "read" for s in hop.steps)
        fact = _fact_of(base, hop.index)
        if read and not (fact and contains_answer(fact, gold.answer, gold.aliases)):
            out.append((hop.index, "read", env.adapter.fact_update(base, hop.index, gold.answer)))
    return out


def _fact_of(trajectory: Trajectory, hop: int) -> str | None:
    """The fact the hop's ``read`` reported (its update's ``fact``)."""
    for step in trajectory.hop(hop).steps:
        if isinstance(step, NodeStep) and step.node == "read" and isinstance(step.output, dict):
            fact = step.output.get("fact")
            return str(fact) if fact else None
    return None


def certify_failure(env: SweepEnvironment, base: Trajectory, question: Question) -> NaturalLabel:
    """The certified cause of ``base``'s failure (see the module docstring)."""
    label = NaturalLabel(run_id=base.run_id, question_id=question.id, n_hops=len(base.hops))
    for hop, node, intervention in _candidates(env, base, question):
        fork = env.backend.fork(
            base.run_id,
            hop=intervention.hop,
            node=intervention.node,
            values=intervention.values,
            mode="regenerate",
            intervention_kind="certify:clean_step",
            labels={"natural.certify": base.run_id},
        )
        label.tried += 1
        if is_correct(fork.answer, question):
            return label.model_copy(update={"hop": hop, "node": node})
    facts = [_fact_of(base, h.index) for h in base.hops if h.sub_query]
    last = facts[-1] if facts else None
    if last is not None and contains_answer(last, question.answer, question.aliases):
        return label.model_copy(update={"hop": len(base.hops) + 1, "node": "answer"})
    return label


def natural_failures(
    env: SweepEnvironment, questions: Sequence[Question], *, seed: int = 0
) -> list[tuple[Trajectory | None, Question, NaturalLabel]]:
    """Every question whose base run (the sweep's, made if missing) failed, with its certified
    label; labels are kept in the store (``natural_label`` records) and reused when present."""
    store = env.store
    kept = {
        p["run_id"]: NaturalLabel.model_validate(p)
        for p in store.get_records(NATURAL_RECORD)
        if "run_id" in p
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
    certified = [(b, q, lab) for b, q, lab in failures if b is not None and lab.hop is not None]
    errors = [lab for b, _, lab in failures if b is None]
    diagnosers: dict[str, Any] = {}
    for spec in specs:
        flags: list[bool] = []
        named: dict[str, int | None] = {}  # run id -> the hop the diagnoser named (None: did not run)
        ran = 0
        for base, question, label in certified:
            assert base is not None
            context = DiagnosisContext(
                backend=env.backend,
                adapter=env.adapter,
                index=env.scoped_index,
                question=question,
                chat_model=chat_model,
            )
            diagnosis = diagnose(spec, blind(base), context)
            if not diagnosis.ran:
                flags.append(False)
                named[base.run_id] = None
                continue
            ran += 1
            predicted = diagnosis.hop if diagnosis.hop is not None else label.n_hops + 1
            flags.append(predicted == label.hop)
            named[base.run_id] = predicted
        if not ran:
            diagnosers[spec] = {"run": False, "n": 0, "correct": 0, "acc": None, "ci": None, "named": named}
            continue
        ci = bootstrap_ci([float(f) for f in flags], B=B, seed=seed) if flags else None
        diagnosers[spec] = {
            "run": True,
            "n": len(flags),
            "correct": sum(flags),
            "acc": round(sum(flags) / len(flags), 4) if flags else None,
            "ci": [round(ci[0], 4), round(ci[1], 4)] if ci is not None else None,
            "named": named,
        }
    return {
        "failures": len(failures) - len(errors),
        "certified": len(certified),
        "uncertified": len(failures) - len(errors) - len(certified),
        "errors": len(errors),
        "forks": sum(lab.tried for _, _, lab in failures),
        "by_cause": dict(Counter(lab.node for _, _, lab in certified)),
        "labels": [lab.model_dump(mode="json") for _, _, lab in failures],
        "diagnosers": diagnosers,
    }
