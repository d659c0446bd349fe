"""``causal-mw diagnose RUN_ID --method NAME``: which hop of a stored failed run caused the failure.

Passive methods (``rule``, ``coverage``, ``holistic``, ``iterative``, ``llm_judge``, the LLM forms)
run on the stored trajectory alone. Probe methods (``frozen_hop``, ``suffix_regen``, ``crs``) fork
the run on a live agent: ``--graph`` names it the way ``langgraph.json`` does, and the replayer
of ``causal_middleware.integrations.langgraph`` drives it. ``path_aware`` runs passively without
``--graph`` and adds its probes with it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json

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
        help="AgentAdapter for hop repairs (module:attr; an instance, class or factory). "
        "Default: the reference agent's adapter when the graph has its nodes",
    )
    p.add_argument(
        "--index",
        metavar="SPEC",
        help="retrieval index the agent searches (module:attr; instance or factory)",
    )
    p.add_argument(
        "--judge", metavar="SPEC", help="chat model for LLM methods (module:attr; instance or factory)"
    )
    p.add_argument("--reference", help="gold answer (default: the run's stored reference)")
    p.add_argument("--max-reexecutions", type=int, metavar="N", help="cap on forks for probe methods")
    p.add_argument(
        "--save", action="store_true", help="keep the diagnosis in the store as a 'diagnosis' record"
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_diagnose)


def load_object(spec: str, what: str) -> Any:
    """The object ``module:attr`` (or ``path/file.py:attr``) names; a class or factory is called."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"--{what} {spec!r} must look like 'package.module:attr' or 'path/to/file.py:attr'")
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py") or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise FileNotFoundError(f"--{what} file {where!r} does not exist")
        module_spec = importlib.util.spec_from_file_location(f"_causal_{what}_{path.stem}", path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot import {where!r} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ValueError(f"cannot import module {where!r} of --{what} {spec!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{where!r} has no attribute {attr!r} (--{what} {spec!r})")
        obj = getattr(obj, part)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "invoke") and not hasattr(obj, "search")):
        obj = obj()
    return obj


def _default_adapter(graph: Any) -> Any:
    nodes = set(getattr(getattr(graph, "graph", graph), "nodes", {}) or {})
    if {"decide", "retrieve", "read"} <= nodes:
        from causal_middleware.integrations.langgraph.reference_agent.adapter import ReferenceAgentAdapter

        return ReferenceAgentAdapter()
    return None


def _diagnose(args: argparse.Namespace) -> int:
    from causal_middleware.attribution.base import DiagnosisContext
    from causal_middleware.attribution.registry import get_diagnoser
    from causal_middleware.store.sqlite import SqliteSpanStore

    method = args.method
    if method in PROBE_METHODS and not args.graph:
        raise ValueError(
            f"--method {method} probes the run by re-executing it and needs a live agent: pass --graph "
            "path/to/file.py:graph (or package.module:graph)"
        )
    if args.max_reexecutions is not None and args.max_reexecutions < 0:
        raise ValueError(f"--max-reexecutions must be >= 0, got {args.max_reexecutions}")
    try:
        store = SqliteSpanStore(args.store, create=False)
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
        if args.index:
            context["index"] = load_object(args.index, "index")
        if args.judge:
            context["chat_model"] = load_object(args.judge, "judge")
        instrumented = None
        if args.graph:
            instrumented, backend, adapter = _live_agent(args, store, trajectory)
            context["backend"] = backend
            context["adapter"] = adapter
        try:
            diagnosis = get_diagnoser(method).diagnose(trajectory, DiagnosisContext(**context))
        finally:
            if instrumented is not None:
                instrumented.shutdown()
        if args.save:
            store.put_record("diagnosis", run_id, diagnosis.model_dump(mode="json"))
    if args.json:
        print_json(diagnosis.model_dump(mode="json"))
        return 0 if diagnosis.ran else 1
    _print(diagnosis)
    return 0 if diagnosis.ran else 1


def _live_agent(args: argparse.Namespace, store: Any, trajectory: Any) -> tuple[Any, Any, Any]:
    """(instrumented graph to shut down or None, fork backend, adapter) for ``--graph``."""
    if importlib.util.find_spec("causal_middleware.integrations.langgraph.replayer") is None:
        raise ValueError(
            "--graph needs the LangGraph replayer (causal_middleware.integrations.langgraph.replayer)"
        )
    from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph, instrument
    from causal_middleware.integrations.langgraph.replayer import Replayer, load_graph
    from causal_middleware.integrations.langgraph.replayer.locate import answer_nodes_of, hop_nodes_of

    graph = load_graph(args.graph)
    adapter = load_object(args.adapter, "adapter") if args.adapter else _default_adapter(graph)
    owned = None
    if isinstance(graph, InstrumentedGraph):
        instrumented = graph
    else:
        instrumented = owned = instrument(
            graph,
            store=store,
            hop_nodes=hop_nodes_of(trajectory) or None,
            answer_nodes=answer_nodes_of(trajectory) or None,
        )
    backend = Replayer(instrumented, store=instrumented.store or store)
    return owned, backend, adapter


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
    for p in diagnosis.probes:
        outcome = {True: "restored", False: "still wrong", None: "unknown"}[p.restored]
        detail = f"error: {p.error}" if p.error else f"answer {p.answer!r} ({outcome})"
        console.print(
            f"  probe      : hop {p.hop} {p.mode}, {p.sub_query_source} sub-query {p.sub_query!r} -> {detail}"
        )
    sys.stdout.flush()
