"""``--executor local|process|ray`` and ``--address`` for the sweeping commands (``inject``,
``bench fp``, ``bench repair``), and the reference agent as an environment spec a worker rebuilds.

The local executor is a thread pool (``--workers`` threads). ``process`` runs the questions
in ``--workers`` processes of this machine (no extra dependency; the threads share one core under
the GIL). ``auto`` (the default of ``bench fp`` and ``bench repair``) picks ``process`` when the run
can use it (see :func:`resolve_executor`) and ``local`` otherwise; results are the same either way. ``ray`` runs each question as a Ray task: on a local cluster with this machine's cores,
or on the cluster at ``--address``.
Every worker process builds the reference agent once from a :class:`ReferenceEnvSpec` (same
dataset, seed, retriever, k and budget as the driver's), so results equal the local executor's.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from causal_middleware.faults.executor import EXECUTORS, Executor, ProcessExecutor, ThreadExecutor

__all__ = [
    "AUTO_MIN_ITEMS",
    "ReferenceEnvSpec",
    "add_executor_args",
    "check_executor_args",
    "make_executor",
    "resolve_executor",
]

#: below this many work items ``auto`` stays on threads: spawning each worker (a fresh interpreter
#: that imports LangGraph and rebuilds the agent) costs a few seconds, more than a small sweep saves
AUTO_MIN_ITEMS = 20


@dataclass(frozen=True)
class ReferenceEnvSpec:
    """The reference agent over a generated or loaded dataset, each run kept in memory."""

    dataset: str
    n: int
    seed: int
    hops: int | None = None
    retriever: str = "bm25"
    k: int = 5
    budget: int = 4
    workers: int = 2
    temperature: float = 0.0

    def build(self) -> Any:
        from benchmarks.cli.bench import sweep_env_factory
        from benchmarks.cli.inject import load_dataset
        from causal_middleware.store.memory import InMemorySpanStore

        dataset = load_dataset(self.dataset, self.n, seed=self.seed, hops=self.hops)
        build = sweep_env_factory(
            retriever=self.retriever,
            k=self.k,
            budget=self.budget,
            seed=self.seed,
            workers=self.workers,
            temperature=self.temperature,
        )
        return build(dataset, InMemorySpanStore())


def add_executor_args(p: argparse.ArgumentParser, *, default: str = "local") -> None:
    p.add_argument(
        "--executor",
        choices=(*EXECUTORS, "auto"),
        default=default,
        help="where the questions run: local threads (--workers), local processes (--workers), Ray "
        "tasks, or auto: processes when the run allows them and there are at least two cores, "
        f"two workers and {AUTO_MIN_ITEMS} questions, else threads (default {default})",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: an existing cluster ('auto', 'ray://head:10001'); "
        "default: a local cluster on this machine's cores",
    )


def check_executor_args(args: argparse.Namespace) -> None:
    if getattr(args, "address", None) and args.executor != "ray":
        raise ValueError("--address applies to --executor ray only")


def resolve_executor(name: str, *, workers: int, n_items: int, local_only: bool) -> str:
    """The executor ``name`` stands for: itself, or for ``auto`` ``process`` when the run can use
    it (``local_only`` false: none of the options that need one process is set) and it pays
    (at least two cores, ``workers`` >= 2 and ``n_items`` >= :data:`AUTO_MIN_ITEMS`), else ``local``."""
    if name != "auto":
        return name
    cores = os.cpu_count() or 1
    if local_only or workers < 2 or cores < 2 or n_items < AUTO_MIN_ITEMS:
        return "local"
    return "process"


def make_executor(name: str, *, workers: int = 2, address: str | None = None) -> Executor:
    """``local``: ``workers`` threads; ``process``: ``workers`` processes; ``ray``: a
    :class:`RayExecutor` (needs the ``[ray]`` extra)."""
    if name in ("local", "process"):
        if address:
            raise ValueError("--address applies to --executor ray only")
        return ThreadExecutor(workers) if name == "local" else ProcessExecutor(workers)
    if name == "ray":
        from causal_middleware.integrations.ray import RayExecutor

        return RayExecutor(address=address)
    raise ValueError(f"unknown executor {name!r}; expected one of {list(EXECUTORS)}")


def close_executor(executor: Executor) -> None:
    shutdown = getattr(executor, "shutdown", None)
    if shutdown is not None:
        shutdown()
