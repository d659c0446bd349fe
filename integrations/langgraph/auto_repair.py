"""``repair_on_failure()``: the on-failure repair queue for any instrumented graph, with no adapter.

    graph = instrument(my_graph, store="runs.db", on_failure=repair_on_failure())

Each finished run is judged in the background (default: its recorded outcome, which
``config={"metadata": {"causal_reference": ...}}`` sets at record time; any
:class:`~causal_middleware.protocols.Verifier` or ``callable(answer) -> bool | None`` instead); a failed run is diagnosed and repaired on forks of this very graph, with the
interventions derived from the trace (:class:`~causal_middleware.counterfactual.trace_proposer.TraceProposer`
over the graph's own retrievers and tools). ``invoke`` never waits for it.
"""

from __future__ import annotations

from collections.abc import Callable

from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import OutcomeVerifier, ReferenceVerifier
from causal_middleware.protocols import Proposer, Verdict, Verifier
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import RepairConfig, RepairService
from causal_middleware.repair.trigger import RepairQueue
from causal_middleware.retrieval.base import Index
from causal_middleware.retrieval.langchain import RetrieverIndex

from .instrument import InstrumentedGraph
from .replayer import Replayer
from .retrievers import find_retrievers, lookup_index
from .tool_runner import tool_runner

__all__ = ["repair_on_failure", "trace_proposer_for"]


def trace_proposer_for(graph: InstrumentedGraph) -> TraceProposer:
    """A :class:`TraceProposer` over ``graph``'s own retrievers (one per node) and tools."""
    indexes: dict[str, Index] = {
        node: RetrieverIndex(sources[0])
        for node, sources in find_retrievers(graph).items()
        if len(sources) == 1
    }
    channels = [
        str(k)
        for k in (getattr(graph.graph, "channels", None) or {})
        if not str(k).startswith(("branch:", "__"))
    ]
    return TraceProposer(
        lookup_index(graph).index,
        indexes=indexes,
        rerun_tool=tool_runner(graph),
        state_keys=graph.state_keys,
        channels=channels or None,
    )


def repair_on_failure(
    *,
    judge: Verifier | Callable[..., bool | None] | None = None,
    verifier: Verifier | Callable[..., bool | None] | None = None,
    proposer: Proposer | None = None,
    config: RepairConfig | None = None,
    maxsize: int = 16,
    on_result: Callable[[str, Verdict, RepairResult | None], None] | None = None,
) -> Callable[[InstrumentedGraph], RepairQueue]:
    """A factory for ``instrument(..., on_failure=...)`` (see the module docstring).

    ``judge`` decides which runs failed (default
    :class:`~causal_middleware.counterfactual.verifiers.OutcomeVerifier`: the recorded outcome); ``verifier`` judges the
    forks (default: the run's reference answer); ``proposer`` defaults to the trace-derived one.
    """

    def build(graph: InstrumentedGraph) -> RepairQueue:
        if graph.store is None:
            raise ValueError("repair_on_failure needs a local span store: instrument(graph, store=...)")
        service = RepairService(
            backend=Replayer(graph, refused_side_effects="withhold"),
            proposer=proposer if proposer is not None else trace_proposer_for(graph),
            verifier=verifier if verifier is not None else ReferenceVerifier(),
            store=graph.store,
            config=config,
        )
        chosen = judge if judge is not None else OutcomeVerifier()
        return RepairQueue(service, judge=chosen, store=graph.store, maxsize=maxsize, on_result=on_result)

    return build
