"""The offline model's dead-end re-check (``Susceptibility.verify_dead_ends``): a search about a
bridge entity that no retrieved passage mentions makes it re-check the fact that named the entity."""

from __future__ import annotations

import pytest
from test_fork import _solved_two_hop, _trajectory_like, checkpoint_before
from test_offline_model import decide_prompt_text, read_prompt_text, reply

from benchmarks.models.offline import OfflineChatModel, Susceptibility
from benchmarks.reference_agent import (
    ReferenceAgentAdapter,
    build_reference_agent,
    run_question,
)
from causal_middleware.spans.model import Document
from causal_middleware.tasks.scoring import is_correct

CHECKER = OfflineChatModel(susceptibility=Susceptibility.robust())
TRUSTING = OfflineChatModel(
    susceptibility=Susceptibility.robust().model_copy(update={"verify_dead_ends": 0.0})
)

HOP1 = "1. Who founded Velmora Industries? -> Tavin Oruko"
DEAD_END = (
    HOP1
    + "\n2. Where was Tavin Oruko born? -> NOT FOUND\n   note: dead end: no evidence mentions Tavin Oruko"
)


def _recheck(used: int = 2, facts: str = DEAD_END) -> str:
    out = reply(CHECKER, decide_prompt_text(facts, used=used))
    assert out.startswith("SUBQUERY: ")
    return out.removeprefix("SUBQUERY: ")


def test_reader_notes_a_dead_end_only_when_no_passage_mentions_the_entity():
    off_topic = [("p9", "Kastrel Group", "Kastrel Group was founded by Marel Vash.")]
    out = reply(CHECKER, read_prompt_text("Where was Tavin Oruko born?", off_topic, facts=HOP1))
    assert out.splitlines() == ["FACT: NONE", "NOTE: dead end: no evidence mentions Tavin Oruko"]
    mentioned = [("p2", "Tavin Oruko", "Tavin Oruko is a chemist.")]
    assert (
        reply(CHECKER, read_prompt_text("Where was Tavin Oruko born?", mentioned, facts=HOP1)) == "FACT: NONE"
    )
    # no documents at all is a failed retrieval, not evidence that the name is wrong
    assert reply(CHECKER, read_prompt_text("Where was Tavin Oruko born?", [], facts=HOP1)) == "FACT: NONE"


def test_a_dead_end_makes_the_agent_recheck_the_previous_hop_with_a_reformulated_search():
    search = _recheck()
    assert "Velmora Industries" in search and search != "Who founded Velmora Industries?"
    # a trusting profile keeps the bridge entity and reformulates the open hop instead
    trusting = reply(TRUSTING, decide_prompt_text(DEAD_END, used=2))
    assert trusting.startswith("SUBQUERY: ") and "Tavin Oruko" in trusting


def test_a_recheck_stating_a_different_value_is_adopted_and_the_chain_continues_from_it():
    fresh = DEAD_END + f"\n3. {_recheck()} -> Sela Marn"
    assert reply(CHECKER, decide_prompt_text(fresh, used=3)) == "SUBQUERY: Where was Sela Marn born?"
    done = fresh + "\n4. Where was Sela Marn born? -> Dravo"
    assert reply(CHECKER, decide_prompt_text(done, used=4)).startswith("ANSWER: Dravo")


def test_a_recheck_confirming_the_value_is_not_repeated():
    same = DEAD_END + f"\n3. {_recheck()} -> Tavin Oruko"
    out = reply(CHECKER, decide_prompt_text(same, used=3))
    assert out.startswith("SUBQUERY: ") and "Tavin Oruko" in out and "Velmora" not in out


def test_without_budget_for_a_recheck_it_answers_with_what_it_has():
    # one search left: a re-check could not be followed up, so it retries the open hop
    out = reply(CHECKER, decide_prompt_text(DEAD_END, used=3))
    assert out.startswith("SUBQUERY: ") and "Tavin Oruko" in out
    # no search left: it answers from the facts it has (the chain is incomplete)
    assert reply(CHECKER, decide_prompt_text(DEAD_END, used=4)) == "ANSWER: unknown"
    complete = HOP1 + "\n2. Where was Tavin Oruko born? -> Dravo"
    assert reply(CHECKER, decide_prompt_text(complete, used=4)) == "ANSWER: Dravo"


def test_the_recheck_draw_is_seeded_per_dead_end():
    half = Susceptibility(verify_dead_ends=0.5)
    choices = set()
    for seed in range(12):
        out = reply(OfflineChatModel(seed=seed, susceptibility=half), decide_prompt_text(DEAD_END, used=2))
        again = reply(OfflineChatModel(seed=seed, susceptibility=half), decide_prompt_text(DEAD_END, used=2))
        assert out == again
        choices.add("Velmora" in out)
    assert choices == {True, False}


def _corrupt(documents: list[dict], original: str, corrupted: str) -> list[Document]:
    return [
        Document(
            id=d["id"],
            text=d["text"].replace(original, corrupted),
            score=d["score"],
            metadata={"title": d["title"]},
        )
        for d in documents
    ]


@pytest.mark.parametrize("verify", [1.0, 0.0])
def test_a_corrupted_bridge_in_hop_one_evidence_is_recovered_by_a_recheck(toy_retriever, toy_world, verify):
    profile = Susceptibility.robust().model_copy(update={"verify_dead_ends": verify})
    agent = build_reference_agent(toy_retriever, OfflineChatModel(susceptibility=profile))
    q, base = _solved_two_hop(agent, toy_world)
    bridge, wrong = base.hops[0]["fact"], "Quorvania"
    assert any(bridge in d["text"] for d in base.hops[0]["documents"])
    intervention = ReferenceAgentAdapter().evidence_update(
        _trajectory_like(base), 1, _corrupt(base.hops[0]["documents"], bridge, wrong)
    )
    pre = checkpoint_before(agent, base.config, intervention.node, 1)
    out = agent.invoke(None, agent.update_state(pre.config, intervention.values, as_node=intervention.node))
    assert out["hops"][0]["fact"] == wrong and wrong in out["queries"][1]
    assert "dead end" in " ".join(out["hops"][1]["notes"])
    if verify:
        assert len(out["queries"]) == 4 and bridge in out["queries"][3]
        assert out["hops"][2]["fact"] == bridge, "the re-check retrieved the clean passage"
        assert is_correct(out["answer"], q)
    else:
        assert not is_correct(out["answer"], q)


def test_the_default_profile_recovers_some_corrupted_bridges(toy_retriever, toy_world):
    agent = build_reference_agent(toy_retriever, OfflineChatModel())
    adapter = ReferenceAgentAdapter()
    recovered = tried = 0
    for q in toy_world.questions:
        if q.n_hops != 2:
            continue
        base = run_question(agent, q)
        if not is_correct(base.answer, q) or len(base.queries) != 2:
            continue
        bridge = base.hops[0]["fact"]
        if not any(bridge in d["text"] for d in base.hops[0]["documents"]):
            continue
        docs = _corrupt(base.hops[0]["documents"], bridge, "Quorvania")
        intervention = adapter.evidence_update(_trajectory_like(base), 1, docs)
        pre = checkpoint_before(agent, base.config, intervention.node, 1)
        out = agent.invoke(
            None, agent.update_state(pre.config, intervention.values, as_node=intervention.node)
        )
        tried += 1
        recovered += is_correct(out["answer"], q)
    assert tried >= 3 and 0 < recovered
