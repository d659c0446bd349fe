"""``causal-mw bench context``: the context-debugging pipeline on the simulation benchmark.

For every trace: detect (offline), diagnose (holistic; the iterative baseline as an ablation),
recommend (exploring; passive as an ablation), and score against the ground truth. Metrics are
proportions over the dissatisfied traces (detector metrics over all traces) with bootstrap 95%
intervals (B=1000, seeded). The bench refuses to run on a benchmark that fails verification.

With a chat model (``--judge SPEC``) the stages named in ``--llm-stages`` (default all three:
``detector``, ``root_cause``, ``recommender``) use their LLM forms and the others the offline ones,
so one stage can be measured alone on the offline results of the others; the report then also has
``llm_stages`` (the list), ``llm_errors`` (unreadable or invalid replies, each scored as a miss),
``llm_calls`` and ``llm_seconds_per_call`` (over the model calls of every LLM stage).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from benchmarks.context.simulation import Benchmark, SimTrace, domain_names, generate_benchmark
from benchmarks.context.simulation.verification import (
    BenchmarkVerificationError,
    VerificationReport,
    verify_benchmark,
)
from causal_middleware.context.detector import detect, detect_offline
from causal_middleware.context.failure import locate_failure
from causal_middleware.context.llm import LLMResponseError
from causal_middleware.context.recommendation import Operation, Recommendation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.recommender_llm import recommend_llm
from causal_middleware.context.root_cause import ContextDiagnosis, FaultCategory, diagnose
from causal_middleware.context.text import contains, coverage, term_set
from causal_middleware.context.workspace import Workspace
from causal_middleware.evaluation.stats import bootstrap_ci, percentile_interval, resample_indices

B = 1000
LLM_STAGES = ("detector", "root_cause", "recommender")
PROPORTIONS = (
    "acc_at_1",
    "acc_at_3",
    "component_acc",
    "op_acc",
    "path_acc",
    "path_partial_acc",
    "e2e_acc",
    "fix_effectiveness",
)


class TraceResult(BaseModel):
    """One trace, scored."""

    trace_id: str
    domain: str
    dissatisfied: bool
    category: str | None = None
    tier: int
    detected: bool
    detector_confidence: float
    root_pred: str | None = None
    root_gold: str | None = None
    acc_at_1: bool | None = None
    acc_at_3: bool | None = None
    component_acc: bool | None = None
    op_pred: str | None = None
    op_gold: str | None = None
    op_acc: bool | None = None
    path_pred: str | None = None
    path_gold: str | None = None
    path_acc: bool | None = None
    path_partial_acc: bool | None = None
    recovered: bool | None = None
    calls: int = 0
    e2e_acc: bool | None = None
    fix_effectiveness: bool | None = None
    iterative_acc_at_1: bool | None = None
    iterative_acc_at_3: bool | None = None
    iterative_calls: int = 0
    iterative_e2e_acc: bool | None = None
    passive_op_acc: bool | None = None
    passive_path_acc: bool | None = None
    passive_e2e_acc: bool | None = None
    llm_errors: list[str] = []
    llm_calls: int = 0
    llm_seconds: float = 0.0


def evaluate_trace(
    bench: Benchmark,
    trace: SimTrace,
    model: BaseChatModel | None = None,
    stages: Sequence[str] = LLM_STAGES,
) -> TraceResult:
    """Run the pipeline on one trace and score it: the offline forms (and their ablations), or with
    ``model`` the LLM forms of ``stages`` (detector, holistic root cause, recommender; the other
    stages offline, no ablations).

    A reply the LLM forms cannot read (or an invalid recommendation) is recorded in ``llm_errors``
    and scored as a miss (not detected, wrong root, wrong operation and path), so a weak model
    lowers the figures instead of stopping the benchmark. When the LLM detector's signals locate no
    failure (an unreadable reply, or no signal at all), the offline rules locate it for the root
    cause, so that stage is measured on every dissatisfied session; detection and end-to-end stay
    the LLM detector's."""
    gt = trace.ground_truth
    conv = trace.conversation
    errors: list[str] = []
    started = time.perf_counter()
    llm_detector = model is not None and "detector" in stages
    if not llm_detector:
        detection = detect_offline(conv)
    else:
        try:
            detection = detect(conv, mode="llm", model=model)
        except LLMResponseError as exc:
            errors.append(f"detector: {exc}")
            # the offline rules locate the failure so the root-cause step is still measured;
            # escalation (and so end-to-end) stays the LLM detector's, i.e. a miss
            detection = detect_offline(conv).model_copy(update={"escalate": False})
    result = TraceResult(
        trace_id=gt.trace_id,
        domain=gt.domain,
        dissatisfied=gt.dissatisfied,
        category=gt.fault.category.value if gt.fault else None,
        tier=gt.tier,
        detected=detection.escalate,
        detector_confidence=detection.confidence,
        llm_errors=errors,
        llm_calls=1 if llm_detector else 0,
        llm_seconds=round(time.perf_counter() - started, 3) if llm_detector else 0.0,
    )
    if not gt.dissatisfied or gt.fix is None:
        return result
    ws = bench.workspace(trace)
    if model is not None:
        if locate_failure(conv, detection) is None:
            detection = detect_offline(conv).model_copy(update={"escalate": detection.escalate})
        return _evaluate_llm_stages(result, trace, ws, detection, model, stages)
    holistic = diagnose(conv, detection, method="holistic")
    rec = recommend(conv, holistic, ws, mode="explore")
    _score(result, trace, holistic, rec, detection.escalate)
    result.fix_effectiveness = fix_effective(trace, ws, rec)
    iterative = diagnose(conv, detection, method="iterative")
    it_rec = recommend(conv, iterative, ws, mode="explore")
    result.iterative_acc_at_1 = iterative.root_node_id == gt.root_node_id
    result.iterative_acc_at_3 = gt.root_node_id in iterative.top(3)
    result.iterative_calls = iterative.calls
    result.iterative_e2e_acc = (
        detection.escalate and result.iterative_acc_at_1 and it_rec.operation == gt.fix.operation
    )
    passive = recommend(conv, holistic, ws, mode="passive")
    result.passive_op_acc = passive.operation == gt.fix.operation
    result.passive_path_acc = passive.target_path == gt.fix.target_path
    result.passive_e2e_acc = detection.escalate and bool(result.acc_at_1) and result.passive_op_acc
    return result


