"""The fake fork backend of ``causal_middleware.testing``: runs, forks in each mode, discards."""

from __future__ import annotations

from typing import Any

import pytest

from causal_middleware.protocols import DiscardingForkBackend, ForkBackend
from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.spans.model import NodeStep, Outcome
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import FROZEN, INHERITED, INTERVENED
from causal_middleware.testing import (
    DiscardingFakeForkBackend,
    FakeForkBackend,
    Node,
    ScriptedAdapter,
    ScriptedAgent,
)


def _route(state: dict[str, Any], node: str, output: dict[str, Any]) -> str | None:
    if node == "lookup":
        state["evidence"] = output["evidence"]
        return "read"
    if node == "read":
        if output["fact"] == "again":  # re-query the same hop
            return "lookup"
        state["facts"].append(output["fact"])
        return "lookup" if len(state["facts"]) < 2 else "answer"
    return None


def chain_agent() -> ScriptedAgent:
    """Two hops of lookup -> read, then answer: hop 2's lookup depends on hop 1's fact."""

    def lookup(state: dict[str, Any]) -> dict[str, Any]:
        subject = state["facts"][-1] if state["facts"] else state["input"]
        return {
            "evidence": [
                {"id": f"doc-{subject}", "text": f"next of {subject}", "score": 1.0, "title": subject}
            ]
        }

    return ScriptedAgent(
        nodes=[
            Node("lookup", lookup, query=lambda s: s["facts"][-1] if s["facts"] else s["input"]),
            Node("read", lambda s: {"fact": s["evidence"][0]["text"].split()[-1] + "'"}),
            Node("answer", lambda s: {"answer": "/".join(s["facts"])}, answer_key="answer"),
        ],
        entry="lookup",
        route=_route,
        start=lambda text: {"input": text, "facts": [], "evidence": []},
        hop_of=lambda state, node: len(state["facts"]) + 1 if node != "answer" else None,
        name="chain",
    )


@pytest.fixture
def backend() -> FakeForkBackend:
    return FakeForkBackend(chain_agent())


def _nodes(trajectory: Any) -> list[NodeStep]:
    return [s for s in trajectory.steps if isinstance(s, NodeStep)]


def test_a_run_is_recorded_as_spans_and_judged(backend: FakeForkBackend) -> None:
    run = backend.run("a", reference="a'/a''")
    assert run.answer == "a'/a''" and run.outcome == Outcome.SUCCESS and run.graph == "chain"
    assert [(s.node, s.hop) for s in _nodes(run)] == [
        ("lookup", 1),
        ("read", 1),
        ("lookup", 2),
        ("read", 2),
        ("answer", None),
    ]
    retrievals = run.steps_of("retrieval")
    assert [r.query for r in retrievals] == ["a", "a'"] and retrievals[1].documents[0].id == "doc-a'"
    assert retrievals[0].documents[0].metadata == {"title": "a"}
    assert backend.store.get_trajectory(run.run_id).answer == run.answer
    assert backend.run("a", reference="b").outcome == Outcome.FAILURE
    assert backend.run("a").outcome is None


def test_regenerate_replaces_the_step_and_reruns_the_suffix(backend: FakeForkBackend) -> None:
    run = backend.run("a", reference="a'/a''")
    before = backend.agent.executions
    fork = backend.fork(run.run_id, node="read", hop=1, values={"fact": "x"}, labels={"probe": 1})
    # the suffix ran live on the new fact: hop 2 looked up x, read it, and the answer changed
    assert backend.agent.executions - before == 3
    assert fork.answer == "x/x'" and fork.outcome == Outcome.FAILURE
    assert fork.lineage is not None and fork.lineage.parent_run_id == run.run_id
    assert (fork.lineage.fork_node, fork.lineage.fork_hop, fork.lineage.fork_step, fork.lineage.mode) == (
        "read",
        1,
        2,
        "regenerate",
    )
    assert fork.labels["probe"] == 1 and fork.reference == "a'/a''"
    nodes = _nodes(fork)
    assert [(s.node, s.hop) for s in nodes] == [(s.node, s.hop) for s in _nodes(run)]
    assert INHERITED in nodes[0].attributes and nodes[1].attributes.get(INTERVENED) is True
    assert nodes[1].output == {"fact": "x"}
    assert fork.steps_of("retrieval")[-1].query == "x"


def test_frozen_keeps_the_recorded_suffix_and_reruns_the_answer(backend: FakeForkBackend) -> None:
    run = backend.run("a", reference="a'/a''")
    before = backend.agent.executions
    fork = backend.fork(run.run_id, node="read", hop=1, values={"fact": "x"}, mode="frozen")
    assert backend.agent.executions - before == 1  # only the answer node ran
    assert fork.answer == "x/a''" and fork.lineage is not None and fork.lineage.mode == "frozen"
    frozen = [(s.node, s.hop) for s in _nodes(fork) if s.attributes.get(FROZEN)]
    assert frozen == [("lookup", 2), ("read", 2)]
    # the frozen lookup's evidence is the parent's, copied under it by the store
    assert fork.steps_of("retrieval")[-1].query == "a'"
    rerun_all = backend.fork(
        run.run_id,
        node="read",
        hop=1,
        values={"fact": "x"},
        mode="frozen",
        rerun=["lookup", "read", "answer"],
    )
    assert rerun_all.answer == "x/x'"


