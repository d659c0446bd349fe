"""The process executor (``--executor process``): spawned worker processes of this machine, the
same results as the local threads for ``bench fp``, items back in order, a task's own exception."""

from __future__ import annotations

import os

import pytest
from ray_helpers import fp_comparable

from benchmarks.cli.bench import run_fp
from benchmarks.cli.executor import make_executor
from causal_middleware.faults.executor import ProcessExecutor


def _pid_and_double(item: int) -> tuple[int, int]:
    return os.getpid(), 2 * item


def _fail_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("no such item")
    return item


def test_items_run_in_other_processes_and_come_back_in_order() -> None:
    rows = list(ProcessExecutor(workers=2).map(_pid_and_double, range(8)))
    assert [doubled for _, doubled in rows] == [0, 2, 4, 6, 8, 10, 12, 14]
    assert os.getpid() not in {pid for pid, _ in rows}
    with pytest.raises(ValueError, match="no such item"):
        list(ProcessExecutor(workers=2).map(_fail_on_three, range(5)))
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ProcessExecutor(workers=0)


def test_the_cli_builds_it_and_refuses_an_address() -> None:
    executor = make_executor("process", workers=3)
    assert isinstance(executor, ProcessExecutor) and executor.workers == 3 and executor.remote
    with pytest.raises(ValueError, match="--address applies to --executor ray only"):
        make_executor("process", address="auto")


@pytest.mark.slow
def test_bench_fp_in_processes_equals_local() -> None:
    params = {"dataset": "world", "n": 4, "hops": 3, "depths": [1, 2], "seed": 0, "bootstrap_B": 100}
    local = run_fp({**params, "executor": "local"})
    remote = run_fp({**params, "executor": "process"})
    assert remote["config"]["executor"] == "process" and remote["timing"]["diagnosed_in_workers"]
    assert sum(local["failed"].values()) > 0
    assert fp_comparable(remote) == fp_comparable(local)