def _evaluate_llm_stages(
    result: TraceResult,
    trace: SimTrace,
    ws: Workspace,
    detection: Any,
    model: BaseChatModel,
    stages: Sequence[str],
) -> TraceResult:
    conv = trace.conversation
    if "root_cause" in stages:
        started = time.perf_counter()
        try:
            holistic: ContextDiagnosis | None = diagnose(
                conv, detection, method="holistic", mode="llm", model=model
            )
        except LLMResponseError as exc:
            holistic = None
            result.llm_errors.append(f"root cause: {exc}")
        result.llm_calls += 1 if holistic is None else holistic.calls  # an unreadable reply was a call
        result.llm_seconds = round(result.llm_seconds + time.perf_counter() - started, 3)
    else:
        holistic = diagnose(conv, detection, method="holistic")
    if holistic is None:
        result.acc_at_1 = result.acc_at_3 = result.component_acc = False
        result.op_acc = result.path_acc = result.path_partial_acc = result.e2e_acc = False
        result.root_gold = trace.ground_truth.root_node_id
        return result
    if "recommender" not in stages:
        offline = recommend(conv, holistic, ws, mode="explore")
        _score(result, trace, holistic, offline, detection.escalate)
        result.fix_effectiveness = fix_effective(trace, ws, offline)
        return result
    started = time.perf_counter()
    rec: Recommendation | None
    try:
        rec = recommend_llm(conv, holistic, ws, model)
    except LLMResponseError as exc:
        said = str(exc)  # the recommender's own checks name the stage; a JSON error does not
        result.llm_errors.append(said if said.startswith("recommender: ") else f"recommender: {said}")
        rec = None
    result.llm_calls += 1 if holistic.status == "ok" else 0  # no call for a diagnosis with no failure
    result.llm_seconds = round(result.llm_seconds + time.perf_counter() - started, 3)
    _score(result, trace, holistic, rec, detection.escalate)
    result.fix_effectiveness = rec is not None and fix_effective(trace, ws, rec)
    return result


