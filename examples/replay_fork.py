"""Fork a recorded run of the reference agent at hop 2, empty its evidence, and see what follows.

Runs offline in a few seconds: a generated world, the offline model, BM25, in-memory checkpoints
and span store. ``python examples/replay_fork.py``
"""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from benchmarks.reference_agent import (
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_world_agent,
    run_question,
)
from benchmarks.world.generator import generate_world
from causal_middleware import Replayer, instrument
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import executed_node_steps


def hop_table(trajectory: Trajectory) -> str:
    rows = []
    for hop in trajectory.hops:
        docs = " ".join(d.id for d in hop.documents[:3]) or "(no documents)"
        rows.append(f"  hop {hop.index}: {hop.sub_query or '':<50} {docs}")
    return "\n".join(rows)


def main() -> None:
    dataset = generate_world(4, seed=3, hop_mix={3: 1.0})
    store = InMemorySpanStore()
    agent = instrument(
        build_world_agent(dataset, checkpointer=InMemorySaver()),
        store=store,
        hop_nodes=REFERENCE_HOP_NODES,
        answer_nodes=REFERENCE_ANSWER_NODES,
    )
    question = dataset.questions[0]
    run = run_question(agent, question)
    assert run.run_id is not None
    original = store.get_trajectory(run.run_id)
    print(f"question: {question.text}\ngold answer: {question.answer}\n")
    print(f"original run {original.run_id}: answer {original.answer!r}")
    print(hop_table(original))

    replayer = Replayer(agent)
    point = replayer.locate(run.run_id, hop=2, node="retrieve")
    print(
        f"\nfork point: node {point.node!r} at step {point.langgraph_step}, checkpoint {point.checkpoint_id}"
    )

    for mode in ("regenerate", "frozen", "replay"):
        fork = replayer.fork(run.run_id, hop=2, node="retrieve", values={"evidence": []}, mode=mode)
        ran = len(executed_node_steps(fork))
        print(f"\n{mode} fork {fork.run_id} (parent {fork.lineage.parent_run_id}, {ran} node executions)")
        print(f"  answer {fork.answer!r}")
        print(hop_table(fork))

    report = replayer.check_determinism(run.run_id, hop=2, node="retrieve", values={"evidence": []})
    print(f"\ndeterministic re-runs: {report.deterministic} (models {report.settings.models})")
    print(f"forks of {run.run_id} in the store: {len(store.list_runs(parent_run_id=run.run_id))}")


if __name__ == "__main__":
    main()
