"""Recording a user's own agent the way the README tells a user to, and diagnosing it with no adapter.

:class:`Recorded` holds one recorded run: the instrumented graph, the store, the trajectory, and
the generic diagnosis/repair collaborators built from the graph itself (``Replayer(ig)``,
``index_for_graph(ig)``, ``tool_runner(ig)``). The ``record`` fixture (conftest.py) makes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph
from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.retrievers import index_for_graph
from causal_middleware.integrations.langgraph.tool_runner import tool_runner
from langgraph.checkpoint.sqlite import SqliteSaver

from causal_middleware.attribution.base import Diagnosis, DiagnosisContext
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import repair_run
from causal_middleware.spans.model import Trajectory

THREAD = "user-thread"


@dataclass
class Recorded:
    """One recorded run of a user's agent and what diagnosing it needs (nothing hand-written)."""

    ig: InstrumentedGraph
    store: Any
    saver: SqliteSaver
    reference: str
    output: Any
    run_id: str
    config: dict[str, Any] = field(default_factory=lambda: {"configurable": {"thread_id": THREAD}})

    @property
    def trajectory(self) -> Trajectory:
        return self.store.get_trajectory(self.run_id)

    def context(self, **extra: Any) -> DiagnosisContext:
        return DiagnosisContext(
            backend=Replayer(self.ig, refused_side_effects="withhold"),
            index=index_for_graph(self.ig),
            reference=self.reference,
            rerun_tool=tool_runner(self.ig),
            **extra,
        )

    def diagnose(self, method: str, **extra: Any) -> Diagnosis:
        return get_diagnoser(method).diagnose(self.trajectory, self.context(**extra))

    def repair(self, proposer: Any = None) -> RepairResult:
        if proposer is None:
            proposer = TraceProposer(index_for_graph(self.ig), rerun_tool=tool_runner(self.ig))
        return repair_run(
            self.trajectory,
            backend=Replayer(self.ig, refused_side_effects="withhold"),
            proposer=proposer,
            verifier=ReferenceVerifier(self.reference),
            store=self.store,
        )

    def history(self) -> list[tuple[str, Any]]:
        """The user's thread as LangGraph shows it: (checkpoint id, step) newest first."""
        return [
            (snap.config["configurable"]["checkpoint_id"], snap.metadata.get("step"))
            for snap in self.ig.get_state_history(self.config)
        ]


Recorder = Callable[..., Recorded]
