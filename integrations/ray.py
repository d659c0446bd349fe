"""Run a sweep's independent units as Ray tasks: ``RayExecutor`` (the ``[ray]`` extra).

Each item becomes one Ray task; the function is put in the object store once per ``map`` and
every task gets a reference to it, so what the function carries (a sweep's environment spec)
travels once. The heavy state (world, index, agent) is not shipped at all: the function builds it
in each worker process on first use (:func:`causal_middleware.faults.distributed.worker_environment`).
Results are yielded in item order, as :class:`~causal_middleware.faults.executor.ThreadExecutor`
yields them.

``RayExecutor()`` starts a local cluster with this machine's cores on first use (and stops it on
:meth:`RayExecutor.shutdown`); ``RayExecutor(address="ray://head:10001")`` or ``address="auto"``
joins an existing one, whose workers need this package (and the benchmark package for the
reference agent) installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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
    """

    remote = True

    def __init__(
        self, address: str | None = None, *, num_cpus: int | None = None, cpus_per_task: float = 1.0
    ) -> None:
        if num_cpus is not None and (not isinstance(num_cpus, int) or num_cpus < 1):
            raise ValueError(f"num_cpus must be a positive integer, got {num_cpus!r}")
        if cpus_per_task <= 0:
            raise ValueError(f"cpus_per_task must be positive, got {cpus_per_task!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_task = cpus_per_task
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
        refs = [task.remote(fn_ref, item) for item in items]
        finished = 0
        try:
            for ref in refs:
                try:
                    result: R = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    raise exc.as_instanceof_cause() from None
                finished += 1
                yield result
        finally:
            for ref in refs[finished:]:  # a failure or an abandoned iterator: stop the rest
                ray.cancel(ref)

    def shutdown(self) -> None:
        """Stop the local cluster this executor started (a joined cluster is left running)."""
        if self._started:
            _ray().shutdown()
            self._started = False

    def __repr__(self) -> str:
        where = self.address or f"local, {self.num_cpus or 'all'} CPUs"
        return f"RayExecutor({where})"
