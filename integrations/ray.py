"""Run a sweep's independent units as Ray tasks: ``RayExecutor`` (the ``[ray]`` extra).

Each item becomes one Ray task; the function is put in the object store once per ``map`` and
every task gets a reference to it, so what the function carries (a sweep's environment spec)
travels once. The heavy state (world, index, agent) is not shipped at all: the function builds it
in each worker process on first use (:func:`causal_middleware.faults.distributed.worker_environment`).
Results are yielded in item order, as :class:`~causal_middleware.faults.executor.ThreadExecutor`
yields them; a bounded window of tasks is in flight at a time, so a failed unit or an abandoned
iterator leaves at most that window to finish, and nothing is ever cancelled.

``RayExecutor()`` starts a local cluster with this machine's cores on first use (and stops it on
:meth:`RayExecutor.shutdown`); ``RayExecutor(address="ray://head:10001")`` or ``address="auto"``
joins an existing one, whose workers need this package (and the benchmark package for the
reference agent) installed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["RayExecutor", "RayMissingError"]

T = TypeVar("T")
R = TypeVar("R")


class RayMissingError(ImportError, ValueError):
    """Ray is not installed (a ``ValueError`` too, so the CLI reports it in one line, exit 2)."""


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise RayMissingError("--executor ray needs Ray: pip install 'causal-middleware[ray]'") from exc
    return ray


def _apply(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


class RayExecutor:
    """Runs each item as a Ray task (see the module docstring).

    Args:
        address: an existing cluster (``"auto"``, ``"ray://host:10001"``); None starts a local one.
        num_cpus: CPUs of the local cluster (default: all of this machine's); ignored with ``address``.
        cpus_per_task: CPUs each task reserves (default 1: one task per core).
        max_in_flight: tasks submitted ahead of the one being read (default: twice the cluster's
            CPUs over ``cpus_per_task``); items are drawn from the iterable only as they go out.
    """

    remote = True

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        cpus_per_task: float = 1.0,
        max_in_flight: int | None = None,
    ) -> None:
        if num_cpus is not None and (not isinstance(num_cpus, int) or num_cpus < 1):
            raise ValueError(f"num_cpus must be a positive integer, got {num_cpus!r}")
        if cpus_per_task <= 0:
            raise ValueError(f"cpus_per_task must be positive, got {cpus_per_task!r}")
        if max_in_flight is not None and (not isinstance(max_in_flight, int) or max_in_flight < 1):
            raise ValueError(f"max_in_flight must be a positive integer, got {max_in_flight!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_task = cpus_per_task
        self.max_in_flight = max_in_flight
        self._started = False
        _ray()  # fail now, with the extra's name, rather than at the first map

    def _ensure(self) -> ModuleType:
        ray = _ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                options["num_cpus"] = self.num_cpus
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except ConnectionError as exc:
                raise ValueError(f"cannot reach the Ray cluster at {self.address!r}: {exc}") from exc
            self._started = True
        return ray

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        ray = self._ensure()
        task = ray.remote(num_cpus=self.cpus_per_task, max_retries=0)(_apply)
        fn_ref = ray.put(fn)
        source = iter(items)
        # A bounded window of tasks in flight instead of cancelling: on a failure or an abandoned
        # iterator the rest is simply never submitted. ray.cancel() is not used because in Ray 2.60
        # a cancel that races a task's completion aborts the driver process (a RAY_CHECK in
        # TaskManager::CompletePendingTask), which would take the user's process down with it.
        in_flight = deque(task.remote(fn_ref, item) for item in islice(source, self._window(ray)))
        while in_flight:
            try:
                result: R = ray.get(in_flight.popleft())
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None
            for item in islice(source, 1):
                in_flight.append(task.remote(fn_ref, item))
            yield result

    def _window(self, ray: ModuleType) -> int:
        """Tasks kept in flight: twice what the cluster can run at once, so no core waits."""
        if self.max_in_flight is not None:
            return self.max_in_flight
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(2, int(2 * cpus / self.cpus_per_task))

    def shutdown(self) -> None:
        """Stop the local cluster this executor started (a joined cluster is left running)."""
        if self._started:
            _ray().shutdown()
            self._started = False

    def __repr__(self) -> str:
        where = self.address or f"local, {self.num_cpus or 'all'} CPUs"
        return f"RayExecutor({where})"
