"""What makes a re-run reproducible, and whether two re-runs of one fork agreed.

:func:`determinism_settings` reads the model ids, temperatures and seeds off a run's LLM steps
(the replayer stores them in each fork's labels under ``replay.determinism``).
:func:`compare_suffixes` compares the steps several forks executed and finds the first place
they differ; the replayer's ``check_determinism`` wraps it in a :class:`DeterminismReport`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from causal_middleware.spans.model import Trajectory
from causal_middleware.store.stitch import own_steps

__all__ = [
    "DeterminismReport",
    "DeterminismSettings",
    "SuffixDifference",
    "compare_suffixes",
    "determinism_settings",
    "suffix_signature",
]


class DeterminismSettings(BaseModel):
    """Sampling settings seen on a run's LLM calls."""

    models: list[str] = Field(default_factory=list, description="distinct model ids, in first-use order")
    providers: list[str] = Field(default_factory=list)
    temperatures: list[float | None] = Field(
        default_factory=list, description="per LLM call; None when the call did not record one"
    )
    seeds: list[int | None] = Field(default_factory=list, description="per LLM call")
    llm_calls: int = 0

    @property
    def pinned(self) -> bool:
        """True when every LLM call ran at temperature 0 or with a seed (or there were none)."""
        return all(
            (t is not None and t == 0) or s is not None
            for t, s in zip(self.temperatures, self.seeds, strict=True)
        )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def determinism_settings(trajectory: Trajectory) -> DeterminismSettings:
    """Model ids, providers, temperatures and seeds of every LLM step of ``trajectory``."""
    settings = DeterminismSettings()
    for step in trajectory.steps_of("llm"):
        params = step.invocation_parameters or {}
        model = step.model or params.get("model") or params.get("model_name")
        if model and str(model) not in settings.models:
            settings.models.append(str(model))
        if step.provider and step.provider not in settings.providers:
            settings.providers.append(step.provider)
        settings.temperatures.append(_number(params.get("temperature")))
        seed = _number(params.get("seed", params.get("random_seed")))
        settings.seeds.append(int(seed) if seed is not None else None)
        settings.llm_calls += 1
    return settings


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def suffix_signature(trajectory: Trajectory) -> list[dict[str, Any]]:
    """What a fork executed, step by step, without ids or times: the thing two re-runs must share."""
    out = []
    for step in own_steps(trajectory):
        entry: dict[str, Any] = {"kind": step.kind, "node": step.node, "langgraph_step": step.langgraph_step}
        if step.kind == "node":
            entry["output"] = _canonical(step.output)
        elif step.kind == "llm":
            entry["output"] = step.output
        elif step.kind == "retrieval":
            entry["query"] = step.query
            entry["documents"] = [d.id for d in step.documents]
        elif step.kind == "tool":
            entry["tool"] = step.tool_name
            entry["args"] = _canonical(step.args)
            entry["output"] = step.output
        elif step.kind == "decision":
            entry["choice"] = step.choice
        elif step.kind == "answer":
            entry["answer"] = step.answer
        out.append(entry)
    return out


class SuffixDifference(BaseModel):
    """The first place two re-runs of the same fork did something different."""

    position: int = Field(description="0-based index into the executed steps")
    repeat: int = Field(description="the repeat (0-based) that differed from repeat 0")
    expected: dict[str, Any] | None = Field(description="repeat 0's step there (None: it had ended)")
    actual: dict[str, Any] | None = Field(description="the differing repeat's step (None: it had ended)")


def compare_suffixes(forks: Sequence[Trajectory]) -> SuffixDifference | None:
    """The first difference between the executed suffixes of ``forks`` and the first one, or None."""
    if len(forks) < 2:
        raise ValueError(f"comparing suffixes needs at least 2 forks, got {len(forks)}")
    reference = suffix_signature(forks[0])
    for repeat, fork in enumerate(forks[1:], start=1):
        other = suffix_signature(fork)
        for position in range(max(len(reference), len(other))):
            a = reference[position] if position < len(reference) else None
            b = other[position] if position < len(other) else None
            if a != b:
                return SuffixDifference(position=position, repeat=repeat, expected=a, actual=b)
    return None


class DeterminismReport(BaseModel):
    """The result of re-running one fork several times (``Replayer.check_determinism``)."""

    run_id: str = Field(description="the run that was forked")
    fork_node: str | None = None
    fork_step: int | None = None
    fork_hop: int | None = None
    mode: str = "regenerate"
    repeats: int
    fork_run_ids: list[str]
    deterministic: bool = Field(description="True when every repeat executed the same suffix")
    answers: list[str | None] = Field(default_factory=list)
    first_difference: SuffixDifference | None = None
    settings: DeterminismSettings = Field(default_factory=DeterminismSettings)
