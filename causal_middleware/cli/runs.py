"""``causal-mw runs``: list, show, annotate, export and import the runs kept in a span store."""

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
from causal_middleware.spans.content import redact_record
from causal_middleware.spans.model import Hop, Outcome, ToolStep, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store._common import normalize_outcome
from causal_middleware.store.base import RunSummary
from causal_middleware.store.open import OpenedStore, open_store
from causal_middleware.store.otlp_json import export_otlp_json

# Keys whose string value a node's output uses for what the hop found (the reference agent's
# read node returns {"fact": ...}; answer nodes {"answer": ...}).
_OUTPUT_KEYS = ("answer", "final_answer", "fact", "extracted", "extracted_fact", "result")


def register(subparsers: Any) -> None:
    runs = subparsers.add_parser("runs", help="list, show, annotate, export and import recorded runs")
    sub = runs.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    sub.required = True

    p = sub.add_parser(
        "list",
        help="list runs, newest first",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_LIST_EPILOG,
    )
    p.add_argument("--outcome", choices=[o.value for o in Outcome], help="only runs with this outcome")
    p.add_argument("--thread", help="only runs of this LangGraph thread id")
    p.add_argument("--label", help="only runs with this label: KEY or KEY=VALUE")
    p.add_argument(
        "--parent",
        metavar="RUN_ID",
        help="only counterfactual runs forked from this run (id, or a prefix of at least 6 hex digits)",
    )
    p.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    p.add_argument(
        "--after",
        metavar="RUN_ID",
        help="the next page: only runs listed after this run (the last run id of the previous page; "
        "id, or a prefix of at least 6 hex digits)",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_list)

    p = sub.add_parser(
        "show",
        help="show one run: header, hop table, tool calls, answer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_SHOW_EPILOG,
    )
    p.add_argument(
        "run_id", metavar="RUN_ID", help="run id, or an unambiguous prefix of at least 6 hex digits"
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_show)

    p = sub.add_parser(
        "annotate",
        help="set a run's outcome (failure, success, unknown), reference answer or labels",
        description=(
            "Record what was learned about a run after it ended: its outcome, the answer it should "
            "have given, labels. An outcome set here overrides the one derived at record time from "
            "the run's reference; labels are merged into the run's labels."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_ANNOTATE_EPILOG,
    )
    p.add_argument("run_id", metavar="RUN", help="run id, or an unambiguous prefix of at least 6 hex digits")
    p.add_argument("--outcome", metavar="OUTCOME", help="failure, success or unknown")
    p.add_argument("--reference", metavar="TEXT", help="the run's reference (correct) answer")
    p.add_argument(
        "--label",
        dest="labels",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label to set on the run (repeatable)",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_annotate)

    p = sub.add_parser(
        "export",
        help="write runs to an OTLP/JSON file (secrets redacted unless --no-redact)",
        description="Write runs to an OTLP/JSON file. Every string attribute, event attribute and "
        "status message passes the exporter's redactor first (API keys, tokens, AWS keys, "
        "passwords, PEM private keys, e-mail addresses), as spans sent to an OTLP endpoint do; "
        "--no-redact writes the store's spans as they are.",
    )
    p.add_argument("--out", required=True, metavar="FILE", help="OTLP/JSON file to write")
    p.add_argument(
        "--no-redact",
        action="store_true",
        help="write spans unredacted (the store's full content, secrets included)",
    )
    p.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="runs to export (default: all)")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_export)

    p = sub.add_parser(
        "import", help="load an OTLP/JSON (or JSON-lines) file, a TRAIL trace or Who&When logs"
    )
    p.add_argument("file", metavar="FILE", help="the file (for --format whowhen also a folder of logs)")
    p.add_argument(
        "--format",
        choices=("auto", "otlp", "trail", "whowhen"),
        default="auto",
        help="file format (default: auto, TRAIL when the file has 'trace_id' and 'spans'; "
        "whowhen: a Who&When log, or a folder of them, one run each)",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_import)

    p = sub.add_parser(
        "pull",
        help="copy runs from an Arize Phoenix project into the store (again: only what is new)",
        description="Fetch a Phoenix project's newest traces through Phoenix's REST API and write "
        "them into the store as runs; diagnose and repair them as runs recorded locally. Spans the "
        "store already holds are kept as they are, so pulling again adds only new runs and spans. "
        "Needs the [phoenix] extra; PHOENIX_API_KEY authenticates.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_PULL_EPILOG,
    )
    p.add_argument(
        "--phoenix", required=True, metavar="URL", help="the Phoenix server, e.g. http://localhost:6006"
    )
    p.add_argument("--project", required=True, metavar="NAME", help="the Phoenix project")
    p.add_argument(
        "--limit",
        type=int,
        default=100,
        metavar="N",
        help="at most this many traces, newest first (default 100)",
    )
    p.add_argument(
        "--since", metavar="ISO", help="only traces started at or after this time (ISO 8601; UTC if no zone)"
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_pull)


