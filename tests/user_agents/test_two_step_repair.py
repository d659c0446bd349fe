"""Two-step repair on a user's own RAG loop with two planted faults: a keyword-stuffed document wins
hop 1's retrieval and another wins hop 2's. No single step's change flips the run (fixing hop 1
leads hop 2 to the second stuffed document; hop 2's evidence, for the wrong bridge entity, has no
answer to read), so the single-step repair finds nothing; ``max_steps=2`` finds both faults."""

from __future__ import annotations

import re
from typing import Any, TypedDict

from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.retrievers import index_for_graph
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from user_agent_harness import THREAD, Recorded, Recorder

from causal_middleware.counterfactual.crs import ForkCache
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.protocols import Proposal
from causal_middleware.repair.chain import validate_chain
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.pairs import pairs_from_records
from causal_middleware.repair.service import RepairConfig, repair_run
from causal_middleware.repair.verdicts import repair_annotation

CORPUS = [
    Document(id="kb-1", page_content="The Orvel bridge was designed by Ada Brenner in 1931."),
    Document(
        id="spam-1", page_content="Orvel bridge designed designed by? Orvel bridge designed by Tom Kell."
    ),
    Document(id="kb-3", page_content="Tom Kell was born in Hull."),
    Document(id="kb-2", page_content="Ada Brenner was born in Linz."),
    Document(id="spam-2", page_content="Ada Brenner, Ada Brenner was born in Graz."),
]


class WordOverlap(BaseRetriever):
    """Ranks by shared words, counting repeats: keyword stuffing wins, as with naive scoring."""

    docs: list[Document]
    k: int = 1

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(re.findall(r"\w+", query.lower()))
        scored = sorted(
            self.docs, key=lambda d: -sum(w in words for w in re.findall(r"\w+", d.page_content.lower()))
        )
        return scored[: self.k]


retriever = WordOverlap(docs=CORPUS)


class State(TypedDict, total=False):
    question: str
    query: str
    context: list[Document]
    facts: list[str]
    answer: str


def search(state: State) -> dict[str, Any]:
    facts = state.get("facts") or []
    query = state["question"] if not facts else f"Where was {facts[-1]} born?"
    return {"query": query, "context": retriever.invoke(query)}


def read(state: State) -> dict[str, Any]:
    facts = state.get("facts") or []
    text = " ".join(d.page_content for d in state["context"])
    pattern = (
        r"designed by ([A-Z]\w+ [A-Z]\w+)" if not facts else re.escape(facts[-1]) + r" was born in (\w+)"
    )
    match = re.search(pattern, text)
    return {"facts": [*facts, match.group(1) if match else "unknown"]}


def respond(state: State) -> dict[str, Any]:
    return {"answer": state["facts"][-1]}


def build(checkpointer: Any) -> Any:
    g = StateGraph(State)
    g.add_node("search", search)
    g.add_node("read", read)
    g.add_node("respond", respond)
    g.add_edge(START, "search")
    g.add_edge("search", "read")
    g.add_conditional_edges("read", lambda s: "search" if len(s["facts"]) < 2 else "respond")
    g.add_edge("respond", END)
    return g.compile(checkpointer=checkpointer)


QUESTION = {"question": "Where was the designer of the Orvel bridge born? Who designed the Orvel bridge?"}


def _repair(run: Recorded, config: RepairConfig) -> RepairResult:
    return repair_run(
        run.trajectory,
        backend=Replayer(run.ig, refused_side_effects="withhold"),
        proposer=TraceProposer(index_for_graph(run.ig)),
        verifier=ReferenceVerifier(run.reference),
        store=run.store,
        config=config,
    )


def test_no_single_step_flips_the_run(record: Recorder) -> None:
    run = record(build, QUESTION, "Linz")
    assert run.output["facts"] == ["Tom Kell", "Hull"]
    result = _repair(run, RepairConfig())
    assert result.status == "no_flip"
    assert result.two_step is None
    assert sum(s.n_tested for s in result.crs.scores) > 0


