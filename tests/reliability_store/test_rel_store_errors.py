"""Item 8 (store part): a corrupted file, a full disk and read-only paths or media give one-line
errors naming the file and the real cause (exit code 2 in the CLI), never tracebacks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.reliability.harness import ROOT
from causal_middleware.cli.main import main
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import StoreCorruptError, StoreError, StoreFullError, StoreReadOnlyError
from causal_middleware.store.sqlite import SqliteSpanStore


def _run_records(n_spans: int = 6, payload: int = 0, seed: int = 1) -> list[SpanRecord]:
    trace = f"{seed:032x}"
    root = SpanRecord(
        trace_id=trace,
        span_id=f"{1:016x}",
        name="graph",
        start_time_ns=1_000,
        end_time_ns=9_000,
        attributes={"causal.span.type": "run", "output.value": "Quarn"},
    )
    children = [
        SpanRecord(
            trace_id=trace,
            span_id=f"{i + 2:016x}",
            parent_span_id=root.span_id,
            name=f"node{i}",
            start_time_ns=1_000 + i,
            end_time_ns=2_000 + i,
            attributes={"causal.span.type": "node", "input.value": "x" * payload},
        )
        for i in range(n_spans - 1)
    ]
    return [root, *children]


def _store_with_runs(path: Path, n_runs: int = 40) -> None:
    with SqliteSpanStore(path) as store:
        for seed in range(1, n_runs + 1):
            store.write_spans(_run_records(payload=2000, seed=seed))
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# --- corrupted files ------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["pages", "truncated", "header"])
def test_a_corrupted_store_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    path = tmp_path / "runs.db"
    _store_with_runs(path)
    data = bytearray(path.read_bytes())
    if damage == "pages":  # every page after the schema page overwritten: "database disk image is malformed"
        data[4096 * 2 :] = b"\xa5" * (len(data) - 4096 * 2)
    elif damage == "truncated":
        data = data[: len(data) // 3]
    else:
        data[:100] = b"\x00" * 100
    path.write_bytes(bytes(data))
    err = _one_line_error(capsys, ["runs", "list", "--store", str(path)])
    assert str(path) in err and err.startswith("causal-mw: error:")


def test_corruption_is_a_store_corrupt_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _store_with_runs(path)
    data = bytearray(path.read_bytes())
    data[4096 * 2 :] = b"\xa5" * (len(data) - 4096 * 2)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match="corrupted"):
        with SqliteSpanStore(path, create=False) as store:
            store.list_runs(limit=None)
            for summary in store.list_runs(limit=None):
                store.get_trajectory(summary.run_id)


# --- disk full ------------------------------------------------------------------------------------
def test_disk_full_names_the_real_cause(tmp_path: Path) -> None:
    # before: "cannot rollback - no transaction is active" hid "database or disk is full"
    with SqliteSpanStore(tmp_path / "full.db") as store:
        store._conn.execute("PRAGMA max_page_count = 40")  # the file cannot grow past 40 pages
        with pytest.raises(StoreFullError) as caught:
            for seed in range(1, 200):
                store.write_spans(_run_records(payload=20_000, seed=seed))
        message = str(caught.value)
        assert "disk full" in message and "database or disk is full" in message
        assert "cannot rollback" not in message and str(tmp_path / "full.db") in message
        store.list_runs(limit=None)  # the store is still usable for reading


def _unshare_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k none /tmp && echo ok"],
        capture_output=True,
        text=True,
    )
    return probe.stdout.strip() == "ok"


needs_mounts = pytest.mark.skipif(
    not _unshare_available(), reason="needs unprivileged mount namespaces (unshare -rm)"
)


def _in_namespace(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python script in a private mount namespace where ``/mnt/ns`` is a small tmpfs."""
    runner = tmp_path / "ns_script.py"
    runner.write_text(textwrap.dedent(script))
    cmd = f"mkdir -p {tmp_path}/ns && mount -t tmpfs -o size=512k none {tmp_path}/ns && {sys.executable} {runner}"
    env = {**os.environ, "NS": f"{tmp_path}/ns", "PYTHONPATH": f"{ROOT}{os.pathsep}{Path(__file__).parent}"}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, env=env, timeout=120
    )


