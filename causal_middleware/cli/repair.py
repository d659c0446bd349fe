"""``causal-mw repair RUN_ID``: find, validate and explain the minimal repair of a failed run.

``--graph`` loads the agent the way ``langgraph.json`` names graphs; the graph must use the
checkpointer that holds the run's checkpoints. Without ``--graph`` an installed agent provider
(``cli/plugins.py``; the benchmark package's rebuilds ``causal-mw demo``'s agent) must recognise the run. The offline proposer then derives every step's alternatives from the trace (no adapter:
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
from collections.abc import Iterator
from typing import Any

from causal_middleware.cli._common import (
    add_json_arg,
    add_state_key_arg,
    add_store_arg,
    load_verifier,
    print_json,
)
from causal_middleware.cli.live_agent import (
    LiveAgent,
    live_agent,
    load_chat_model,
    parse_state_keys,
)
from causal_middleware.cli.plugins import agent_providers, provided_agent
from causal_middleware.counterfactual.render import shorten
from causal_middleware.repair.models import RepairResult


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
        "default: an installed agent provider's (causal-mw demo's runs)",
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
    add_state_key_arg(p)
    for provider in agent_providers():
        provider.add_arguments(p)
    p.add_argument("--checkpoints", help="checkpoint database (default <store>.checkpoints.db)")
    p.add_argument("--reference", help="the correct answer, when the run has no stored reference")
    p.add_argument("--k", type=int, default=3, help="proposals per candidate step (default 3)")
    p.add_argument("--max-reexecutions", type=int, help="cap on the search's forks (default: none)")
    p.add_argument(
        "--max-steps",
        type=int,
        choices=(1, 2),
        default=1,
        help="steps a repair may change: 1 (default) or 2, a second step searched on the first "
        "step's forks when no single step's change holds",
    )
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
    from causal_middleware.counterfactual.verifiers import ReferenceVerifier, as_verifier
    from causal_middleware.repair.service import RepairConfig, repair_run
    from causal_middleware.store.open import open_store

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
        max_steps=args.max_steps,
    )
    try:
        store = open_store(args.store, create=False)
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
    from causal_middleware.counterfactual.proposers import LLMProposer, OfflineProposer
    from causal_middleware.counterfactual.trace_proposer import TraceProposer

    if args.proposer == "llm":
        return LLMProposer(load_chat_model(args.model, "model"), temperature=args.temperature)
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
    with provided_agent(args, store, trajectory) as provided:
        yield provided


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
        from causal_middleware.counterfactual.minimality import changed_leaves

        console.print(f"[bold]What the repair changes[/] ({repair.node}, hop {repair.hop}):")
        for path, before, after in changed_leaves(repair.original, repair.repaired)[:8]:
            name = path.lstrip(".") or "output"
            console.print(f"  {name}: {shorten(before or '(absent)', 150)!r}")
            console.print(f"  {' ' * len(name)}  -> {shorten(after or '(absent)', 150)!r}")
        console.print(f"Fork with the repair: [bold]causal-mw runs show {repair.fork_run_id}[/]")
