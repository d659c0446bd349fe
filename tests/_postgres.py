"""A throwaway PostgreSQL server for tests: a fresh cluster (initdb) in a temp dir, on a free
loopback port, stopped and removed at the end. Shared by the replayer's PostgresSaver tests, the
span-store contract suite, the worker tests and the scale benchmark.

The server binaries are looked up on PATH (``/usr/local/bin`` here), then in Debian's
``/usr/lib/postgresql/*/bin``. As root the server runs as the ``postgres`` user (PostgreSQL
refuses root). :func:`postgres_server` raises :class:`PostgresUnavailable` (with the reason) when
it cannot start one; the ``postgres_url`` fixture turns that into a skip.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise PostgresUnavailable(
                "running as root and runuser is missing: cannot start PostgreSQL as another user"
            )
        return [runuser, "-u", "postgres", "--", *cmd]
    return cmd


@contextlib.contextmanager
def postgres_server(max_connections: int = 200) -> Iterator[str]:
    """Start a server of its own; yields its URL (``postgresql://postgres@127.0.0.1:PORT/postgres``)."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise PostgresUnavailable(f"psycopg 3 / psycopg_pool are not installed ({exc})") from None
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise PostgresUnavailable(
            "PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)"
        )
    user = None
    if os.geteuid() == 0:
        import pwd

        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                "running as root and there is no 'postgres' user to run the server as"
            ) from None
    root = Path(tempfile.mkdtemp(prefix="causal-pg-"))
    data, log = root / "data", root / "server.log"
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    port = free_port()
    try:
        try:
            subprocess.run(
                _as_server_user(
                    [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
                ),
                check=True,
                capture_output=True,
                timeout=120,
            )
            options = (
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off "
                f"-c synchronous_commit=off -c max_connections={max_connections}"
            )
            subprocess.run(
                _as_server_user(
                    [pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]
                ),
                check=True,
                capture_output=True,
                timeout=120,
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise PostgresUnavailable(f"could not start PostgreSQL: {detail[0]}") from None
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own (one per test session, i.e. per xdist worker); skipped with
    the reason when none can be started."""
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))


_schemas = iter(range(1, 1 << 30))


def fresh_schema_url(url: str, prefix: str = "t") -> str:
    """``url`` with a schema no other store of this process used (``?causal_schema=...``)."""
    return f"{url}?causal_schema={prefix}_{os.getpid()}_{next(_schemas)}"
