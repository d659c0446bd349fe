"""TRAIL error localisation: does a diagnoser blame a span the annotators marked as an error?

Each GAIA trace becomes a trajectory (:mod:`causal_middleware.store.trail`); its annotation
(``annotations/<subset>/<same name>``, read with the importer's trailing-comma tolerance) gives
the gold error locations, span ids, kept as the run's labels. Only traces with at least one
annotated error are scored.

A diagnosis names a span as follows: its ``step_id`` when it is one of the run's steps; else the
first LLM step of its blamed ``hop`` (its first step when it has none: a hop's first step is the
agent's ``Step N`` span, which TRAIL never annotates); else (the answer stage, or no hop) the last LLM step (the call
that wrote the answer), or the last step when there is none. A diagnoser that does not run
predicts nothing (a miss on both counts).

Scores, each a proportion with a bootstrap 95 % interval
(:func:`causal_middleware.evaluation.stats.proportion_ci`):

* ``location``: the named span is one of the annotated error spans (TRAIL's location accuracy);
* ``hop``: the blamed group holds an annotated error. A step's group is its hop, or "outside"
  when it lies outside every hop (planning calls, the answer stage); the blamed group is the named
  step's group, else the diagnosis's ``hop``, else "outside".

Baselines: ``first_llm`` / ``last_llm`` (the first or last LLM step), ``first_hop_llm`` (the
first LLM step of the first hop: what a method that blames hop 1 names), ``random_llm`` (uniform over
the LLM steps; TRAIL's errors are almost all LLM spans), ``random_step`` (uniform over all steps)
and, for ``hop`` only, ``random_group`` (uniform over the groups). For the random ones the exact
expected rate is given beside the interval of one seeded draw. Each method's location hits are
also compared, paired, with ``first_hop_llm`` (exact McNemar test).

Categories: a method predicts one when its diagnosis says ``details["error_category"]`` (TRAIL's
taxonomy names; ``information_flow`` does for two of its rules). ``category``: the predicted
category is one of the trace's annotated categories; ``joint``: the named span is an annotated
error span and the category is one annotated at that span (a method without a category scores 0
on both). Baseline ``majority_category`` names ``first_hop_llm``'s span with the most frequent
category of the annotations themselves (``uses_gold``). Methods that need a live agent or a chat
model are listed with ``run: false`` and the reason.

    python -m benchmarks.foreign.trail ../shared/data/trail --out bench-results/trail

JSON keys (``trail.json`` under ``--out``): ``data`` (facts about the set), ``rows`` (name ->
``kind``, ``location``/``hop``/``category``/``joint`` each ``{rate, ci95, hits, n}``; methods add
``ran``, ``uses_gold``, ``answered_with``, ``location_vs_first_hop_llm``), ``not_run``,
``expected_random``, ``target`` (location above the random-LLM-span rate), ``published``, ``seed``,
``judge`` (the judge model's name, or null). With ``--judge SPEC`` the one-call LLM method
``all_at_once`` runs too; its row adds ``llm_calls``, ``llm_tokens``, ``llm_errors`` (unreadable
replies) and ``seconds_per_call``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from benchmarks.foreign.methods import LLMFacts, load_judge, methods_for, not_run, with_progress
from causal_middleware.attribution.base import Diagnosis, DiagnosisContext
from causal_middleware.attribution.llm_judge import model_name
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.evaluation.stats import paired_comparison, proportion_ci
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.trail import (
    LABEL_ERROR_LOCATIONS,
    LABEL_ERRORS,
    annotation_path,
    read_trail_trace,
)

PASSIVE_METHODS = ("decisive_step", "information_flow", "rule", "coverage", "holistic", "iterative")
BASELINES = ("first_llm", "last_llm", "first_hop_llm", "random_llm", "random_step", "majority_category")
OUTSIDE = "outside"  # the group of the steps outside every hop

#: published TRAIL (GAIA) figures, for reference only: the best model's joint accuracy
#: (location and category both right), and the issue's target for location
PUBLISHED = {"best_joint_gemini_2_5_pro": 0.11}


@dataclass
class Case:
    """One annotated trace: its trajectory, the gold error spans, the group of each step."""

    file: str
    trajectory: Trajectory
    gold: set[str]
    steps: list[str]
    llm_steps: list[str]
    group: dict[str, int | str]
    categories: dict[str, set[str]]  # error span -> its annotated (normalised) categories

    @property
    def gold_groups(self) -> set[int | str]:
        return {self.group[s] for s in self.gold if s in self.group}


@dataclass
class Prediction:
    span: str | None
    group: int | str | None
    category: str | None = None


def trace_files(data: str | Path) -> list[Path]:
    """The trace files under ``data``: a TRAIL checkout (``traces/<subset>/*.json``), one subset's
    traces folder, or one file."""
    root = Path(data)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"TRAIL data not found: {root}")
    files = sorted(root.glob("traces/*/*.json")) or sorted(root.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"{root} holds no TRAIL traces (traces/<subset>/*.json)")
    return files


def load_cases(data: str | Path, limit: int | None = None) -> tuple[list[Case], dict[str, Any]]:
    """The annotated traces under ``data`` (the first ``limit`` files), and facts about the set."""
    cases: list[Case] = []
    facts: Counter[str] = Counter()
    gold_kinds: Counter[str] = Counter()
    for file in trace_files(data)[:limit]:
        facts["traces"] += 1
        if annotation_path(file) is None:
            facts["without_annotation"] += 1
            continue
        t = build_trajectory(read_trail_trace(file))
        facts["annotation_repaired"] += bool(t.labels.get("trail.annotation_notes"))
        facts["with_reference"] += t.reference is not None
        gold = set(t.labels.get(LABEL_ERROR_LOCATIONS) or [])
        if not gold:
            facts["without_errors"] += 1
            continue
        group: dict[str, int | str] = {s.step_id: s.hop if s.hop is not None else OUTSIDE for s in t.steps}
        kinds = {s.step_id: s.kind for s in t.steps}
        for span in gold:
            gold_kinds[kinds.get(span, "not a step")] += 1
            facts["gold_outside_hops"] += group.get(span) == OUTSIDE
        facts["n_hops"] += len(t.hops)
        categories: dict[str, set[str]] = {}
        for error in t.labels.get(LABEL_ERRORS) or []:
            categories.setdefault(str(error["location"]), set()).add(str(error["category_normalised"]))
        cases.append(
            Case(
                file=file.name,
                trajectory=t,
                gold=gold,
                steps=[s.step_id for s in t.steps],
                llm_steps=[s.step_id for s in t.steps if s.kind == "llm"],
                group=group,
                categories=categories,
            )
        )
    n_gold = sum(len(c.gold) for c in cases)
    summary = {
        "traces": facts["traces"],
        "scored": len(cases),
        "without_annotation": facts["without_annotation"],
        "without_errors": facts["without_errors"],
        "annotations_repaired": facts["annotation_repaired"],
        "with_reference": facts["with_reference"],
        "gold_spans": n_gold,
        "gold_span_kinds": dict(gold_kinds),
        "gold_outside_hops": facts["gold_outside_hops"],
        "mean_steps": round(sum(len(c.steps) for c in cases) / len(cases), 2) if cases else None,
        "mean_llm_steps": round(sum(len(c.llm_steps) for c in cases) / len(cases), 2) if cases else None,
        "mean_hops": round(facts["n_hops"] / len(cases), 2) if cases else None,
    }
    return cases, summary


def _at(case: Case, span: str) -> Prediction:
    return Prediction(span, case.group.get(span, OUTSIDE))


def predict(case: Case, diagnosis: Diagnosis) -> Prediction:
    """The span, group and category a diagnosis names (see the module docstring)."""
    found = _predict_span(case, diagnosis)
    category = diagnosis.details.get("error_category") if diagnosis.ran else None
    found.category = category if isinstance(category, str) else None
    return found


def _predict_span(case: Case, diagnosis: Diagnosis) -> Prediction:
    if not diagnosis.ran or not case.steps:
        return Prediction(None, None)
    if diagnosis.step_id is not None and diagnosis.step_id in case.group:
        return _at(case, diagnosis.step_id)
    if diagnosis.hop is not None:
        in_hop = [s for s in case.steps if case.group[s] == diagnosis.hop]
        first = next((s for s in in_hop if s in case.llm_steps), in_hop[0] if in_hop else None)
        if first is not None:
            return _at(case, first)
        return Prediction(None, diagnosis.hop)
    return _at(case, (case.llm_steps or case.steps)[-1])


def _baseline(name: str, case: Case, rng: random.Random, majority: str | None = None) -> Prediction:
    pool = case.llm_steps or case.steps
    if name == "first_llm":
        return _at(case, pool[0])
    if name == "last_llm":
        return _at(case, pool[-1])
    if name == "first_hop_llm":
        hop = min((g for g in case.group.values() if isinstance(g, int)), default=None)
        return _at(case, next((s for s in pool if case.group[s] == hop), pool[0]))
    if name == "random_llm":
        return _at(case, rng.choice(pool))
    if name == "random_step":
        return _at(case, rng.choice(case.steps))
    if name == "majority_category":
        found = _baseline("first_hop_llm", case, rng)
        found.category = majority
        return found
    raise KeyError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")


def _rate(hits: Sequence[bool]) -> dict[str, Any]:
    ci = proportion_ci(list(hits))
    n = len(hits)
    return {
        "rate": round(sum(hits) / n, 4) if n else None,
        "ci95": [round(ci[0], 4), round(ci[1], 4)] if ci else None,
        "hits": int(sum(hits)),
        "n": n,
    }


def location_hits(cases: Sequence[Case], predictions: Sequence[Prediction]) -> list[bool]:
    return [p.span is not None and p.span in c.gold for c, p in zip(cases, predictions, strict=True)]


def score(cases: Sequence[Case], predictions: Sequence[Prediction]) -> dict[str, Any]:
    """Location and hop-level hit rates, with bootstrap 95 % intervals."""
    pairs = list(zip(cases, predictions, strict=True))
    location = location_hits(cases, predictions)
    hop = [p.group is not None and p.group in c.gold_groups for c, p in pairs]
    category = [
        p.category is not None and any(p.category in v for v in c.categories.values()) for c, p in pairs
    ]
    joint = [
        p.span is not None and p.category is not None and p.category in c.categories.get(p.span, set())
        for c, p in pairs
    ]
    return {
        "location": _rate(location),
        "hop": _rate(hop),
        "category": _rate(category),
        "joint": _rate(joint),
    }


def expected_random(cases: Sequence[Case]) -> dict[str, float]:
    """Exact expected rates of the uniform picks."""
    n = len(cases)

    def mean(values: list[float]) -> float:
        return round(sum(values) / n, 4) if n else 0.0

    def on(pool: list[str], case: Case) -> tuple[float, float]:
        loc = sum(s in case.gold for s in pool) / len(pool)
        hop = sum(case.group[s] in case.gold_groups for s in pool) / len(pool)
        return loc, hop

    llm = [on(c.llm_steps or c.steps, c) for c in cases]
    every = [on(c.steps, c) for c in cases]
    groups = [len(c.gold_groups) / len(set(c.group.values())) for c in cases]
    return {
        "random_llm_location": mean([x[0] for x in llm]),
        "random_llm_hop": mean([x[1] for x in llm]),
        "random_step_location": mean([x[0] for x in every]),
        "random_step_hop": mean([x[1] for x in every]),
        "random_group_hop": mean(groups),
    }


def run_method(
    name: str,
    cases: Sequence[Case],
    make: Callable[[str], Any] = get_diagnoser,
    chat_model: BaseChatModel | None = None,
) -> tuple[list[Prediction], dict[str, Any]]:
    """Diagnose each case with the named (passive) method; the predictions and run facts."""
    diagnoser = make(name)
    predictions, ran, uses_gold, reasons = [], 0, False, set()
    answered: Counter[str] = Counter()
    llm = LLMFacts()
    for case in with_progress(cases, name, slow=chat_model is not None):
        context = DiagnosisContext(reference=case.trajectory.reference, chat_model=chat_model)
        try:
            diagnosis = diagnoser.diagnose(case.trajectory, context)
        except Exception as exc:  # a method that cannot read a foreign trace: counted, not fatal
            diagnosis = Diagnosis.not_run(name, f"{type(exc).__name__}: {exc}")
        llm.add(diagnosis)
        ran += diagnosis.ran
        uses_gold = uses_gold or diagnosis.uses_gold
        if not diagnosis.ran and diagnosis.reason:
            reasons.add(diagnosis.reason[:160])
        if diagnosis.ran:
            answered["step" if diagnosis.step_id in case.group else "hop" if diagnosis.hop else "stage"] += 1
        predictions.append(predict(case, diagnosis))
    facts = {
        "ran": ran,
        "n": len(cases),
        "uses_gold": uses_gold,
        "answered_with": dict(answered),
        "not_run_reasons": sorted(reasons)[:3],
        **llm.as_dict(),
    }
    return predictions, facts


def benchmark(
    data: str | Path,
    methods: Sequence[str] | None = None,
    seed: int = 0,
    limit: int | None = None,
    *,
    chat_model: BaseChatModel | None = None,
) -> dict[str, Any]:
    """The table: every method and baseline, scored on the annotated traces under ``data``."""
    cases, summary = load_cases(data, limit)
    if not cases:
        raise ValueError(f"no annotated TRAIL trace with errors under {data}")
    rng = random.Random(seed)
    rows: dict[str, Any] = {}
    hits: dict[str, list[bool]] = {}
    counts = Counter(cat for c in cases for cats in c.categories.values() for cat in cats)
    majority = counts.most_common(1)[0][0] if counts else None
    for baseline in BASELINES:
        predictions = [_baseline(baseline, c, rng, majority) for c in cases]
        hits[baseline] = location_hits(cases, predictions)
        rows[baseline] = {"kind": "baseline", "uses_gold": baseline == "majority_category"}
        rows[baseline].update(score(cases, predictions))
    methods = methods_for(methods, chat_model)
    for method in methods:
        predictions, facts = run_method(method, cases, chat_model=chat_model)
        hits[method] = location_hits(cases, predictions)
        rows[method] = {"kind": "method", **facts, **score(cases, predictions)}
        # paired exact McNemar test on location against the trivial baseline it most resembles
        versus = paired_comparison(method, "first_hop_llm", hits[method], hits["first_hop_llm"])
        rows[method]["location_vs_first_hop_llm"] = versus.model_dump()
    return {
        "benchmark": "trail",
        "data": summary,
        "rows": rows,
        "not_run": not_run(exclude=set(methods)),
        "expected_random": expected_random(cases),
        "target": _target(rows, expected_random(cases)),
        "majority_category": majority,
        "published": PUBLISHED,
        "seed": seed,
        "judge": model_name(chat_model) if chat_model is not None else None,
    }


def _target(rows: dict[str, Any], expected: dict[str, float]) -> dict[str, Any]:
    """Issue 15's bar: the best method's location rate above the random-LLM-span rate."""
    bar = expected["random_llm_location"]
    methods = {k: v for k, v in rows.items() if v["kind"] == "method" and v["ran"]}
    best = max(methods, key=lambda k: methods[k]["location"]["rate"]) if methods else None
    rate = methods[best]["location"]["rate"] if best else None
    return {"bar_location": bar, "best": best, "best_location": rate, "met": rate is not None and rate > bar}


def _table(result: dict[str, Any]) -> str:
    d = result["data"]
    lines = [
        f"TRAIL (n={d['scored']} annotated traces with errors of {d['traces']}; {d['gold_spans']} error "
        f"spans, {d['gold_outside_hops']} outside every hop; mean {d['mean_llm_steps']} LLM steps, "
        f"{d['mean_hops']} hops)",
        f"{'method':<18}{'location':>10}{'95% CI':>18}{'hop':>8}{'category':>10}{'joint':>8}{'95% CI':>18}"
        "  ran   gold",
    ]
    for name, row in result["rows"].items():
        loc, hop = row["location"], row["hop"]
        ci_l = f"[{loc['ci95'][0]:.3f}, {loc['ci95'][1]:.3f}]"
        joint = row["joint"]
        ci_j = f"[{joint['ci95'][0]:.3f}, {joint['ci95'][1]:.3f}]"
        ran = f"{row['ran']}/{row['n']}" if row["kind"] == "method" else "-"
        gold = "yes" if row.get("uses_gold") else "-"
        lines.append(
            f"{name:<18}{loc['rate']:>10.3f}{ci_l:>18}{hop['rate']:>8.3f}{row['category']['rate']:>10.3f}"
            f"{joint['rate']:>8.3f}{ci_j:>18}  {ran:<6}{gold}"
        )
    for name, row in result["not_run"].items():
        lines.append(f"{name:<18}run: false ({row['reason']})")
    t = result["target"]
    lines.append(
        f"target (location > {t['bar_location']:.3f}): {'met' if t['met'] else 'not met'} by {t['best']}"
    )
    e = result["expected_random"]
    lines.append(
        f"random (expected): LLM span location {e['random_llm_location']:.3f}, hop "
        f"{e['random_llm_hop']:.3f}; any step location {e['random_step_location']:.3f}, hop "
        f"{e['random_step_hop']:.3f}; uniform group hop {e['random_group_hop']:.3f}"
    )
    lines.append("published (for reference): best joint accuracy 0.11 (Gemini-2.5-pro)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.foreign.trail", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "data", help="the trail folder (traces/ and annotations/), or a traces/<subset> folder"
    )
    parser.add_argument(
        "--methods",
        default=None,
        help="comma-separated passive diagnosers (default: every one that runs offline)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random baselines' draws")
    parser.add_argument("--limit", type=int, default=None, help="score only the first N trace files")
    parser.add_argument(
        "--judge",
        metavar="SPEC",
        help="also run the one-call LLM methods (all_at_once) with this chat model: local[:NAME], "
        "gguf:PATH, anthropic[:MODEL] or module:attr",
    )
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    parser.add_argument("--out", metavar="DIR", help="write trail.json and trail.txt into DIR")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    try:
        result = benchmark(
            args.data, methods, seed=args.seed, limit=args.limit, chat_model=load_judge(args.judge)
        )
    except (KeyError, ValueError, OSError) as exc:
        parser.exit(2, f"error: {exc}\n")
    text = _table(result)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "trail.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "trail.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
