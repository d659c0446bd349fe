"""Peak RSS importing a large generated OTLP/JSON file (issue 13, item 9; target <= 300 MB).

The file (``size_mb``, default 200) is generated in a temporary folder: runs of 40 spans with
realistic attributes. The import runs in a fresh subprocess (``SqliteSpanStore.import_otlp_json``)
that reports its own peak RSS (``resource.getrusage``), so the figure is the import's, not this
process's. ``run()`` returns JSON-ready figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MB = 300

_CHILD = """
import json, resource, sys, time
from causal_middleware.store.sqlite import SqliteSpanStore
start = time.perf_counter()
with SqliteSpanStore(sys.argv[2]) as store:
    run_ids = store.import_otlp_json(sys.argv[1])
    spans = sum(r.n_spans for r in store.list_runs(limit=None))
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"runs": len(run_ids), "spans": spans, "peak_rss_mb": peak_kb / 1024,
                  "import_s": time.perf_counter() - start}))
"""

_BASELINE = """
import json, resource
from causal_middleware.store.sqlite import SqliteSpanStore  # noqa: F401
import causal_middleware.store.otlp_json  # noqa: F401
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _span(trace: str, n: int) -> dict[str, Any]:
    attributes = [
        {"key": "causal.span.type", "value": {"stringValue": "node" if n else "run"}},
        {"key": "langgraph.node", "value": {"stringValue": f"node_{n % 7}"}},
        {"key": "input.value", "value": {"stringValue": "q " * 150}},
        {"key": "output.value", "value": {"stringValue": "document text " * 40}},
        {"key": "causal.hop.index", "value": {"intValue": str(n // 10)}},
        {"key": "retrieval.document.score", "value": {"doubleValue": 0.5 + n / 100}},
    ]
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{n + 1:016x}",
        "name": f"node_{n % 7}",
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_500 + n * 1000),
        "attributes": attributes,
        "status": {"code": 1},
    }
    if n:
        span["parentSpanId"] = f"{1:016x}"
    return span


def generate(path: Path, size_mb: float, spans_per_run: int = 40) -> dict[str, int]:
    """Write one OTLP/JSON document of about ``size_mb`` MB to ``path``, streaming (no big list)."""
    target = int(size_mb * 1_000_000)
    runs = spans = 0
    with path.open("w", encoding="utf-8") as out:
        out.write('{"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", ')
        out.write(
            '"value": {"stringValue": "bench"}}]}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": ['
        )
        first = True
        while out.tell() < target:
            trace = f"{runs + 1:032x}"
            for n in range(spans_per_run):
                out.write(("" if first else ",") + json.dumps(_span(trace, n)))
                first = False
                spans += 1
            runs += 1
        out.write("]}]}]}\n")
    return {"runs": runs, "spans": spans, "bytes": path.stat().st_size}


def _child(code: str, *args: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
        ),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env, timeout=3600
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(size_mb: float = 200.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="causal-bench-import-") as folder:
        path = Path(folder) / "big.json"
        started = time.perf_counter()
        made = generate(path, size_mb)
        generate_s = time.perf_counter() - started
        baseline = _child(_BASELINE)
        result = _child(_CHILD, str(path), str(Path(folder) / "runs.db"))
    return {
        "file_mb": round(made["bytes"] / 1e6, 1),
        "spans": made["spans"],
        "runs_imported": result["runs"],
        "spans_imported": result["spans"],
        "peak_rss_mb": round(result["peak_rss_mb"], 1),
        "baseline_rss_mb": round(baseline["peak_rss_mb"], 1),
        "import_s": round(result["import_s"], 1),
        "generate_s": round(generate_s, 1),
        "target_peak_rss_mb": TARGET_MB,
        "meets_target": result["peak_rss_mb"] <= TARGET_MB,
    }
