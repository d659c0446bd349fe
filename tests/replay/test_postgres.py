"""Forks on a PostgresSaver, against a PostgreSQL server (Debian's packages) this test starts itself.

The server runs from a fresh data directory in a temp dir, on a free loopback port, and is stopped
at the end. Skipped, with the reason, when the PostgreSQL server binaries or the Python packages
(langgraph-checkpoint-postgres, psycopg) are not installed.
"""

from __future__ import annotations

import collections
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer

from causal_middleware.store.memory import InMemorySpanStore

from .conftest import build_custom, run_snapshot

pytest.importorskip("langgraph.checkpoint.postgres", reason="langgraph-checkpoint-postgres is not installed")
pytest.importorskip("psycopg_pool", reason="psycopg-pool is not installed")

from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from psycopg_pool import ConnectionPool  # noqa: E402


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; CI and these machines run tests as root.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root and runuser is missing: cannot start PostgreSQL as another user")
        return [runuser, "-u", "postgres", "--", *cmd]
    return cmd


@pytest.fixture(scope="module")
def postgres_uri() -> Iterator[str]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)"
        )
    if os.geteuid() == 0:
        try:
            import pwd

            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
    root = Path(tempfile.mkdtemp(prefix="causal-pg-"))
    data, log = root / "data", root / "server.log"
    if os.geteuid() == 0:
        os.chown(root, user.pw_uid, user.pw_gid)
    port = _free_port()
    try:
        subprocess.run(
            _as_server_user(
                [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        subprocess.run(
            _as_server_user(
                [pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_saver(postgres_uri: str) -> Iterator[PostgresSaver]:
    pool = ConnectionPool(
        postgres_uri,
        min_size=1,
        max_size=8,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    try:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        with pool.connection() as conn:
            conn.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        yield saver
    finally:
        pool.close()


def _rows(saver: PostgresSaver) -> dict[Any, Any]:
    rows: dict[Any, Any] = {}
    with saver.conn.connection() as conn:  # type: ignore[union-attr]
        for row in conn.execute("SELECT * FROM checkpoints"):
            rows[("checkpoint", row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"])] = row
        for row in conn.execute("SELECT * FROM checkpoint_writes"):
            key = (
                "write",
                row["thread_id"],
                row["checkpoint_ns"],
                row["checkpoint_id"],
                row["task_id"],
                row["idx"],
            )
            rows[key] = row
        for row in conn.execute("SELECT * FROM checkpoint_blobs"):
            rows[("blob", row["thread_id"], row["checkpoint_ns"], row["channel"], row["version"])] = row
    return rows


def test_forks_on_postgres(postgres_saver: PostgresSaver) -> None:
    shape = build_custom(postgres_saver, InMemorySpanStore())
    run_id = shape.run()
    before, snapshot = _rows(postgres_saver), run_snapshot(shape.graph.store, run_id)
    replayer = Replayer(shape.graph, max_concurrency=4)
    shape.reset()
    modes = ("regenerate", "frozen", "replay")
    forks = replayer.fork_many(
        [
            ForkRequest(
                run_id=run_id,
                hop=2,
                mode=modes[i % 3],
                values={"docs": [{"id": f"P{i}", "text": "", "score": 0}]},
            )
            for i in range(6)
        ]
    )
    for i, fork in enumerate(forks):
        assert fork.answer == ("q1-d,q2-d,q3-d" if i % 3 == 2 else f"q1-d,P{i},q3-d")  # type: ignore[union-attr]
    assert shape.effects == collections.Counter()
    assert shape.nodes == collections.Counter({"decide": 4, "retrieve": 2, "answer": 4})  # 2 regen + 2 frozen
    after = _rows(postgres_saver)
    assert len(after) > len(before) and {k: after[k] for k in before} == before
    assert run_snapshot(shape.graph.store, run_id) == snapshot
