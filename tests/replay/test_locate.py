"""Locating fork points, forks of forks, and the errors a bad fork request gets."""

from __future__ import annotations

from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer, ReplayError
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware.protocols import AsyncForkBackend, ForkBackend
from causal_middleware.spans import attributes as A
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import INHERITED, INTERVENED

from .conftest import Shape


@pytest.fixture
def custom(make_shape: Any) -> Shape:
    return make_shape("custom")


def test_locate_by_hop_node_or_step(custom: Shape) -> None:
    run_id = custom.run()
    replayer = Replayer(custom.graph)
    by_hop = replayer.locate(run_id, hop=2)
    assert (by_hop.node, by_hop.langgraph_step, by_hop.hop) == ("retrieve", 4, 2)
    assert by_hop.recorded_output == {
        "docs": [{"id": "q2-d", "text": "text about q2", "score": 0.5}],
        "hop": 2,
    }
    assert replayer.locate(run_id, step=4) == by_hop
    assert replayer.locate(run_id, hop=2, node="retrieve") == by_hop
    snapshot = custom.graph.get_state(by_hop.config)
    assert snapshot.metadata["step"] == 3 and snapshot.next == ("retrieve",)
    decide = replayer.locate(run_id, hop=2, node="decide")
    assert (decide.node, decide.langgraph_step) == ("decide", 5)
    assert replayer.locate(run_id, node="answer").langgraph_step == 8


def test_locate_without_checkpoint_ids_finds_the_runs_own_branch(custom: Shape) -> None:
    run_id = custom.run()
    replayer = Replayer(custom.graph)
    expected = replayer.locate(run_id, hop=3)
    replayer.fork(run_id, hop=2, values={"docs": []})  # the thread now holds two branches
    replayer.fork(run_id, hop=1, values={"docs": []})
    stripped = InMemorySpanStore()
    stripped.write_spans(
        [
            s.model_copy(
                update={"attributes": {k: v for k, v in s.attributes.items() if k != A.CAUSAL_CHECKPOINT_ID}}
            )
            for s in custom.graph.store.get_spans(run_id)
        ]
    )
    assert all(s.checkpoint_id is None for s in stripped.get_trajectory(run_id).steps)
    assert Replayer(custom.graph, store=stripped).locate(run_id, hop=3) == expected.model_copy(
        update={"step_id": expected.step_id}
    )


def test_fork_of_a_fork(custom: Shape) -> None:
    run_id = custom.run()
    replayer = Replayer(custom.graph)
    first = replayer.fork(run_id, hop=2, values={"docs": [{"id": "NEW", "text": "x", "score": 1.0}]})
    assert first.answer == "q1-d,NEW,q3-d"

    def seen(recorded: dict[str, Any]) -> dict[str, Any]:
        seen.recorded = recorded  # type: ignore[attr-defined]
        return {**recorded, "docs": [{"id": "NEWER", "text": "y", "score": 1.0}]}

    # re-fork the first fork at its own intervened step: update= receives the first fork's output
    second = replayer.fork(first.run_id, hop=2, update=seen)
    assert seen.recorded["docs"][0]["id"] == "NEW"  # type: ignore[attr-defined]
    assert second.answer == "q1-d,NEWER,q3-d"
    assert second.lineage.parent_run_id == first.run_id  # type: ignore[union-attr]
    # and at a step the first fork ran itself
    third = replayer.fork(first.run_id, hop=3, values={"docs": [{"id": "LAST", "text": "z", "score": 1.0}]})
    assert third.answer == "q1-d,NEW,LAST"
    inherited = [s for s in third.steps if s.attributes.get(INHERITED) and s.kind == "node"]
    assert [(s.node, s.langgraph_step) for s in inherited] == [
        ("decide", 1),
        ("retrieve", 2),
        ("decide", 3),
        ("retrieve", 4),
        ("decide", 5),
    ]
    # the grandparent's intervention is part of the inherited prefix
    assert next(s for s in inherited if s.langgraph_step == 4).attributes.get(INTERVENED) is True


