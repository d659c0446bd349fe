"""The Ray executor on a local two-CPU cluster (started by the tests): the same results as the local
threads for ``bench fp``, ``inject`` and ``bench repair``, and one agent built per Ray worker."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray_helpers import fp_comparable, repair_comparable, unit_records

from benchmarks.cli.bench import run_fp, run_repair
from benchmarks.cli.executor import ReferenceEnvSpec
from causal_middleware.cli.main import main
from causal_middleware.store.sqlite import SqliteSpanStore

pytest.importorskip("ray")

pytestmark = pytest.mark.xdist_group("ray")  # one local Ray cluster per test run, not one per xdist worker

SPEC = ReferenceEnvSpec(dataset="world", n=2, seed=0, hops=3)


@pytest.fixture(autouse=True)
def _ship_this_module_by_value(ray_cluster: Any) -> None:
    """Ray workers cannot import a test module: its functions travel by value."""
    ray_cluster.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _probe(item: int) -> tuple[int, int, int]:
    from causal_middleware.faults import distributed  # the worker's module (this function travels by value)

    env = distributed.worker_environment(SPEC)
    return os.getpid(), id(env), len(distributed._envs)


def test_each_ray_worker_builds_the_agent_once(ray_cluster: Any) -> None:
    from causal_middleware.integrations.ray import RayExecutor

    rows = list(RayExecutor().map(_probe, range(12)))
    assert len(rows) == 12
    pids = {pid for pid, _, _ in rows}
    assert os.getpid() not in pids  # the tasks ran in worker processes
    assert len(pids) < 12
    for pid in pids:
        assert len({env for p, env, _ in rows if p == pid}) == 1  # one agent per worker, reused
    assert all(cached == 1 for _, _, cached in rows)


def test_a_failing_task_raises_its_own_exception(ray_cluster: Any) -> None:
    from causal_middleware.integrations.ray import RayExecutor

    with pytest.raises(ValueError, match="no such item"):
        list(RayExecutor().map(_fail_on_three, range(5)))


def test_a_failure_or_an_abandoned_iterator_submits_no_more_than_the_window(ray_cluster: Any) -> None:
    """Nothing is cancelled (Ray's cancel can race completion and abort the driver): items are drawn
    from the iterable only as tasks go out, so a failure or an early stop leaves the rest unsent."""
    from causal_middleware.integrations.ray import RayExecutor

    drawn: list[int] = []

    def counted(n: int) -> Iterator[int]:
        for i in range(n):
            drawn.append(i)
            yield i

    with pytest.raises(ValueError, match="no such item"):
        list(RayExecutor(max_in_flight=2).map(_fail_on_three, counted(50)))
    assert len(drawn) <= 3 + 2  # items 0..3 went out, plus at most the window behind the failure
    drawn.clear()
    results = RayExecutor(max_in_flight=3).map(_double, counted(50))
    assert [next(results), next(results)] == [0, 2]
    results.close()
    assert len(drawn) <= 2 + 3
    assert list(RayExecutor(max_in_flight=1).map(_double, counted(7))) == [0, 2, 4, 6, 8, 10, 12]
    with pytest.raises(ValueError, match="max_in_flight"):
        RayExecutor(max_in_flight=0)


def _double(item: int) -> int:
    return 2 * item


def _fail_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("no such item")
    return item


FP = {"dataset": "world", "n": 6, "hops": 3, "depths": [1, 2, 3], "seed": 0, "bootstrap_B": 200}


@pytest.mark.slow
def test_bench_fp_on_ray_equals_local(ray_cluster: Any) -> None:
    local = run_fp({**FP, "executor": "local"})
    remote = run_fp({**FP, "executor": "ray"})
    assert remote["config"]["executor"] == "ray" and remote["timing"]["diagnosed_in_workers"]
    failed = sum(local["failed"].values())
    assert failed > 0 and local["diagnosers"]["path_aware"]["run"]
    assert remote["timing"]["diagnoses_reused"] == failed * len(local["diagnosers"])
    assert fp_comparable(remote) == fp_comparable(local)


@pytest.mark.slow
def test_inject_on_ray_equals_local_and_resumes(ray_cluster: Any, tmp_path: Path, capsys: Any) -> None:
    argv = ["inject", "--n", "3", "--hops", "3", "--depths", "1", "2", "--faults", "all", "--persistent"]
    argv += ["--json", "--no-progress"]
    outs = {}
    for executor in ("local", "ray"):
        store = tmp_path / f"{executor}.db"
        assert main([*argv, "--store", str(store), "--executor", executor]) == 0
        outs[executor] = json.loads(capsys.readouterr().out)
    assert outs["ray"]["report"] == outs["local"]["report"]
    for key in ("statuses", "units", "base_runs", "base_correct", "keys"):
        assert outs["ray"]["sweep"].get(key) == outs["local"]["sweep"].get(key)
    assert outs["local"]["sweep"]["statuses"].get("done", 0) > 0
    records = {}
    for executor in ("local", "ray"):
        store = SqliteSpanStore(tmp_path / f"{executor}.db")
        records[executor] = unit_records(store)
        store.close()
    assert records["ray"] == records["local"]
    # the runs Ray made are in the store: the same command resumes every unit
    assert main([*argv, "--store", str(tmp_path / "ray.db"), "--executor", "ray"]) == 0
    again = json.loads(capsys.readouterr().out)["sweep"]
    assert again["resumed"] == again["units"] and again["statuses"] == {}


@pytest.mark.slow
def test_bench_repair_on_ray_equals_local(ray_cluster: Any) -> None:
    params = {
        "n": 12,
        "inject_questions": 3,
        "depths": [1],
        "max_injected": 4,
        "families": ["empty_retrieval", "irrelevant_documents", "false_premise"],
    }
    local = run_repair({**params, "executor": "local"})
    remote = run_repair({**params, "executor": "ray"})
    assert local["n_failed"] > 0 and remote["config"]["executor"] == "ray"
    assert repair_comparable(remote) == repair_comparable(local)