def _score(
    result: TraceResult,
    trace: SimTrace,
    diag: ContextDiagnosis,
    rec: Recommendation | None,
    detected: bool,
) -> None:
    """Score the diagnosis and the recommendation; ``rec=None`` (an invalid LLM recommendation) is a
    miss on every recommender metric."""
    gt = trace.ground_truth
    assert gt.fix is not None
    result.root_pred, result.root_gold = diag.root_node_id, gt.root_node_id
    result.acc_at_1 = diag.root_node_id == gt.root_node_id
    result.acc_at_3 = gt.root_node_id in diag.top(3)
    result.component_acc = diag.component_type == gt.component_type
    if rec is None:
        result.op_gold, result.path_gold = gt.fix.operation.value, gt.fix.target_path
        result.op_acc = result.path_acc = result.path_partial_acc = result.e2e_acc = False
        result.recovered = False if not result.acc_at_1 else None
        return
    result.op_pred, result.op_gold = rec.operation.value, gt.fix.operation.value
    result.op_acc = rec.operation == gt.fix.operation
    result.path_pred, result.path_gold = rec.target_path, gt.fix.target_path
    result.path_acc = rec.target_path == gt.fix.target_path
    result.path_partial_acc = rec.target_path is not None and (
        PurePosixPath(rec.target_path).parent == PurePosixPath(gt.fix.target_path).parent
    )
    result.recovered = (result.op_acc and result.path_acc) if not result.acc_at_1 else None
    result.calls = rec.calls
    result.e2e_acc = detected and result.acc_at_1 and result.op_acc


def fix_effective(trace: SimTrace, ws: Workspace, rec: Recommendation) -> bool:
    """Would the session go right on the fixed workspace? Checked on the content, per component."""
    gt = trace.ground_truth
    if gt.fault is None or rec.operation == Operation.NO_ACTION or rec.target_path is None:
        return False
    fixed = ws.with_changes({rec.target_path: rec.new_text})
    fault = gt.fault
    if fault.category == FaultCategory.SYSTEM_PROMPT_GAP:
        prompt_path = fixed.system_prompt_path  # system_prompt.md, or the layout's prompt file
        prompt = fixed.read(prompt_path) if fixed.exists(prompt_path) else ""
        return coverage(term_set(fault.correct_text), term_set(prompt)) >= 0.5
    if fault.category in (FaultCategory.SKILL_FILE_STALE, FaultCategory.TOOL_PROMPT_ERROR):
        path = fault.faulty_path or ""
        text = fixed.read(path) if fixed.exists(path) else ""
        return contains(text, fault.correct_text) and not contains(text, fault.faulty_text)
    question = next(
        n.content for n in trace.conversation.nodes if n.type.value == "user" and n.turn == fault.fault_turn
    )
    hits = fixed.search_kb(question.rstrip("?"), k=1)
    return bool(hits) and contains(hits[0].content, fault.correct_text)


# --- aggregation ------------------------------------------------------------------------------


def _prop(
    results: Sequence[TraceResult], key: str, seed: int, *, ci: bool = True
) -> tuple[float | None, Any, int]:
    vals = [getattr(r, key) for r in results if getattr(r, key) is not None]
    if not vals:
        return None, None, 0
    nums = [1.0 if v else 0.0 for v in vals]
    return round(sum(nums) / len(nums), 4), bootstrap_ci(nums, B=B, seed=seed) if ci else None, len(nums)