def test_fork_point_errors_are_clear(custom: Shape) -> None:
    run_id = custom.run()
    replayer = Replayer(custom.graph)
    with pytest.raises(ValueError, match="fork point"):
        replayer.fork(run_id)
    with pytest.raises(ReplayError, match=r"no node step with hop=7.*node='retrieve'"):
        replayer.fork(run_id, hop=7)
    with pytest.raises(ReplayError, match="no node step with node='nope'"):
        replayer.fork(run_id, node="nope")
    with pytest.raises(ValueError, match="either values= or update="):
        replayer.fork(run_id, hop=2, values={}, update=lambda o: o)
    with pytest.raises(ValueError, match="mode"):
        replayer.fork(run_id, hop=2, mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"rerun names unknown node\(s\) \['ghost'\]"):
        replayer.fork(run_id, hop=2, mode="frozen", rerun=["ghost"])
    with pytest.raises(ReplayError, match=r"unknown state key\(s\) \['not_a_channel'\]"):
        replayer.fork(run_id, hop=2, values={"not_a_channel": 1})
    with pytest.raises(KeyError):
        replayer.fork("0" * 32, hop=2)
    with pytest.raises(ValueError, match="overwrite= names keys"):
        replayer.fork(run_id, hop=2, values={"hop": 2}, overwrite=["answer"])


def test_overwrite_replaces_the_whole_channel(custom: Shape) -> None:
    run_id = custom.run()
    replayer = Replayer(custom.graph)
    new = {"docs": [{"id": "ONLY", "text": "x", "score": 1.0}]}
    appended = replayer.fork(run_id, hop=2, values=new)
    replaced = replayer.fork(run_id, hop=2, values=new, overwrite=["docs"])
    assert appended.answer == "q1-d,ONLY,q3-d"  # reducer: instead of hop 2's own contribution
    assert replaced.answer == "ONLY,q3-d"  # Overwrite: hop 1's contribution is gone too


def test_runs_without_a_thread_cannot_be_forked(custom: Shape) -> None:
    run_id = custom.run()
    anonymous = InMemorySpanStore()  # the same run, recorded without a thread id
    drop = {A.SESSION_ID, A.GEN_AI_CONVERSATION_ID}
    anonymous.write_spans(
        [
            s.model_copy(update={"attributes": {k: v for k, v in s.attributes.items() if k not in drop}})
            for s in custom.graph.store.get_spans(run_id)
        ]
    )
    with pytest.raises(ReplayError, match="no thread id"):
        Replayer(custom.graph, store=anonymous).fork(run_id, hop=2)


def test_checkpoints_missing_from_the_checkpointer(make_shape: Any) -> None:
    recorded = make_shape("custom")
    run_id = recorded.run()
    # the same graph with a fresh (empty) checkpointer cannot see the run's checkpoints
    elsewhere = make_shape("custom", checkpointer=InMemorySaver(), store=recorded.graph.store)
    with pytest.raises(ReplayError, match="not in the graph's checkpointer"):
        Replayer(elsewhere.graph).fork(run_id, hop=2)


def test_replayer_is_the_cores_fork_backend(custom: Shape) -> None:
    replayer = Replayer(custom.graph)
    assert isinstance(replayer, ForkBackend) and isinstance(replayer, AsyncForkBackend)
    assert replayer.guarded_tools == ["page_oncall", "send_report"]


def test_replayer_rejects_what_it_cannot_use(custom: Shape) -> None:
    with pytest.raises(TypeError, match="InstrumentedGraph"):
        Replayer(custom.graph.original_graph)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrency"):
        Replayer(custom.graph, max_concurrency=0)
    with pytest.raises(ValueError, match="fork point"):
        ForkRequest(run_id="x")
