"""The three suffix modes, lineage and side-effect safety, on all three agent shapes."""

from __future__ import annotations

import collections
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import Replayer, SideEffectBlockedError
from causal_middleware.integrations.langgraph.replayer.branch import checkpoint_config

from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.stitch import INHERITED, INTERVENED, REPLAYED, at_root, executed_node_steps

from .conftest import Shape, checkpoint_rows, run_snapshot


def _fork_point_only(shape: Shape) -> dict[str, Any]:
    return {k: v for k, v in shape.fork_hop2.items() if k in ("hop", "node", "step")}


def _suffix_nodes(parent: Trajectory, fork_step: int) -> collections.Counter[str]:
    return collections.Counter(
        str(s.node)
        for s in parent.steps
        if s.kind == "node" and at_root(s) and s.langgraph_step is not None and s.langgraph_step > fork_step
    )


def test_identity_regenerate_fork_reexecutes_exactly_the_recorded_suffix(shape: Shape) -> None:
    run_id = shape.run()
    parent = shape.graph.store.get_trajectory(run_id)
    assert len(parent.hops) >= 3
    replayer = Replayer(shape.graph)
    shape.reset()
    fork = replayer.fork(run_id, **_fork_point_only(shape))
    assert fork.lineage is not None and fork.lineage.fork_step is not None
    expected = _suffix_nodes(parent, fork.lineage.fork_step)
    assert expected, "the fork point must leave a suffix"
    # side-effecting nodes return their recorded output instead of running
    assert shape.nodes == collections.Counter(
        {node: n for node, n in expected.items() if node not in replayer.side_effecting}
    )
    assert fork.answer == parent.answer
    assert fork.lineage.intervention is not None and fork.lineage.intervention.kind == "identity"


def test_regenerate_with_intervention_runs_only_steps_after_the_fork(shape: Shape) -> None:
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    shape.reset()
    fork = replayer.fork(run_id, **shape.fork_hop2)
    fork_step = fork.lineage.fork_step  # type: ignore[union-attr]
    executed = executed_node_steps(fork)
    assert executed and all(s.langgraph_step > fork_step for s in executed)
    assert shape.nodes == collections.Counter(str(s.node) for s in executed)
    # the stitched trajectory is the whole counterfactual run: prefix, intervention, suffix
    kinds = [
        (
            "inherited"
            if s.attributes.get(INHERITED)
            else "intervened"
            if s.attributes.get(INTERVENED)
            else "own"
        )
        for s in fork.steps
        if s.kind == "node"
    ]
    assert kinds.index("intervened") == kinds.count("inherited")
    assert kinds.count("intervened") == 1
    intervened = next(s for s in fork.steps if s.attributes.get(INTERVENED) and s.kind == "node")
    assert intervened.langgraph_step == fork_step and intervened.hop == 2


def test_frozen_executes_only_the_rerun_set(shape: Shape) -> None:
    run_id = shape.run()
    parent = shape.graph.store.get_trajectory(run_id)
    replayer = Replayer(shape.graph)
    shape.reset()
    fork = replayer.fork(run_id, **shape.fork_hop2, mode="frozen")
    rerun = set(fork.labels["replay.rerun"])
    assert rerun and set(shape.nodes) <= rerun
    assert sum(shape.nodes.values()) == len(executed_node_steps(fork)) > 0
    suffix = fork.labels["replay.suffix"]
    assert suffix["diverged"] == []
    frozen_nodes = {node for node, _ in suffix["frozen"]}
    assert frozen_nodes and not frozen_nodes & rerun - set(replayer.side_effecting)
    # nothing outside the re-run set ran, though the parent's suffix had such nodes
    assert set(_suffix_nodes(parent, fork.lineage.fork_step)) - rerun  # type: ignore[union-attr]


def test_frozen_with_empty_rerun_set_executes_nothing(shape: Shape) -> None:
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    shape.reset()
    fork = replayer.fork(run_id, **shape.fork_hop2, mode="frozen", rerun=[])
    assert sum(shape.nodes.values()) == 0
    assert executed_node_steps(fork) == []


