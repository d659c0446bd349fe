"""The reference agent end to end on a small generated world."""

from __future__ import annotations

import sqlite3
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.sqlite import SqliteSaver

from benchmarks.models.offline import OfflineChatModel
from benchmarks.reference_agent import (
    NODES,
    build_reference_agent,
    prompts,
    run_question,
)
from causal_middleware.tasks.scoring import is_correct


def test_answers_most_toy_questions_and_records_every_hop(toy_world, toy_retriever):
    agent = build_reference_agent(toy_retriever, OfflineChatModel(seed=0))
    correct = 0
    for q in toy_world.questions:
        run = run_question(agent, q)
        correct += is_correct(run.answer, q)
        assert 1 <= len(run.queries) <= 4
        assert run.stop_reason in ("answered", "budget")
        assert [h["index"] for h in run.hops] == list(range(1, len(run.queries) + 1))
        for hop, query in zip(run.hops, run.queries, strict=True):
            assert hop["sub_query"] == query
            assert hop["documents"], "BM25 over the world always returns something for a sub-query"
            for doc in hop["documents"]:
                assert doc["id"].startswith("p") and doc["text"] and isinstance(doc["score"], float)
            assert hop["found"] == (hop["fact"] is not None)
            assert hop["raw"].startswith("FACT:")
        if is_correct(run.answer, q):  # the chain completed at the last search
            assert run.hops[-1]["fact"] == run.answer
    assert correct / len(toy_world.questions) > 0.5


def test_the_first_hop_of_a_run_follows_the_gold_decomposition(toy_world, toy_retriever):
    agent = build_reference_agent(toy_retriever, OfflineChatModel(seed=0))
    q = toy_world.questions[0]
    run = run_question(agent, q)
    gold_first = q.hops[0].question
    assert run.queries[0] == gold_first
    gold_ids = set(q.hops[0].supporting_passage_ids)
    if gold_ids & {d["id"] for d in run.hops[0]["documents"]}:
        assert run.hops[0]["fact"] in (q.hops[0].answer, *q.hops[0].aliases)


def test_the_budget_forces_an_answer(toy_world, toy_retriever):
    agent = build_reference_agent(toy_retriever, OfflineChatModel(seed=0), budget=1)
    q = next(q for q in toy_world.questions if q.n_hops >= 2)
    run = run_question(agent, q)
    assert len(run.queries) == 1
    assert run.stop_reason == "budget"
    assert run.answer == "unknown"


class _RetrieverEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        self.queries: list[str] = []
        self.ends: list[list[str]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.queries.append(query)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.ends.append([d.metadata["id"] for d in documents])


def test_retriever_callbacks_fire_for_every_search(toy_world, toy_retriever):
    agent = build_reference_agent(toy_retriever, OfflineChatModel(seed=0))
    events = _RetrieverEvents()
    run = run_question(agent, toy_world.questions[1], config={"callbacks": [events]})
    assert events.queries == run.queries
    assert events.ends == [[d["id"] for d in h["documents"]] for h in run.hops]


def test_runs_with_a_sqlite_checkpointer(tmp_path, toy_world, toy_retriever):
    path = tmp_path / "checkpoints.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        agent = build_reference_agent(toy_retriever, OfflineChatModel(seed=0), checkpointer=SqliteSaver(conn))
        run = run_question(agent, toy_world.questions[2], thread_id="t-sqlite")
    finally:
        conn.close()
    # a fresh process (fresh connection and graph) sees the whole thread
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        again = build_reference_agent(toy_retriever, OfflineChatModel(seed=0), checkpointer=SqliteSaver(conn))
        state = again.get_state(run.config)
        assert state.values["answer"] == run.answer
        assert state.values["queries"] == run.queries
        history = list(again.get_state_history(run.config))
        ran = [t.name for snap in history for t in snap.tasks if t.name != "__start__"]
        assert set(ran) <= set(NODES) and ran.count("retrieve") == len(run.queries)
    finally:
        conn.close()


def test_same_seed_same_run(toy_world, toy_retriever):
    q = toy_world.questions[3]
    a = run_question(build_reference_agent(toy_retriever, OfflineChatModel(seed=1)), q)
    b = run_question(build_reference_agent(toy_retriever, OfflineChatModel(seed=1)), q)
    assert (a.answer, a.queries, a.hops) == (b.answer, b.queries, b.hops)


def test_bad_construction_and_input_raise_clear_errors(toy_retriever):
    model = OfflineChatModel()
    with pytest.raises(TypeError, match="BaseRetriever"):
        build_reference_agent("not a retriever", model)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BaseChatModel"):
        build_reference_agent(toy_retriever, "not a model")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget"):
        build_reference_agent(toy_retriever, model, budget=0)
    with pytest.raises(ValueError, match="question"):
        run_question(build_reference_agent(toy_retriever, model), "  ")


def test_reply_parsers_are_forgiving():
    assert prompts.parse_decision("SUBQUERY: Who founded X?") == ("search", "Who founded X?")
    assert prompts.parse_decision("Thinking...\n**Subquery:** Who founded X?") == ("search", "Who founded X?")
    assert prompts.parse_decision("ANSWER: Dravo") == ("answer", "Dravo")
    assert prompts.parse_decision("I am done") == ("answer", "I am done")
    assert prompts.parse_fact("FACT: NONE\nNOTE: X is also known as Y") == (None, ["X is also known as Y"])
    assert prompts.parse_fact('fact: "Dravo"') == ("Dravo", [])
    assert prompts.parse_answer("The answer.\nANSWER: 1,234") == "1,234"
    assert prompts.parse_answer("Dravo") == "Dravo"
