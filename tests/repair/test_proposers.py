"""Proposers: the deterministic offline proposer (adapter + real BM25 index) and the LLM proposer."""

from __future__ import annotations

from typing import Any

import pytest
from repair_fakes import ScriptedChatModel
from repair_sim import World, node_step

from causal_middleware.counterfactual.crs import compute_crs
from causal_middleware.counterfactual.proposers import (
    LLMProposer,
    OfflineProposer,
    alias_map,
    entities,
    fact_candidates,
    later_findings,
    run_texts,
    stated_values,
)
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.spans.model import Document, Hop, NodeStep, Trajectory


def _faulted(world: World) -> tuple[Trajectory, Trajectory]:
    """The clean run, and a fork whose hop-2 evidence says Bob Smith was born in Nice."""
    base = world.backend.run()
    evidence = node_step(base, "retrieve", 2).output["evidence"]
    corrupted = [dict(d, text=d["text"].replace("Paris", "Nice")) for d in evidence]
    return base, world.backend.inject(base.run_id, "retrieve", 2, {"evidence": corrupted})


def test_entities_keeps_multiword_names_and_drops_question_words() -> None:
    assert entities("Where was the founder of Acme Corp born?") == ["Acme Corp"]
    assert entities("Bob Smith was born in Paris. Rob Smith too.") == ["Bob Smith", "Paris", "Rob Smith"]


