"""The generated world and the reference agent, offline, in a few seconds.

Generates a small world, runs the reference agent (BM25 + the offline model) on one question and
prints its hop table, then forks the run before its first retrieval, empties the evidence and
shows the agent re-querying. Finally prints accuracy by hop count on all the questions.

Run: python examples/reference_agent.py
"""

from __future__ import annotations

from collections import defaultdict

from benchmarks.reference_agent import (
    build_world_agent,
    evidence_update,
    run_question,
)
from benchmarks.world.generator import generate_world
from causal_middleware.tasks.scoring import is_correct


def print_hops(hops: list[dict]) -> None:
    for hop in hops:
        docs = ", ".join(f"{d['id']}({d['score']:.1f})" for d in hop["documents"][:3]) or "-"
        print(f"  hop {hop['index']}: {hop['sub_query']!r:60} -> {hop['fact'] or 'NOT FOUND':22} [{docs}]")


def main() -> None:
    world = generate_world(20, seed=0)
    agent = build_world_agent(world)  # BM25 (k=5), offline model, in-memory checkpoints
    # the first 3-hop question the agent answers in three searches
    for question in (q for q in world.questions if q.n_hops == 3):
        run = run_question(agent, question)
        if is_correct(run.answer, question) and len(run.queries) == 3:
            break
    print(f"Q: {question.text}\n   gold: {question.answer}")
    for hop in question.hops:
        print(f"   gold hop {hop.index}: {hop.question} -> {hop.answer}")
    print(f"A: {run.answer} (correct)")
    print_hops(run.hops)

    # Intervene: fork at the checkpoint before the first retrieval and make it return nothing.
    history = list(reversed(list(agent.get_state_history(run.config))))
    before_retrieve = next(s for s in history if s.next == ("retrieve",))
    fork = agent.update_state(before_retrieve.config, evidence_update([]), as_node="retrieve")
    forked = agent.invoke(None, fork)
    print(f"\nFork with empty evidence at hop 1 -> {forked['answer']}")
    print_hops(forked["hops"])

    by_hops: dict[int, list[bool]] = defaultdict(list)
    for q in world.questions:
        by_hops[q.n_hops].append(is_correct(run_question(agent, q).answer, q))
    summary = ", ".join(f"{h}-hop {sum(v)}/{len(v)}" for h, v in sorted(by_hops.items()))
    print(f"\nAccuracy on {len(world.questions)} questions: {summary}")


if __name__ == "__main__":
    main()
