"""A frozen fork's leading frozen supersteps applied with ``update_state`` (``replayer.prelude``)
(``Replayer.frozen_direct``) give the same fork as running them through LangGraph's loop:
the same steps, outputs, inputs, span kinds, hops and suffix account, the same real executions,
the parent untouched, and checkpoints that fork again."""

from __future__ import annotations

import asyncio
import collections
from typing import Annotated, Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from benchmarks.perf.graphs import build_chain_graph, chain_input
from causal_middleware.replay.errors import SideEffectBlockedError
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore

from .conftest import Shape
from .test_subgraph import _graph as subgraph_graph

# Differ between any two forks: ids of spans, checkpoints and fork threads, and times.
_PER_FORK = {"step_id", "parent_step_id", "start_time", "end_time", "checkpoint_id", "checkpoint_ns"}
_PER_FORK_ATTRS = {"session.id", "replay.branch_checkpoint_id", "causal.checkpoint.id"}
_PER_FORK_LABELS = {"replay.branch_checkpoint_id", "replay.frozen_applied_supersteps"}


def _view(trajectory: Trajectory) -> list[dict[str, Any]]:
    """Each step as data, with the per-fork ids left out and its parent named by position."""
    index = {s.step_id: i for i, s in enumerate(trajectory.steps)}
    out = []
    for s in trajectory.steps:
        data = s.model_dump(mode="json", exclude=_PER_FORK)
        data["attributes"] = {k: v for k, v in s.attributes.items() if k not in _PER_FORK_ATTRS}
        data["parent"] = index.get(s.parent_step_id) if s.parent_step_id is not None else None
        out.append(data)
    return out


def _both(replayer: Replayer, run_id: str, **kwargs: Any) -> tuple[Trajectory, Trajectory]:
    old = replayer.fork(run_id, mode="frozen", **kwargs)
    replayer.frozen_direct = True
    try:
        return old, replayer.fork(run_id, mode="frozen", **kwargs)
    finally:
        replayer.frozen_direct = False


def _assert_same_fork(old: Trajectory, new: Trajectory, *, frozen: bool = True) -> None:
    assert _view(new) == _view(old)
    assert [h.index for h in new.hops] == [h.index for h in old.hops]
    assert [h.sub_query for h in new.hops] == [h.sub_query for h in old.hops]
    run_fields = {"graph", "input", "answer", "reference", "outcome", "status", "error", "cost", "lineage"}
    assert new.model_dump(include=run_fields) == old.model_dump(include=run_fields)
    assert {k: v for k, v in new.labels.items() if k not in _PER_FORK_LABELS} == {
        k: v for k, v in old.labels.items() if k not in _PER_FORK_LABELS
    }
    assert new.metadata == old.metadata
    own = [s for s in new.steps if s.attributes.get("causal.node.frozen")]
    # every frozen node span carries the checkpoint it would have run from, on the fork's thread
    assert all(s.checkpoint_id for s in own) and bool(own) == frozen


def _executions(counter: collections.Counter[str], work: Any) -> tuple[Any, collections.Counter[str]]:
    before = collections.Counter(counter)
    out = work()
    return out, counter - before


def test_shapes_fork_the_same_frozen_suffix(shape: Shape) -> None:
    run_id = shape.run()
    parent_before = _view(shape.graph.store.get_trajectory(run_id))
    replayer = Replayer(shape.graph)
    kwargs = dict(shape.fork_hop2)
    shape.reset()
    old, old_runs = _executions(shape.nodes, lambda: replayer.fork(run_id, mode="frozen", **kwargs))
    old_effects = collections.Counter(shape.effects)
    replayer.frozen_direct = True
    new, new_runs = _executions(shape.nodes, lambda: replayer.fork(run_id, mode="frozen", **kwargs))
    _assert_same_fork(old, new)
    assert new_runs == old_runs  # the same nodes really executed, no more
    assert shape.effects - old_effects == collections.Counter()  # and no side effect fired again
    assert _view(shape.graph.store.get_trajectory(run_id)) == parent_before


