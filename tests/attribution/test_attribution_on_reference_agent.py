"""path_aware and the probe diagnosers on the real reference agent, forked by the real replayer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.hops import hop_views
from causal_middleware.cli.main import main
from causal_middleware.spans.model import Document
from causal_middleware.store.sqlite import SqliteSpanStore
from causal_middleware.tasks.scoring import is_correct

MODULE = Path(__file__).with_name("reference_world.py")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from causal_middleware.integrations.langgraph.instrument import instrument
    from causal_middleware.integrations.langgraph.replayer import Replayer, load_graph

    from benchmarks.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        ReferenceAgentAdapter,
        run_question,
    )

    world = load_graph(f"{MODULE}:graph")  # the module the CLI will load, cached by path
    module = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == str(MODULE))
    path = str(tmp_path_factory.mktemp("reference") / "runs.db")
    store = SqliteSpanStore(path)
    graph = instrument(world, store=store, hop_nodes=REFERENCE_HOP_NODES, answer_nodes=REFERENCE_ANSWER_NODES)
    replayer = Replayer(graph, store=store)
    adapter = ReferenceAgentAdapter()
    passages = module.dataset.passage_map()
    for question in module.dataset.questions:
        if question.n_hops != 3:
            continue
        run = run_question(graph, question)
        if not is_correct(run.answer, question):
            continue
        base = store.get_trajectory(run.run_id)
        views = hop_views(base)
        if len(views) != 3:
            continue
        # corrupt hop 1's answer (the bridge entity) in its supporting passage, for this fork only
        gold = question.hops[0]
        support = gold.supporting_passage_ids[0]
        docs = [
            Document(
                id=d.id,
                text=passages[d.id].text.replace(gold.answer, "Zarnok Velluth")
                if d.id == support
                else d.text,
                score=d.score,
                metadata=d.metadata,
            )
            for d in views[0].documents
        ]
        iv = adapter.evidence_update(base, 1, docs)
        fault = replayer.fork(
            run.run_id, hop=1, node=iv.node, values=iv.values, labels={"fault": {"injected_hop": 1}}
        )
        if not is_correct(fault.answer, question):
            yield {
                "store": store,
                "path": path,
                "fault": fault,
                "question": question,
                "context": DiagnosisContext(
                    backend=replayer, adapter=adapter, index=module.index, question=question
                ),
            }
            graph.shutdown()
            store.close()
            return
    pytest.fail("no 3-hop question of the small world failed after its bridge entity was corrupted")


def test_path_aware_finds_the_corrupted_bridge_with_one_probe(live) -> None:
    d = get_diagnoser("path_aware").diagnose(live["fault"], live["context"])
    assert (d.hop, d.stage, d.uncertain) == (1, "retrieval", False)
    assert d.cost.reexecutions == 1 and d.probes[0].restored is True and d.probes[0].mode == "regenerate"
    blind = get_diagnoser("path_aware", audit=False).diagnose(live["fault"], live["context"])
    assert blind.details["audit"] is None and 1 in blind.candidates


def test_causal_order_probes_on_the_real_agent(live) -> None:
    s = get_diagnoser("suffix_regen").diagnose(live["fault"], live["context"])
    assert s.hop == 1 and s.cost.reexecutions == 1  # regenerating from hop 1 re-runs the fault away
    f = get_diagnoser("frozen_hop").diagnose(live["fault"], live["context"])
    assert f.hop != 1 and f.probes[0].restored is False  # the propagated bridge fault is missed
    assert f.cost.reexecutions >= 2


def test_cli_diagnose_with_graph(live, capsys) -> None:
    code = main(
        [
            "diagnose",
            live["fault"].run_id,
            "--method",
            "path_aware",
            "--graph",
            f"{MODULE}:graph",
            "--index",
            f"{MODULE}:index",
            "--json",
            "--store",
            live["path"],
        ]
    )
    data = json.loads(capsys.readouterr().out)
    # no adapter: the generic, trace-derived interventions find the same hop, step by step
    assert code == 0 and data["hop"] == 1 and data["details"]["probed"] is True
    assert data["details"]["generic"] is True and data["node"] in ("decide", "retrieve", "read")
    assert any(p["restored"] for p in data["details"]["probes"] if p["hop"] == 1)
    # the hand-written adapter stays an override, and agrees
    code = main(
        [
            "diagnose",
            live["fault"].run_id,
            "--method",
            "path_aware",
            "--graph",
            f"{MODULE}:graph",
            "--index",
            f"{MODULE}:index",
            "--adapter",
            "benchmarks.reference_agent.adapter:ReferenceAgentAdapter",
            "--json",
            "--store",
            live["path"],
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["hop"] == 1 and data["probes"][0]["restored"] is True