def test_replay_executes_nothing_and_rebuilds_the_recorded_path(shape: Shape) -> None:
    run_id = shape.run()
    parent = shape.graph.store.get_trajectory(run_id)
    replayer = Replayer(shape.graph)
    shape.reset()
    fork = replayer.fork(run_id, **shape.fork_hop2, mode="replay")
    assert sum(shape.nodes.values()) == 0
    assert sum(shape.effects.values()) == 0
    fork_step = fork.lineage.fork_step  # type: ignore[union-attr]
    replayed = [s for s in fork.steps if s.attributes.get(REPLAYED) and s.kind == "node"]
    assert [(s.node, s.langgraph_step) for s in replayed] == [
        (s.node, s.langgraph_step)
        for s in parent.steps
        if s.kind == "node" and at_root(s) and (s.langgraph_step or 0) > fork_step
    ]
    assert fork.answer == parent.answer
    # the rebuilt path lives on the fork's own thread
    assert fork.thread_id and fork.thread_id.startswith(f"{shape.thread_id}::fork-")
    leaf = shape.graph.get_state(checkpoint_config(fork.thread_id, fork.labels["replay.leaf_checkpoint_id"]))
    assert leaf.metadata is not None and leaf.next == ()
    if shape.name == "custom":  # the intervention is in the rebuilt state, next to the recorded steps
        assert [d["id"] for d in leaf.values["docs"]] == ["q1-d", "NEW", "q3-d"]


def test_original_checkpoints_and_spans_are_unchanged_by_forks(shape: Shape) -> None:
    run_id = shape.run()
    store = shape.graph.store
    saver = shape.graph.graph.checkpointer
    rows_before = checkpoint_rows(saver)
    spans_before, trajectory_before = run_snapshot(store, run_id)
    replayer = Replayer(shape.graph)
    for mode in ("regenerate", "frozen", "replay"):
        replayer.fork(run_id, **shape.fork_hop2, mode=mode)
    rows_after = checkpoint_rows(saver)
    assert len(rows_after) > len(rows_before)  # the forks wrote new checkpoints ...
    assert {k: rows_after[k] for k in rows_before} == rows_before  # ... and changed none of the old ones
    assert run_snapshot(store, run_id) == (spans_before, trajectory_before)


@pytest.mark.parametrize("mode", ["regenerate", "frozen", "replay"])
def test_side_effecting_tools_and_nodes_never_run_in_a_fork(make_shape: Any, mode: str) -> None:
    for name in ("custom", "reference", "react"):
        shape = make_shape(name)
        run_id = shape.run()
        assert shape.effects[shape.side_effect_tool] >= 1  # the original run did act on the world
        replayer = Replayer(shape.graph)
        shape.reset()
        fork = replayer.fork(run_id, **shape.fork_hop2, mode=mode)
        assert shape.effects == collections.Counter(), (name, mode)
        if mode != "replay":
            served = fork.labels["replay.side_effects"]["served"]
            if name == "custom" or mode == "regenerate":
                assert {s["name"] for s in served} == {shape.side_effect_tool}


