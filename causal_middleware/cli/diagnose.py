"""``causal-mw diagnose RUN_ID --method NAME``: which step of a stored failed run caused the failure.

Passive methods (``rule``, ``coverage``, ``holistic``, ``iterative``, ``llm_judge``, the LLM forms)
run on the stored trajectory alone. Probe methods (``frozen_hop``, ``suffix_regen``, ``crs``) fork
the run on a live agent: ``--graph`` names it the way ``langgraph.json`` does, and the replayer
of ``causal_middleware.integrations.langgraph`` drives it. ``path_aware`` runs passively without
``--graph`` and adds its probes with it. With ``--graph`` alone the interventions are derived from
the trace (documents left out or replaced by the graph's own retriever, tools re-run, values from
the step's evidence); ``--adapter`` and ``--index`` override them.

``--json`` prints the :class:`~causal_middleware.attribution.base.Diagnosis`: ``method``,
``run_id``, ``ran``, ``reason``, ``stage``, ``hop``, ``node``, ``step_id``, ``root_cause``,
``step_scores``, ``cost``, ``probes`` and ``details`` (``details.evidence``: ``state_key``, ``ids``,
``change``; ``details.probes``: every intervention tried, with its result).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from causal_middleware.cli._common import (
    add_json_arg,
    add_state_key_arg,
    add_store_arg,
    load_verifier,
    print_json,
)
from causal_middleware.cli.live_agent import live_agent, load_chat_model, load_spec, parse_state_keys

PROBE_METHODS = ("frozen_hop", "suffix_regen", "crs")


def register(subparsers: Any) -> None:
    from causal_middleware.attribution.registry import available

    p = subparsers.add_parser(
        "diagnose",
        help="attribute a stored failed run to the hop (and stage) that caused it",
        description=(
            "Run one diagnoser on a stored run. Passive methods need only the store; probe methods "
            f"({', '.join(PROBE_METHODS)}) fork the run on a live agent given by --graph."
        ),
    )
    p.add_argument(
        "run_id", metavar="RUN_ID", help="run id, or an unambiguous prefix of at least 6 hex digits"
    )
    p.add_argument("--method", required=True, choices=available(), help="the diagnoser")
    p.add_argument(
        "--graph",
        metavar="SPEC",
        help="live agent for probes, as langgraph.json names it: path/to/file.py:graph or package.module:graph",
    )
    p.add_argument(
        "--adapter",
        metavar="SPEC",
        help="optional AgentAdapter overriding the interventions derived from the trace "
        "(module:attr or file.py:attr; an instance, class or factory)",
    )
    p.add_argument(
        "--index",
        metavar="SPEC",
        help="retrieval index for audits and re-retrieval (module:attr; instance or factory). "
        "Default with --graph: the graph's own LangChain retriever",
    )
    p.add_argument(
        "--verifier",
        metavar="SPEC",
        help="module:callable or file.py:callable judging a fork: f(answer) -> True/False/None "
        "(annotate its parameter Trajectory to get the whole run); default: the reference answer",
    )
    add_state_key_arg(p)
    p.add_argument(
        "--judge",
        metavar="SPEC",
        help="chat model for LLM methods: local[:NAME], gguf:PATH, anthropic[:MODEL], offline, or module:attr",
    )
    p.add_argument("--reference", help="gold answer (default: the run's stored reference)")
    p.add_argument("--max-reexecutions", type=int, metavar="N", help="cap on forks for probe methods")
    p.add_argument(
        "--save", action="store_true", help="keep the diagnosis in the store as a 'diagnosis' record"
    )
    p.add_argument(
        "--write-back",
        choices=("phoenix",),
        help="write the verdict to the collector the run came from, as a 'root_cause' span annotation "
        "on the blamed span (needs --phoenix)",
    )
    p.add_argument("--phoenix", metavar="URL", help="the Phoenix server for --write-back phoenix")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_diagnose)


def _diagnose(args: argparse.Namespace) -> int:
    from causal_middleware.attribution.base import DiagnosisContext
    from causal_middleware.attribution.registry import get_diagnoser
    from causal_middleware.store.open import open_store

    method = args.method
    if method in PROBE_METHODS and not args.graph:
        raise ValueError(
            f"--method {method} probes the run by re-executing it and needs a live agent: pass --graph "
            "path/to/file.py:graph (or package.module:graph)"
        )
    if args.max_reexecutions is not None and args.max_reexecutions < 0:
        raise ValueError(f"--max-reexecutions must be >= 0, got {args.max_reexecutions}")
    phoenix = _phoenix_sink(args)  # reachable before a diagnosis that may take minutes
    try:
        store = open_store(args.store, create=False)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"span store not found: {args.store} (pass --store / set CAUSAL_MW_STORE)"
        ) from None
    with store:
        run_id = store.resolve_run_id(args.run_id)
        trajectory = store.get_trajectory(run_id)
        context: dict[str, Any] = {
            "reference": args.reference if args.reference is not None else trajectory.reference,
            "max_reexecutions": args.max_reexecutions,
        }
        if args.judge:
            context["chat_model"] = load_chat_model(args.judge, "judge")
        if args.verifier:
            context["verifier"] = load_verifier(args.verifier)
        keys = parse_state_keys(args.state_key)
        if args.graph:
            with live_agent(
                args.graph, store, trajectory, adapter=args.adapter, index=args.index, state_keys=keys
            ) as agent:
                context.update(
                    backend=agent.backend,
                    adapter=agent.adapter,
                    index=agent.index,
                    indexes=agent.indexes or None,
                    rerun_tool=agent.rerun_tool,
                    state_keys=agent.state_keys or None,
                )
                diagnosis = get_diagnoser(method).diagnose(trajectory, DiagnosisContext(**context))
        else:
            if args.index:
                context["index"] = load_spec(args.index, "index")
            diagnosis = get_diagnoser(method).diagnose(trajectory, DiagnosisContext(**context))
        if args.save:
            store.put_record("diagnosis", run_id, diagnosis.model_dump(mode="json"))
        written = None
        if phoenix is not None:
            from causal_middleware.repair.verdicts import write_back_diagnosis

            written = write_back_diagnosis(phoenix, store, diagnosis, trajectory)
    if args.json:
        payload = diagnosis.model_dump(mode="json")
        if phoenix is not None:
            payload["written_back"] = written
        print_json(payload)
        return 0 if diagnosis.ran else 1
    _print(diagnosis)
    if written is not None:
        print(
            f"  written to : {written['phoenix']}, annotation {written['name']!r} on span {written['span_id']}"
        )
    return 0 if diagnosis.ran else 1


def _phoenix_sink(args: argparse.Namespace) -> Any:
    if args.write_back is None:
        if args.phoenix:
            raise ValueError("--phoenix names where to write the verdict: add --write-back phoenix")
        return None
    if not args.phoenix:
        raise ValueError(
            "--write-back phoenix needs --phoenix URL (the Phoenix server, e.g. http://localhost:6006)"
        )
    from causal_middleware.store.phoenix import PhoenixSpanSource

    source = PhoenixSpanSource(args.phoenix)
    source.projects()
    return source


def _print(diagnosis: Any) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    if not diagnosis.ran:
        console.print(
            f"[bold]{diagnosis.method}[/bold] did not run on {diagnosis.run_id}: {diagnosis.reason}"
        )
        return
    where = f"hop {diagnosis.hop}" if diagnosis.hop is not None else "outside every hop"
    console.print(f"[bold]{diagnosis.method}[/bold] on run {diagnosis.run_id}")
    console.print(f"  root cause : stage [bold]{diagnosis.stage}[/bold], {where}")
    if diagnosis.step_id:
        console.print(f"  step       : {diagnosis.node} ({diagnosis.step_id})")
    if diagnosis.uncertain:
        console.print(f"  uncertain  : candidates {diagnosis.candidates}")
    console.print(f"  propagation: {'yes' if diagnosis.propagation else 'no'}; severity {diagnosis.severity}")
    console.print(f"  why        : {diagnosis.root_cause}")
    c = diagnosis.cost
    console.print(
        f"  cost       : {c.llm_calls} LLM calls, {c.tokens} tokens, {c.reexecutions} re-executions, "
        f"{c.retrievals} index searches; gold used: {'yes' if diagnosis.uses_gold else 'no'}"
    )
    evidence = diagnosis.details.get("evidence") if isinstance(diagnosis.details, dict) else None
    if evidence:
        console.print(f"  evidence   : {evidence.get('state_key')} {evidence.get('ids')}")
    for probe in (diagnosis.details.get("probes") or [])[:12] if isinstance(diagnosis.details, dict) else []:
        outcome = {True: "restored", False: "still wrong", None: "unknown"}[probe.get("restored")]
        detail = (
            f"error: {probe['error']}"
            if probe.get("error")
            else f"answer {probe.get('answer')!r} ({outcome})"
        )
        console.print(f"  probe      : {probe.get('node')}: {probe.get('change')} -> {detail}")
    for p in diagnosis.probes:
        outcome = {True: "restored", False: "still wrong", None: "unknown"}[p.restored]
        detail = f"error: {p.error}" if p.error else f"answer {p.answer!r} ({outcome})"
        if p.uninformative:
            detail = "same evidence as recorded, no fork run"
        change = (
            f"fact set to {p.fact!r}"
            if p.target == "reading"
            else f"{p.sub_query_source} sub-query {p.sub_query!r}"
        )
        console.print(f"  probe      : hop {p.hop} {p.mode}, {change} -> {detail}")
    sys.stdout.flush()
