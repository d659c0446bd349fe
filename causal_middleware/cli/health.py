"""``causal-mw health``: spans lost and errors swallowed, as far as this command can see them.

Health counters live in the process that ran the agent (``instrumented.health``); a CLI process
cannot read another process's memory. What it prints instead: the counters the background store
writers of every process persisted in the store (spans written, spans dropped by reason), the
store's own state (opened read-write or read-only, schema version, runs, an optional integrity
check), and this process's counters (empty unless something failed while this command ran).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.spans.health import health

_EPILOG = """\
Dropped-span reasons: store.queue_full (the store writer's queue was full), store.retries_exhausted
(the store stayed locked by another writer), store.write_failed (the store refused the run: bad
span, disk full, read-only), store.shutdown_timeout (still queued when the shutdown budget ran out),
store.after_shutdown, store.open_traces_cap (an open run evicted: too many open, or never ended),
otlp.queue_full, otlp.export_failed, otlp.shutdown_timeout, otlp.after_shutdown.

--json prints {"store": {"path", "exists", "open_mode" ("rw", "ro", "immutable"), "read_only",
"schema_version", "runs", "integrity" ("ok", an error, or null without --check), "error" (why it
could not be read, else null)}, "persisted": {counter: value} (store.spans_written,
store.runs_written and every drop reason, summed over the processes that wrote this store),
"persisted_dropped" (their drop total), "process": {"pid", "errors", "dropped", "counts",
"total_errors", "total_dropped", "last_errors"} (this process), "ok" (no drops anywhere, store
readable)}. Exit code 0 when ok, 1 when spans were dropped or the store cannot be read.
example: causal-mw health --store causal_runs.db --json"""

_COUNTER_KEYS = ("store.spans_written", "store.runs_written", "store.spans_queued")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "health",
        help="spans dropped and errors swallowed (store counters + this process)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EPILOG,
    )
    p.add_argument("--check", action="store_true", help="also run SQLite's quick_check on the store")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_health)


def collect(path: str, *, check: bool = False) -> dict[str, Any]:
    """The report ``causal-mw health --json`` prints."""
    from causal_middleware.store.sqlite import SqliteSpanStore

    info: dict[str, Any] = {
        "path": path,
        "exists": os.path.exists(path),
        "open_mode": None,
        "read_only": None,
        "schema_version": None,
        "runs": None,
        "integrity": None,
        "error": None,
    }
    persisted: dict[str, int] = {}
    if info["exists"]:
        try:
            store = SqliteSpanStore(path, create=False)
        except (ValueError, FileNotFoundError) as exc:
            info["error"] = str(exc)
        else:
            try:
                info["open_mode"] = store.open_mode
                info["read_only"] = store.read_only
                info["schema_version"] = store.schema_version
                info["runs"] = len(store.list_runs(limit=None))
                persisted = store.read_health()
                if check:
                    info["integrity"] = _quick_check(store)
            except (ValueError, KeyError) as exc:
                info["error"] = str(exc)
            finally:
                store.close()
    else:
        info["error"] = f"span store not found: {path}"
    process = health.snapshot()
    persisted_dropped = sum(v for k, v in persisted.items() if k not in _COUNTER_KEYS)
    ok = (
        info["error"] is None
        and persisted_dropped == 0
        and process["total_dropped"] == 0
        and info["integrity"] in (None, "ok")
    )
    return {
        "store": info,
        "persisted": persisted,
        "persisted_dropped": persisted_dropped,
        "process": process,
        "ok": ok,
    }


def _quick_check(store: Any) -> str:
    try:
        with store._lock:
            rows = store._conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    result = "; ".join(str(r[0]) for r in rows[:5])
    return "ok" if result == "ok" else result


def _health(args: argparse.Namespace) -> int:
    report = collect(args.store, check=args.check)
    if args.json:
        print_json(report)
        return 0 if report["ok"] else 1
    s = report["store"]
    if s["error"]:
        print(f"store {s['path']}: cannot read it: {s['error']}")
    else:
        integrity = f", integrity {s['integrity']}" if s["integrity"] is not None else ""
        print(
            f"store {s['path']}: {s['runs']} runs, schema v{s['schema_version']}, "
            f"opened {s['open_mode']}{integrity}"
        )
    persisted = report["persisted"]
    written = persisted.get("store.spans_written", 0)
    print(
        f"persisted by writers: {written} spans written in {persisted.get('store.runs_written', 0)} runs, "
        f"{report['persisted_dropped']} spans dropped"
    )
    for key, value in sorted(persisted.items()):
        if key not in _COUNTER_KEYS:
            print(f"  dropped {key}: {value}")
    process = report["process"]
    print(
        f"this process (pid {process['pid']}): {process['total_dropped']} spans dropped, "
        f"{process['total_errors']} errors swallowed"
    )
    for key, value in sorted(process["dropped"].items()):
        print(f"  dropped {key}: {value}")
    for key, value in sorted(process["errors"].items()):
        print(f"  error {key}: {value}")
    print("ok" if report["ok"] else "NOT OK: spans were lost or the store cannot be read")
    return 0 if report["ok"] else 1
