"""Interventions on the reference agent through LangGraph checkpoints: fork before a node, replace
its output with ``update_state(..., as_node=node)``, re-run the suffix live and watch it react."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.models.offline import OfflineChatModel, Susceptibility
from benchmarks.reference_agent import (
    ReferenceAgentAdapter,
    answer_now_update,
    build_reference_agent,
    evidence_update,
    fact_update,
    run_question,
    subquery_update,
)
from benchmarks.world.templates import sub_query
from causal_middleware.spans.model import Document, Hop, NodeStep, Trajectory
from causal_middleware.tasks.scoring import is_correct


def checkpoint_before(agent: Any, config: dict[str, Any], node: str, occurrence: int) -> Any:
    """The snapshot whose next step is the ``occurrence``-th (1-based) execution of ``node``."""
    oldest_first = list(reversed(list(agent.get_state_history(config))))
    matches = [s for s in oldest_first if s.next == (node,)]
    assert len(matches) >= occurrence, f"{node} ran {len(matches)} times"
    return matches[occurrence - 1]


@pytest.fixture
def robust_agent(toy_retriever):
    return build_reference_agent(toy_retriever, OfflineChatModel(susceptibility=Susceptibility.robust()))


def _solved_two_hop(agent, world):
    """A 2-hop question the agent solves in exactly two searches (two searches of budget left)."""
    for q in world.questions:
        if q.n_hops == 2:
            run = run_question(agent, q)
            if is_correct(run.answer, q) and len(run.queries) == 2:
                return q, run
    raise AssertionError("the toy world has no cleanly solved 2-hop question")


def test_empty_evidence_makes_the_agent_requery_and_recover(robust_agent, toy_world):
    q, base = _solved_two_hop(robust_agent, toy_world)
    pre = checkpoint_before(robust_agent, base.config, "retrieve", 1)
    assert pre.values["sub_query"] == base.queries[0]
    fork = robust_agent.update_state(pre.config, evidence_update([]), as_node="retrieve")
    out = robust_agent.invoke(None, fork)
    assert out["hops"][0]["documents"] == [] and out["hops"][0]["fact"] is None
    assert len(out["queries"]) == 3, "one extra search after the empty retrieval"
    assert out["queries"][1] != out["queries"][0], "the re-query is a reformulation"
    assert is_correct(out["answer"], q)
    # the original branch is untouched
    assert robust_agent.get_state(base.config).values["answer"] == base.answer


def test_early_termination_stops_the_search(robust_agent, toy_world):
    q, base = _solved_two_hop(robust_agent, toy_world)
    pre = checkpoint_before(robust_agent, base.config, "decide", 2)
    fork = robust_agent.update_state(pre.config, answer_now_update(), as_node="decide")
    out = robust_agent.invoke(None, fork)
    assert out["queries"] == base.queries[:1]
    assert out["answer"] == "unknown"
    assert not is_correct(out["answer"], q)


def test_a_corrupted_bridge_fact_propagates_downstream(toy_retriever, toy_world):
    # an agent that never re-checks a fact after a dead end (see test_dead_end_recheck.py)
    trusting = Susceptibility.robust().model_copy(update={"verify_dead_ends": 0.0})
    agent = build_reference_agent(toy_retriever, OfflineChatModel(susceptibility=trusting))
    q, base = _solved_two_hop(agent, toy_world)
    pre = checkpoint_before(agent, base.config, "read", 1)
    wrong_bridge = "Nobody Inparticular"
    update = fact_update(1, pre.values["sub_query"], pre.values["evidence"], wrong_bridge)
    fork = agent.update_state(pre.config, update, as_node="read")
    out = agent.invoke(None, fork)
    assert out["hops"][0]["fact"] == wrong_bridge
    assert wrong_bridge in out["queries"][1], "the next sub-query carries the (wrong) bridge entity"
    assert not is_correct(out["answer"], q)


def _drifted_query(q, world) -> str:
    """Hop 2's relation asked about another question's entity: a plausible but wrong sub-query."""
    relation = q.hops[1].relation
    for other in world.questions:
        for k, hop in enumerate(other.hops):
            subject = other.metadata["entities"][k]
            if hop.relation == relation and subject != q.hops[0].answer:
                return sub_query(relation, subject)
    raise AssertionError("no other entity with that relation in the toy world")


@pytest.mark.parametrize("gullible", [False, True])
def test_query_drift_is_caught_or_followed_per_profile(toy_retriever, toy_world, gullible):
    profile = Susceptibility.robust().model_copy(update={"accept_drifted_fact": 1.0 if gullible else 0.0})
    agent = build_reference_agent(toy_retriever, OfflineChatModel(susceptibility=profile))
    q, base = _solved_two_hop(agent, toy_world)
    drifted = _drifted_query(q, toy_world)
    pre = checkpoint_before(agent, base.config, "decide", 2)
    fork = agent.update_state(pre.config, subquery_update(drifted), as_node="decide")
    out = agent.invoke(None, fork)
    assert out["queries"][1] == drifted, "retrieval ran live on the drifted sub-query"
    if gullible:
        assert len(out["queries"]) == 2 and not is_correct(out["answer"], q)
    else:
        assert out["queries"][2] == base.queries[1], "the agent goes back to the hop it still needs"
        assert is_correct(out["answer"], q)


def _trajectory_like(base) -> Trajectory:
    """What the store would build for ``base``: hop h = decide -> retrieve -> read (last: decide)."""

    def nodes(h: int, names: tuple[str, ...]) -> list[NodeStep]:
        return [NodeStep(step_id=f"{h:02d}{i:014d}", node=n, hop=h) for i, n in enumerate(names)]

    hops = [
        Hop(
            index=i,
            sub_query=record["sub_query"],
            documents=[Document(id=d["id"], text=d["text"], score=d["score"]) for d in record["documents"]],
            steps=nodes(i, ("decide", "retrieve", "read")),
        )
        for i, record in enumerate(base.hops, start=1)
    ]
    hops.append(Hop(index=len(hops) + 1, steps=nodes(len(hops) + 1, ("decide",))))
    return Trajectory(run_id="0" * 32, hops=hops)


def test_adapter_interventions_apply_through_update_state(robust_agent, toy_world):
    q, base = _solved_two_hop(robust_agent, toy_world)
    trajectory = _trajectory_like(base)
    adapter = ReferenceAgentAdapter()

    empty = adapter.evidence_update(trajectory, 1, [])
    assert (empty.node, empty.hop, empty.values) == ("retrieve", 1, {"evidence": []})
    pre = checkpoint_before(robust_agent, base.config, empty.node, 1)
    out = robust_agent.invoke(None, robust_agent.update_state(pre.config, empty.values, as_node=empty.node))
    assert len(out["queries"]) == 3 and is_correct(out["answer"], q)

    stop = adapter.answer_now_update(trajectory, 2)
    pre = checkpoint_before(robust_agent, base.config, stop.node, 2)
    out = robust_agent.invoke(None, robust_agent.update_state(pre.config, stop.values, as_node=stop.node))
    assert out["queries"] == base.queries[:1] and out["answer"] == "unknown"

    fact = adapter.fact_update(trajectory, 1, "Someone Else")
    assert fact.values["hops"][0]["sub_query"] == base.queries[0]
    assert [d["id"] for d in fact.values["hops"][0]["documents"]] == [
        d["id"] for d in base.hops[0]["documents"]
    ]
    pre = checkpoint_before(robust_agent, base.config, fact.node, 1)
    out = robust_agent.invoke(None, robust_agent.update_state(pre.config, fact.values, as_node=fact.node))
    assert "Someone Else" in out["queries"][1], "the next sub-query carries the replaced fact"
    # the robust agent hits a dead end on "Someone Else", re-checks hop 1 and recovers
    assert len(out["queries"]) == 4 and out["hops"][2]["fact"] == base.hops[0]["fact"]
    assert is_correct(out["answer"], q)

    with pytest.raises(ValueError, match="no hop 9"):
        adapter.evidence_update(trajectory, 9, [])
    with pytest.raises(ValueError, match="non-empty"):
        subquery_update(" ")