_PULL_EPILOG = """\
--json prints {"url", "project", "run_ids" (traces pulled, newest first), "new_run_ids" (of those,
not in the store before), "spans_written" (spans the store did not hold), "spans_present" (spans
already there, left as they were), "labels" (run id -> the phoenix.<annotation> labels set from
annotations on the run's root span)}. An unreachable server, an unknown project or a bad --since
is a one-line error, exit code 2, and nothing is written.
example: causal-mw runs pull --phoenix http://localhost:6006 --project my-agent --since 2026-12-01"""

_LIST_EPILOG = """\
--json prints a list, newest first, of objects with the keys:
  run_id, thread_id, graph, started_at, ended_at (ISO 8601), status (ok|error|unset),
  outcome (success|failure|unknown|null), answer, n_hops (hops recorded in the run's own spans),
  hops (the run's hop count; for a fork, the whole run: the parent's hops before the fork point
  plus its own), fork_hop (the hop a fork was forked at; null for other runs), n_spans, labels,
  parent_run_id (the run a fork was forked from; null for other runs).
The table's "hops" column is `hops`; "fork of" names the parent and fork hop of a fork.
Pages (keyset, stable while new runs are recorded): the order is newest first, runs without a
start last, ties by run id; `--after RUN_ID` lists the runs after RUN_ID in that order, so the
`run_id` of a page's last object is the cursor of the next page (`--limit N --after <it>`); a
page shorter than --limit (an empty list at the end) is the last. The table prints that cursor
under a full page."""

_SHOW_EPILOG = """\
The human output lists every tool call (hop, node, tool, arguments, output, shortened).
--json prints the run's Trajectory (run_id, thread_id, graph, input, answer, reference, outcome,
status, error, started_at, ended_at, cost, labels, lineage, hops, steps, metadata); tool calls are
the `steps` of kind "tool" (tool_name, call_id, args, output in full, side_effecting, hop, node)."""

_ANNOTATE_EPILOG = """\
At least one of --outcome, --reference, --label. Bad input (an unknown outcome, a label without
'=', an unknown or ambiguous run) is a one-line error, exit code 2, and nothing is written.
--json prints {"run_id", "outcome", "reference", "labels"} as stored after the annotation.
example: causal-mw runs annotate 3f2a9c --outcome failure --reference "Paris" --label reviewer=ana"""


def _open(path: str, *, create: bool = False) -> OpenedStore:
    try:
        return open_store(path, create=create)
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
        parent = store.resolve_run_id(args.parent) if args.parent else None
        after = store.resolve_run_id(args.after) if args.after else None
        runs = store.list_runs(
            outcome=args.outcome,
            thread_id=args.thread,
            label=args.label,
            parent_run_id=parent,
            limit=args.limit,
            after=after,
        )
        hops = {r.run_id: _hop_count(store, r) for r in runs}
    if args.json:
        print_json(
            [
                {**r.model_dump(mode="json"), "hops": hops[r.run_id][0], "fork_hop": hops[r.run_id][1]}
                for r in runs
            ]
        )
        return 0
    console = _console()
    if not runs:
        console.print(f"no runs in {args.store} match")
        return 0
    console.print(_runs_table(runs, hops))
    if len(runs) == args.limit:
        console.print(f"next page: --after {runs[-1].run_id}")
    return 0


def _hop_count(store: OpenedStore, run: RunSummary) -> tuple[int, int | None]:
    """(hops, fork hop) of a listed run. A fork's own spans hold only the hops it re-ran, so its
    count is its stitched trajectory's (the parent's hops before the fork point plus its own)."""
    if run.parent_run_id is None:
        return run.n_hops, None
    try:
        trajectory = store.get_trajectory(run.run_id)
    except KeyError:
        return run.n_hops, None
    lineage = trajectory.lineage
    return max(len(trajectory.hops), run.n_hops), lineage.fork_hop if lineage is not None else None