def test_allow_side_effects_lets_tools_run(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    shape.reset()
    fork = Replayer(shape.graph).fork(run_id, **shape.fork_hop2, allow_side_effects=True)
    assert shape.effects == collections.Counter({"send_report": 1, "notify": 1})
    assert fork.labels["replay.side_effects"]["executed"] == ["send_report"]
    assert fork.answer == "q1-d,NEW,q3-d"


def test_a_side_effect_the_parent_never_made_is_blocked(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    urgent = {"docs": [{"id": "URGENT-1", "text": "fire", "score": 1.0}]}
    shape.reset()
    with pytest.raises(SideEffectBlockedError, match="'page_oncall'") as info:
        replayer.fork(run_id, hop=2, values=urgent)
    assert info.value.name == "page_oncall"
    assert shape.effects == collections.Counter()
    failed = shape.graph.store.list_runs(parent_run_id=run_id)
    assert len(failed) == 1 and "SideEffectBlockedError" in failed[0].labels["replay.error"]
    assert failed[0].labels["replay.side_effects"]["blocked"] == ["page_oncall"]
    # allowed, it really runs
    fork = replayer.fork(run_id, hop=2, values=urgent, allow_side_effects=True)
    assert shape.effects["page_oncall"] == 1 and fork.answer == "q1-d,URGENT-1,q3-d"


def test_fork_is_a_linked_counterfactual_run(shape: Shape) -> None:
    run_id = shape.run()
    store = shape.graph.store
    fork = Replayer(shape.graph).fork(run_id, **shape.fork_hop2, labels={"experiment": "e1"})
    lineage = fork.lineage
    assert lineage is not None and lineage.parent_run_id == run_id and lineage.mode == "regenerate"
    assert lineage.fork_hop == 2 and lineage.fork_node and lineage.fork_checkpoint_id
    assert lineage.intervention is not None and lineage.intervention.node == lineage.fork_node
    assert fork.run_id != run_id and fork.is_counterfactual
    assert fork.labels["experiment"] == "e1"
    assert [r.run_id for r in store.list_runs(parent_run_id=run_id)] == [fork.run_id]
    spans = store.get_spans(fork.run_id)
    assert spans and all(s.attributes.get(A.CAUSAL_RUN_COUNTERFACTUAL) is True for s in spans)
    root = next(s for s in spans if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "run")
    assert root.attributes[A.CAUSAL_LINEAGE_PARENT_RUN_ID] == run_id
    assert root.attributes[A.CAUSAL_LINEAGE_FORK_NODE] == lineage.fork_node
    # the fork's own hops continue from the fork hop (the instrumentation's hop offset)
    hop_spans = [s for s in spans if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "hop"]
    assert hop_spans and min(s.attributes[A.CAUSAL_HOP_INDEX] for s in hop_spans) == lineage.fork_hop + 1
    # the store returns the stitched fork on its own
    assert store.get_trajectory(fork.run_id).model_dump() == fork.model_dump()


@pytest.mark.parametrize("name", ["custom", "reference", "react"])
def test_every_shape_on_a_sqlite_saver(make_shape: Any, sqlite_saver: Any, name: str) -> None:
    shape = make_shape(name, checkpointer=sqlite_saver)
    run_id = shape.run()
    rows_before = checkpoint_rows(sqlite_saver)
    snapshot = run_snapshot(shape.graph.store, run_id)
    replayer = Replayer(shape.graph)
    executed = {}
    for mode in ("regenerate", "frozen", "replay"):
        shape.reset()
        fork = replayer.fork(run_id, **shape.fork_hop2, mode=mode)
        executed[mode] = sum(shape.nodes.values())
        assert executed[mode] == len(executed_node_steps(fork))
        assert shape.effects == collections.Counter()
    assert executed["regenerate"] > executed["frozen"] > executed["replay"] == 0
    rows_after = checkpoint_rows(sqlite_saver)
    assert {k: rows_after[k] for k in rows_before} == rows_before
    assert run_snapshot(shape.graph.store, run_id) == snapshot


def test_tools_named_side_effecting_are_guarded_too() -> None:
    from causal_middleware.integrations.langgraph import instrument
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from causal_middleware.store.memory import InMemorySpanStore

    from .conftest import ScriptedReActModel

    sent: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search."""
        return f"result for {query}"

    @tool
    def send_email(to: str, body: str) -> str:  # not decorated: named at instrument() time
        """Send an e-mail."""
        sent.append(body)
        return f"sent to {to}"

    agent = create_agent(ScriptedReActModel(), [search, send_email], checkpointer=InMemorySaver())
    graph = instrument(agent, store=InMemorySpanStore(), side_effecting=("send_email",))
    graph.invoke({"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "n"}})
    run_id = graph.last_run_id
    assert len(sent) == 1
    replayer = Replayer(graph)
    assert "send_email" in replayer.guarded_tools
    fork = replayer.fork(
        run_id,
        hop=1,
        update=lambda out: {"messages": [m.model_copy(update={"content": "X"}) for m in out["messages"]]},
    )
    assert len(sent) == 1  # served from the record, not sent again
    assert [s["name"] for s in fork.labels["replay.side_effects"]["served"]] == ["send_email"]
    assert fork.answer == "final: X|result for q2"
    assert all(
        s.output == "sent to boss" for s in fork.steps if s.kind == "tool" and s.tool_name == "send_email"
    )
