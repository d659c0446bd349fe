"""``python -m benchmarks.reliability --out DIR [--quick]``

Writes ``DIR/reliability.json`` with the store and export reliability figures (each a figure, not
a timed test; loopback addresses only):

* ``concurrent_fresh_opens``: N processes x M opens of the same new store path at once; failures
  (target 0).
* ``exit_collector_down`` / ``exit_black_hole`` (HTTP) / ``exit_black_hole_grpc``: seconds from the
  last ``invoke`` to the end of the process (target <= 2.5 s), with what was counted as dropped.
* ``slow_collector``: spans emitted, received by a collector that answers late, lost, and counted
  as dropped (target: ``uncounted`` 0).
* ``invoke_unlocked`` / ``invoke_locked``: ``invoke`` p50/p99 with the default SQLite store, and with
  another process holding its write lock (target p99 <= 1.2x unlocked); ``locked_p99_ratio``.

Sibling modules ``benchmarks.reliability.secrets``, ``.injection`` and ``.imports`` are merged in
when present (each exposes ``run() -> dict``; ``run(quick=True)`` when it accepts it).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

from . import harness

SIBLINGS = ("secrets", "injection", "imports")


def store_figures(quick: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["concurrent_fresh_opens"] = harness.concurrent_fresh_opens(4, 10 if quick else 30)
    runs = 10 if quick else 20
    out["exit_collector_down"] = harness.measure_exit(f"http://127.0.0.1:{harness.closed_port()}", runs=runs)
    with harness.black_hole() as port:
        out["exit_black_hole"] = harness.measure_exit(f"http://127.0.0.1:{port}", runs=runs)
    with harness.black_hole() as port:
        out["exit_black_hole_grpc"] = harness.measure_exit(
            f"http://127.0.0.1:{port}", runs=runs, protocol="grpc"
        )
    out["slow_collector"] = (
        harness.slow_collector_loss(2000, 0.3, queue=256, batch=64)
        if quick
        else harness.slow_collector_loss(7500, 1.0, queue=2048, batch=512)
    )
    n = 40 if quick else 200
    out["invoke_unlocked"] = harness.invoke_latency(runs=n, locked=False)
    out["invoke_locked"] = harness.invoke_latency(runs=n, locked=True)
    out["locked_p99_ratio"] = round(
        out["invoke_locked"]["p99_ms"] / max(out["invoke_unlocked"]["p99_ms"], 1e-9), 3
    )
    return out


def sibling_figures(quick: bool = False) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name in SIBLINGS:
        qualified = f"{__package__}.{name}"
        if importlib.util.find_spec(qualified) is None:
            continue
        try:
            run = importlib.import_module(qualified).run
            accepts_quick = "quick" in inspect.signature(run).parameters
            merged[name] = run(quick=quick) if accepts_quick else run()
        except Exception as exc:  # one broken sibling must not lose the other figures
            merged[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reliability", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for reliability.json")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--only-store", action="store_true", help="skip the sibling modules")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    report: dict[str, Any] = {"store": store_figures(args.quick)}
    if not args.only_store:
        report.update(sibling_figures(args.quick))
    report["wall_s"] = round(time.time() - started, 1)
    path = out_dir / "reliability.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    json.dump(report, sys.stdout, indent=2, default=str)
    sys.stdout.write(f"\nwrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
