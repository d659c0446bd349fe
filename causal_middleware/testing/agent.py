"""A scripted agent: named nodes that compute their output from the state, and a router.

The agent is a plain state machine, the shape of a LangGraph graph: the entry node runs on the
initial state, :attr:`ScriptedAgent.route` folds each node's output into the state and names the
next node (``None`` ends the run). Node outputs must be JSON-serialisable: they are recorded as
the node spans' ``output.value``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExecutedStep", "Node", "Output", "ScriptedAgent", "State"]

State = dict[str, Any]
"""The agent's mutable run state (JSON-like, like a LangGraph state dict)."""
Output = dict[str, Any]
"""What one node returns: the update it makes to the state."""


@dataclass(frozen=True)
class Node:
    """One node of a :class:`ScriptedAgent`.

    ``query`` makes it a retrieval node: its output's ``documents_key`` list (dicts with ``id``,
    ``text`` and optional ``score`` / ``title``) is recorded as a retrieval span whose input is
    ``query(state)`` read before the node ran, named ``retriever``. ``answer_key`` makes it an answer node: its output's
    ``answer_key`` value is the run's answer (recorded as an answer span and judged against the
    run's reference).
    """

    name: str
    run: Callable[[State], Output]
    query: Callable[[State], str] | None = None
    documents_key: str = "evidence"
    retriever: str = "retriever"
    answer_key: str | None = None


@dataclass(frozen=True)
class ExecutedStep:
    """One node execution of a run, in order: its node, hop (None outside hops) and output."""

    node: str
    hop: int | None
    output: Output
    query: str | None = None


@dataclass
class ScriptedAgent:
    """A deterministic agent program for tests of code that forks runs.

    ``start`` builds the initial state from the run's input; ``hop_of`` gives the hop of the node
    about to run (``None`` for nodes outside a hop, e.g. the final answer); ``route`` folds a
    node's output into the state and returns the next node's name, or ``None`` to end the run.
    ``executions`` counts live node executions (frozen and fixed steps do not count).
    """

    nodes: Sequence[Node]
    entry: str
    route: Callable[[State, str, Output], str | None]
    start: Callable[[str], State] = field(default=lambda text: {"input": text})
    hop_of: Callable[[State, str], int | None] = field(default=lambda state, node: None)
    name: str = "scripted-agent"
    executions: int = 0

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"ScriptedAgent node names must be unique, got {names}")
        if self.entry not in names:
            raise ValueError(f"ScriptedAgent entry {self.entry!r} is not one of its nodes {names}")

    def node(self, name: str) -> Node:
        """The node called ``name``; ``KeyError`` naming the known nodes otherwise."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"the agent has no node {name!r}; its nodes are {[n.name for n in self.nodes]}")

    @property
    def answer_nodes(self) -> frozenset[str]:
        """The nodes that produce the run's answer (a frozen fork re-runs them by default)."""
        return frozenset(n.name for n in self.nodes if n.answer_key is not None)

    def execute(self, name: str, state: State) -> Output:
        """Run node ``name`` live on ``state``."""
        self.executions += 1
        return self.node(name).run(state)
