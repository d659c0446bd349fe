"""The Postgres store beyond the shared contract: concurrent start-up, several agent processes
writing one store, life beside LangGraph's PostgresSaver, selection by URL, clear errors."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pg_agents
import pytest
from _postgres import free_port, fresh_schema_url

from causal_middleware.store.base import StoreError
from causal_middleware.store.open import open_store
from causal_middleware.store.postgres import SCHEMA_VERSION, PostgresSpanStore, StoreUnreachableError

ROOT = Path(__file__).resolve().parents[2]


def _pool(n: int) -> multiprocessing.pool.Pool:
    return multiprocessing.get_context("spawn").Pool(n)


def test_processes_starting_at_once_migrate_once(postgres_url: str) -> None:
    url = fresh_schema_url(postgres_url, "startup")
    with _pool(6) as pool:
        versions = pool.map(pg_agents.open_and_report, [url] * 6)
    assert versions == [SCHEMA_VERSION] * 6
    store = PostgresSpanStore(url)
    with store._reading("test") as conn:
        rows = conn.execute(f"SELECT version FROM {store.schema}.schema_migrations").fetchall()
    store.close()
    assert rows == [(SCHEMA_VERSION,)]


def test_agent_processes_write_one_store_without_loss_or_mixing(postgres_url: str) -> None:
    url = fresh_schema_url(postgres_url, "agents")
    n_workers, n_runs = 4, 6
    with _pool(n_workers) as pool:
        written = pool.starmap(pg_agents.run_agent, [(url, w, n_runs) for w in range(n_workers)])
    with PostgresSpanStore(url, create=False) as store:
        runs = store.list_runs(limit=None)
        assert sorted(r.run_id for r in runs) == sorted(run_id for ids in written for run_id in ids)
        assert len(runs) == n_workers * n_runs
        for worker, ids in enumerate(written):
            for k, run_id in enumerate(ids):
                t = store.get_trajectory(run_id)
                # each run holds its own worker's spans only: thread, labels, documents, answer
                assert (t.thread_id, t.answer) == (f"w{worker}-t{k}", f"q{worker}x{k}:2")
                assert t.labels["worker"] == worker and t.labels["k"] == k
                docs = [d.id or d.text for hop in t.hops for d in hop.documents]
                assert all(str(doc).startswith(f"w{worker}-q{worker}x{k}-") for doc in docs), docs
                assert len(t.hops) == 2
        labelled = store.list_runs(label="worker=2", limit=None)
        assert sorted(r.thread_id or "" for r in labelled) == sorted(f"w2-t{k}" for k in range(n_runs))
        health = store.read_health()
    assert health["store.runs_written"] == n_workers * n_runs


def test_store_lives_beside_postgres_saver_in_one_database(postgres_url: str) -> None:
    pytest.importorskip(
        "langgraph.checkpoint.postgres", reason="langgraph-checkpoint-postgres is not installed"
    )
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool

    from causal_middleware import instrument

    pool = ConnectionPool(postgres_url, kwargs={"autocommit": True, "prepare_threshold": 0}, open=True)
    try:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        graph = pg_agents.build_graph(7)
        graph = graph.builder.compile(checkpointer=saver, name="beside")  # type: ignore[attr-defined]
        url = fresh_schema_url(postgres_url, "beside")
        agent = instrument(graph, store=url, hop_nodes=["retrieve"], answer_nodes=["answer"])
        agent.invoke({"question": "q"}, {"configurable": {"thread_id": "beside-1"}})
        run_id = agent.last_run_id
        assert isinstance(agent.store, PostgresSpanStore)
        assert agent.store.get_trajectory(run_id).answer == "q:2"
        schema = agent.store.schema
        agent.shutdown()
        with pool.connection() as conn:
            tables = {
                (row[0], row[1])
                for row in conn.execute(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_schema IN ('public', %s)",
                    (schema,),
                )
            }
            counted = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'beside-1'").fetchone()
            assert counted is not None and counted[0] > 0
    finally:
        pool.close()
    assert {("public", "checkpoints"), ("public", "checkpoint_writes")} <= tables
    assert {(schema, "spans"), (schema, "runs"), (schema, "repair_queue")} <= tables


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "causal_middleware.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_url_selects_postgres_in_python_cli_and_environment(postgres_url: str) -> None:
    url = fresh_schema_url(postgres_url, "cli")
    with _pool(1) as pool:
        (run_id,) = pool.starmap(pg_agents.run_agent, [(url, 3, 1)])[0]
    store = open_store(url, create=False)
    assert isinstance(store, PostgresSpanStore)
    store.close()
    by_flag = _cli("runs", "list", "--store", url, "--json")
    assert by_flag.returncode == 0, by_flag.stderr
    by_env = _cli("runs", "list", "--json", env={"CAUSAL_MW_STORE": url})
    assert by_env.returncode == 0, by_env.stderr
    for out in (by_flag.stdout, by_env.stdout):
        listed = json.loads(out)
        rows = listed if isinstance(listed, list) else listed.get("runs", listed)
        assert [r["run_id"] for r in rows] == [run_id]
    missing = _cli("runs", "list", "--store", fresh_schema_url(postgres_url, "none"))
    assert missing.returncode == 2 and "span store not found" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_reader_of_a_missing_schema_gets_file_not_found(postgres_url: str) -> None:
    with pytest.raises(FileNotFoundError, match="has no schema"):
        PostgresSpanStore(fresh_schema_url(postgres_url, "absent"), create=False)


def test_a_schema_written_by_a_newer_version_is_refused(postgres_url: str) -> None:
    url = fresh_schema_url(postgres_url, "newer")
    store = PostgresSpanStore(url)
    with store._reading("test") as conn:
        conn.execute(
            f"INSERT INTO {store.schema}.schema_migrations (version) VALUES (%s)", (SCHEMA_VERSION + 1,)
        )
    store.close()
    with pytest.raises(StoreError, match="newer than this causal-middleware supports"):
        PostgresSpanStore(url)


def test_unreachable_server_is_one_line_without_the_password() -> None:
    url = f"postgresql://ana:s3cret@127.0.0.1:{free_port()}/db"
    with pytest.raises(StoreUnreachableError) as caught:
        PostgresSpanStore(url, connect_timeout_s=2)
    message = str(caught.value)
    assert "s3cret" not in message and "ana@127.0.0.1" in message and "\n" not in message


def test_bad_schema_name_and_missing_driver_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreError, match="causal_schema 'Bad-Name'"):
        PostgresSpanStore("postgresql://127.0.0.1/db?causal_schema=Bad-Name")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"needs psycopg 3 and psycopg_pool: pip install"):
        PostgresSpanStore("postgresql://127.0.0.1/db")
