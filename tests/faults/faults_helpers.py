"""Helpers for the fault-injection tests: a small generated world and the live reference agent
over it (offline model, BM25, real checkpointer and span store), base runs, checks on stored
forks, and hand-built trajectories for the pure functions."""

from __future__ import annotations

import functools
from typing import Any

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from benchmarks.world.grammar import WORLD_GRAMMAR
from causal_middleware.faults.corpus import FaultCorpus
from causal_middleware.faults.eligibility import search_hops
from causal_middleware.faults.sweep import SweepEnvironment, base_run, run_sweep
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Document, Hop, RetrievalStep, Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import executed_node_steps
from causal_middleware.tasks.model import Dataset, HopGold, Passage, Question
from causal_middleware.tasks.scoring import is_correct


@functools.cache
def small_world() -> Dataset:
    """Six three-hop questions and two two-hop ones over one generated corpus (built once)."""
    return generate_world(8, seed=0, hop_mix={2: 0.25, 3: 0.75})


def make_env(**kw: Any) -> SweepEnvironment:
    """The live reference agent over ``small_world()``, with an in-memory store."""
    return reference_sweep_environment(small_world(), store=InMemorySpanStore(), seed=0, **kw)


def correct_question(env: SweepEnvironment, n_hops: int = 3) -> tuple[Question, Trajectory]:
    """The first question with ``n_hops`` hops whose base run (made or reused) answers correctly
    with exactly one search per hop (so search hop k looked for gold hop k)."""
    for question in small_world().questions:
        if question.n_hops != n_hops:
            continue
        base = base_run(env, question, seed=0)
        if is_correct(base.answer, question) and search_hops(base) == list(range(1, n_hops + 1)):
            return question, base
    raise AssertionError(f"no clean correct {n_hops}-hop base run in the small world")


# --- hand-built trajectories for the pure functions --------------------------------------------
def doc(pid: str, text: str, title: str = "") -> Document:
    return Document(id=pid, text=text, score=1.0, metadata={"title": title})


def trajectory(hops: list[tuple[str, list[Document]]], answer: str | None = "x") -> Trajectory:
    """A run whose hop k searched ``hops[k-1][0]`` and retrieved ``hops[k-1][1]``."""
    built = []
    for i, (query, documents) in enumerate(hops, start=1):
        step = RetrievalStep(step_id=f"{i:016x}", node="retrieve", hop=i, query=query, documents=documents)
        built.append(Hop(index=i, sub_query=query, documents=documents, steps=[step]))
    return Trajectory(run_id="a" * 32, hops=built, answer=answer)


def question(answer: str, hops: list[tuple[str, str, str | None]], text: str, **kw: Any) -> Question:
    """A question whose gold hops are (sub-question, answer, relation)."""
    return Question(
        id=kw.pop("id", "qx"),
        text=text,
        answer=answer,
        hops=[HopGold(index=i, question=q, answer=a, relation=r) for i, (q, a, r) in enumerate(hops, 1)],
        **kw,
    )


def corpus(*items: tuple[str, str, str, str]) -> FaultCorpus:
    """A corpus of (id, entity, type, text) passages, each about one typed entity."""
    return FaultCorpus(
        [
            Passage(id=pid, title=entity, text=text, metadata={"entity": entity, "type": etype})
            for pid, entity, etype, text in items
        ],
        grammar=WORLD_GRAMMAR,
    )


# --- checks on a stored fork -------------------------------------------------------------------
def sweep_one(env: SweepEnvironment, question: Question, family: str, depth: int, **kw: Any) -> Any:
    """Run one unit through the sweep; returns (record, stored fork trajectory or None)."""
    result = run_sweep(env, [question], depths=[depth], families=[family], seed=kw.pop("seed", 0), **kw)
    records = [r for r in result.records if r.family == family and r.requested_hop == depth]
    if not records:  # finished by an earlier test of the module: read it back
        from causal_middleware.faults.sweep import latest_records

        records = [latest_records(env.store)[result.keys[0]]]
    record = records[0]
    fork = env.store.get_trajectory(record.fork_run_id) if record.fork_run_id else None
    return record, fork


def assert_live_suffix(
    env: SweepEnvironment, base: Trajectory, fork: Trajectory, hop: int, node: str
) -> None:
    """The fork is a regenerate fork of ``base`` at (hop, node) whose suffix really ran: its own
    node spans (none frozen) all come after the fork step and include the answer node; the hops
    before ``hop`` are the base's, unchanged."""
    lineage = fork.lineage
    assert lineage is not None and lineage.parent_run_id == base.run_id
    assert lineage.mode == "regenerate" and lineage.fork_hop == hop and lineage.fork_node == node
    assert lineage.intervention is not None and lineage.intervention.kind.startswith("fault:")
    executed = executed_node_steps(fork)
    assert executed and all(s.langgraph_step > lineage.fork_step for s in executed)
    assert "answer" in {s.node for s in executed}
    own_node_spans = [
        s for s in env.store.get_spans(fork.run_id) if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "node"
    ]
    assert own_node_spans and all(A.CAUSAL_NODE_FROZEN not in s.attributes for s in own_node_spans)
    for index in range(1, hop):
        assert fork.hop(index).sub_query == base.hop(index).sub_query
        assert [d.id for d in fork.hop(index).documents] == [d.id for d in base.hop(index).documents]
