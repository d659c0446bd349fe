"""Repair a failed run of the reference agent, offline, and export the fix as a training pair.

    python examples/repair_failed_run.py

The reference agent answers multi-hop questions over a small generated world. We corrupt one
retrieved passage of a correct run (the fault injector's ``content_corruption``), which makes the
agent answer wrong; ``repair_run`` then finds the responsible step by intervention (Causal
Responsibility Scores), keeps the most minimal fix that flips the run to success, re-validates it
by re-execution, explains it, and stores it; the fix is exported as a DPO pair.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.faults.families import FaultContext, plan_fault
from causal_middleware.repair import OfflineProposer, ReferenceVerifier, export_pairs, repair_run
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.scoring import is_correct


def main() -> None:
    world = generate_world(12, seed=0)
    # the instrumented reference agent (offline model, BM25), its Replayer and AgentAdapter
    env = reference_sweep_environment(world, store=InMemorySpanStore(), seed=0)
    corpus = env.fault_corpus()
    try:
        for question in world.questions:
            base = env.store.get_trajectory(env.run_base(question))
            if not is_correct(base.answer, question):
                continue
            context = FaultContext(
                trajectory=base, question=question, corpus=corpus, adapter=env.adapter, seed=0
            )
            plan = plan_fault("content_corruption", context, 1)
            if plan.intervention is None:
                continue
            fault = plan.intervention
            failed = env.backend.fork(base.run_id, hop=fault.hop, node=fault.node, values=fault.values)
            if is_correct(failed.answer, question):
                continue  # the agent shrugged the corruption off; try the next question
            print(f"Question: {question.text}")
            print(f"Correct answer {question.answer!r}; the corrupted run answered {failed.answer!r}\n")

            result = repair_run(
                failed,
                backend=env.backend,
                proposer=OfflineProposer(env.adapter, env.scoped_index),
                verifier=ReferenceVerifier(question.answer, question.aliases),
                store=env.store,
            )
            print(f"status: {result.status}")
            print(result.explanation, "\n")
            for score in result.crs.scores:
                crs = "-" if score.crs is None else f"{score.crs:g}"
                print(
                    f"  hop {score.hop} {score.node:<8} CRS {crs:<3} tested {score.n_tested} {score.skipped or ''}"
                )

            out = Path(tempfile.mkdtemp()) / "pairs.jsonl"
            n = export_pairs(env.store, out)
            first = json.loads(out.read_text().splitlines()[0])
            print(f"\n{n} DPO pair(s) written to {out}; keys: {sorted(first)}")
            return
        print("no corruption made the agent fail on this world")
    finally:
        env.close()


if __name__ == "__main__":
    main()
