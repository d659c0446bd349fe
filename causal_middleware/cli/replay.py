"""``causal-mw replay``: fork a recorded run at a step, intervene, and print the fork's hop table.

The graph is loaded the way ``langgraph.json`` names graphs (``path/to/file.py:graph`` or
``package.module:graph``, a compiled graph, an instrumented one, or a factory returning either);
it must use the checkpointer that holds the run's checkpoints (e.g. a ``SqliteSaver`` file).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.spans.model import Hop, Trajectory
from causal_middleware.store.stitch import INHERITED, INTERVENED, REPLAYED, executed_node_steps

MODES = ("regenerate", "frozen", "replay")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="fork a recorded run at a step, replace its output, and run the suffix",
        description=(
            "Fork RUN_ID just before the named step (--hop and/or --node, or --step), replace that "
            "step's output with --set, and regenerate, freeze or replay the rest. The original run "
            "and its checkpoints are left untouched; the fork is stored as a new run linked to it."
        ),
    )
    p.add_argument(
        "run_id", metavar="RUN_ID", help="run id, or an unambiguous prefix of at least 6 hex digits"
    )
    p.add_argument(
        "--graph",
        required=True,
        metavar="SPEC",
        help="the agent graph, as langgraph.json names it: path/to/file.py:graph or package.module:graph",
    )
    p.add_argument("--hop", type=int, help="fork at this hop (its first node, or --node within it)")
    p.add_argument("--node", help="fork at this node (its first execution, or within --hop)")
    p.add_argument("--step", type=int, help="fork at this langgraph_step")
    p.add_argument(
        "--set",
        dest="values",
        metavar="JSON",
        help="JSON object of state keys to put in the step's output (default: re-run it unchanged)",
    )
    p.add_argument(
        "--mode", choices=MODES, default="regenerate", help="what the suffix does (default regenerate)"
    )
    p.add_argument(
        "--rerun", nargs="+", metavar="NODE", help="frozen mode: nodes that run live (default: answer nodes)"
    )
    p.add_argument(
        "--overwrite", nargs="+", default=[], metavar="KEY", help="replace these keys' whole value"
    )
    p.add_argument(
        "--allow-side-effects", action="store_true", help="let side-effecting tools and nodes really run"
    )
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="label the fork run")
    p.add_argument(
        "--fork-history",
        choices=("run", "thread"),
        default="run",
        help="what the fork's own thread starts with: the parent run's checkpoints (default) or the "
        "whole thread's",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_replay)


def _parse_values(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        values = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--set is not valid JSON ({exc.msg} at position {exc.pos}): {raw!r}") from None
    if not isinstance(values, dict):
        raise ValueError(f"--set must be a JSON object of state keys, got {type(values).__name__}: {raw!r}")
    return values


def _parse_labels(items: list[str]) -> dict[str, Any]:
    labels: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--label must look like KEY=VALUE, got {item!r}")
        labels[key] = value
    return labels


def _replay(args: argparse.Namespace) -> int:
    from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph, instrument
    from causal_middleware.integrations.langgraph.replayer import load_graph
    from causal_middleware.integrations.langgraph.replayer.locate import answer_nodes_of, hop_nodes_of
    from causal_middleware.integrations.langgraph.replayer.values import check_fork_values
    from causal_middleware.store.open import open_store

    if args.hop is None and args.node is None and args.step is None:
        raise ValueError("name the fork point: --hop, --node or --step")
    values = _parse_values(args.values)
    labels = _parse_labels(args.label)
    graph = load_graph(args.graph)
    # bad values are refused here, before a fork thread or fork run exists
    check_fork_values(graph, values, args.overwrite)
    if isinstance(graph, InstrumentedGraph) and graph.store is not None:
        # the module instrumented its graph itself: forks go where its runs went
        return _fork_and_print(args, graph, graph.store, values, labels)
    try:
        store = open_store(args.store, create=False)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"span store not found: {args.store} (pass --store / set CAUSAL_MW_STORE)"
        ) from None
    with store:
        if isinstance(graph, InstrumentedGraph):
            instrumented = graph
        else:
            # number the fork's hops and find its answer the way the recorded run's were
            parent = store.get_trajectory(store.resolve_run_id(args.run_id))
            instrumented = instrument(
                graph,
                store=store,
                hop_nodes=hop_nodes_of(parent) or None,
                answer_nodes=answer_nodes_of(parent) or None,
            )
        try:
            return _fork_and_print(args, instrumented, store, values, labels)
        finally:
            if instrumented is not graph:
                instrumented.shutdown()


def _fork_and_print(
    args: argparse.Namespace, graph: Any, store: Any, values: dict[str, Any] | None, labels: dict[str, Any]
) -> int:
    from causal_middleware.integrations.langgraph.replayer import Replayer

    run_id = store.resolve_run_id(args.run_id)
    fork = Replayer(graph, store=store, fork_history=args.fork_history).fork(
        run_id,
        hop=args.hop,
        node=args.node,
        step=args.step,
        values=values,
        mode=args.mode,
        rerun=args.rerun,
        allow_side_effects=args.allow_side_effects,
        labels=labels or None,
        overwrite=args.overwrite,
    )
    parent = store.get_trajectory(run_id)
    summary = fork_summary(fork, parent)
    if args.json:
        print_json(summary)
        return 0
    _print(summary, fork)
    return 0


def _origin(hop: Hop) -> str:
    kinds = set()
    for step in hop.steps:
        if step.attributes.get(INTERVENED):
            kinds.add("intervened")
        elif step.attributes.get(INHERITED):
            kinds.add("parent")
        elif step.attributes.get(REPLAYED):
            kinds.add("replayed")
        elif step.attributes.get("causal.node.frozen"):
            kinds.add("frozen")
        else:
            kinds.add("fork")
    order = ("parent", "intervened", "frozen", "replayed", "fork")
    return "+".join(k for k in order if k in kinds)


def fork_summary(fork: Trajectory, parent: Trajectory | None = None) -> dict[str, Any]:
    """The JSON printed by ``causal-mw replay --json``."""
    lineage = fork.lineage
    intervention = lineage.intervention if lineage is not None else None
    return {
        "run_id": fork.run_id,
        "thread_id": fork.thread_id,
        "parent_run_id": lineage.parent_run_id if lineage is not None else None,
        "parent_thread_id": parent.thread_id if parent is not None else None,
        "mode": lineage.mode if lineage is not None else None,
        "fork": {
            "hop": lineage.fork_hop if lineage is not None else None,
            "node": lineage.fork_node if lineage is not None else None,
            "step": lineage.fork_step if lineage is not None else None,
            "checkpoint_id": lineage.fork_checkpoint_id if lineage is not None else None,
        },
        "intervention": intervention.model_dump(mode="json") if intervention is not None else None,
        "answer": fork.answer,
        "parent_answer": parent.answer if parent is not None else None,
        "status": fork.status.value,
        "executed_nodes": len(executed_node_steps(fork)),
        "labels": fork.labels,
        "hops": [
            {
                "index": hop.index,
                "origin": _origin(hop),
                "nodes": list(dict.fromkeys(s.node for s in hop.steps if s.node)),
                "sub_query": hop.sub_query,
                "documents": [d.id for d in hop.documents],
            }
            for hop in fork.hops
        ],
    }


def _clip(text: Any, width: int) -> str:
    value = "" if text is None else str(text)
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 1] + "…"


def _print(summary: dict[str, Any], fork: Trajectory) -> None:
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=False, width=160)
    where = summary["fork"]
    console.print(f"fork run: {summary['run_id']} (thread {summary['thread_id']})", markup=False)
    console.print(
        f"parent:   {summary['parent_run_id']} at hop {where['hop']}, node {where['node']}, step {where['step']} "
        f"({summary['mode']}; {summary['executed_nodes']} node executions)",
        markup=False,
    )
    table = Table(title="hops", title_justify="left")
    for column in ("hop", "origin", "node(s)", "sub-query", "documents"):
        table.add_column(column)
    for hop in summary["hops"]:
        table.add_row(
            str(hop["index"]),
            hop["origin"],
            " > ".join(hop["nodes"]),
            _clip(hop["sub_query"], 50),
            _clip(" ".join(hop["documents"]) or "(none)", 60),
        )
    console.print(table)
    console.print(f"answer: {fork.answer if fork.answer is not None else '(none)'}", markup=False)
    if summary["parent_answer"] != fork.answer:
        console.print(f"(parent's answer: {summary['parent_answer']})", markup=False)
