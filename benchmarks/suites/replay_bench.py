"""The replay benchmark on the reference agent (generated world, offline model, BM25).

``model_latency_s`` adds a fixed sleep to every model call, standing in for a hosted model's
latency (the offline model answers in microseconds, which makes wall-time ratios measure only
the framework's overhead); the report says which latency was used.
"""

from __future__ import annotations

import time
from typing import Any

from causal_middleware.integrations.langgraph.instrument import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from benchmarks.reference_agent import (
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_world_agent,
    run_question,
)
from benchmarks.suites.replay import run_replay_bench
from causal_middleware.replay.request import SuffixMode
from causal_middleware.store.memory import InMemorySpanStore

__all__ = ["reference_replay_bench"]


class _Latency(BaseCallbackHandler):
    """Sleeps at the start of every model call (callbacks run inline for sync models)."""

    run_inline = True

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(self.seconds)


def reference_replay_bench(
    *,
    n_questions: int = 5,
    hops: int = 3,
    seed: int = 0,
    modes: tuple[SuffixMode, ...] = ("regenerate", "frozen", "replay"),
    model_latency_s: float = 0.0,
    progress: Any = None,
) -> dict[str, Any]:
    """Run :func:`benchmarks.suites.replay.run_replay_bench` on the reference agent over
    ``n_questions`` generated ``hops``-hop questions. Returns its report plus a ``setup`` key."""
    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.world.generator import generate_world

    if model_latency_s < 0:
        raise ValueError(f"model_latency_s must be >= 0, got {model_latency_s}")
    dataset = generate_world(n_questions, seed=seed, hop_mix={hops: 1.0})
    model = OfflineChatModel(seed=seed)
    if model_latency_s:
        model = model.model_copy(update={"callbacks": [_Latency(model_latency_s)]})
    agent = build_world_agent(dataset, model=model, checkpointer=InMemorySaver())
    store = InMemorySpanStore()
    graph = instrument(agent, store=store, hop_nodes=REFERENCE_HOP_NODES, answer_nodes=REFERENCE_ANSWER_NODES)
    replayer = Replayer(graph)
    counter = iter(range(1_000_000))

    def run_agent(i: int) -> str:
        question = dataset.questions[i % len(dataset.questions)]
        run = run_question(graph, question, thread_id=f"bench-{i}-{next(counter)}")
        assert run.run_id is not None
        return run.run_id

    report = run_replay_bench(
        run_agent, replayer, store.get_trajectory, n_runs=n_questions, modes=modes, progress=progress
    )
    graph.shutdown()
    report["setup"] = {
        "agent": "reference_agent (offline model, BM25, generated world)",
        "n_questions": n_questions,
        "hops": hops,
        "seed": seed,
        "model_latency_s": model_latency_s,
        "checkpointer": "InMemorySaver",
        "store": "InMemorySpanStore",
    }
    return report