def _detector(results: Sequence[TraceResult], seed: int) -> dict[str, Any]:
    truth = np.array([r.dissatisfied for r in results], dtype=bool)
    flagged = np.array([r.detected for r in results], dtype=bool)

    def prf(t: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tp = (t & f).sum(axis=-1)
        fp = (~t & f).sum(axis=-1)
        fn = (t & ~f).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0)
            rc = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 0.0)
            f1 = np.where(p + rc > 0, 2 * p * rc / np.where(p + rc > 0, p + rc, 1), 0.0)
        return p, rc, f1

    point = prf(truth, flagged)
    out: dict[str, Any] = {
        name: round(float(v), 4) for name, v in zip(("precision", "recall", "f1"), point, strict=True)
    }
    if len(results):
        idx = resample_indices(len(results), B=B, seed=seed)
        for name, samples in zip(("precision", "recall", "f1"), prf(truth[idx], flagged[idx]), strict=True):
            out[f"{name}_ci"] = percentile_interval(samples)
    else:
        out.update(precision_ci=None, recall_ci=None, f1_ci=None)
    out["n"] = len(results)
    out["false_positives"] = int((~truth & flagged).sum())
    out["missed"] = [r.trace_id for r in results if r.dissatisfied and not r.detected]
    return out


def summarize(results: Sequence[TraceResult], seed: int = 0) -> dict[str, Any]:
    """The metrics of one set of traces: every proportion with ``<name>_ci`` beside it, and ``n``."""
    dis = [r for r in results if r.dissatisfied]
    out: dict[str, Any] = {
        "n": len(results),
        "n_dissatisfied": len(dis),
        "n_control": len(results) - len(dis),
    }
    for key in PROPORTIONS:
        value, ci, _ = _prop(dis, key, seed)
        out[key], out[f"{key}_ci"] = value, ci
    wrong = [r for r in dis if r.recovered is not None]
    value, ci, n = _prop(wrong, "recovered", seed)
    out["recovery_rate"], out["recovery_rate_ci"], out["recovery_n"] = value, ci, n
    calls = [float(r.calls) for r in dis]
    out["calls_per_trace"] = round(sum(calls) / len(calls), 3) if calls else None
    out["calls_per_trace_ci"] = bootstrap_ci(calls, B=B, seed=seed)
    out["llm_errors"] = sum(len(r.llm_errors) for r in results)
    llm_calls = sum(r.llm_calls for r in results)
    out["llm_calls"] = llm_calls
    out["llm_seconds_per_call"] = (
        round(sum(r.llm_seconds for r in results) / llm_calls, 3) if llm_calls else None
    )
    out["detector"] = _detector(results, seed)
    out["ablations"] = _ablations(dis, seed)
    out["by_category"] = {
        cat: {
            k: _prop([r for r in dis if r.category == cat], k, seed)[0]
            for k in ("acc_at_1", "op_acc", "path_acc", "e2e_acc")
        }
        | {"n": sum(1 for r in dis if r.category == cat)}
        for cat in sorted({r.category for r in dis if r.category})
    }
    out["by_tier"] = {
        str(t): {
            k: _prop([r for r in dis if r.tier == t], k, seed, ci=False)[0] for k in ("acc_at_1", "e2e_acc")
        }
        | {"n": sum(1 for r in dis if r.tier == t)}
        for t in sorted({r.tier for r in dis})
    }
    return out


def _ablations(dis: Sequence[TraceResult], seed: int) -> dict[str, Any]:
    def block(keys: dict[str, str], calls: str | None = None) -> dict[str, Any]:
        b: dict[str, Any] = {}
        for out_key, attr in keys.items():
            value, ci, _ = _prop(dis, attr, seed)
            b[out_key], b[f"{out_key}_ci"] = value, ci
        if calls:
            vals = [float(getattr(r, calls)) for r in dis]
            b["calls_per_trace"] = round(sum(vals) / len(vals), 3) if vals else None
        return b

    holistic = block({"acc_at_1": "acc_at_1", "acc_at_3": "acc_at_3", "e2e_acc": "e2e_acc"})
    holistic["calls_per_trace"] = 1.0 if dis else None
    return {
        "root_cause": {
            "holistic": holistic,
            "iterative": block(
                {
                    "acc_at_1": "iterative_acc_at_1",
                    "acc_at_3": "iterative_acc_at_3",
                    "e2e_acc": "iterative_e2e_acc",
                },
                "iterative_calls",
            ),
        },
        "recommender": {
            "exploration": block({"op_acc": "op_acc", "path_acc": "path_acc", "e2e_acc": "e2e_acc"}, "calls"),
            "passive": block(
                {"op_acc": "passive_op_acc", "path_acc": "passive_path_acc", "e2e_acc": "passive_e2e_acc"}
            )
            | {"calls_per_trace": 0.0 if dis else None},
        },
    }


