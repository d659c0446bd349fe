"""Contrastive pairs from validated repairs: (wrong step, corrected step) as training data.

Two JSONL formats, one object per line:

* ``dpo`` - TRL's standard *explicit-prompt preference* format, read as is by ``DPOTrainer``:
  ``{"prompt": str, "chosen": str, "rejected": str, "metadata": {...}}``. ``prompt`` is the
  context the step saw (question and the earlier steps' outputs) plus the instruction to write
  the step's output; ``chosen`` is the repaired output, ``rejected`` the original one.
* ``reward`` - TRL's *implicit-prompt preference* format that ``RewardTrainer`` requires:
  ``{"chosen": prompt + "\\n" + chosen, "rejected": prompt + "\\n" + rejected, "metadata": {...}}``.

An output renders as itself when it is a string, else as compact JSON with sorted keys. The
``metadata`` object has the same keys on every line (``run_id``, ``step_id``, ``node``, ``hop``,
``langgraph_step``, ``crs``, ``minimality``, ``source``, ``fork_run_id``, ``steps`` (1, or 2 for
both lines of a two-step repair, its first change first), ``validation`` =
``{"passed", "flips", "n_runs", "only_change", "llm_ran", "llm_retained", "llm_confidence"}``), so
``datasets.load_dataset("json", data_files=...)`` infers one schema.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, Literal

from causal_middleware.counterfactual.llm import render_trace
from causal_middleware.counterfactual.render import to_jsonable
from causal_middleware.repair.models import ContrastivePair, Repair, RepairResult, RepairStep
from causal_middleware.spans.model import Trajectory

PairFormat = Literal["dpo", "reward"]
FORMATS: tuple[PairFormat, ...] = ("dpo", "reward")


def render_step_output(value: Any) -> str:
    """A step output as pair text: itself when a string, else compact sorted-key JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=False)


def step_prompt(trajectory: Trajectory, repair: Repair | RepairStep) -> str:
    """The context the repaired step saw, and the instruction to write its output."""
    context = render_trace(trajectory, upto=repair.step_id, limit=2000)
    where = f"hop {repair.hop}" if repair.hop is not None else "outside any hop"
    return f"{context}\n\nYou are the agent's {repair.node!r} step ({where}). Write this step's output."


def build_pair(trajectory: Trajectory, repair: Repair) -> ContrastivePair:
    """The contrastive pair of one repair of ``trajectory``; of a two-step repair, the pair of its
    own (second) step, and ``trajectory`` is then the first change's fork."""
    expected = repair.prior[-1].fork_run_id if repair.prior else repair.run_id
    if expected != trajectory.run_id:
        raise ValueError(f"repair is for run {expected}, not {trajectory.run_id}")
    own = repair.step_minimality if repair.step_minimality is not None else repair.minimality
    return _pair(trajectory, repair, repair, minimality=own, crs=repair.crs, fork_run_id=repair.fork_run_id)


def build_prior_pair(
    trajectory: Trajectory, repair: Repair, step: RepairStep, *, crs: float
) -> ContrastivePair:
    """The contrastive pair of a two-step repair's first change ``step`` (a step of ``trajectory``;
    ``crs``: that step's score in the single-step search, 0 since it did not flip the run alone)."""
    if step.run_id != trajectory.run_id:
        raise ValueError(f"the change is for run {step.run_id}, not {trajectory.run_id}")
    return _pair(trajectory, step, repair, minimality=step.minimality, crs=crs, fork_run_id=step.fork_run_id)


def _pair(
    trajectory: Trajectory,
    step: Repair | RepairStep,
    repair: Repair,
    *,
    minimality: float,
    crs: float,
    fork_run_id: str | None,
) -> ContrastivePair:
    llm = repair.llm_validation
    return ContrastivePair(
        prompt=step_prompt(trajectory, step),
        chosen=render_step_output(step.repaired),
        rejected=render_step_output(step.original),
        metadata={
            "run_id": repair.run_id,
            "step_id": step.step_id,
            "node": step.node,
            "hop": step.hop,
            "langgraph_step": step.langgraph_step,
            "crs": crs,
            "minimality": minimality,
            "source": step.source,
            "fork_run_id": fork_run_id,
            "steps": len(repair.prior) + 1,
            "validation": {
                "passed": repair.validation.passed,
                "flips": repair.validation.flips,
                "n_runs": repair.validation.n_runs,
                "only_change": repair.validation.only_change,
                "llm_ran": llm.ran,
                "llm_retained": llm.retained,
                "llm_confidence": llm.confidence,
            },
        },
    )


def pair_line(pair: ContrastivePair, fmt: PairFormat = "dpo") -> dict[str, Any]:
    """One JSONL object of ``pair`` in format ``fmt``."""
    if fmt == "dpo":
        return {
            "prompt": pair.prompt,
            "chosen": pair.chosen,
            "rejected": pair.rejected,
            "metadata": pair.metadata,
        }
    if fmt == "reward":
        return {
            "chosen": f"{pair.prompt}\n{pair.chosen}",
            "rejected": f"{pair.prompt}\n{pair.rejected}",
            "metadata": pair.metadata,
        }
    raise ValueError(f"unknown pair format {fmt!r}; expected one of {FORMATS}")


def write_pairs(
    pairs: Iterable[ContrastivePair], path: str | os.PathLike[str], fmt: PairFormat = "dpo"
) -> int:
    """Write ``pairs`` as JSONL to ``path``; returns how many lines were written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown pair format {fmt!r}; expected one of {FORMATS}")
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for pair in pairs:
            fh.write(json.dumps(pair_line(pair, fmt), ensure_ascii=False) + "\n")
            count += 1
    return count


def pairs_from_records(
    records: Iterable[dict[str, Any]], *, validated_only: bool = True
) -> list[ContrastivePair]:
    """The pairs kept in ``repair`` records (payloads of :class:`RepairResult`), newest per run.

    ``validated_only`` (default) keeps repairs whose offline validation passed and whose LLM
    validation, when it ran, retained them.
    """
    latest: dict[str, RepairResult] = {}
    for payload in records:
        result = RepairResult.model_validate(_payload(payload))
        latest[result.run_id] = result
    pairs: list[ContrastivePair] = []
    for result in latest.values():
        if result.pair is None or result.repair is None:
            continue
        if validated_only and not is_validated(result.repair):
            continue
        pairs.extend([*result.prior_pairs, result.pair])
    return pairs


def is_validated(repair: Repair) -> bool:
    """Offline validation passed, and the LLM validation retained it when it ran."""
    llm = repair.llm_validation
    return repair.validation.passed and (not llm.ran or bool(llm.retained))


def export_pairs(
    store: Any, path: str | os.PathLike[str], *, fmt: PairFormat = "dpo", validated_only: bool = True
) -> int:
    """Write the pairs of every ``repair`` record in ``store`` to ``path``; returns the line count."""
    return write_pairs(
        pairs_from_records(store.get_records("repair"), validated_only=validated_only), path, fmt
    )


def _payload(record: dict[str, Any]) -> dict[str, Any]:
    # stores may wrap the payload with bookkeeping (id, kind, created_at); accept both shapes
    if "payload" in record and isinstance(record["payload"], dict) and "crs" not in record:
        return record["payload"]
    return {k: v for k, v in record.items() if k in RepairResult.model_fields}