@needs_mounts
def test_a_real_full_disk_is_a_one_line_error(tmp_path: Path) -> None:
    proc = _in_namespace(
        """
        import os, subprocess, sys
        from causal_middleware.store.sqlite import SqliteSpanStore
        from causal_middleware.store.base import StoreFullError
        from test_rel_store_errors import _run_records
        path = os.path.join(os.environ["NS"], "runs.db")
        store = SqliteSpanStore(path)
        try:
            for seed in range(1, 500):
                store.write_spans(_run_records(payload=20_000, seed=seed))
        except StoreFullError as exc:
            print("FULL", exc)
        """,
        tmp_path,
    )
    assert "FULL" in proc.stdout, proc.stderr
    assert "disk full" in proc.stdout and "cannot rollback" not in proc.stdout


# --- read-only paths and media --------------------------------------------------------------------
def test_a_new_store_on_a_read_only_path_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: a raw sqlite3.OperationalError without the path
    target = "/proc/causal-mw-test/runs.db"
    with pytest.raises(StoreReadOnlyError, match="cannot create span store /proc/causal-mw-test/runs.db"):
        SqliteSpanStore(target)
    source = tmp_path / "empty.json"
    source.write_text('{"resourceSpans": []}')
    err = _one_line_error(capsys, ["runs", "import", str(source), "--store", target])
    assert target in err


def test_an_unwritable_store_is_opened_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.db"
    _store_with_runs(path, n_runs=3)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode))
    with SqliteSpanStore(path, create=False) as store:
        assert store.read_only and store.open_mode in ("ro", "immutable")
        assert len(store.list_runs(limit=None)) == 3
        with pytest.raises(StoreReadOnlyError, match="read-only"):
            store.annotate(store.list_runs()[0].run_id, outcome="success")


def test_read_only_can_be_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _store_with_runs(path, n_runs=2)
    with SqliteSpanStore(path, read_only=True) as store:
        assert store.read_only and len(store.list_runs()) == 2
        with pytest.raises(StoreError, match="read-only"):
            store.write_spans(_run_records(seed=99))
    with pytest.raises(StoreReadOnlyError, match="read-only"):
        SqliteSpanStore(tmp_path / "absent.db", read_only=True)


@needs_mounts
def test_a_store_on_read_only_media_can_be_read(tmp_path: Path) -> None:
    # before: a store on read-only media could not be read at all (WAL needs write access)
    proc = _in_namespace(
        """
        import os, shutil, sqlite3, subprocess, sys
        ns = os.environ["NS"]
        from test_rel_store_errors import _run_records
        from causal_middleware.store.sqlite import SqliteSpanStore
        from causal_middleware.store.base import StoreReadOnlyError
        from causal_middleware.cli.main import main
        path = os.path.join(ns, "runs.db")
        with SqliteSpanStore(path) as store:
            for seed in range(1, 4):
                store.write_spans(_run_records(seed=seed))
        # a second copy taken while a connection was open: it keeps its -wal and -shm files
        live = sqlite3.connect(path); live.execute("SELECT count(*) FROM runs").fetchone()
        os.makedirs(os.path.join(ns, "snap"))
        for sfx in ("", "-wal", "-shm"):
            if os.path.exists(path + sfx):
                shutil.copy(path + sfx, os.path.join(ns, "snap", "runs.db" + sfx))
        live.close()
        subprocess.run(["mount", "-o", "remount,ro", ns], check=True)
        for p in (path, os.path.join(ns, "snap", "runs.db")):
            with SqliteSpanStore(p, create=False) as store:
                print("MODE", store.open_mode, len(store.list_runs(limit=None)))
        print("RC", main(["runs", "list", "--store", path, "--json"]))
        try:
            SqliteSpanStore(os.path.join(ns, "new.db"))
        except StoreReadOnlyError as exc:
            print("NEW", exc)
        """,
        tmp_path,
    )
    out = proc.stdout
    assert "MODE ro 3" in out or "MODE immutable 3" in out, (out, proc.stderr)
    assert out.count(" 3\n") == 2 and "RC 0" in out, (out, proc.stderr)
    assert "NEW cannot create span store" in out and "new.db" in out, out