def run_context_bench(
    domains: Sequence[str] | None = None,
    *,
    primary: str | None = None,
    seed: int = 0,
    n_dissatisfied: int = 60,
    n_control: int = 15,
    include_traces: bool = False,
    model: BaseChatModel | None = None,
    model_name: str | None = None,
    llm_stages: Sequence[str] = LLM_STAGES,
) -> dict[str, Any]:
    """Generate, verify and evaluate ``domains`` (default: every shipped domain); with ``model``,
    the LLM forms of ``llm_stages`` (``mode`` in the report names the model).

    The top-level metrics are those of ``primary`` (default: the first domain, i.e. the default
    domain ``finance``), or pooled over every domain when ``primary="all"``; ``domains`` holds each
    domain's metrics and ``pooled`` the pooled ones.
    """
    names = list(domains) if domains else domain_names()
    primary = primary or names[0]
    if primary != "all" and primary not in names:
        raise ValueError(f"primary domain {primary!r} is not among the evaluated domains {names}")
    benches = (
        generate_benchmark(name, seed=seed, n_dissatisfied=n_dissatisfied, n_control=n_control)
        for name in names
    )
    return score_benchmarks(
        benches,
        primary=primary,
        seed=seed,
        include_traces=include_traces,
        model=model,
        model_name=model_name,
        llm_stages=llm_stages,
    )


def verified(bench: Benchmark, seed: int) -> VerificationReport:
    """``bench``'s verification report; BenchmarkVerificationError (its first failures) when it fails."""
    report = verify_benchmark(bench)
    if not report.ok:
        failed = {k: v.failures[:3] for k, v in report.checks.items() if v.failed}
        raise BenchmarkVerificationError(
            f"benchmark {bench.domain!r} (seed {seed}) fails verification: {failed}"
        )
    return report


def score_benchmarks(
    benches: Iterable[Benchmark],
    *,
    primary: str,
    seed: int = 0,
    include_traces: bool = False,
    model: BaseChatModel | None = None,
    model_name: str | None = None,
    llm_stages: Sequence[str] = LLM_STAGES,
    verify: bool = True,
) -> dict[str, Any]:
    """Verify and evaluate generated benchmarks (built-in domains or kits, see
    :mod:`benchmarks.context.kit`); the report of :func:`run_context_bench`. ``verify=False``:
    the caller verified them before changing their sessions (:mod:`benchmarks.context.recorded`)."""
    unknown = sorted(set(llm_stages) - set(LLM_STAGES))
    if unknown or not llm_stages:
        raise ValueError(f"LLM stages must be some of {', '.join(LLM_STAGES)}; got {list(llm_stages)}")
    per_domain: dict[str, Any] = {}
    pooled: list[TraceResult] = []
    verification: dict[str, Any] = {}
    for bench in benches:
        name = bench.domain
        if verify:
            report = verified(bench, seed)
            verification[name] = {k: v.model_dump() for k, v in report.checks.items()}
        results = [evaluate_trace(bench, t, model, llm_stages) for t in bench.traces]
        pooled += results
        per_domain[name] = summarize(results, seed)
        if include_traces:
            per_domain[name]["traces"] = [r.model_dump() for r in results]
    pooled_metrics = summarize(pooled, seed)
    out = dict(
        pooled_metrics
        if primary == "all"
        else {k: v for k, v in per_domain[primary].items() if k != "traces"}
    )
    out.update(
        {
            "domain": primary,
            "seed": seed,
            "bootstrap": {"B": B, "seed": seed, "interval": "percentile 95%"},
            "domains": per_domain,
            "pooled": pooled_metrics,
            "verification": verification,
            "mode": "offline" if model is None else f"llm:{model_name or type(model).__name__}",
        }
    )
    if model is not None:
        out["llm_stages"] = [stage for stage in LLM_STAGES if stage in llm_stages]
    return out