def test_replay_executes_nothing(backend: FakeForkBackend) -> None:
    run = backend.run("a", reference="a'/a''")
    before = backend.agent.executions
    fork = backend.fork(run.run_id, node="read", hop=2, values={"fact": "z"}, mode="replay")
    assert backend.agent.executions == before and fork.answer == "a'/a''"
    assert fork.lineage is not None and fork.lineage.mode == "replay"
    # the store copies the parent's suffix onto the replayed fork
    assert [(s.node, s.hop) for s in _nodes(fork)] == [(s.node, s.hop) for s in _nodes(run)]


def test_frozen_runs_live_where_the_path_diverged(backend: FakeForkBackend) -> None:
    run = backend.run("a")
    before = backend.agent.executions
    fork = backend.fork(run.run_id, node="read", hop=1, values={"fact": "again"}, mode="frozen")
    # the re-query at hop 1 was never recorded, so it ran live; hop 2 and the rest were frozen
    assert backend.agent.executions - before == 3  # lookup@1, read@1, answer
    assert fork.answer == "a'/a''"
    assert [(s.node, s.hop) for s in _nodes(fork) if s.attributes.get(FROZEN)] == [("lookup", 2), ("read", 2)]


def test_the_original_run_is_untouched(backend: FakeForkBackend) -> None:
    run = backend.run("a", reference="a'/a''")
    recorded = [s.output for s in backend.runs[run.run_id].steps]
    fork = backend.fork(
        run.run_id, node="lookup", hop=1, update=lambda out: {"evidence": out["evidence"] * 2}
    )
    backend.fork(fork.run_id, node="read", hop=2, values={"fact": "q"})
    assert backend.store.get_trajectory(run.run_id).model_dump() == run.model_dump()
    assert [s.output for s in backend.runs[run.run_id].steps] == recorded
    assert (
        len(fork.steps_of("retrieval")[0].documents) == 2 and len(run.steps_of("retrieval")[0].documents) == 1
    )


def test_forks_by_step_number_and_records_each_request(backend: FakeForkBackend) -> None:
    run = backend.run("a")
    fork = backend.fork(run.run_id, step=4, values={"fact": "w"})
    assert fork.answer == "a'/w" and fork.lineage is not None and fork.lineage.fork_hop == 2
    assert [(r.run_id, r.step, r.values) for r in backend.requests] == [(run.run_id, 4, {"fact": "w"})]


def test_bad_fork_requests_name_what_was_wrong(backend: FakeForkBackend) -> None:
    run = backend.run("a")
    with pytest.raises(KeyError, match="unknown run"):
        backend.fork("0" * 32, node="read", hop=1)
    with pytest.raises(KeyError, match="no step node=read hop=7"):
        backend.fork(run.run_id, node="read", hop=7)
    with pytest.raises(ValueError, match="unknown node"):
        backend.fork(run.run_id, node="read", hop=1, mode="frozen", rerun=["nope"])
    with pytest.raises(ValueError, match="fork point"):
        backend.fork(run.run_id)
    with pytest.raises(ValueError, match="replay cannot follow"):
        backend.fork(run.run_id, node="read", hop=1, values={"fact": "again"}, mode="replay")
    assert len(backend.runs) == 1


def test_protocols_and_discarding() -> None:
    plain = FakeForkBackend(chain_agent())
    assert isinstance(plain, ForkBackend) and not isinstance(plain, DiscardingForkBackend)
    store = InMemorySpanStore()
    backend = DiscardingFakeForkBackend(chain_agent(), store)
    assert isinstance(backend, DiscardingForkBackend) and backend.store is store
    run = backend.run("a")
    fork = backend.fork(run.run_id, node="read", hop=1, values={"fact": "x"})
    with pytest.raises(ValueError, match="not a fork"):
        backend.discard_fork(run.run_id)
    assert backend.discard_fork(fork.run_id) is True and backend.discard_fork(fork.run_id) is False
    assert store.get_trajectory(fork.run_id).answer == "x/x'"  # its spans stay
    with pytest.raises(KeyError, match="unknown run"):
        backend.fork(fork.run_id, node="read", hop=2)


def test_an_agent_with_a_bad_shape_is_refused() -> None:
    noop = Node("a", lambda s: {})
    with pytest.raises(ValueError, match="unique"):
        ScriptedAgent(nodes=[noop, noop], entry="a", route=lambda s, n, o: None)
    with pytest.raises(ValueError, match="entry 'b'"):
        ScriptedAgent(nodes=[noop], entry="b", route=lambda s, n, o: None)
    looping = ScriptedAgent(nodes=[noop], entry="a", route=lambda s, n, o: "a")
    with pytest.raises(RuntimeError, match="without ending"):
        FakeForkBackend(looping).run("x")


def test_the_adapter_turns_hop_changes_into_forks_the_backend_applies(backend: FakeForkBackend) -> None:
    adapter = ScriptedAdapter(subquery_node="lookup", evidence_node="lookup", fact_node="read")
    assert isinstance(adapter, AgentAdapter)
    run = backend.run("a")
    documents = run.steps_of("retrieval")[0].documents
    evidence = adapter.evidence_update(
        run, 1, [d.model_copy(update={"text": "next of k"}) for d in documents]
    )
    fork = backend.fork(run.run_id, node=evidence.node, hop=evidence.hop, values=evidence.values)
    assert fork.answer == "k'/k''"
    fact = adapter.fact_update(run, 2, "m")
    assert backend.fork(run.run_id, node=fact.node, hop=fact.hop, values=fact.values).answer == "a'/m"
    with pytest.raises(NotImplementedError):
        adapter.answer_now_update(run, 1)