def test_two_step_repair_names_both_planted_documents(record: Recorder) -> None:
    run = record(build, QUESTION, "Linz")
    history = run.history()
    result = _repair(run, RepairConfig(max_steps=2))
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None and len(repair.prior) == 1
    first = repair.prior[0]
    assert (first.node, first.langgraph_step) == ("search", 1)
    assert "spam-1" in first.evidence
    assert first.answer_after == "Graz"  # hop 1 fixed alone: the second stuffed document wins
    assert (repair.node, repair.langgraph_step) == ("search", 3)
    assert "spam-2" in repair.evidence
    assert repair.answer_after == "Linz" and repair.answer_before == "Hull"
    assert repair.validation.passed and repair.validation.only_change
    assert repair.validation.flips >= 2
    assert 0 < repair.minimality <= first.minimality
    assert result.two_step is not None and result.two_step.bases >= 1 and result.two_step.flips >= 1
    assert "Two steps are responsible" in result.explanation
    # the repair's own fork and the first change's fork stay; the user's thread is untouched
    assert run.history() == history
    assert run.store.get_trajectory(repair.fork_run_id).lineage.parent_run_id == first.fork_run_id
    assert run.store.get_trajectory(first.fork_run_id).lineage.parent_run_id == run.run_id
    # the verdict lands on the run's own step that changed first, naming the second change too
    note = repair_annotation(result, run.trajectory)
    assert note is not None and note.span_id == first.step_id
    assert note.metadata["steps"] == 2 and note.metadata["first_change"]["evidence"] == first.evidence
    assert note.metadata["step_id"] == repair.step_id
    # both changes become training pairs, the first change's first
    pairs = pairs_from_records(run.store.get_records("repair"))
    assert [p.metadata["langgraph_step"] for p in pairs] == [1, 3]
    assert all(p.metadata["steps"] == 2 for p in pairs)
    assert "spam-1" in pairs[0].rejected and "kb-1" in pairs[0].chosen
    assert "spam-2" in pairs[1].rejected and "kb-2" in pairs[1].chosen


def test_the_second_steps_budget_is_kept(record: Recorder) -> None:
    run = record(build, QUESTION, "Linz")
    result = _repair(run, RepairConfig(max_steps=2, chain_max_reexecutions=1))
    assert result.two_step is not None
    assert result.two_step.reexecutions <= 1
    assert result.status == "no_flip"


def test_only_the_two_steps_forks_stay_in_the_checkpointer(record: Recorder) -> None:
    run = record(build, QUESTION, "Linz")
    cache = ForkCache()
    result = repair_run(
        run.trajectory,
        backend=Replayer(run.ig, refused_side_effects="withhold"),
        proposer=TraceProposer(index_for_graph(run.ig)),
        verifier=ReferenceVerifier(run.reference),
        store=run.store,
        config=RepairConfig(max_steps=2),
        cache=cache,
    )
    repair = result.repair
    assert repair is not None and repair.prior
    kept = {repair.fork_run_id, repair.prior[0].fork_run_id}
    threads = {t.config["configurable"]["thread_id"] for t in run.saver.list(None)}
    fork_threads = {t for t in threads if t != THREAD}
    assert fork_threads == {run.store.get_trajectory(f).thread_id for f in kept}
    assert result.cost.forks_discarded > 0
    # no cached probe points at a discarded fork, nor was made on one
    assert all(p.fork_run_id in kept for p in cache._probes.values())
    assert all(key[0] in {run.run_id, *kept} for key in cache._probes)


def test_a_second_change_the_rerun_cannot_take_fails_validation(record: Recorder) -> None:
    run = record(build, QUESTION, "Linz")
    result = _repair(run, RepairConfig(max_steps=2, keep_probe_forks=True))
    repair = result.repair
    assert repair is not None and repair.prior
    first = result.crs.probes[0].proposal
    assert first.step_id == repair.prior[0].step_id
    second = Proposal(
        step_id="nowhere",
        node=repair.node,
        hop=repair.hop,
        langgraph_step=99,
        values=repair.repaired,
        source="x",
    )
    validation = validate_chain(
        run.trajectory,
        first,
        second,
        Replayer(run.ig, refused_side_effects="withhold"),
        ReferenceVerifier(run.reference),
    )
    assert not validation.passed and validation.flips == 0
    assert "3 re-run(s) failed" in validation.reason and "search@99" in validation.reason
