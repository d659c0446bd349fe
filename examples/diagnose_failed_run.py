"""Which hop broke this run? Corrupt one hop of the reference agent, then ask every offline diagnoser.

The reference agentic-RAG agent (offline model, BM25) answers 3-hop questions of a small generated
world. For a few questions it answered correctly, the replayer forks the run with a corrupted
passage at hop 1, 2 or 3 (the bridge entity or the answer fact renamed), the agent re-runs the
suffix live, and each failed fork is diagnosed. Finally the AgenticRAG-FP style report
(results.json, report.md, accuracy_by_depth.png) is written to a temporary folder.

Run: ``python examples/diagnose_failed_run.py`` (offline, about half a minute on 2 cores).
"""

from __future__ import annotations

import tempfile

from causal_middleware.integrations.langgraph.instrument import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer

from benchmarks.reference_agent import (
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    ReferenceAgentAdapter,
    build_world_agent,
    make_index,
    run_question,
)
from benchmarks.suites.fp_report import FPUnit, build_results, write_report
from benchmarks.world.generator import generate_world
from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.hops import hop_views
from causal_middleware.faults.model import CorruptionRecord, FaultLabel
from causal_middleware.retrieval.langchain import IndexRetriever
from causal_middleware.spans.model import Document
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.scoring import is_correct

DIAGNOSERS = ["rule", "coverage", "holistic", "iterative", "frozen_hop", "suffix_regen", "crs", "path_aware"]
FAKE_NAME = "Zarnok Velluth"


def main() -> None:
    dataset = generate_world(16, seed=0)
    passages = dataset.passage_map()
    index = make_index("bm25", dataset)
    store = InMemorySpanStore()
    agent = instrument(
        build_world_agent(dataset, retriever=IndexRetriever(index=index, k=5)),
        store=store,
        hop_nodes=REFERENCE_HOP_NODES,
        answer_nodes=REFERENCE_ANSWER_NODES,
    )
    replayer, adapter = Replayer(agent, store=store), ReferenceAgentAdapter()
    units: list[FPUnit] = []
    for question in [q for q in dataset.questions if q.n_hops == 3][:4]:
        run = run_question(agent, question)
        if not is_correct(run.answer, question):
            continue
        base = store.get_trajectory(run.run_id)
        views = hop_views(base)
        for hop in range(1, min(3, len(views)) + 1):
            gold = question.hops[hop - 1]
            support = gold.supporting_passage_ids[0]
            corrupted = [
                Document(
                    id=d.id,
                    text=passages[d.id].text.replace(gold.answer, FAKE_NAME) if d.id == support else d.text,
                    score=d.score,
                    metadata=d.metadata,
                )
                for d in views[hop - 1].documents
            ]
            label = FaultLabel(
                family="content_corruption",
                stage="retrieval",
                requested_hop=hop,
                injected_hop=hop,
                base_run_id=base.run_id,
                question_id=question.id,
                corruption=CorruptionRecord(
                    kind="answer_fact" if hop == 3 else "bridge_entity",
                    original=gold.answer,
                    corrupted=FAKE_NAME,
                    passage_id=support,
                    seed=0,
                ),
            )
            iv = adapter.evidence_update(base, hop, corrupted)
            fault = replayer.fork(
                base.run_id, hop=hop, node=iv.node, values=iv.values, labels={"fault": label.model_dump()}
            )
            recovered = is_correct(fault.answer, question)
            diagnoses = {}
            if not recovered:
                context = DiagnosisContext(backend=replayer, adapter=adapter, index=index, question=question)
                diagnoses = {name: get_diagnoser(name).diagnose(fault, context) for name in DIAGNOSERS}
                row = "  ".join(f"{n}={d.hop if d.ran else '-'}" for n, d in diagnoses.items())
                print(f"{question.id} corrupted at hop {hop}: answered {fault.answer!r} -> {row}")
            else:
                print(f"{question.id} corrupted at hop {hop}: the agent recovered ({fault.answer!r})")
            units.append(
                FPUnit(label=label, recovered=recovered, diagnoses=diagnoses, n_hops=len(fault.hops))
            )
    agent.shutdown()
    results = build_results(units, DIAGNOSERS, {"world": "generate_world(16, seed=0)", "faults": "content"})
    out = tempfile.mkdtemp(prefix="attribution-")
    paths = write_report(results, out)
    pa = results["diagnosers"]["path_aware"]
    print(f"path_aware accuracy by depth: { {d: c['acc'] for d, c in pa['by_depth'].items()} }")
    print(
        f"re-executions per correct diagnosis: path_aware {pa['reexec_per_correct']}, "
        f"frozen_hop {results['diagnosers']['frozen_hop']['reexec_per_correct']}, "
        f"suffix_regen {results['diagnosers']['suffix_regen']['reexec_per_correct']}"
    )
    print(f"report: {paths['markdown']}  plot: {paths['png']}")


if __name__ == "__main__":
    main()