# --- output -----------------------------------------------------------------------------------

_TABLE = (
    ("detector F1", lambda m: m["detector"]["f1"], lambda m: m["detector"]["f1_ci"]),
    ("detector precision", lambda m: m["detector"]["precision"], lambda m: m["detector"]["precision_ci"]),
    ("detector recall", lambda m: m["detector"]["recall"], lambda m: m["detector"]["recall_ci"]),
    ("root cause Acc@1", lambda m: m["acc_at_1"], lambda m: m["acc_at_1_ci"]),
    ("root cause Acc@3", lambda m: m["acc_at_3"], lambda m: m["acc_at_3_ci"]),
    ("component type acc", lambda m: m["component_acc"], lambda m: m["component_acc_ci"]),
    ("operation acc", lambda m: m["op_acc"], lambda m: m["op_acc_ci"]),
    ("path acc (exact)", lambda m: m["path_acc"], lambda m: m["path_acc_ci"]),
    ("path acc (partial)", lambda m: m["path_partial_acc"], lambda m: m["path_partial_acc_ci"]),
    ("recovery rate", lambda m: m["recovery_rate"], lambda m: m["recovery_rate_ci"]),
    ("fix effectiveness", lambda m: m["fix_effectiveness"], lambda m: m["fix_effectiveness_ci"]),
    ("end-to-end acc", lambda m: m["e2e_acc"], lambda m: m["e2e_acc_ci"]),
    ("calls per trace", lambda m: m["calls_per_trace"], lambda m: m["calls_per_trace_ci"]),
    (
        "Acc@1 iterative (abl.)",
        lambda m: m["ablations"]["root_cause"]["iterative"]["acc_at_1"],
        lambda m: m["ablations"]["root_cause"]["iterative"]["acc_at_1_ci"],
    ),
    (
        "e2e passive (abl.)",
        lambda m: m["ablations"]["recommender"]["passive"]["e2e_acc"],
        lambda m: m["ablations"]["recommender"]["passive"]["e2e_acc_ci"],
    ),
)


def _cell(value: Any, ci: Any) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else text


def markdown_table(results: dict[str, Any]) -> str:
    """Metrics per domain (and pooled) as a markdown table."""
    cols = list(results["domains"])
    if len(cols) > 1:
        cols.append("pooled")
    header = "| metric | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols)
    rows = []
    for label, val, ci in _TABLE:
        cells = []
        for c in cols:
            m = results["pooled"] if c == "pooled" else results["domains"][c]
            cells.append(_cell(val(m), ci(m)))
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    ns = " | ".join(str((results["pooled"] if c == "pooled" else results["domains"][c])["n"]) for c in cols)
    rows.append(f"| traces (n) | {ns} |")
    return header + "\n" + "\n".join(rows)


