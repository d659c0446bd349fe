"""The executor abstraction without Ray: order, errors, argument checks, the remote path through pickling."""

from __future__ import annotations

import json
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from ray_helpers import unit_records

from benchmarks.cli.executor import AUTO_MIN_ITEMS, ReferenceEnvSpec, resolve_executor
from causal_middleware.cli.main import main
from causal_middleware.faults.distributed import worker_environment
from causal_middleware.faults.executor import ThreadExecutor
from causal_middleware.faults.sweep import run_sweep
from causal_middleware.store.memory import InMemorySpanStore


def test_thread_executor_keeps_item_order_and_runs_in_parallel() -> None:
    seen: set[str] = set()

    def slow_square(x: int) -> int:
        seen.add(threading.current_thread().name)
        time.sleep(0.05 * (5 - x))  # the first items finish last
        return x * x

    assert list(ThreadExecutor(3).map(slow_square, range(5))) == [0, 1, 4, 9, 16]
    assert len(seen) > 1


def test_thread_executor_raises_the_items_exception_and_rejects_bad_worker_counts() -> None:
    def boom(x: int) -> int:
        if x == 2:
            raise KeyError("item 2")
        return x

    results = ThreadExecutor(2).map(boom, [0, 1, 2, 3])
    assert next(results) == 0 and next(results) == 1
    with pytest.raises(KeyError, match="item 2"):
        next(results)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            ThreadExecutor(bad)  # type: ignore[arg-type]


class PickledExecutor:
    """A stand-in remote executor: everything crosses a pickle boundary, as it does to a Ray worker."""

    remote = True

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        shipped = pickle.loads(pickle.dumps(fn))
        for item in items:
            yield pickle.loads(pickle.dumps(shipped(pickle.loads(pickle.dumps(item)))))


def _env(spec: ReferenceEnvSpec, store: InMemorySpanStore) -> Any:
    """The driver's agent for ``spec`` (the same one ``spec.build()`` makes in a worker)."""
    from benchmarks.cli.bench import sweep_env_factory
    from benchmarks.cli.inject import load_dataset

    dataset = load_dataset(spec.dataset, spec.n, seed=spec.seed, hops=spec.hops)
    return sweep_env_factory(seed=spec.seed, workers=spec.workers)(dataset, store)


def _sweep(spec: ReferenceEnvSpec, executor: Any) -> tuple[Any, InMemorySpanStore]:
    store = InMemorySpanStore()
    env = _env(spec, store)
    try:
        result = run_sweep(
            env,
            depths=[1, 2],
            families=["empty_retrieval", "false_premise"],
            seed=spec.seed,
            executor=executor,
            env_spec=spec,
        )
    finally:
        env.close()
    return result, store


def test_the_remote_path_equals_the_local_sweep_and_builds_the_agent_once_per_process() -> None:
    spec = ReferenceEnvSpec(dataset="world", n=3, seed=1, hops=3)
    local, local_store = _sweep(spec, ThreadExecutor(2))
    remote, remote_store = _sweep(spec, PickledExecutor())
    assert remote.statuses == local.statuses and remote.keys == local.keys
    assert remote.base_runs == local.base_runs == 3 and remote.base_correct == local.base_correct
    assert unit_records(remote_store) == unit_records(local_store)
    assert local.statuses.get("done", 0) > 0
    # the stand-in's "worker" is this process: one agent for the spec, reused by every question
    assert worker_environment(spec) is worker_environment(
        ReferenceEnvSpec(dataset="world", n=3, seed=1, hops=3)
    )


def test_a_remote_executor_without_an_env_spec_is_refused() -> None:
    env = _env(ReferenceEnvSpec(dataset="world", n=2, seed=0, hops=3), InMemorySpanStore())
    try:
        with pytest.raises(ValueError, match="give run_sweep an env_spec"):
            run_sweep(env, depths=[1], families=["empty_retrieval"], executor=PickledExecutor())
    finally:
        env.close()


def test_missing_ray_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from causal_middleware.integrations.ray import RayExecutor, RayMissingError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RayMissingError, match=r"pip install 'causal-middleware\[ray\]'"):
        RayExecutor()


def test_cli_rejects_bad_executor_combinations(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    assert main(["bench", "fp", "--n", "2", "--address", "auto"]) == 2
    assert "--address applies to --executor ray only" in capsys.readouterr().err
    assert main(["bench", "fp", "--n", "2", "--executor", "ray", "--store", str(tmp_path / "s.db")]) == 2
    assert "--store" in capsys.readouterr().err
    assert main(["inject", "--n", "2", "--store", str(tmp_path / "i.db"), "--address", "auto"]) == 2
    with pytest.raises(SystemExit):
        main(["bench", "fp", "--executor", "dask"])


@pytest.mark.parametrize(
    ("name", "workers", "n_items", "local_only", "cores", "expected"),
    [
        ("auto", 2, 80, False, 2, "process"),
        ("auto", 2, 80, True, 2, "local"),  # --store, --judge, --model...: one process
        ("auto", 1, 80, False, 2, "local"),
        ("auto", 2, 80, False, 1, "local"),
        ("auto", 2, AUTO_MIN_ITEMS - 1, False, 2, "local"),
        ("auto", 2, AUTO_MIN_ITEMS, False, 4, "process"),
        ("local", 2, 80, False, 2, "local"),
        ("process", 1, 1, False, 1, "process"),  # an explicit choice is kept
        ("ray", 2, 80, True, 2, "ray"),
    ],
)
def test_auto_executor_picks_processes_only_where_they_can_run_and_pay(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    workers: int,
    n_items: int,
    local_only: bool,
    cores: int,
    expected: str,
) -> None:
    monkeypatch.setattr("benchmarks.cli.executor.os.cpu_count", lambda: cores)
    assert resolve_executor(name, workers=workers, n_items=n_items, local_only=local_only) == expected


def test_bench_fp_defaults_to_auto_and_records_what_it_resolved_to(tmp_path: Any) -> None:
    from benchmarks.cli.bench import run_fp

    out = tmp_path / "fp.json"
    # a store keeps the run in this process: auto must fall back to threads, not refuse
    argv = ["bench", "fp", "--n", "2", "--hops", "2", "--depths", "1", "--faults", "structural"]
    argv += ["--diagnosers", "coverage", "--bootstrap", "20", "--no-progress", "--out", str(out)]
    assert main([*argv, "--store", str(tmp_path / "s.db")]) == 0
    config = json.loads(out.read_text())["config"]
    assert (config["executor_requested"], config["executor"]) == ("auto", "local")
    small = run_fp(
        {"n": 2, "hops": 2, "depths": [1], "diagnosers": ["coverage"], "bootstrap_B": 20, "executor": "auto"}
    )
    assert (small["config"]["executor_requested"], small["config"]["executor"]) == ("auto", "local")
