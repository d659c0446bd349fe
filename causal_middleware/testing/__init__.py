"""Test doubles for code that forks agent runs: a scripted agent and a fake fork backend.

``FakeForkBackend(agent)`` runs a :class:`ScriptedAgent` and forks its runs by re-running the
script from the fork point, recording every run as real spans in an
:class:`~causal_middleware.store.memory.InMemorySpanStore` (the way the OpenTelemetry SDK's
``InMemorySpanExporter`` stands in for an exporter). Diagnosers and repairers under test get
real, stitched :class:`~causal_middleware.spans.model.Trajectory` objects without a graph or a
model::

    agent = ScriptedAgent(nodes=[Node("guess", lambda s: {"answer": s["input"].upper()}, answer_key="answer")],
                          entry="guess", route=lambda state, node, out: None)
    backend = FakeForkBackend(agent)
    run = backend.run("paris", reference="PARIS")
    fork = backend.fork(run.run_id, node="guess", values={"answer": "LYON"})
"""

from causal_middleware.testing.adapter import ScriptedAdapter
from causal_middleware.testing.agent import ExecutedStep, Node, Output, ScriptedAgent, State
from causal_middleware.testing.backend import (
    DiscardingFakeForkBackend,
    FakeForkBackend,
    FakeRun,
    Judge,
    exact_match,
)

__all__ = [
    "DiscardingFakeForkBackend",
    "ExecutedStep",
    "FakeForkBackend",
    "FakeRun",
    "Judge",
    "Node",
    "Output",
    "ScriptedAdapter",
    "ScriptedAgent",
    "State",
    "exact_match",
]