def register_bench(bench_subparsers: Any) -> argparse.ArgumentParser:
    """Add ``context`` to the ``causal-mw bench`` subcommands."""
    p = bench_subparsers.add_parser(
        "context",
        help="context debugging on the simulation benchmark",
        description="Generate the seeded simulation benchmark, verify it, run detect -> diagnose -> recommend, report metrics.",
    )
    p.add_argument(
        "--domain",
        default=None,
        help="the domain whose metrics are the top-level keys (default: finance), or 'all' for pooled ones",
    )
    p.add_argument(
        "--only", action="store_true", help="evaluate only --domain (default: every shipped domain)"
    )
    p.add_argument("--seed", type=int, default=0, help="generator and bootstrap seed (default 0)")
    p.add_argument(
        "--n-dissatisfied", type=int, default=60, help="dissatisfied traces per domain (default 60)"
    )
    p.add_argument("--n-control", type=int, default=15, help="control traces per domain (default 15)")
    p.add_argument("--out", help="write the results JSON here")
    p.add_argument("--traces", action="store_true", help="include per-trace results in the JSON")
    p.add_argument("--list-domains", action="store_true", help="print the shipped domain names, one per line")
    p.add_argument(
        "--kit",
        action="append",
        metavar="FILE",
        help="score a domain kit (YAML: your workspace and session templates; see docs/context.md) "
        "instead of the shipped domains; repeatable",
    )
    p.add_argument(
        "--judge",
        metavar="SPEC",
        help="run the LLM forms (detector, holistic root cause, recommender) with this chat model: "
        "local[:NAME], gguf:PATH, anthropic[:MODEL] or module:attr; unreadable or invalid replies are "
        "counted in llm_errors",
    )
    p.add_argument(
        "--llm-stages",
        default=",".join(LLM_STAGES),
        metavar="STAGES",
        help="with --judge: the comma-separated stages that use the model, the others offline "
        f"(default {','.join(LLM_STAGES)}; e.g. recommender alone, on the offline diagnosis)",
    )
    p.add_argument(
        "--recorded",
        action="store_true",
        help="play every session with a real create_agent agent, record it with instrument() and read "
        "it back from the span store before scoring (the path a user's own agent takes); offline forms",
    )
    p.add_argument("--json", action="store_true", help="print the results JSON instead of the table")
    p.set_defaults(func=_cmd)
    return p


def _cmd(args: argparse.Namespace) -> int:
    if args.list_domains:
        for name in domain_names():
            print(name)
        return 0
    stages = [s.strip() for s in args.llm_stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(LLM_STAGES))
    if unknown or not stages:
        raise ValueError(f"--llm-stages takes some of {', '.join(LLM_STAGES)}; got {args.llm_stages!r}")
    if args.llm_stages != ",".join(LLM_STAGES) and not args.judge:
        raise ValueError("--llm-stages chooses the stages that use the --judge model; add --judge SPEC")
    model = None
    if args.judge:
        from causal_middleware.cli.live_agent import load_chat_model

        model = load_chat_model(args.judge, "judge")
    if args.recorded and model is not None:
        raise ValueError("--recorded scores the offline forms; drop --judge")
    if args.kit:
        from benchmarks.context.kit import run_kit_bench

        if model is not None:
            raise ValueError("--judge runs on the shipped domains; drop --kit")
        if args.domain is not None or args.only:
            raise ValueError("--kit scores the kit's own sessions; drop --domain / --only")
        results = run_kit_bench(
            args.kit,
            seed=args.seed,
            n_dissatisfied=args.n_dissatisfied,
            n_control=args.n_control,
            include_traces=args.traces,
            recorded=args.recorded,
        )
        _emit(args, results)
        return 0
    names = domain_names()
    if args.domain not in (None, "all", *names):
        raise ValueError(f"unknown domain {args.domain!r}; shipped domains: {', '.join(names)}")
    primary = args.domain or names[0]
    domains = [primary] if args.only and primary != "all" else names
    if args.recorded:
        from benchmarks.context.recorded import score_recorded

        benches = [
            generate_benchmark(
                n, seed=args.seed, n_dissatisfied=args.n_dissatisfied, n_control=args.n_control
            )
            for n in domains
        ]
        _emit(args, score_recorded(benches, primary=primary, seed=args.seed, include_traces=args.traces))
        return 0
    results = run_context_bench(
        domains,
        primary=primary,
        seed=args.seed,
        n_dissatisfied=args.n_dissatisfied,
        n_control=args.n_control,
        include_traces=args.traces,
        model=model,
        model_name=args.judge,
        llm_stages=stages,
    )
    _emit(args, results)
    return 0


def _emit(args: argparse.Namespace, results: dict[str, Any]) -> None:
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    if args.json:
        json.dump(results, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(markdown_table(results))
        for name, info in results.get("recorded", {}).items():
            print(
                f"\nrecorded ({name}): {info['sessions']} sessions played by a create_agent agent, "
                f"{info['runs']} runs, {info['spans']} spans, {info['shape_mismatches']} not shaped as simulated"
            )
        if args.out:
            print(f"\nresults written to {args.out}")
