"""``causal-mw worker --store URL --graph file.py:graph``: a repair worker over the store's durable
queue (runs enqueued by ``instrument(..., on_failure="enqueue")``).

Runs anywhere that reaches the database and the agent's checkpointer. For each claimed run it
loads the graph like ``causal-mw repair --graph`` does (the interventions derived from the trace
and the graph's own retrievers and tools), judges the run by its recorded outcome, repairs a
failed one on forks and commits the ``diagnosis`` and ``repair`` records with the job (fenced by
its lease: exactly once across workers and crashes). ``--once`` stops when no job is claimable,
``--max-runs N`` after N jobs; otherwise it polls until interrupted.

``--json`` prints the worker's stats: ``owner``, ``claimed``, ``repaired``, ``not_repaired``,
``not_failed``, ``skipped``, ``errors``, ``dead``, ``lost`` and ``jobs`` (``run_id``, ``attempt``,
``outcome``, ``state``, ``error``, ``seconds``), then ``queue``: jobs per state.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_state_key_arg, add_store_arg, print_json
from causal_middleware.cli.live_agent import live_agent, parse_state_keys


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "worker",
        help="repair the runs queued in a shared (postgresql://) store, from any machine",
        description=(
            "Claims queued runs from the store's durable repair queue (FOR UPDATE SKIP LOCKED, a lease "
            "renewed while working, retries with a cap, a dead-letter state), repairs failed ones on forks "
            "of --graph and commits the result once, fenced by the lease."
        ),
    )
    p.add_argument("--graph", required=True, metavar="SPEC", help="the agent graph (path/to/file.py:graph)")
    p.add_argument("--once", action="store_true", help="stop when no job is claimable")
    p.add_argument("--max-runs", type=int, metavar="N", help="stop after N jobs")
    p.add_argument(
        "--lease", type=float, default=60.0, metavar="S", help="lease (visibility timeout), s (60)"
    )
    p.add_argument(
        "--max-attempts", type=int, default=3, metavar="N", help="claims before dead-lettering (3)"
    )
    p.add_argument("--backoff", type=float, default=5.0, metavar="S", help="wait before a retry, s (5)")
    p.add_argument("--poll", type=float, default=1.0, metavar="S", help="poll interval when idle, s (1)")
    p.add_argument("--k", type=int, default=3, help="proposals per candidate step (default 3)")
    p.add_argument(
        "--validate",
        type=int,
        nargs=2,
        default=(2, 3),
        metavar=("M", "N"),
        help="the repair must flip the outcome in M of N re-runs (default 2 3)",
    )
    add_state_key_arg(p)
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_worker)


def _check(args: argparse.Namespace) -> None:
    if args.max_runs is not None and args.max_runs < 1:
        raise ValueError(f"--max-runs must be at least 1, got {args.max_runs}")
    for name in ("lease", "poll"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name} must be a positive number of seconds, got {getattr(args, name)}")
    if args.backoff < 0:
        raise ValueError(f"--backoff must be >= 0 seconds, got {args.backoff}")
    if args.max_attempts < 1:
        raise ValueError(f"--max-attempts must be at least 1, got {args.max_attempts}")
    m, n = args.validate
    if not 1 <= m <= n:
        raise ValueError(f"--validate M N needs 1 <= M <= N, got {m} {n}")


def _worker(args: argparse.Namespace) -> int:
    from causal_middleware.counterfactual.trace_proposer import TraceProposer
    from causal_middleware.counterfactual.verifiers import ReferenceVerifier
    from causal_middleware.repair.models import RepairResult
    from causal_middleware.repair.service import RepairConfig, repair_run
    from causal_middleware.repair.worker import RepairWorker
    from causal_middleware.spans.model import Trajectory
    from causal_middleware.store.open import open_store
    from causal_middleware.store.queue import durable_queue_of

    _check(args)
    state_keys = parse_state_keys(args.state_key)
    m, n = args.validate
    config = RepairConfig(k=args.k, validation_runs=n, validation_min_flips=m)
    store = open_store(args.store, create=False)
    with store:
        if durable_queue_of(store) is None:
            raise ValueError(
                f"--store {args.store} has no durable repair queue: workers need a postgresql:// store "
                "(SQLite stores repair in-process with repair_on_failure())"
            )

        def repair(trajectory: Trajectory, feedback: str | None) -> RepairResult:
            with live_agent(args.graph, store, trajectory, state_keys=state_keys) as agent:
                proposer = TraceProposer(
                    agent.index,
                    indexes=agent.indexes,
                    rerun_tool=agent.rerun_tool,
                    state_keys=agent.state_keys,
                )
                return repair_run(
                    trajectory,
                    backend=agent.backend,
                    proposer=proposer,
                    verifier=ReferenceVerifier(),
                    config=config,
                    write=False,  # the worker commits the records with the job, fenced by its lease
                    feedback=feedback,
                )

        worker = RepairWorker(
            store, repair, lease_s=args.lease, max_attempts=args.max_attempts, backoff_s=args.backoff
        )
        try:
            stats = worker.run(once=args.once, max_runs=args.max_runs, poll_s=args.poll)
        except KeyboardInterrupt:
            stats = worker.stats
        queue = durable_queue_of(store)
        counts: dict[str, int] = {}
        for entry in queue.queue_entries() if queue is not None else []:
            counts[entry.state] = counts.get(entry.state, 0) + 1
    if args.json:
        print_json({**stats.model_dump(mode="json"), "queue": counts})
    else:
        for job in stats.jobs:
            note = f" ({job.error})" if job.error else ""
            print(f"{job.run_id} attempt {job.attempt}: {job.outcome} -> {job.state}{note}", file=sys.stdout)
        print(
            f"worker {stats.owner}: {stats.claimed} claimed, {stats.repaired} repaired, "
            f"{stats.not_repaired} not repaired, {stats.not_failed} not failed, {stats.errors} errors "
            f"({stats.dead} dead), {stats.lost} leases lost; queue {counts}"
        )
    return 0
