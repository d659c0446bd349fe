"""The offline model on hand-made prompts: planning, extraction, and its susceptibility profile."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import ValidationError

from benchmarks.models.offline import OfflineChatModel, Susceptibility, count_tokens
from benchmarks.models.offline_prompts import read_prompt
from causal_middleware.tasks.model import HopGold, Question

QUESTION = "Where was the founder of Velmora Industries born?"


def read_prompt_text(sub_question: str, docs: list[tuple[str, str, str]], facts: str = "(none yet)") -> str:
    evidence = "\n".join(f"[{i}] {title} (id {pid}): {text}" for i, (pid, title, text) in enumerate(docs, 1))
    return (
        f"Question: {QUESTION}\n\nFacts found so far:\n{facts}\n\nCurrent sub-question: {sub_question}\n\n"
        f"Evidence (most relevant first):\n{evidence or '(no documents were retrieved)'}\n\n"
        "Answer the current sub-question from the evidence alone. Reply with one line:\nFACT: <answer>"
    )


def decide_prompt_text(facts: str = "(none yet)", question: str = QUESTION, used: int = 0) -> str:
    return (
        f"Question: {question}\n\nFacts found so far:\n{facts}\n\nSearches used: {used} of 4.\n\n"
        "Reply with one line:\nANSWER: <the final answer>\nor\nSUBQUERY: <the search>"
    )


def answer_prompt_text(facts: str, question: str = QUESTION) -> str:
    return f"Question: {question}\n\nFacts found so far:\n{facts}\n\nReply with one line:\nANSWER: <answer>"


def reply(model: OfflineChatModel, text: str) -> str:
    return str(model.invoke([SystemMessage("You are a research agent."), HumanMessage(text)]).content)


ROBUST = OfflineChatModel(susceptibility=Susceptibility.robust())
GULLIBLE = OfflineChatModel(susceptibility=Susceptibility.gullible())


# --- planning --------------------------------------------------------------------------------
def test_plans_the_first_sub_query_from_the_question_wording():
    assert reply(ROBUST, decide_prompt_text()) == "SUBQUERY: Who founded Velmora Industries?"


def test_carries_the_bridge_entity_and_answers_when_the_chain_is_complete():
    one = "1. Who founded Velmora Industries? -> Tavin Oruko"
    assert reply(ROBUST, decide_prompt_text(one, used=1)) == "SUBQUERY: Where was Tavin Oruko born?"
    two = one + "\n2. Where was Tavin Oruko born? -> Dravo"
    assert reply(ROBUST, decide_prompt_text(two, used=2)) == "ANSWER: Dravo"
    assert reply(ROBUST, answer_prompt_text(two)) == "ANSWER: Dravo"
    assert reply(ROBUST, answer_prompt_text(one)) == "ANSWER: unknown"


def test_requeries_with_a_different_search_after_a_miss_and_uses_a_learned_alias():
    missed = "1. Who founded Velmora Industries? -> NOT FOUND"
    second = reply(ROBUST, decide_prompt_text(missed, used=1))
    assert second.startswith("SUBQUERY: ") and second != "SUBQUERY: Who founded Velmora Industries?"
    assert "Velmora Industries" in second
    with_alias = missed + "\n   note: Velmora Industries is also known as VLMI"
    assert reply(ROBUST, decide_prompt_text(with_alias, used=1)) == "SUBQUERY: Who founded VLMI?"


def test_a_drifted_fact_is_ignored_or_carried_per_profile():
    drifted = "1. Who founded Kastrel Group? -> Marel Vash"
    careful = reply(ROBUST, decide_prompt_text(drifted, used=1))
    assert careful == "SUBQUERY: Who founded Velmora Industries?"
    misled = reply(GULLIBLE, decide_prompt_text(drifted, used=1))
    assert misled == "SUBQUERY: Where was Marel Vash born?"


# --- reading ---------------------------------------------------------------------------------
def test_extracts_a_fact_stated_with_a_synonym_and_a_pronoun_subject():
    docs = [
        ("p1", "Velmora Industries", "Velmora Industries is a company. It was started by Tavin Oruko."),
        ("p2", "Tavin Oruko", "Tavin Oruko is a chemist."),
    ]
    assert reply(ROBUST, read_prompt_text("Who founded Velmora Industries?", docs)) == "FACT: Tavin Oruko"
    docs = [("p3", "Tavin Oruko", "Tavin Oruko is a chemist. She is a native of Dravo.")]
    assert reply(ROBUST, read_prompt_text("Where was Tavin Oruko born?", docs)) == "FACT: Dravo"


def test_learns_an_alias_from_the_evidence_and_reports_it():
    docs = [
        ("p1", "Velmora Industries", "Velmora Industries, also known as VLMI, is a company."),
        ("p2", "VLMI", "VLMI was founded by Tavin Oruko."),
    ]
    out = reply(ROBUST, read_prompt_text("Who founded Velmora Industries?", docs))
    assert out.splitlines()[0] == "FACT: Tavin Oruko"
    assert "NOTE: Velmora Industries is also known as VLMI" in out


def test_empty_or_off_topic_evidence_gives_none_to_a_careful_reader():
    assert reply(ROBUST, read_prompt_text("Who founded Velmora Industries?", [])) == "FACT: NONE"
    off_topic = [("p9", "Kastrel Group", "Kastrel Group was founded by Marel Vash.")]
    careful = reply(ROBUST, read_prompt_text("Who founded Velmora Industries?", off_topic)).splitlines()
    assert careful == ["FACT: NONE", "NOTE: dead end: no evidence mentions Velmora Industries"]
    # a careless reader grabs a value of the right type from off-topic evidence
    assert (
        reply(GULLIBLE, read_prompt_text("Who founded Velmora Industries?", off_topic)) == "FACT: Marel Vash"
    )


def test_prefers_the_most_recent_dated_fact_when_configured():
    docs = [
        ("p1", "Velmora Industries", "As of 2009, Velmora Industries had its headquarters in Lesk."),
        ("p2", "Velmora Industries", "In 2019, Velmora Industries moved its headquarters to Dravo."),
    ]
    prompt = read_prompt_text("Where is Velmora Industries headquartered?", docs)
    assert reply(OfflineChatModel(), prompt) == "FACT: Dravo"
    stale_first = OfflineChatModel(susceptibility=Susceptibility(prefer_recent=False, copy_corrupted_value=1))
    assert reply(stale_first, prompt) == "FACT: Lesk"


def test_copies_a_corrupted_answer_looking_value_per_profile():
    docs = [
        ("p1", "Velmora Industries", "Velmora Industries was founded by Kiro Vash."),  # corrupted
        ("p2", "Tavin Oruko", "Tavin Oruko established Velmora Industries."),
    ]
    prompt = read_prompt_text("Who founded Velmora Industries?", docs)
    copier = OfflineChatModel(susceptibility=Susceptibility(copy_corrupted_value=1.0))
    assert reply(copier, prompt) == "FACT: Kiro Vash"
    out = reply(ROBUST, prompt)
    assert out.startswith("FACT: NONE") and "conflicts" in out
    # with two intact passages against one corrupted, a careful reader takes the majority
    docs.append(("p3", "Velmora Industries", "Velmora Industries was started by Tavin Oruko."))
    assert reply(ROBUST, read_prompt_text("Who founded Velmora Industries?", docs)) == "FACT: Tavin Oruko"


def test_a_confident_false_premise_misleads_per_profile():
    docs = [
        ("p1", "Velmora Industries", "Velmora Industries was founded by Tavin Oruko."),
        (
            "p2",
            "Velmora Industries",
            "It is well established that Velmora Industries was founded by Kiro Vash.",
        ),
    ]
    prompt = read_prompt_text("Who founded Velmora Industries?", docs)
    assert (
        reply(OfflineChatModel(susceptibility=Susceptibility(false_premise=1.0)), prompt) == "FACT: Kiro Vash"
    )
    assert reply(ROBUST, prompt).startswith("FACT: NONE")


def test_near_namesakes_fool_only_a_susceptible_reader():
    docs = [("p1", "Tavin Oruka", "Tavin Oruka was born in Lesk.")]
    prompt = read_prompt_text("Where was Tavin Oruko born?", docs)
    assert reply(ROBUST, prompt) == "FACT: NONE"
    assert reply(GULLIBLE, prompt) == "FACT: Lesk"
    both = [
        ("p1", "Tavin Oruka", "Tavin Oruka was born in Lesk."),
        ("p2", "Tavin Oruko", "Tavin Oruko was born in Dravo."),
    ]
    assert reply(ROBUST, read_prompt_text("Where was Tavin Oruko born?", both)) == "FACT: Dravo"


def test_susceptibility_draws_are_seeded_and_mixed():
    docs = [("p1", "Tavin Oruka", "Tavin Oruka was born in Lesk.")]
    half = Susceptibility(namesake_confusion=0.5, detect_off_topic=1.0)
    picks = []
    for seed in range(40):
        model = OfflineChatModel(seed=seed, susceptibility=half)
        prompt = read_prompt_text("Where was Tavin Oruko born?", docs)
        first, again = reply(model, prompt), reply(model, prompt)
        assert first == again
        picks.append(first == "FACT: Lesk")
    assert 5 < sum(picks) < 35


def test_a_sampling_model_varies_between_calls_reproducibly():
    docs = [("p1", "Tavin Oruka", "Tavin Oruka was born in Lesk.")]
    half = Susceptibility(namesake_confusion=0.5, detect_off_topic=1.0)
    prompt = read_prompt_text("Where was Tavin Oruko born?", docs)

    def replies(model: OfflineChatModel) -> list[str]:
        return [reply(model, prompt) for _ in range(30)]

    fixed = replies(OfflineChatModel(seed=3, susceptibility=half))
    assert len(set(fixed)) == 1  # temperature 0: one prompt, one reply
    sampled = replies(OfflineChatModel(seed=3, susceptibility=half, temperature=1.0))
    assert set(sampled) == {"FACT: Lesk", "FACT: NONE"}
    assert sampled == replies(OfflineChatModel(seed=3, susceptibility=half, temperature=1.0))  # seeded stream
    assert sampled != replies(OfflineChatModel(seed=4, susceptibility=half, temperature=1.0))
    # planning uses only stable draws (drift beliefs, dead-end re-checks), never resampled
    planner = OfflineChatModel(seed=3, temperature=1.0)
    assert len({reply(planner, decide_prompt_text()) for _ in range(10)}) == 1


def test_a_sampling_model_copies_and_pickles_with_a_fresh_stream():
    import copy
    import pickle

    docs = [("p1", "Tavin Oruka", "Tavin Oruka was born in Lesk.")]
    prompt = read_prompt_text("Where was Tavin Oruko born?", docs)
    half = Susceptibility(namesake_confusion=0.5, detect_off_topic=1.0)
    model = OfflineChatModel(seed=5, susceptibility=half, temperature=1.0)
    first = [reply(model, prompt) for _ in range(12)]
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), model.model_copy(deep=True)):
        assert [reply(clone, prompt) for _ in range(12)] == first  # restarted from the seed


def test_temperature_is_validated():
    with pytest.raises(ValidationError, match="temperature"):
        OfflineChatModel(temperature=1.5)


# --- as a LangChain chat model ---------------------------------------------------------------
def test_reports_usage_model_name_and_binds_tools():
    model = OfflineChatModel()
    text = decide_prompt_text()
    result = model.generate([[HumanMessage(text)]])
    message = result.generations[0][0].message
    assert message.usage_metadata == {
        "input_tokens": count_tokens(text),
        "output_tokens": count_tokens(str(message.content)),
        "total_tokens": count_tokens(text) + count_tokens(str(message.content)),
    }
    assert result.llm_output is not None
    assert result.llm_output["model_name"] == "offline-0"
    assert result.llm_output["token_usage"]["prompt_tokens"] == count_tokens(text)
    assert model._get_ls_params()["ls_model_name"] == "offline-0"
    assert model.bind_tools([]) is model


def test_drives_a_create_agent_graph():
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return "nothing"

    agent = create_agent(OfflineChatModel(), tools=[lookup])
    out = agent.invoke({"messages": [HumanMessage("hello")]})
    assert out["messages"][-1].type == "ai"


# --- simulate mode ---------------------------------------------------------------------------
def _musique_like() -> Question:
    return Question(
        id="m1",
        text="Who founded the label that released Blue Orchid?",
        answer="Anna Berg",
        aliases=["A. Berg"],
        dataset="musique",
        hops=[
            HopGold(index=1, question="Which label released Blue Orchid?", answer="Nordic Sounds"),
            HopGold(index=2, question="Who founded #1?", answer="Anna Berg", aliases=["A. Berg"]),
        ],
    )


def test_simulate_mode_plans_from_gold_and_reads_only_what_the_evidence_contains():
    q = _musique_like()
    model = OfflineChatModel.simulating([q])
    assert model.simulate
    assert reply(model, decide_prompt_text(question=q.text)) == "SUBQUERY: Which label released Blue Orchid?"
    facts = "1. Which label released Blue Orchid? -> Nordic Sounds"
    assert (
        reply(model, decide_prompt_text(facts, question=q.text, used=1))
        == "SUBQUERY: Who founded Nordic Sounds?"
    )
    hit = [("d1", "Nordic Sounds", "Nordic Sounds is a record label started in 1990 by A. Berg.")]
    miss = [("d2", "Nordic Sounds", "Nordic Sounds is a record label from Oslo.")]

    def sim_read(docs):
        evidence = "\n".join(f"[{i}] {t} (id {p}): {x}" for i, (p, t, x) in enumerate(docs, 1))
        return reply(
            model,
            f"Question: {q.text}\n\nFacts found so far:\n{facts}\n\nCurrent sub-question: Who founded Nordic Sounds?"
            f"\n\nEvidence (most relevant first):\n{evidence}\n\nReply with FACT: <answer>",
        )

    assert sim_read(hit) == "FACT: Anna Berg"
    assert sim_read(miss) == "FACT: NONE"
    done = facts + "\n2. Who founded Nordic Sounds? -> Anna Berg"
    assert reply(model, answer_prompt_text(done, question=q.text)) == "ANSWER: Anna Berg"


def test_simulate_mode_rejects_unknown_questions():
    model = OfflineChatModel.simulating([_musique_like()])
    try:
        reply(model, decide_prompt_text(question="Who painted the Mona Lisa?"))
    except ValueError as exc:
        assert "no gold decomposition" in str(exc)
    else:
        raise AssertionError("an unknown question must raise")


def test_prompt_conventions_match_the_reference_agent_prompts():
    from benchmarks.reference_agent import prompts

    hops = [
        {"sub_query": "Who founded Velmora Industries?", "fact": "Tavin Oruko", "notes": ["a note"]},
        {"sub_query": "Where was Tavin Oruko born?", "fact": None, "notes": []},
    ]
    docs = [{"id": "p7", "title": "Tavin Oruko", "text": "Tavin Oruko was born\nin Dravo.", "score": 2.5}]
    view = read_prompt(
        str(prompts.read_messages(QUESTION, hops, "Where was Tavin Oruko born?", docs)[-1].content)
    )
    assert view.task == "read"
    assert view.question == QUESTION and view.sub_question == "Where was Tavin Oruko born?"
    assert [(f.query, f.answer, f.notes) for f in view.facts] == [
        ("Who founded Velmora Industries?", "Tavin Oruko", ["a note"]),
        ("Where was Tavin Oruko born?", None, []),
    ]
    assert [(d.rank, d.id, d.title, d.text) for d in view.evidence] == [
        (1, "p7", "Tavin Oruko", "Tavin Oruko was born in Dravo.")
    ]
    decide = read_prompt(str(prompts.decide_messages(QUESTION, hops, 2, 4)[-1].content))
    assert (decide.task, decide.searches_used, decide.budget) == ("decide", 2, 4)
    assert read_prompt(str(prompts.answer_messages(QUESTION, hops)[-1].content)).task == "answer"
