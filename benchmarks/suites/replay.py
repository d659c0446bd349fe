"""Replay benchmark: a fork plus its suffix against a full re-run of the same run, per fork hop.

For each recorded run and each of its hops ``h``, the benchmark forks the run before hop ``h``
with the step's own recorded output put back (an identity intervention, so both sides do the
same work from there on) and compares it with running the agent again from the input:

* node executions: the fork's executed node steps (own, not frozen) over the re-run's node steps;
* wall time: the whole ``fork`` call (locating the checkpoint, reading the branch, writing the
  fork, running the suffix, storing and stitching the trajectory) over the whole re-run.

Ratios below 1 mean forking is cheaper. The agent and the fork backend are passed in (the core
never builds a LangGraph agent itself); ``benchmarks.suites.replay_bench``
wires the reference agent, and ``causal-mw bench replay`` runs that.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from causal_middleware.protocols import ForkBackend
from causal_middleware.replay.request import SuffixMode
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.stitch import at_root, executed_node_steps

__all__ = ["format_replay_table", "run_replay_bench"]

MODES: tuple[SuffixMode, ...] = ("regenerate", "frozen", "replay")


def _node_count(trajectory: Trajectory) -> int:
    return sum(1 for s in trajectory.steps if s.kind == "node" and at_root(s))


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def run_replay_bench(
    run_agent: Callable[[int], str],
    backend: ForkBackend,
    get_trajectory: Callable[[str], Trajectory],
    *,
    n_runs: int = 5,
    modes: Sequence[SuffixMode] = ("regenerate",),
    max_hops: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure forks against re-runs; returns a JSON-ready dict.

    ``run_agent(i)`` runs the agent on input ``i`` from scratch and returns the run id;
    ``backend`` forks runs (``Replayer``); ``get_trajectory`` reads a run (``store.get_trajectory``).
    Each input ``i < n_runs`` is run twice (the recorded run, then the timed re-run), and the
    recorded run is forked at every hop (up to ``max_hops``) in every mode of ``modes``.

    Keys: ``modes``, ``n_runs``, ``per_hop`` (one row per mode and hop: ``mode``, ``hop``, ``n``,
    ``fork_node_executions``, ``rerun_node_executions``, ``node_ratio``, ``fork_wall_s``,
    ``rerun_wall_s``, ``wall_ratio``, means over runs), ``overall`` (per mode: the same means over
    every fork) and ``runs`` (every measurement).
    """
    if n_runs < 1:
        raise ValueError(f"n_runs must be at least 1, got {n_runs}")
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"modes must be a non-empty subset of {list(MODES)}, got {list(modes)}")
    say = progress or (lambda _msg: None)
    rows: list[dict[str, Any]] = []
    for i in range(n_runs):
        run_id = run_agent(i)
        recorded = get_trajectory(run_id)
        started = time.perf_counter()
        rerun_id = run_agent(i)
        rerun_wall = time.perf_counter() - started
        rerun_nodes = _node_count(get_trajectory(rerun_id))
        hops = [h.index for h in recorded.hops if max_hops is None or h.index <= max_hops]
        say(f"run {i}: {len(hops)} hops, re-run {rerun_nodes} nodes in {rerun_wall:.3f}s")
        for mode in modes:
            for hop in hops:
                started = time.perf_counter()
                fork = backend.fork(run_id, hop=hop, mode=mode, intervention_kind="bench")
                fork_wall = time.perf_counter() - started
                fork_nodes = len(executed_node_steps(fork))
                rows.append(
                    {
                        "run": i,
                        "run_id": run_id,
                        "fork_run_id": fork.run_id,
                        "mode": mode,
                        "hop": hop,
                        "fork_node_executions": fork_nodes,
                        "rerun_node_executions": rerun_nodes,
                        "node_ratio": fork_nodes / rerun_nodes if rerun_nodes else None,
                        "fork_wall_s": fork_wall,
                        "rerun_wall_s": rerun_wall,
                        "wall_ratio": fork_wall / rerun_wall if rerun_wall > 0 else None,
                        "same_answer": fork.answer == recorded.answer,
                    }
                )
    return {
        "modes": list(modes),
        "n_runs": n_runs,
        "per_hop": _aggregate(rows, ("mode", "hop")),
        "overall": _aggregate(rows, ("mode",)),
        "runs": rows,
    }


def _aggregate(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for key, group in groups.items():
        entry: dict[str, Any] = dict(zip(keys, key, strict=True))
        entry["n"] = len(group)
        for field in (
            "fork_node_executions",
            "rerun_node_executions",
            "node_ratio",
            "fork_wall_s",
            "rerun_wall_s",
            "wall_ratio",
        ):
            entry[field] = _mean([r[field] for r in group if r[field] is not None])
        entry["same_answer_rate"] = _mean([1.0 if r["same_answer"] else 0.0 for r in group])
        out.append(entry)
    return out


def format_replay_table(report: dict[str, Any]) -> str:
    """A markdown table of ``report["per_hop"]``."""
    lines = [
        "| mode | fork hop | n | fork nodes | re-run nodes | node ratio | fork wall (s) | re-run wall (s) | wall ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["per_hop"]:
        lines.append(
            f"| {r['mode']} | {r['hop']} | {r['n']} | {r['fork_node_executions']} | {r['rerun_node_executions']} | "
            f"{r['node_ratio']} | {r['fork_wall_s']} | {r['rerun_wall_s']} | {r['wall_ratio']} |"
        )
    return "\n".join(lines)
