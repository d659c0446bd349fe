"""What must be equal between executors: everything but timings, run ids and the executor's name
(asked for and resolved)."""

from __future__ import annotations

import copy
from typing import Any

from causal_middleware.faults.sweep import latest_records
from causal_middleware.store.base import SpanStore


def fp_comparable(results: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(results)
    out.pop("timing")
    out["config"].pop("executor", None)
    out["config"].pop("executor_requested", None)
    for key in ("elapsed_s", "cpu_s"):
        out["sweep"].pop(key)
    for trace in out["traces"]:
        trace.pop("run_id")
    return out


def repair_comparable(results: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(results)
    out.pop("elapsed_s")
    out["config"].pop("executor", None)
    out["config"].pop("executor_requested", None)
    for row in out["runs"]:
        row.pop("run_id")
        row.pop("elapsed_s")
    return out


# fresh per process: run ids and LangGraph checkpoint ids
RUN_ID_KEYS = {"run_id", "base_run_id", "fork_run_id", "parent_run_id", "replay.branch_checkpoint_id"}


def without_run_ids(value: Any) -> Any:
    """``value`` with every run-id field dropped, at any depth (run ids are fresh per process)."""
    if isinstance(value, dict):
        return {k: without_run_ids(v) for k, v in value.items() if k not in RUN_ID_KEYS}
    if isinstance(value, list):
        return [without_run_ids(v) for v in value]
    return value


def unit_records(store: SpanStore) -> dict[str, Any]:
    """Every unit's latest record, without run ids and timings, plus its stored fork's answer,
    outcome and labels (the fork's lineage must name the unit's base run)."""
    out = {}
    for key, record in latest_records(store).items():
        row = record.model_dump(mode="json", exclude={"elapsed_s"})
        if record.fork_run_id is not None:
            fork = store.get_trajectory(record.fork_run_id)
            assert fork.lineage is not None and fork.lineage.parent_run_id == record.base_run_id
            assert store.get_trajectory(record.base_run_id or "").answer == record.base_answer
            row["stored_fork"] = {"answer": fork.answer, "outcome": str(fork.outcome), "labels": fork.labels}
        out[key] = without_run_ids(row)
    return out