def test_roles_follow_the_adapter(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = OfflineProposer(sloppy_world.adapter, sloppy_world.index)
    assert set(proposer.roles(run, node_step(run, "decide", 2))) == {"subquery"}
    assert set(proposer.roles(run, node_step(run, "retrieve", 1))) == {"evidence"}
    assert set(proposer.roles(run, node_step(run, "read", 1))) == {"fact"}
    batch = proposer.propose(run, node_step(run, "answer", None), 3)
    assert batch.proposals == [] and "no sub-query/evidence/fact role" in (batch.note or "")
    with pytest.raises(TypeError, match="AgentAdapter"):
        OfflineProposer(object())  # type: ignore[arg-type]


def test_fact_proposals_come_from_the_evidence_near_namesakes_first(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = OfflineProposer(sloppy_world.adapter, sloppy_world.index)
    batch = proposer.propose(run, node_step(run, "read", 1), 3)
    facts = [p.values["fact"] for p in batch.proposals]
    assert facts[0] == "Bob Smith"
    assert "Rob Smith" not in facts  # the recorded fact is never proposed back
    assert all(p.source == "offline:fact" for p in batch.proposals)
    assert len(facts) <= 3


def test_subquery_proposals_swap_in_a_similar_name_but_never_the_questions_own(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = OfflineProposer(sloppy_world.adapter, sloppy_world.index)
    batch = proposer.propose(run, node_step(run, "decide", 2), 3)
    assert [p.values for p in batch.proposals][0] == {"sub_query": "Where was Bob Smith born?"}
    assert "instead of 'Rob Smith'" in batch.proposals[0].description
    first = proposer.propose(run, node_step(run, "decide", 1), 3)
    assert all("Acme Group" not in p.values["sub_query"] for p in first.proposals)


def _hand_run() -> Trajectory:
    """Hop 1 asks about Solsakon and finds nothing; hop 2 learns Solsakon is also known as Gotha;
    hop 3 asks about Gotha and finds the mayor."""
    docs = {
        1: [Document(id="a", text="Solsakon is a city.", metadata={"title": "Solsakon"})],
        2: [Document(id="b", text="Solsakon, also known as Gotha, is a city.")],
        3: [Document(id="c", text="The mayor of Gotha is Stojous Loro.")],
    }
    queries = {1: "Who is the mayor of Solsakon?", 2: "Solsakon city mayor", 3: "Who is the mayor of Gotha?"}
    facts = {1: None, 2: None, 3: "Stojous Loro"}
    steps: list[Any] = []
    n = 0
    for h in (1, 2, 3):
        for node, output in (
            ("decide", {"sub_query": queries[h]}),
            ("retrieve", {"evidence": [{"id": d.id, "text": d.text, "title": "T" + d.id} for d in docs[h]]}),
            ("read", {"fact": facts[h]}),
        ):
            n += 1
            steps.append(NodeStep(step_id=f"{n:016x}", node=node, hop=h, langgraph_step=n, output=output))
    hops = [Hop(index=h, sub_query=queries[h], documents=docs[h]) for h in (1, 2, 3)]
    return Trajectory(run_id="c" * 32, input="Who employs the mayor of Solsakon?", steps=steps, hops=hops)


def test_aliases_and_later_findings_come_from_the_whole_run() -> None:
    run = _hand_run()
    assert alias_map(run_texts(run)) == {"Solsakon": ["Gotha"], "Gotha": ["Solsakon"]}
    [later] = later_findings(run, 1)
    assert (later.hop, later.fact, later.sub_query) == (3, "Stojous Loro", "Who is the mayor of Gotha?")
    assert later_findings(run, 3) == []
    assert fact_candidates(run.hops[2].documents, "Who is the mayor of Gotha?") == ["Stojous Loro"]


def test_offline_proposals_for_a_hop_that_found_nothing(sloppy_world: World) -> None:
    run = _hand_run()
    proposer = OfflineProposer(sloppy_world.adapter)
    queries = [p.values["sub_query"] for p in proposer.propose(run, node_step(run, "decide", 1), 3).proposals]
    # alias expansion, then the alias swap (the later reformulation is the same query: deduplicated)
    assert queries[:2] == ["Who is the mayor of Solsakon? Gotha", "Who is the mayor of Gotha?"]
    facts = [p.values["fact"] for p in proposer.propose(run, node_step(run, "read", 1), 3).proposals]
    assert facts[0] == "Stojous Loro"
    [swapped] = proposer.propose(run, node_step(run, "retrieve", 1), 3).proposals  # no index: no re-retrieval
    assert [d["id"] for d in swapped.values["evidence"]] == ["c"]
    assert "gave hop 3 its fact 'Stojous Loro'" in swapped.description
    assert swapped.values["evidence"][0]["title"] == "Tc"  # the recorded title travels with it


def test_evidence_proposals_restore_an_altered_passage_first(clean_world: World) -> None:
    _, faulted = _faulted(clean_world)
    proposer = OfflineProposer(clean_world.adapter, clean_world.index)
    batch = proposer.propose(faulted, node_step(faulted, "retrieve", 2), 3)
    first = batch.proposals[0]
    assert "restored" in first.description
    assert [d["text"] for d in first.values["evidence"]][0] == "Bob Smith was born in Paris."
    no_index = OfflineProposer(clean_world.adapter).propose(faulted, node_step(faulted, "retrieve", 2), 3)
    assert no_index.proposals == []


def test_evidence_proposals_replace_a_planted_passage_in_place(clean_world: World) -> None:
    base = clean_world.backend.run()
    evidence = node_step(base, "retrieve", 2).output["evidence"]
    planted = {"id": "x1", "title": "Bob Smith", "text": "Bob Smith was born in Nice.", "score": 9.0}
    faulted = clean_world.backend.inject(base.run_id, "retrieve", 2, {"evidence": [planted, *evidence]})
    proposer = OfflineProposer(clean_world.adapter, clean_world.index)
    first = proposer.propose(faulted, node_step(faulted, "retrieve", 2), 3).proposals[0]
    ids = [d["id"] for d in first.values["evidence"]]
    assert ids[1:] == [d["id"] for d in evidence] and ids[0] not in ("x1", *ids[1:])  # only rank 1 changed
    assert "passage 'x1' (not in the index) replaced by re-retrieved" in first.description
    result = compute_crs(faulted, clean_world.backend, proposer, ReferenceVerifier())
    assert [(s.node, s.hop) for s in result.flagged] == [("retrieve", 2)]
    assert result.successful_probes()[0].proposal.description == first.description


def test_offline_crs_on_an_injected_fault_blames_and_repairs_the_faulted_step(clean_world: World) -> None:
    _, faulted = _faulted(clean_world)
    proposer = OfflineProposer(clean_world.adapter, clean_world.index)
    result = compute_crs(faulted, clean_world.backend, proposer, ReferenceVerifier())
    assert [(s.node, s.hop) for s in result.flagged] == [("retrieve", 2)]
    flip = result.successful_probes()[0]
    assert flip.answer == "Paris"
    assert flip.proposal.minimality is not None and flip.proposal.minimality > 0.9
    assert result.cost.llm_calls == 0


REPLY = """Here you go:
```json
[{"fact": "Bob Smith"}, {"fact": "Paris", "bogus": 1}, "nope", {"fact": "Bob"}]
```"""


def test_llm_proposer_parses_filters_and_counts(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    model = ScriptedChatModel(replies=[REPLY])
    proposer = LLMProposer(model, temperature=0.9)
    assert proposer.model.temperature == 0.9 and model.temperature == 0.0
    batch = proposer.propose(run, node_step(run, "read", 1), 3, feedback="answer 'Lyon' is wrong")
    assert [p.values for p in batch.proposals] == [{"fact": "Bob Smith"}, {"fact": "Bob"}]
    assert all(p.source == "llm" for p in batch.proposals)
    assert batch.note == "2 malformed proposal(s) dropped"
    assert batch.cost.llm_calls == 1 and batch.cost.input_tokens > 0 and batch.cost.output_tokens > 0
    prompt = str(proposer.model.calls[0][-1].content)  # type: ignore[attr-defined]
    assert "answer 'Lyon' is wrong" in prompt and '"read"' in prompt and "Rob Smith" in prompt
    assert batch.baseline == {"fact": "Rob Smith"}


def test_llm_proposer_unparseable_reply_gives_no_proposals(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    batch = LLMProposer(ScriptedChatModel(replies=["I cannot help"])).propose(
        run, node_step(run, "read", 1), 3
    )
    assert batch.proposals == [] and "no JSON value" in (batch.note or "")
    assert batch.cost.llm_calls == 1
    with pytest.raises(TypeError, match="chat model"):
        LLMProposer("gpt")  # type: ignore[arg-type]


def test_crs_accounts_llm_calls_and_tokens(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    model = ScriptedChatModel(
        replies=['[{"sub_query": "Who founded Zeta Inc?"}]', '[{"evidence": []}]', REPLY]
    )
    result = compute_crs(run, sloppy_world.backend, LLMProposer(model), ReferenceVerifier())
    assert [(s.node, s.hop) for s in result.flagged] == [("read", 1)]
    assert result.cost.llm_calls == 3 == len(model.calls)
    assert result.cost.total_tokens > 0


def test_a_fact_copied_as_a_whole_sentence_is_first_cut_down_to_the_value_it_states() -> None:
    """A small reader copies the answering sentence ("X was born in Y.") where one value was asked
    for; the next hop's search then gets the whole sentence. The value the recorded fact itself
    states comes first, ahead of the evidence's other names (which the overlap ranking put first)."""
    docs = [
        Document(id="a", text="Thaisra Nofi, also known as Gevo, is a physician at Kebrou University."),
        Document(id="b", text="The mayor of Bronos is Thaisra Nofi. Noti Drafe grew up in Vaigres."),
    ]
    query = "Where was Thaisra Nofi born?"
    plain = fact_candidates(docs, query)
    assert plain[0] != "Vaigres" and "Vaigres" in plain
    copied = fact_candidates(docs, query, "Thaisra Nofi was born in Vaigres.")
    assert copied[0] == "Vaigres" and sorted(copied) == sorted(plain)
    assert "Thaisra Nofi" not in copied  # the sub-query's own subject is never a candidate
    # asked through an alias, the sentence's subject is no longer the sub-query's: the value it
    # states (named last) still comes first, its subject after it
    via_alias = fact_candidates(docs, "Where was Gevo born?", "Thaisra Nofi was born in Vaigres.")
    assert via_alias[:2] == ["Vaigres", "Thaisra Nofi"]
    # a recorded value that is one name states nothing else: the plain order, less that value
    assert fact_candidates(docs, query, "Gevo") == [c for c in plain if c != "Gevo"]


def test_a_name_opening_a_sentence_is_a_fact_candidate_after_names_inside_sentences() -> None:
    docs = [
        Document(id="a", text="Draivou Togim rarely spoke about the town where he was born."),
        Document(id="b", text="Rilekok is the birthplace of Draivou Togim."),
        Document(id="c", text="In 1974, Draivou Togim joined Drozoum College."),
    ]
    assert fact_candidates(docs, "Where was Draivou Togim born?") == ["Drozoum College", "Rilekok", "1974"]
    # a reader's label is not a value it stated, nor a candidate; a pronoun opening a sentence is not
    assert stated_values("Doda\nFact: Doda is a city.") == {"Doda": 0}
    labelled = [Document(id="d", text="Final Answer: Doda is a city. She was born in Vaigres.")]
    assert fact_candidates(labelled, "Where was Thaisra Nofi born?") == ["Vaigres", "Doda"]
    assert stated_values("She was born in Vaigres.") == {"Vaigres": 0}


def _chain_run(fact_1: str, query_2: str) -> Trajectory:
    """Two hops: hop 2's sub-query is the plan's, filled with ``query_2``."""
    queries = {1: "Which organisation does Kraishai Rehu work for?", 2: query_2}
    facts = {1: fact_1, 2: "Brasstekro"}
    plan = [
        (h, node, output)
        for h in (1, 2)
        for node, output in (("decide", {"sub_query": queries[h]}), ("read", {"fact": facts[h]}))
    ]
    steps: list[Any] = [
        NodeStep(step_id=f"{n:016x}", node=node, hop=hop, langgraph_step=n, output=output)
        for n, (hop, node, output) in enumerate(plan, start=1)
    ]
    hops = [Hop(index=h, sub_query=queries[h]) for h in (1, 2)]
    return Trajectory(run_id="d" * 32, input="Where is Kraishai Rehu's employer?", steps=steps, hops=hops)


def test_a_later_hop_that_searched_with_this_hops_copied_sentence_is_not_a_reformulation() -> None:
    """Hop 1 copied a sentence whose words overlap its own question ("work"); the plan filled that
    sentence into hop 2's query. Hop 2 shares hop 1's words only through the sentence it was
    handed, so its fact is no finding for hop 1's question."""
    sentence = "Ranpudrak University is the best-known work of Kraishai Rehu."
    handed = _chain_run(sentence, f"Where is {sentence} headquartered?")
    assert later_findings(handed, 1) == []
    # the same words asked on their own are a reformulation of hop 1's question, as before
    asked = _chain_run(sentence, "Which organisation does Vire work for?")
    assert [f.fact for f in later_findings(asked, 1)] == ["Brasstekro"]
