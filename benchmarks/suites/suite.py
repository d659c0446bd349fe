"""``bench all``: every benchmark in one go, each into ``DIR/<name>.json``, with ``DIR/summary.md``.

The suite is a list of :class:`SuiteEntry` (a name, a function running the benchmark with a dict
of parameters, a function summarising its result in markdown, optionally one writing extra files
beside its JSON). The benchmarks that need a live agent get it from their entry's function, which
the CLI (a composition root) builds from the LangGraph integration; this module only sequences,
times and records. A benchmark that raises is recorded as ``error`` and the suite goes on.

:data:`SIZES` holds the parameters of each benchmark at two sizes: ``default`` (about 15-20
minutes in all on 2 cores) and ``quick`` (a smoke run of about 2 minutes).
"""

from __future__ import annotations

import json
import os
import platform
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

__all__ = ["SIZES", "SUITE_ORDER", "SuiteEntry", "run_suite", "summary_markdown"]

Size = Literal["default", "quick"]
SUITE_ORDER = ("instrument", "retrieval", "agent", "replay", "faults", "fp", "repair", "context")

SIZES: dict[str, dict[Size, dict[str, Any]]] = {
    "instrument": {"default": {"runs": 100, "warmup": 10}, "quick": {"runs": 10, "warmup": 2}},
    "retrieval": {
        "default": {"sizes": [10_000], "retrievers": ["bm25", "bm25s", "dense"], "n_queries": 50},
        "quick": {"sizes": [2_000], "retrievers": ["bm25", "bm25s", "dense"], "n_queries": 20},
    },
    "agent": {
        "default": {"n": 60, "retrievers": ["bm25", "dense"]},
        "quick": {"n": 12, "retrievers": ["bm25", "dense"]},
    },
    "replay": {
        "default": {"n_questions": 5, "modes": ["regenerate", "frozen", "replay"]},
        "quick": {"n_questions": 1, "modes": ["regenerate", "frozen", "replay"]},
    },
    "faults": {
        "default": {"n": 30, "conditions": ["structural", "content", "content_persistent"]},
        "quick": {"n": 4, "conditions": ["structural", "content"], "depths": [1, 2]},
    },
    "fp": {
        "default": {"n": 80, "faults": "structural", "retriever": "bm25"},
        "quick": {
            "n": 4,
            "faults": "structural",
            "retriever": "bm25",
            "diagnosers": ["coverage", "frozen_hop", "suffix_regen", "path_aware"],
            "bootstrap_B": 200,
        },
    },
    "repair": {
        "default": {"n": 40, "inject_questions": 10, "max_injected": 20},
        "quick": {"n": 4, "inject_questions": 2, "max_injected": 3, "depths": [1]},
    },
    "context": {
        "default": {"n_dissatisfied": 30, "n_control": 8},
        "quick": {"n_dissatisfied": 4, "n_control": 2},
    },
}


@dataclass(frozen=True)
class SuiteEntry:
    """One benchmark of the suite.

    ``run(params)`` returns the benchmark's JSON-ready result; ``summarize(result)`` returns a few
    markdown lines for ``summary.md``; ``write_extra(result, json_path)`` (optional) writes files
    beside the JSON (a report, a plot) and returns their paths.
    """

    name: str
    run: Callable[[dict[str, Any]], dict[str, Any]]
    summarize: Callable[[dict[str, Any]], str]
    write_extra: Callable[[dict[str, Any], Path], list[Path]] | None = None


def _params(name: str, size: Size, overrides: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    base = dict(SIZES.get(name, {}).get(size, {}))
    base.update((overrides or {}).get(name, {}))
    return base


def run_suite(
    entries: Sequence[SuiteEntry],
    out_dir: str | Path,
    *,
    size: Size = "default",
    only: Sequence[str] | None = None,
    skip: Sequence[str] = (),
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run ``entries`` (those named in ``only``, minus ``skip``) at ``size``; write
    ``out_dir/<name>.json`` for each and ``out_dir/summary.md``. Returns the suite record:
    ``size``, ``out_dir``, ``started``, ``elapsed_s``, ``machine`` and ``benchmarks.<name>``
    (``status`` ok/error, ``elapsed_s``, ``params``, ``json``, ``files``, ``error``)."""
    if size not in ("default", "quick"):
        raise ValueError(f"size must be 'default' or 'quick', got {size!r}")
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"suite entries are named twice: {names}")
    unknown = [n for n in [*(only or []), *skip] if n not in names]
    if unknown:
        raise ValueError(f"unknown benchmarks {unknown}; the suite has {names}")
    chosen = [e for e in entries if (only is None or e.name in only) and e.name not in skip]
    if not chosen:
        raise ValueError("no benchmark left to run (check --only/--skip)")
    say = progress or (lambda _msg: None)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    record: dict[str, Any] = {
        "size": size,
        "out_dir": str(directory),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "benchmarks": {},
    }
    results: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(chosen, start=1):
        params = _params(entry.name, size, overrides)
        say(f"[{i}/{len(chosen)}] {entry.name} {json.dumps(params)}")
        began = time.perf_counter()
        row: dict[str, Any] = {"params": params}
        try:
            result = entry.run(params)
            path = directory / f"{entry.name}.json"
            path.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
            extra = entry.write_extra(result, path) if entry.write_extra is not None else []
            row.update(status="ok", json=str(path), files=[str(p) for p in extra])
            results[entry.name] = result
        except Exception as exc:  # one broken benchmark must not cost the others
            row.update(
                status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=6)
            )
            say(f"  {entry.name} failed: {type(exc).__name__}: {exc}")
        row["elapsed_s"] = round(time.perf_counter() - began, 2)
        record["benchmarks"][entry.name] = row
        say(f"  {entry.name}: {row['status']} in {row['elapsed_s']} s")
    record["elapsed_s"] = round(time.perf_counter() - started, 2)
    record["machine"]["load_average_end"] = _machine()["load_average"]
    summaries = {e.name: e.summarize for e in chosen}
    (directory / "summary.md").write_text(summary_markdown(record, results, summaries), "utf-8")
    return record


def summary_markdown(
    record: dict[str, Any],
    results: dict[str, dict[str, Any]],
    summaries: dict[str, Callable[[dict[str, Any]], str]],
) -> str:
    """``summary.md``: a status table, then each benchmark's own summary."""
    machine = record.get("machine", {})
    lines = [
        f"# Benchmark suite ({record['size']})",
        "",
        f"Started {record['started']}; {record['elapsed_s']} s in all on {machine.get('cpus')} CPUs "
        f"(load average {machine.get('load_average')} at the start, {machine.get('load_average_end')} at the "
        f"end), Python {machine.get('python')}.",
        "",
        "| benchmark | status | time (s) | file |",
        "|---|---|---|---|",
    ]
    for name, row in record["benchmarks"].items():
        status = row["status"] if row["status"] == "ok" else f"**{row['status']}**: {row.get('error', '')}"
        file = Path(row["json"]).name if row.get("json") else "-"
        lines.append(f"| {name} | {status} | {row['elapsed_s']} | {file} |")
    for name, result in results.items():
        lines += ["", f"## {name}", ""]
        try:
            lines.append(summaries[name](result).rstrip())
        except Exception as exc:  # a summary bug must not hide the results already on disk
            lines.append(f"(no summary: {type(exc).__name__}: {exc}; see {name}.json)")
    return "\n".join(lines) + "\n"


def _machine() -> dict[str, Any]:
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpus": os.cpu_count(),
        "load_average": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
