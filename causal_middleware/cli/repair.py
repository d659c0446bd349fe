"""``causal-mw repair RUN_ID``: find, validate and explain the minimal repair of a failed run;
``causal-mw bench repair``: the repair benchmark (``register_bench``).

Without ``--graph`` the command rebuilds the agent ``causal-mw demo`` ran: the reference agent on
the default world (``--n``/``--seed`` as given to the demo), with the checkpoints the demo kept
next to the store (``<store>.checkpoints.db``). With ``--graph`` it loads any graph the way
``langgraph.json`` names graphs; the graph must use the checkpointer that holds the run's
checkpoints. The offline proposer then derives every step's alternatives from the trace (no adapter:
documents left out or replaced by the graph's own retriever, tools re-run, values from the step's
evidence); ``--adapter`` and ``--index`` override it, ``--proposer llm --model SPEC`` asks a chat model.

``--json`` prints the :class:`~causal_middleware.repair.models.RepairResult`: ``run_id``, ``status``
(repaired | no_flip | unvalidated | not_failed), ``explanation``, ``repair`` (``node``, ``hop``,
``target`` state key, ``evidence`` ids, ``original``, ``repaired``, ``minimality``, ``validation``,
``fork_run_id``), ``crs`` (per-step scores and probes), ``cost`` and ``pair``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_store_arg, load_verifier, print_json
from causal_middleware.cli.live_agent import LiveAgent, live_agent, load_spec, parse_state_keys
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.render import shorten


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "repair",
        help="find which step made a run fail, fix it minimally, validate and explain the fix",
        description=(
            "Causal Responsibility Scores over RUN_ID's steps (K proposals per step, forks with the "
            "suffix regenerated, causal order, early stop), then the most minimal flipping proposal "
            "re-validated by re-execution. Results are kept in the store (repair and diagnosis records)."
        ),
    )
    p.add_argument(
        "run_id", metavar="RUN_ID", help="run id, or an unambiguous prefix of at least 6 hex digits"
    )
    p.add_argument(
        "--graph",
        metavar="SPEC",
        help="the agent graph (path/to/file.py:graph or package.module:graph); "
        "default: the reference agent of causal-mw demo",
    )
    p.add_argument(
        "--adapter",
        metavar="SPEC",
        help="optional AgentAdapter (module:attr) overriding the interventions derived from the trace",
    )
    p.add_argument(
        "--index",
        metavar="SPEC",
        help="Index (module:attr) for re-retrieval; default with --graph: the graph's own retriever",
    )
    p.add_argument(
        "--proposer",
        choices=("offline", "llm"),
        default="offline",
        help="who proposes alternative step outputs: offline (derived from the trace, no model; "
        "default) or llm (a chat model given by --model)",
    )
    p.add_argument(
        "--model",
        metavar="SPEC",
        help="LangChain chat model for --proposer llm (module:attr or file.py:attr; instance or factory)",
    )
    p.add_argument(
        "--temperature", type=float, default=0.7, help="--proposer llm sampling temperature (default 0.7)"
    )
    p.add_argument(
        "--verifier",
        metavar="SPEC",
        help="module:callable judging a fork, f(answer) -> True/False/None; default: the reference answer",
    )
    p.add_argument(
        "--state-key",
        action="append",
        metavar="NODE=KEY",
        help="the state key holding NODE's retrieved documents when its update holds several (repeatable)",
    )
    p.add_argument(
        "--n", type=int, default=60, help="default agent: the demo's number of questions (default 60)"
    )
    p.add_argument(
        "--seed", type=int, default=0, help="default agent: the demo's world and model seed (default 0)"
    )
    p.add_argument(
        "--retriever-k", type=int, default=5, help="default agent: documents per retrieval (default 5)"
    )
    p.add_argument("--budget", type=int, default=4, help="default agent: searches per question (default 4)")
    p.add_argument("--checkpoints", help="checkpoint database (default <store>.checkpoints.db)")
    p.add_argument("--reference", help="the correct answer, when the run has no stored reference")
    p.add_argument("--k", type=int, default=3, help="proposals per candidate step (default 3)")
    p.add_argument("--max-reexecutions", type=int, help="cap on the search's forks (default: none)")
    p.add_argument(
        "--validate",
        type=int,
        nargs=2,
        default=(2, 3),
        metavar=("M", "N"),
        help="the repair must flip the outcome in M of N re-runs (default 2 3)",
    )
    p.add_argument("--no-early-stop", action="store_true", help="score every candidate step")
    p.add_argument(
        "--keep-probe-forks",
        action="store_true",
        help="keep every probe fork's checkpoints (default: only the repair's fork is kept)",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_repair)


def _repair(args: argparse.Namespace) -> int:
    from causal_middleware.repair.service import RepairConfig, repair_run
    from causal_middleware.repair.verifiers import ReferenceVerifier, as_verifier
    from causal_middleware.store.sqlite import SqliteSpanStore

    if args.proposer == "llm" and not args.model:
        raise ValueError("--proposer llm needs --model module:attr (a LangChain chat model)")
    if args.model and args.proposer != "llm":
        raise ValueError("--model is for --proposer llm")
    m, n = args.validate
    config = RepairConfig(
        k=args.k,
        early_stop=not args.no_early_stop,
        max_reexecutions=args.max_reexecutions,
        validation_runs=n,
        validation_min_flips=m,
        keep_probe_forks=args.keep_probe_forks,
    )
    try:
        store = SqliteSpanStore(args.store, create=False)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"span store not found: {args.store} (pass --store or set CAUSAL_MW_STORE)"
        ) from None
    with store:
        run_id = store.resolve_run_id(args.run_id)
        trajectory = store.get_trajectory(run_id)
        with _agent(args, store, trajectory) as (agent, aliases):
            reference = args.reference or trajectory.reference
            if args.verifier:
                verifier = as_verifier(load_verifier(args.verifier))
            elif reference is None:
                raise ValueError(
                    f"run {run_id} has no stored reference answer; pass --reference ANSWER "
                    "(or --verifier module:callable)"
                )
            else:
                verifier = ReferenceVerifier(reference, aliases)
            result = repair_run(
                trajectory,
                backend=agent.backend,
                proposer=_proposer(args, agent),
                verifier=verifier,
                store=store,
                config=config,
            )
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        _print(result)
    return 0


def _proposer(args: argparse.Namespace, agent: LiveAgent) -> Any:
    """The proposer ``--proposer`` names: offline (the adapter's when one is given, else derived
    from the trace) or an LLM."""
    from causal_middleware.repair.proposers import LLMProposer, OfflineProposer
    from causal_middleware.repair.trace_proposer import TraceProposer

    if args.proposer == "llm":
        return LLMProposer(load_spec(args.model, "model"), temperature=args.temperature)
    if agent.adapter is not None:
        return OfflineProposer(agent.adapter, agent.index)
    return TraceProposer(
        agent.index, indexes=agent.indexes, rerun_tool=agent.rerun_tool, state_keys=agent.state_keys
    )


@contextlib.contextmanager
def _agent(args: argparse.Namespace, store: Any, trajectory: Any) -> Iterator[tuple[LiveAgent, list[str]]]:
    """The run's agent and the answer's aliases; closes what it opened."""
    if args.graph:
        with live_agent(
            args.graph,
            store,
            trajectory,
            adapter=args.adapter,
            index=args.index,
            state_keys=parse_state_keys(args.state_key),
        ) as agent:
            yield agent, []
        return
    with _demo_agent(args, store, trajectory) as demo:
        yield demo


@contextlib.contextmanager
def _demo_agent(
    args: argparse.Namespace, store: Any, trajectory: Any
) -> Iterator[tuple[LiveAgent, list[str]]]:
    """The reference agent ``causal-mw demo`` recorded with (the benchmark agent, its adapter)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from causal_middleware.cli.demo import _checkpoint_path
    from causal_middleware.integrations.langgraph.instrument import instrument
    from causal_middleware.integrations.langgraph.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        build_reference_agent,
        make_index,
    )
    from causal_middleware.integrations.langgraph.reference_agent.adapter import ReferenceAgentAdapter
    from causal_middleware.integrations.langgraph.replayer import Replayer
    from causal_middleware.models.offline import OfflineChatModel
    from causal_middleware.retrieval.langchain import IndexRetriever
    from causal_middleware.world.generator import generate_world

    checkpoints = _checkpoint_path(args.store, args.checkpoints)
    if checkpoints != ":memory:" and not Path(checkpoints).exists():
        raise FileNotFoundError(
            f"checkpoint database not found: {checkpoints} (record runs with causal-mw demo, or pass --graph)"
        )
    world = generate_world(args.n, seed=args.seed)
    retriever = str(trajectory.labels.get("retriever") or "bm25")
    index = make_index(retriever, world)
    question_id = trajectory.labels.get("question_id")
    question = next((q for q in world.questions if q.id == question_id), None)
    aliases = list(question.aliases) if question is not None else []
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    instrumented = None
    try:
        graph = build_reference_agent(
            IndexRetriever(index=index, k=args.retriever_k),
            OfflineChatModel(seed=args.seed),
            budget=args.budget,
            checkpointer=SqliteSaver(connection),
        )
        instrumented = instrument(
            graph,
            store=store,
            hop_nodes=REFERENCE_HOP_NODES,
            answer_nodes=REFERENCE_ANSWER_NODES,
            graph_name=trajectory.graph or f"reference_agent[{retriever}]",
        )
        adapter = None if args.adapter is None else load_spec(args.adapter, "adapter")
        agent = LiveAgent(
            backend=Replayer(instrumented, store=store, refused_side_effects="withhold"),
            adapter=adapter or ReferenceAgentAdapter(),
            index=index,
        )
        yield agent, aliases
    finally:
        if instrumented is not None:
            instrumented.shutdown()
        connection.close()