def _runs_table(runs: Iterable[RunSummary], hops: dict[str, tuple[int, int | None]]) -> Table:
    table = Table(title="runs (newest first)", title_justify="left")
    table.add_column("run id", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("graph")
    table.add_column("hops", justify="right")
    table.add_column("fork of")
    table.add_column("outcome")
    table.add_column("status")
    table.add_column("answer")
    table.add_column("labels")
    for r in runs:
        count, fork_hop = hops.get(r.run_id, (r.n_hops, None))
        fork = ""
        if r.parent_run_id is not None:
            fork = r.parent_run_id[:12] + (f" @ hop {fork_hop}" if fork_hop is not None else "")
        table.add_row(
            r.run_id,
            _when(r.started_at),
            r.graph or "",
            str(count),
            fork,
            r.outcome.value if r.outcome is not None else "",
            r.status.value,
            _clip(r.answer, 40),
            _clip(_labels(r.labels), 60),
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
    tools = trajectory.steps_of("tool")
    if tools:
        console.print()
        console.print(_tool_table(tools))
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


def _tool_table(steps: Iterable[ToolStep]) -> Table:
    table = Table(title="tool calls", title_justify="left")
    table.add_column("hop", justify="right")
    table.add_column("node")
    table.add_column("tool")
    table.add_column("args")
    table.add_column("output")
    table.add_column("status")
    for step in steps:
        status = step.status.value + (f": {_clip(step.error, 40)}" if step.error else "")
        if step.side_effecting:
            status += " (side-effecting)"
        table.add_row(
            str(step.hop) if step.hop is not None else "",
            step.node or "",
            step.tool_name or step.name,
            _clip(step.args, 50),
            _clip(step.output, 80) or "(none)",
            status,
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


# --- annotate --------------------------------------------------------------------------------
def _parse_labels(items: list[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--label must look like KEY=VALUE, got {item!r}")
        labels[key.strip()] = value
    return labels


def _annotate(args: argparse.Namespace) -> int:
    # every argument is checked before the store is opened: bad input writes nothing
    outcome = normalize_outcome(args.outcome) if args.outcome is not None else None
    labels = _parse_labels(args.labels)
    if outcome is None and args.reference is None and not labels:
        raise ValueError("nothing to annotate: pass --outcome, --reference or --label")
    with _open(args.store) as store:
        run_id = store.resolve_run_id(args.run_id)
        store.annotate(run_id, outcome=outcome, reference=args.reference, labels=labels or None)
        trajectory = store.get_trajectory(run_id)
    result = {
        "run_id": run_id,
        "outcome": trajectory.outcome.value if trajectory.outcome is not None else None,
        "reference": trajectory.reference,
        "labels": trajectory.labels,
    }
    if args.json:
        print_json(result)
        return 0
    facts = [f"outcome {result['outcome'] or '(none)'}"]
    if trajectory.reference is not None:
        facts.append(f"reference {_clip(trajectory.reference, 60)}")
    if labels:
        facts.append(f"labels {_labels(labels)}")
    print(f"annotated {run_id}: {', '.join(facts)}")
    return 0


# --- export / import -------------------------------------------------------------------------
class _RedactingView:
    """A span store as ``export_otlp_json`` reads it, with every span redacted
    (:func:`~causal_middleware.spans.content.redact_record`); everything else is the store's."""

    def __init__(self, store: OpenedStore) -> None:
        self._store = store

    def get_spans(self, run_id: str) -> list[SpanRecord]:
        return [redact_record(span) for span in self._store.get_spans(run_id)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _export(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        if args.no_redact:
            run_ids = store.export_otlp_json(args.out, args.run_ids or None)
        else:
            view: Any = _RedactingView(store)
            run_ids = export_otlp_json(view, args.out, args.run_ids or None)
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
    if args.format == "whowhen":
        from causal_middleware.store.whowhen import import_whowhen, whowhen_files

        whowhen_files(args.file)  # a missing file or folder: before the store is created
        with _open(args.store, create=True) as store:
            run_ids = import_whowhen(store, args.file)
        return _imported(args, run_ids)
    trail = args.format == "trail" or (args.format == "auto" and _is_trail(args.file))
    with _open(args.store, create=True) as store:
        run_ids = [store.import_trail_trace(args.file)] if trail else store.import_otlp_json(args.file)
    return _imported(args, run_ids)


def _imported(args: argparse.Namespace, run_ids: list[str]) -> int:
    if args.json:
        print_json({"path": str(args.file), "run_ids": run_ids})
    else:
        print(f"imported {len(run_ids)} run{'s' if len(run_ids) != 1 else ''} from {args.file}")
        for run_id in run_ids:
            print(f"  {run_id}")
    return 0


def _pull(args: argparse.Namespace) -> int:
    from causal_middleware.store.phoenix import PhoenixSpanSource

    since = _iso(args.since, "--since") if args.since else None
    if args.limit < 1:
        raise ValueError(f"--limit must be at least 1, got {args.limit}")
    source = PhoenixSpanSource(args.phoenix)
    traces = source.traces(args.project, since=since, limit=args.limit)  # before the store is created
    with _open(args.store, create=True) as store:
        result = source.pull(store, args.project, traces=traces)
    if args.json:
        print_json(result.as_json())
        return 0
    n = len(result.run_ids)
    print(
        f"pulled {n} run{'s' if n != 1 else ''} from {args.phoenix} project {args.project!r}: "
        f"{len(result.new_run_ids)} new, {result.spans_written} spans written, "
        f"{result.spans_present} already in {args.store}"
    )
    for run_id in result.run_ids:
        print(f"  {run_id}")
    return 0


def _iso(text: str, flag: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{flag} must be an ISO 8601 time such as 2026-12-01T09:00:00Z, got {text!r}"
        ) from None
