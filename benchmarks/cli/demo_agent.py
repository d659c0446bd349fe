"""The agent provider for runs ``causal-mw demo`` recorded: ``causal-mw repair RUN`` without ``--graph``
rebuilds the reference agent on the demo's world, with the checkpoints the demo kept next to the store."""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path

from causal_middleware.cli.live_agent import LiveAgent, load_spec
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.base import SpanStore

__all__ = ["DEMO_AGENT", "DemoAgentProvider"]


class DemoAgentProvider:
    """Recognises the reference agent's runs (graph ``reference_agent[...]``)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--n", type=int, default=60, help="demo agent: the demo's number of questions (default 60)"
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="demo agent: the demo's world and model seed (default 0)"
        )
        parser.add_argument(
            "--retriever-k", type=int, default=5, help="demo agent: documents per retrieval (default 5)"
        )
        parser.add_argument(
            "--budget", type=int, default=4, help="demo agent: searches per question (default 4)"
        )

    def open(
        self, args: argparse.Namespace, store: SpanStore, trajectory: Trajectory
    ) -> ContextManager[tuple[LiveAgent, list[str]]] | None:
        if not (trajectory.graph or "reference_agent").startswith("reference_agent"):
            return None
        return _demo_agent(args, store, trajectory)


DEMO_AGENT = DemoAgentProvider()


@contextlib.contextmanager
def _demo_agent(
    args: argparse.Namespace, store: SpanStore, trajectory: Trajectory
) -> Iterator[tuple[LiveAgent, list[str]]]:
    from causal_middleware.integrations.langgraph.instrument import instrument
    from causal_middleware.integrations.langgraph.replayer import Replayer
    from langgraph.checkpoint.sqlite import SqliteSaver

    from benchmarks.cli.demo import _checkpoint_path
    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        build_reference_agent,
        make_index,
    )
    from benchmarks.reference_agent.adapter import ReferenceAgentAdapter
    from benchmarks.world.generator import generate_world
    from causal_middleware.retrieval.langchain import IndexRetriever

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