def _print(result: RepairResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    colour = {"repaired": "green", "not_failed": "cyan"}.get(result.status, "yellow")
    console.print(f"[bold]Run[/] {result.run_id}: [{colour}]{result.status}[/]")
    console.print(result.explanation)
    table = Table(title="Causal Responsibility Scores (candidate steps, causal order)")
    for column in ("hop", "node", "step", "CRS", "tested", "flips", "note"):
        table.add_column(column)
    for score in result.crs.scores:
        table.add_row(
            "-" if score.hop is None else str(score.hop),
            score.node,
            "-" if score.langgraph_step is None else str(score.langgraph_step),
            "-" if score.crs is None else f"{score.crs:g}",
            str(score.n_tested),
            str(score.n_flips),
            score.skipped or "",
        )
    console.print(table)
    repair = result.repair
    if repair is not None:
        from causal_middleware.repair.minimality import changed_leaves

        console.print(f"[bold]What the repair changes[/] ({repair.node}, hop {repair.hop}):")
        for path, before, after in changed_leaves(repair.original, repair.repaired)[:8]:
            name = path.lstrip(".") or "output"
            console.print(f"  {name}: {shorten(before or '(absent)', 150)!r}")
            console.print(f"  {' ' * len(name)}  -> {shorten(after or '(absent)', 150)!r}")
        console.print(f"Fork with the repair: [bold]causal-mw runs show {repair.fork_run_id}[/]")


def register_bench(bench_subparsers: Any) -> None:
    """Add ``bench repair`` to the ``causal-mw bench`` group."""
    p = bench_subparsers.add_parser(
        "repair",
        help="CausalFlow repair of the default world's natural and injected failures",
        description="Writes results.json with n_failed, repair_rate, post_repair_accuracy, minimality_mean, "
        "crs_precision, reexec_per_repaired, naive_reexec_per_repaired (also under natural and injected).",
    )
    p.add_argument(
        "--out", required=True, metavar="PATH", help="results.json to write (a directory: PATH/repair.json)"
    )
    p.add_argument("--n", type=int, default=100, help="questions of the default world (default 100)")
    p.add_argument("--seed", type=int, default=0, help="world, model and fault seed (default 0)")
    p.add_argument(
        "--inject-questions", type=int, default=20, help="questions faults are injected into (default 20)"
    )
    p.add_argument(
        "--max-injected", type=int, default=40, help="injected failures repaired at most (default 40)"
    )
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2], help="fault depths (default 1 2)")
    p.add_argument("--families", nargs="+", help="fault families (default: all seven)")
    p.add_argument("--k", type=int, default=3, help="proposals per candidate step (default 3)")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="the offline model's sampling temperature in [0, 1] (default 0: deterministic re-runs)",
    )
    add_json_arg(p)
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    import sys
    import time

    from causal_middleware.bench.repair import DEFAULT_FAMILIES, format_repair_table
    from causal_middleware.cli.bench import run_repair

    if args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    if not 0.0 <= args.temperature <= 1.0:
        raise ValueError(f"--temperature must be in [0, 1], got {args.temperature}")
    started = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr)

    results = run_repair(
        {
            "n": args.n,
            "seed": args.seed,
            "inject_questions": args.inject_questions,
            "families": list(args.families or DEFAULT_FAMILIES),
            "depths": list(args.depths),
            "max_injected": args.max_injected,
            "k": args.k,
            "temperature": args.temperature,
            "progress": None if args.json else say,
        }
    )
    out = Path(args.out)
    if out.is_dir() or args.out.endswith("/"):
        out.mkdir(parents=True, exist_ok=True)
        out = out / "repair.json"
    out.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    if args.json:
        print_json({k: v for k, v in results.items() if k != "runs"})
    else:
        print(format_repair_table(results))
        print(f"wrote {out}")
    return 0
