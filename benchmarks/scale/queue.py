"""Repair-queue throughput: failed runs enqueued by an instrumented agent
(``on_failure="enqueue"``), drained by 1 or 2 ``causal-mw worker --once`` processes at once.

``repairs_per_min``: runs repaired / wall seconds from the workers' start to the last one's exit
(process start-up included, as a deployment pays it once); ``busy_repairs_per_min``: the same
over the longest worker's time inside its jobs (start-up excluded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from causal_middleware.integrations.langgraph import instrument

ROOT = Path(__file__).resolve().parents[2]


def record_failed_runs(url: str, checkpoints: str, n: int) -> None:
    from benchmarks.scale.agent import QUESTION, build

    graph = build(checkpoints)
    agent = instrument(graph, store=url, on_failure="enqueue")
    try:
        for _ in range(n):
            config = {
                "configurable": {"thread_id": uuid.uuid4().hex},
                "metadata": {"causal_reference": "Vistula"},
            }
            agent.invoke({"question": QUESTION}, config)
    finally:
        agent.shutdown()
        graph.checkpointer.conn.close()


def drain(url: str, checkpoints: str, workers: int) -> dict[str, Any]:
    env = {**os.environ, "CAUSAL_SCALE_CHECKPOINTS": checkpoints}
    cmd = [
        sys.executable, "-m", "causal_middleware.cli.main", "worker", "--store", url,
        "--graph", "benchmarks/scale/agent.py:graph", "--once", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(workers)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed ({proc.returncode}): {err.strip().splitlines()[-1:]}")
        reports.append(json.loads(out))
    wall = time.perf_counter() - started
    repaired = sum(r["repaired"] for r in reports)
    busy = max(sum(job["seconds"] for job in r["jobs"]) for r in reports)
    return {
        "workers": workers,
        "runs": sum(r["claimed"] for r in reports),
        "repaired": repaired,
        "per_worker": [r["claimed"] for r in reports],
        "wall_s": round(wall, 2),
        "repairs_per_min": round(repaired / wall * 60, 1),
        "busy_repairs_per_min": round(repaired / busy * 60, 1) if busy else None,
    }
