"""A user's RAG StateGraph with a keyword-stuffed document in its corpus, diagnosed and repaired
with no adapter, with a BM25 retriever and with a vector-store retriever (k=1 and k=2).

The planted failure: for hop 1's query ("Zorvex Labs founded") the stuffed document
``seo-zorvex`` outranks the true passage and names the wrong founder (Ovid Crane); hop 2 then
looks up where Ovid Crane was born, and the run answers Harlow instead of Tessaly. The root
cause is the hop-1 ``retrieve`` step, its evidence the stuffed document in ``passages``.

* ``crs``, ``suffix_regen`` and ``path_aware`` re-execute everything after the changed step, so
  replacing or leaving out ``seo-zorvex`` at hop 1 restores Tessaly: they must blame
  ``retrieve`` at hop 1 (stage "retrieval"), naming ``seo-zorvex`` in ``passages``.
* ``frozen_hop`` holds every step outside the changed step's hop at its recorded output. The
  fault propagated: hop 2 searched for, and read about, the wrong founder, so with hop 2 held
  fixed no hop-1 change can reach the answer: it must not blame hop 1, and its hop-1 probe must
  hold hop 2 (``retrieve`` *and* ``read``) at their recorded outputs. What it blames instead is
  the propagated fault's later face, when one exists: with the vector retriever at k=2 hop 2 also
  retrieved ``morrow-bio`` ("Ilka Morrow was born in Tessaly"), so setting hop 2's ``answer`` to
  the value found there restores the answer (``read`` at hop 2, evidence ``morrow-bio``); in the
  other three set-ups Tessaly appears in nothing the run retrieved, nothing single-step restores
  the answer with later hops frozen, and it names the answer stage.
* the offline repair (``TraceProposer`` over the user's own retriever) removes or replaces
  ``seo-zorvex`` at hop 1; the repair is validated by re-execution and its fork answers Tessaly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from user_agent_graphs import (
    GOLD,
    POISON_ID,
    QUESTION,
    TRUE_ID,
    WRONG_FOUNDER,
    WRONG_PLACE,
    BM25Retriever,
    poisoned_corpus,
    rag_graph,
    vector_retriever,
)
from user_agent_harness import Recorded, Recorder

from causal_middleware.spans.model import NodeStep, Outcome, RetrievalStep

RETRIEVERS: dict[str, Callable[[list[Document], int], BaseRetriever]] = {
    "bm25": lambda docs, k: BM25Retriever.over(docs, k=k),
    "vector": lambda docs, k: vector_retriever(docs, k=k),
}
CONFIGS = [("bm25", 1), ("bm25", 2), ("vector", 1), ("vector", 2)]
CONFIG_IDS = [f"{kind}-k{k}" for kind, k in CONFIGS]
PROBING = ["crs", "suffix_regen", "path_aware"]


def record_poisoned(record: Recorder, kind: str, k: int) -> Recorded:
    retriever = RETRIEVERS[kind](poisoned_corpus(), k)
    run = record(lambda saver: rag_graph(retriever, checkpointer=saver), {"question": QUESTION}, GOLD)
    assert run.output["answer"] == WRONG_PLACE and run.output["founder"] == WRONG_FOUNDER
    return run


def node_steps(run: Any, node: str) -> list[NodeStep]:
    return [s for s in run.steps if isinstance(s, NodeStep) and s.node == node]


def passage_ids(step: NodeStep) -> list[str]:
    assert isinstance(step.output, dict)
    return [p["id"] for p in step.output["passages"]]


@pytest.mark.parametrize(("kind", "k"), CONFIGS, ids=CONFIG_IDS)
def test_the_run_is_recorded_as_failed_with_the_poison_ranked_first(
    record: Recorder, kind: str, k: int
) -> None:
    run = record_poisoned(record, kind, k)
    trajectory = run.trajectory
    assert trajectory.answer == WRONG_PLACE
    assert trajectory.reference == GOLD and trajectory.outcome == Outcome.FAILURE
    assert [h.index for h in trajectory.hops] == [1, 2]
    assert trajectory.hop(1).sub_query == "Zorvex Labs founded"
    hop1 = next(s for s in trajectory.steps if isinstance(s, RetrievalStep) and s.hop == 1)
    assert [d.id for d in hop1.documents][:2] == [POISON_ID, TRUE_ID][:k]
    [plan] = node_steps(trajectory, "plan")
    assert plan.hop is None


@pytest.mark.parametrize("method", PROBING)
@pytest.mark.parametrize(("kind", "k"), CONFIGS, ids=CONFIG_IDS)
def test_probing_methods_blame_hop_one_retrieval_and_name_the_poisoned_document(
    record: Recorder, kind: str, k: int, method: str
) -> None:
    run = record_poisoned(record, kind, k)
    diagnosis = run.diagnose(method)
    assert diagnosis.ran, diagnosis.reason
    first_retrieve = node_steps(run.trajectory, "retrieve")[0]
    assert (diagnosis.node, diagnosis.hop, diagnosis.stage) == ("retrieve", 1, "retrieval"), (
        diagnosis.root_cause
    )
    assert diagnosis.step_id == first_retrieve.step_id
    evidence = diagnosis.details["evidence"]
    assert evidence["state_key"] == "passages"
    assert evidence["ids"][0] == POISON_ID
    assert POISON_ID in evidence["change"] and evidence["source"].startswith("trace:")
    assert POISON_ID in diagnosis.root_cause
    assert 1 <= diagnosis.cost.reexecutions < 15
    # the user's vocabulary, not the reference agent's
    assert "passages" in diagnosis.root_cause and "sub_query" not in diagnosis.root_cause


@pytest.mark.parametrize(("kind", "k"), CONFIGS, ids=CONFIG_IDS)
def test_frozen_hop_does_not_blame_the_propagated_hop_one_fault(record: Recorder, kind: str, k: int) -> None:
    """Later hops held fixed, the hop-1 fault cannot be shown to matter; frozen_hop blames the
    hop-2 reader where hop 2's own evidence holds the right value, else the answer stage (see
    the module docstring)."""
    run = record_poisoned(record, kind, k)
    diagnosis = run.diagnose("frozen_hop")
    assert diagnosis.ran, diagnosis.reason
    assert (diagnosis.node, diagnosis.hop) != ("retrieve", 1), diagnosis.root_cause
    # it did try the poisoned document at hop 1, and that probe did not restore the answer
    hop1 = [p for p in diagnosis.details["probes"] if p["node"] == "retrieve" and p["hop"] == 1]
    assert any(POISON_ID in p["evidence"] for p in hop1)
    assert not any(p["restored"] for p in hop1)
    if (kind, k) == ("vector", 2):
        read2 = node_steps(run.trajectory, "read")[1]
        assert (diagnosis.node, diagnosis.hop, diagnosis.step_id) == ("read", 2, read2.step_id)
        assert diagnosis.stage == "retrieval"
        evidence = diagnosis.details["evidence"]
        assert (evidence["state_key"], evidence["ids"]) == ("answer", ["morrow-bio"])
    else:
        assert (diagnosis.stage, diagnosis.hop, diagnosis.node) == ("answer", None, None), (
            diagnosis.root_cause
        )


@pytest.mark.parametrize(("kind", "k"), CONFIGS, ids=CONFIG_IDS)
def test_frozen_hop_probe_of_hop_one_holds_hop_two_at_its_recorded_outputs(
    record: Recorder, kind: str, k: int
) -> None:
    """frozen mode "re-runs only the rest of the intervened step's hop and the answer node": in
    the fork of a hop-1 probe, hop 2's ``retrieve`` and ``read`` must be served their recorded
    outputs (``replay.suffix`` label: frozen, not live)."""
    run = record_poisoned(record, kind, k)
    recorded = {s.langgraph_step: s for s in run.trajectory.steps if isinstance(s, NodeStep)}
    hop2_steps = sorted(step for step, s in recorded.items() if s.hop == 2)
    diagnosis = run.diagnose("frozen_hop")
    [probe, *_] = [p for p in diagnosis.details["probes"] if p["node"] == "retrieve" and p["hop"] == 1]
    fork = run.store.get_trajectory(probe["fork_run_id"])
    suffix = fork.labels["replay.suffix"]
    live = [tuple(x) for x in suffix["live"]]
    frozen = [tuple(x) for x in suffix["frozen"]]
    hop2 = [(recorded[step].node, step) for step in hop2_steps]
    assert hop2 == [("retrieve", hop2_steps[0]), ("read", hop2_steps[1])]
    assert [x for x in hop2 if x in live] == [], f"hop-2 steps re-run live in a frozen probe: {suffix}"
    assert set(hop2) <= set(frozen)


@pytest.mark.parametrize(("kind", "k"), CONFIGS, ids=CONFIG_IDS)
def test_repair_removes_the_poisoned_document_validated_by_re_execution(
    record: Recorder, kind: str, k: int
) -> None:
    run = record_poisoned(record, kind, k)
    result = run.repair()
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None
    first_retrieve = node_steps(run.trajectory, "retrieve")[0]
    assert (repair.node, repair.hop, repair.step_id) == ("retrieve", 1, first_retrieve.step_id)
    assert repair.target == "passages"
    assert repair.evidence[0] == POISON_ID
    assert repair.source.startswith("trace:")
    # the repaired output no longer holds the stuffed document; the true passage is read instead
    repaired_ids = [p["id"] for p in repair.repaired["passages"]]
    assert POISON_ID not in repaired_ids and TRUE_ID in repaired_ids
    assert passage_ids(first_retrieve)[0] == POISON_ID
    validation = repair.validation
    assert validation.passed and validation.only_change
    assert validation.flips >= validation.min_flips and validation.n_runs >= 2
    assert repair.answer_before == WRONG_PLACE and repair.answer_after == GOLD
    assert repair.fork_run_id is not None
    fork = run.store.get_trajectory(repair.fork_run_id)
    assert fork.is_counterfactual and fork.answer == GOLD
    assert fork.thread_id is not None and fork.thread_id != run.config["configurable"]["thread_id"]
    fork_retrieves = node_steps(fork, "retrieve")
    assert POISON_ID not in passage_ids(fork_retrieves[0])
    [fork_read_1, *_] = node_steps(fork, "read")
    assert isinstance(fork_read_1.output, dict) and fork_read_1.output["founder"] == "Ilka Morrow"
    # the explanation speaks of the user's keys and documents
    assert POISON_ID in result.explanation and "passages" in result.explanation
    assert "'retrieve'" in result.explanation and "hop 1" in result.explanation
    [record_] = run.store.get_records("repair", run.run_id)
    assert record_["status"] == "repaired"
