"""``causal-mw runs``: list, show, export and import the runs kept in a span store."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.spans.model import Hop, Outcome, Trajectory
from causal_middleware.store.base import RunSummary
from causal_middleware.store.sqlite import SqliteSpanStore

# Keys whose string value a node's output uses for what the hop found (the reference agent's
# read node returns {"fact": ...}; answer nodes {"answer": ...}).
_OUTPUT_KEYS = ("answer", "final_answer", "fact", "extracted", "extracted_fact", "result")


def register(subparsers: Any) -> None:
    runs = subparsers.add_parser("runs", help="list, show, export and import recorded runs")
    sub = runs.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    sub.required = True

    p = sub.add_parser("list", help="list runs, newest first")
    p.add_argument("--outcome", choices=[o.value for o in Outcome], help="only runs with this outcome")
    p.add_argument("--thread", help="only runs of this LangGraph thread id")
    p.add_argument("--label", help="only runs with this label: KEY or KEY=VALUE")
    p.add_argument("--parent", help="only counterfactual runs forked from this run id")
    p.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_list)

    p = sub.add_parser("show", help="show one run: header, hop table, answer")
    p.add_argument(
        "run_id", metavar="RUN_ID", help="run id, or an unambiguous prefix of at least 6 hex digits"
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_show)

    p = sub.add_parser("export", help="write runs to an OTLP/JSON file")
    p.add_argument("--out", required=True, metavar="FILE", help="OTLP/JSON file to write")
    p.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="runs to export (default: all)")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_export)

    p = sub.add_parser("import", help="load an OTLP/JSON (or JSON-lines) file or a TRAIL trace")
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--format",
        choices=("auto", "otlp", "trail"),
        default="auto",
        help="file format (default: auto, TRAIL when the file has 'trace_id' and 'spans')",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_import)


def _open(path: str, *, create: bool = False) -> SqliteSpanStore:
    try:
        return SqliteSpanStore(path, create=create)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"span store not found: {path} (record a run first, or pass --store / set CAUSAL_MW_STORE)"
        ) from None


def _console() -> Console:
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=False, width=160)
    return console


def _clip(text: Any, width: int = 60) -> str:
    if text is None:
        return ""
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 1] + "…"


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else ""


def _labels(labels: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in labels.items())


# --- list ------------------------------------------------------------------------------------
def _list(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        runs = store.list_runs(
            outcome=args.outcome,
            thread_id=args.thread,
            label=args.label,
            parent_run_id=args.parent,
            limit=args.limit,
        )
    if args.json:
        print_json([r.model_dump(mode="json") for r in runs])
        return 0
    console = _console()
    if not runs:
        console.print(f"no runs in {args.store} match")
        return 0
    console.print(_runs_table(runs))
    return 0


def _runs_table(runs: Iterable[RunSummary]) -> Table:
    table = Table(title="runs (newest first)", title_justify="left")
    table.add_column("run id", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("graph")
    table.add_column("hops", justify="right")
    table.add_column("outcome")
    table.add_column("status")
    table.add_column("answer")
    table.add_column("labels")
    for r in runs:
        table.add_row(
            r.run_id,
            _when(r.started_at),
            r.graph or "",
            str(r.n_hops),
            r.outcome.value if r.outcome is not None else "",
            r.status.value,
            _clip(r.answer, 40),
            _labels(r.labels),
        )
    return table


# --- show ------------------------------------------------------------------------------------
def _show(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        trajectory = store.get_trajectory(store.resolve_run_id(args.run_id))
    if args.json:
        print_json(trajectory.model_dump(mode="json"))
        return 0
    console = _console()
    for key, value in _header(trajectory):
        console.print(f"[bold]{key:>10}[/bold]  {value}", markup=True)
    console.print()
    if trajectory.hops:
        console.print(_hop_table(trajectory.hops))
    else:
        console.print("no hops recorded")
    console.print()
    console.print(f"[bold]answer:[/bold] {trajectory.answer if trajectory.answer is not None else '(none)'}")
    return 0


def _header(t: Trajectory) -> list[tuple[str, str]]:
    rows = [
        ("run", t.run_id),
        ("thread", t.thread_id or ""),
        ("graph", t.graph or ""),
        ("started", _when(t.started_at)),
        ("status", t.status.value + (f" ({_clip(t.error, 100)})" if t.error else "")),
        ("input", _clip(t.input, 120)),
        ("answer", _clip(t.answer, 120)),
        ("outcome", t.outcome.value if t.outcome is not None else ""),
        ("reference", t.reference or ""),
        (
            "cost",
            f"{t.cost.input_tokens} in / {t.cost.output_tokens} out tokens, {t.cost.llm_calls} LLM calls, "
            f"{t.cost.tool_calls} tool calls, {t.cost.retrievals} retrievals",
        ),
    ]
    if t.labels:
        rows.append(("labels", _labels(t.labels)))
    if t.lineage is not None:
        lineage = t.lineage
        where = ", ".join(
            f"{name} {value}"
            for name, value in (
                ("hop", lineage.fork_hop),
                ("node", lineage.fork_node),
                ("step", lineage.fork_step),
            )
            if value is not None
        )
        text = f"fork of {lineage.parent_run_id}" + (f" at {where}" if where else "") + f" ({lineage.mode})"
        if lineage.intervention is not None:
            text += f", intervention {lineage.intervention.kind}"
        rows.append(("lineage", text))
    return [(key, value.replace("[", "\\[")) for key, value in rows]


def _hop_table(hops: Iterable[Hop]) -> Table:
    table = Table(title="hops", title_justify="left")
    table.add_column("hop", justify="right")
    table.add_column("node(s)")
    table.add_column("sub-query")
    table.add_column("documents")
    table.add_column("extracted / answer")
    table.add_column("errors")
    for hop in hops:
        errors = [f"{s.name}: {s.error}" for s in hop.steps if s.status.value == "error"]
        nodes = list(dict.fromkeys(s.node for s in hop.steps if s.node))
        docs = "\n".join(f"{d.id} ({d.score:.3g})" if d.score is not None else d.id for d in hop.documents)
        table.add_row(
            str(hop.index),
            " > ".join(nodes),
            _clip(hop.sub_query, 50),
            docs or "(none)",
            _clip(_hop_output(hop), 60),
            _clip("; ".join(errors), 50),
        )
    return table


def _find_text(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, str):
        return value or None
    if depth > 3:
        return None
    if isinstance(value, dict):
        for key in _OUTPUT_KEYS:
            if isinstance(value.get(key), str) and value[key]:
                return str(value[key])
        for nested in value.values():
            if isinstance(nested, dict | list):
                found = _find_text(nested, depth + 1)
                if found:
                    return found
    if isinstance(value, list) and value:
        return _find_text(value[-1], depth + 1)
    return None


def _hop_output(hop: Hop) -> str:
    """What the hop found: its answer, else the last node output naming a fact or answer, else
    the last LLM output in the hop."""
    for step in reversed(hop.steps):
        if step.kind == "answer" and step.answer:
            return str(step.answer)
    for step in reversed(hop.steps):
        if step.kind == "node":
            text = _find_text(step.output) if isinstance(step.output, dict | list) else None
            if text:
                return text
    for step in reversed(hop.steps):
        if step.kind == "llm" and step.output:
            return str(step.output)
    return ""


# --- export / import -------------------------------------------------------------------------
def _export(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        run_ids = store.export_otlp_json(args.out, args.run_ids or None)
    if args.json:
        print_json({"path": str(args.out), "run_ids": run_ids})
    else:
        print(f"exported {len(run_ids)} run{'s' if len(run_ids) != 1 else ''} to {args.out}")
    return 0


def _is_trail(path: str) -> bool:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"file not found: {path}")
    with file.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", errors="replace")
    return '"trace_id"' in head and '"spans"' in head and "resourceSpans" not in head


def _import(args: argparse.Namespace) -> int:
    trail = args.format == "trail" or (args.format == "auto" and _is_trail(args.file))
    with _open(args.store, create=True) as store:
        run_ids = [store.import_trail_trace(args.file)] if trail else store.import_otlp_json(args.file)
    if args.json:
        print_json({"path": str(args.file), "run_ids": run_ids})
    else:
        print(f"imported {len(run_ids)} run{'s' if len(run_ids) != 1 else ''} from {args.file}")
        for run_id in run_ids:
            print(f"  {run_id}")
    return 0
