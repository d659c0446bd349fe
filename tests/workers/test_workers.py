"""Repair workers over the Postgres store's durable queue: racing workers repair each run once, a
worker SIGKILLed mid-repair leaves the run to another, errors retry up to a cap then dead-letter,
a lost lease writes nothing, and the user's thread is never written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import rag_agent

from causal_middleware import instrument
from causal_middleware.repair.worker import RepairWorker
from causal_middleware.store.postgres import PostgresSpanStore
from causal_middleware.store.queue import LeaseLostError

ROOT = Path(__file__).resolve().parents[2]
GRAPH_SPEC = "tests/workers/rag_agent.py:graph"


def _record_failed_runs(graph: Any, url: str, n: int) -> list[tuple[str, str]]:
    """(run id, thread id) of ``n`` failed runs, enqueued by ``on_failure="enqueue"``."""
    agent = instrument(graph, store=url, on_failure="enqueue")
    out = []
    for _ in range(n):
        thread = uuid.uuid4().hex
        config = {"configurable": {"thread_id": thread}, "metadata": {"causal_reference": "Vistula"}}
        assert agent.invoke({"question": rag_agent.QUESTION}, config)["answer"] == "Seine"
        assert agent.last_run_id is not None
        out.append((agent.last_run_id, thread))
    agent.shutdown()  # drains the enqueuer: every run is in the queue now
    return out


def _worker_cmd(url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "causal_middleware.cli.main",
        "worker",
        "--store",
        url,
        "--graph",
        GRAPH_SPEC,
        "--json",
        *extra,
    ]


def _env(postgres_url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "CAUSAL_TEST_CHECKPOINTS": postgres_url, **extra}


def _thread_checkpoints(graph: Any, thread: str) -> list[Any]:
    with graph.checkpointer.conn.connection() as conn:
        return list(
            conn.execute(
                "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
                (thread,),
            )
        )


def test_two_workers_racing_repair_each_run_exactly_once(
    store_url: str, postgres_url: str, agent_graph: Any
) -> None:
    runs = _record_failed_runs(agent_graph, store_url, 6)
    before = {thread: _thread_checkpoints(agent_graph, thread) for _, thread in runs}
    workers = [
        subprocess.Popen(
            _worker_cmd(store_url, "--once"),
            cwd=ROOT,
            env=_env(postgres_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    reports = []
    for proc in workers:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    handled = [job["run_id"] for report in reports for job in report["jobs"]]
    assert sorted(handled) == sorted(run_id for run_id, _ in runs)  # each claimed once, by one worker
    assert all(job["outcome"] == "repaired" for report in reports for job in report["jobs"])
    with PostgresSpanStore(store_url, create=False) as store:
        for run_id, thread in runs:
            (repair,) = store.get_records("repair", run_id)
            assert len(store.get_records("diagnosis", run_id)) == 1
            assert repair["status"] == "repaired" and repair["repair"]["node"] == "retrieve"
            assert store.get_trajectory(repair["repair"]["fork_run_id"]).thread_id != thread
        assert {e.state for e in store.queue_entries()} == {"done"}
    # the workers forked only: the users' threads hold exactly the checkpoints they had
    assert {thread: _thread_checkpoints(agent_graph, thread) for _, thread in runs} == before


def test_a_worker_killed_mid_repair_leaves_the_run_to_another(
    store_url: str, postgres_url: str, agent_graph: Any, tmp_path: Path
) -> None:
    ((run_id, _),) = _record_failed_runs(agent_graph, store_url, 1)
    stall = tmp_path / "stalled"
    doomed = subprocess.Popen(
        _worker_cmd(store_url, "--max-runs", "1", "--lease", "2"),
        cwd=ROOT,
        env=_env(postgres_url, CAUSAL_TEST_STALL_FILE=str(stall)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not stall.exists():  # the worker is inside a repair fork now
            assert doomed.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(2.5)  # past one lease: the heartbeat kept it alive
        with PostgresSpanStore(store_url, create=False) as store:
            (entry,) = store.queue_entries()
            assert (entry.state, entry.attempts) == ("leased", 1)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    survivor = subprocess.run(
        _worker_cmd(store_url, "--max-runs", "1", "--poll", "0.2"),
        cwd=ROOT,
        env=_env(postgres_url),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert survivor.returncode == 0, survivor.stderr
    (job,) = json.loads(survivor.stdout)["jobs"]
    assert (job["run_id"], job["attempt"], job["outcome"], job["state"]) == (run_id, 2, "repaired", "done")
    with PostgresSpanStore(store_url, create=False) as store:
        assert len(store.get_records("repair", run_id)) == 1
        (entry,) = store.queue_entries()
        assert (entry.state, entry.attempts, entry.outcome) == ("done", 2, "repaired")


def test_errors_retry_up_to_the_cap_then_dead_letter(store_url: str, agent_graph: Any) -> None:
    ((run_id, _),) = _record_failed_runs(agent_graph, store_url, 1)
    calls = []

    def broken(trajectory: Any, feedback: str | None) -> Any:
        calls.append(trajectory.run_id)
        raise RuntimeError(f"checkpointer unreachable (call {len(calls)})")

    with PostgresSpanStore(store_url, create=False) as store:
        worker = RepairWorker(store, broken, max_attempts=3, backoff_s=0, lease_s=10)
        stats = worker.run(once=True)
        assert calls == [run_id] * 3
        assert [(j.attempt, j.state) for j in stats.jobs] == [(1, "queued"), (2, "queued"), (3, "dead")]
        (entry,) = store.queue_entries()
        assert (entry.state, entry.attempts) == ("dead", 3)
        assert entry.last_error == "RuntimeError: checkpointer unreachable (call 3)"
        assert store.get_records("repair", run_id) == [] and worker.run_one() is None


def test_a_lost_lease_writes_nothing_and_expiry_at_the_cap_is_dead(store_url: str) -> None:
    with PostgresSpanStore(store_url) as store:
        assert store.enqueue("a" * 32) and not store.enqueue("a" * 32)  # one job per run
        first = store.claim(owner="slow", lease_s=0.3, max_attempts=5)
        assert first is not None and first.attempt == 1
        assert store.claim(owner="other", lease_s=5, max_attempts=5) is None  # leased: invisible
        time.sleep(0.5)
        assert not store.renew(first)
        second = store.claim(owner="fast", lease_s=5, max_attempts=5)
        assert second is not None and (second.run_id, second.attempt) == (first.run_id, 2)
        with pytest.raises(LeaseLostError, match="slow"):
            store.complete(first, [("repair", {"by": "slow"})], outcome="repaired")
        with pytest.raises(LeaseLostError):
            store.fail(first, "late", max_attempts=5, backoff_s=0)
        store.complete(second, [("repair", {"by": "fast"})], outcome="repaired")
        assert store.get_records("repair", first.run_id) == [{"by": "fast"}]

        assert store.enqueue("b" * 32)
        crashed = store.claim(owner="crashes", lease_s=0.2, max_attempts=1)
        assert crashed is not None
        time.sleep(0.4)
        assert store.claim(owner="next", lease_s=5, max_attempts=1) is None
        states = {e.run_id: (e.state, e.attempts) for e in store.queue_entries()}
        assert states == {"a" * 32: ("done", 2), "b" * 32: ("dead", 1)}


def test_enqueue_needs_a_store_with_a_durable_queue(tmp_path: Path) -> None:
    graph = rag_agent.build_in_memory()
    with pytest.raises(ValueError, match=r'on_failure="enqueue" needs a store with a durable repair queue'):
        instrument(graph, store=str(tmp_path / "runs.db"), on_failure="enqueue")
    with pytest.raises(ValueError, match="repair workers need a store with a durable queue"):
        from causal_middleware.store.memory import InMemorySpanStore

        RepairWorker(InMemorySpanStore(), lambda t, f: None)  # type: ignore[arg-type, return-value]


def test_worker_cli_on_a_sqlite_store_is_a_one_line_error(tmp_path: Path) -> None:
    from causal_middleware.store.sqlite import SqliteSpanStore

    SqliteSpanStore(tmp_path / "runs.db").close()
    result = subprocess.run(
        _worker_cmd(str(tmp_path / "runs.db"), "--once"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"causal-mw: error: --store {tmp_path / 'runs.db'} has no durable repair queue: workers need a "
        "postgresql:// store (SQLite stores repair in-process with repair_on_failure())"
    ]
