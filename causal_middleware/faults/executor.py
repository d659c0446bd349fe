"""Where a sweep's independent units run: an :class:`Executor` maps a function over work items.

The core ships :class:`ThreadExecutor` (a thread pool in this process, the default of every
sweep) and :class:`ProcessExecutor` (worker processes of this machine: the agent's Python work is
bound by the GIL, so threads share one core). ``causal_middleware.integrations.ray.RayExecutor``
runs each item as a Ray task; the core never imports Ray. Results always come back in the order of the items, so a sweep's records and
scores do not depend on which executor ran it.

A function handed to a process-external executor must be picklable (a module-level function or a
dataclass instance with ``__call__``, never a closure over a live agent), and so must its items
and results.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Protocol, TypeVar

__all__ = ["EXECUTORS", "Executor", "ProcessExecutor", "ThreadExecutor"]

T = TypeVar("T")
R = TypeVar("R")

#: the names the CLI's ``--executor`` accepts
EXECUTORS = ("local", "process", "ray")


class Executor(Protocol):
    """Runs ``fn`` on every item; yields the results in item order. An exception raised by ``fn``
    is raised from the iterator when its result is reached."""

    #: whether ``fn`` runs in other processes (so it must be picklable and rebuild its own state)
    remote: bool

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]: ...


def _workers(workers: int) -> int:
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return workers


class ThreadExecutor:
    """``workers`` threads of this process (the local executor)."""

    remote = False

    def __init__(self, workers: int = 2) -> None:
        self.workers = _workers(workers)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sweep") as pool:
            yield from pool.map(fn, items)

    def __repr__(self) -> str:
        return f"ThreadExecutor(workers={self.workers})"


class ProcessExecutor:
    """``workers`` processes of this machine (``remote``: ``fn`` is pickled to them and rebuilds its
    own state there, as for Ray). Processes are spawned, not forked: a fork would copy the parent's
    threads' locks (the span exporter's, SQLite's) in whatever state they were."""

    remote = True

    def __init__(self, workers: int = 2) -> None:
        self.workers = _workers(workers)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            yield from pool.map(fn, items)

    def __repr__(self) -> str:
        return f"ProcessExecutor(workers={self.workers})"