def test_the_custom_loop_applies_its_frozen_supersteps_directly(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    old, new = _both(replayer, run_id, **shape.fork_hop2)
    _assert_same_fork(old, new)
    # decide -> retrieve -> decide run frozen from the fork at hop 2; answer is the re-run node
    assert new.labels["replay.frozen_applied_supersteps"] > 0
    assert new.labels["replay.suffix"]["live"][0][0] == "answer"


def _chain() -> Any:
    return instrument(build_chain_graph(3, checkpointer=InMemorySaver()), store=InMemorySpanStore())


@pytest.mark.parametrize("hop", [1, 2, 3])
def test_the_chain_graph_forks_the_same_and_forks_again(hop: int) -> None:
    graph = _chain()
    graph.invoke(chain_input(3), {"configurable": {"thread_id": "chain"}})
    run_id = graph.last_run_id
    assert run_id is not None
    replayer = Replayer(graph)
    old, new = _both(replayer, run_id, hop=hop)
    _assert_same_fork(old, new)
    assert new.labels["replay.frozen_applied_supersteps"] == 2 * (3 - hop) + 1
    assert graph.last_run_id == new.run_id  # as after a fork run through the loop
    # the fork's frozen steps live in real checkpoints: fork it again at one, from another replayer
    # (no in-process memory of the updates: the outputs come from the fork's stored steps)
    again = Replayer(graph)
    for fork in (old, new):
        read = next(s for s in fork.steps if s.node == "read" and s.attributes.get("causal.node.frozen"))
        replayed = again.fork(fork.run_id, node="read", step=read.langgraph_step, mode="replay")
        assert replayed.answer == "Thessen"
        live = again.fork(fork.run_id, node="read", step=read.langgraph_step, mode="regenerate")
        assert live.answer == "Thessen"


def test_a_changed_output_diverges_the_same_way() -> None:
    graph = _chain()
    graph.invoke(chain_input(3), {"configurable": {"thread_id": "chain"}})
    run_id = graph.last_run_id
    assert run_id is not None
    replayer = Replayer(graph)
    # the read at hop 1 now answers at once: the recorded retrieve at step 3 is never reached
    old, new = _both(replayer, run_id, hop=1, node="read", values={"answer": "Nowhere"})
    _assert_same_fork(old, new, frozen=False)
    assert new.answer == "Nowhere"
    assert new.labels["replay.frozen_applied_supersteps"] == 0


def test_a_frozen_subgraph_node_is_applied_whole() -> None:
    graph, calls = subgraph_graph()
    graph.invoke({"docs": []}, {"configurable": {"thread_id": "s"}})
    run_id = graph.last_run_id
    assert run_id is not None
    replayer = Replayer(graph)
    calls.clear()
    old, new = _both(replayer, run_id, node="plan", rerun=["answer"])
    _assert_same_fork(old, new)
    assert new.answer == "a,b"
    assert calls == collections.Counter({"answer": 2})  # one live answer per fork, nothing else ran
    assert new.labels["replay.frozen_applied_supersteps"] == 1


class _Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    answer: str


def _chat_graph() -> Any:
    def say(text: str) -> Any:
        return lambda state: {"messages": [AIMessage(content=text, id=text)]}

    def answer(state: _Chat) -> dict[str, Any]:
        return {"answer": "|".join(str(m.content) for m in state["messages"])}

    builder = StateGraph(_Chat)
    builder.add_node("first", say("one"))
    builder.add_node("second", say("two"))
    builder.add_node("answer", answer)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "answer")
    builder.add_edge("answer", END)
    return instrument(
        builder.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore(), answer_nodes=["answer"]
    )


def test_a_fork_of_a_frozen_step_gets_the_checkpoints_objects_back() -> None:
    graph = _chat_graph()
    graph.invoke({"messages": []}, {"configurable": {"thread_id": "chat"}})
    run_id = graph.last_run_id
    assert run_id is not None
    old, new = _both(Replayer(graph), run_id, node="first")
    _assert_same_fork(old, new)
    assert new.answer == "one|two" and new.labels["replay.frozen_applied_supersteps"] == 1
    # another replayer (nothing of these forks in memory) reads the frozen step's output from the
    # fork's checkpoints, as real messages, for the direct fork as for the one run in the loop
    for fork in (old, new):
        point = Replayer(graph).locate(fork.run_id, node="second")
        (message,) = point.recorded_output["messages"]
        assert isinstance(message, AIMessage) and message.content == "two"


def test_a_wholly_frozen_suffix_runs_no_loop_at_all() -> None:
    graph = _chain()
    graph.invoke(chain_input(3), {"configurable": {"thread_id": "chain"}})
    run_id = graph.last_run_id
    assert run_id is not None
    replayer = Replayer(graph)
    old, new = _both(replayer, run_id, hop=2, rerun=[])
    _assert_same_fork(old, new)
    assert new.labels["replay.frozen_applied_supersteps"] == 4  # read, retrieve, read, answer
    assert new.labels["replay.suffix"]["live"] == []
    assert new.answer == "Thessen" and new.status == old.status
    # the fork's thread ends where the loop's would: same final state, nothing left to run
    for fork in (old, new):
        assert fork.thread_id is not None
        state = graph.get_state({"configurable": {"thread_id": fork.thread_id}})
        assert state.next == () and state.values["answer"] == "Thessen"


async def _aboth(replayer: Replayer, run_id: str, **kwargs: Any) -> tuple[Trajectory, Trajectory]:
    old = await replayer.afork(run_id, mode="frozen", **kwargs)
    replayer.frozen_direct = True
    try:
        return old, await replayer.afork(run_id, mode="frozen", **kwargs)
    finally:
        replayer.frozen_direct = False


@pytest.mark.parametrize("hop", [1, 3])
def test_afork_applies_the_same_frozen_supersteps(hop: int) -> None:
    graph = _chain()
    graph.invoke(chain_input(3), {"configurable": {"thread_id": "chain"}})
    run_id = graph.last_run_id
    assert run_id is not None
    old, new = asyncio.run(_aboth(Replayer(graph), run_id, hop=hop))
    _assert_same_fork(old, new)
    assert new.labels["replay.frozen_applied_supersteps"] == 7 - 2 * hop


def test_afork_of_the_custom_shape(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    old, new = asyncio.run(_aboth(Replayer(shape.graph), run_id, **shape.fork_hop2))
    _assert_same_fork(old, new)
    assert new.labels["replay.frozen_applied_supersteps"] == 3


def test_a_refused_side_effect_after_the_frozen_steps_fails_the_same_way(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    forks = []
    for direct in (False, True):
        replayer.frozen_direct = direct
        # hop 3 reached at once: decide (frozen) routes to answer (live), then notify runs at a
        # step the parent never ran it at, so the side-effecting node is refused
        with pytest.raises(SideEffectBlockedError):
            replayer.fork(run_id, hop=1, node="retrieve", values={"hop": 3}, mode="frozen")
        fork_id = shape.graph.last_run_id
        assert fork_id is not None and fork_id != run_id
        forks.append(shape.graph.store.get_trajectory(fork_id))
    old, new = forks
    assert new.labels["replay.frozen_applied_supersteps"] == 1
    assert new.labels["replay.error"] == old.labels["replay.error"]
    assert _view(new) == _view(old)
    assert new.status == old.status
    assert shape.effects["notify"] == 1  # the parent's only
