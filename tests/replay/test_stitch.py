"""The trajectory stitcher, on hand-made trajectories (no LangGraph involved)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from causal_middleware.spans.model import (
    AnswerStep,
    Document,
    Hop,
    Intervention,
    Lineage,
    LLMStep,
    NodeStep,
    RetrievalStep,
    Trajectory,
)
from causal_middleware.store.stitch import (
    FROZEN_COPY,
    INHERITED,
    INTERVENED,
    REPLAYED,
    documents_in,
    executed_node_steps,
    is_stitched,
    own_steps,
    stitch_fork,
    stitch_from_store,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _t(i: int) -> datetime:
    return T0 + timedelta(seconds=i)


def _sid(prefix: str, i: int) -> str:
    return f"{prefix}{i:015x}"[-16:]


def _hop_block(run: str, hop: int, step: int, query: str, doc: str, clock: int) -> list[Any]:
    node_id, retrieval_id = _sid("a", clock), _sid("b", clock)
    return [
        NodeStep(
            step_id=node_id,
            node="retrieve",
            hop=hop,
            langgraph_step=step,
            checkpoint_id=f"cp{step - 1}",
            checkpoint_ns=f"retrieve:{run}{step}",
            start_time=_t(clock),
            end_time=_t(clock + 1),
            output={"docs": [doc]},
        ),
        RetrievalStep(
            step_id=retrieval_id,
            parent_step_id=node_id,
            node="retrieve",
            hop=hop,
            langgraph_step=step,
            start_time=_t(clock),
            query=query,
            documents=[Document(id=doc, text=f"text {doc}")],
        ),
        NodeStep(
            step_id=_sid("c", clock),
            node="read",
            hop=hop,
            langgraph_step=step + 1,
            checkpoint_id=f"cp{step}",
            checkpoint_ns=f"read:{run}{step}",
            start_time=_t(clock + 2),
            output={"fact": doc},
        ),
    ]


def _parent() -> Trajectory:
    steps: list[Any] = []
    for hop in (1, 2, 3):
        steps += _hop_block("p", hop, 2 * hop - 1, f"q{hop}", f"d{hop}", 10 * hop)
    answer_node = NodeStep(
        step_id=_sid("e", 99),
        node="answer",
        langgraph_step=7,
        checkpoint_id="cp6",
        checkpoint_ns="answer:x",
        start_time=_t(90),
        output={"answer": "d1 d2 d3"},
    )
    steps += [
        answer_node,
        LLMStep(
            step_id=_sid("f", 99),
            parent_step_id=answer_node.step_id,
            node="answer",
            langgraph_step=7,
            start_time=_t(91),
            model="m1",
            invocation_parameters={"temperature": 0},
        ),
        AnswerStep(
            step_id=_sid("d", 99),
            parent_step_id=answer_node.step_id,
            node="answer",
            langgraph_step=7,
            start_time=_t(92),
            answer="d1 d2 d3",
        ),
    ]
    hops = [
        Hop(
            index=h,
            sub_query=f"q{h}",
            documents=[Document(id=f"d{h}", text=f"text d{h}")],
            steps=[s for s in steps if s.hop == h],
            span_id=_sid("9", h),
        )
        for h in (1, 2, 3)
    ]
    return Trajectory(
        run_id="a" * 32,
        thread_id="t",
        graph="g",
        input={"q": "x"},
        reference="gold",
        answer="d1 d2 d3",
        hops=hops,
        steps=steps,
    )


def _lineage(mode: str = "regenerate", values: dict[str, Any] | None = None) -> Lineage:
    return Lineage(
        parent_run_id="a" * 32,
        fork_checkpoint_id="cp2",
        fork_hop=2,
        fork_node="retrieve",
        fork_step=3,
        mode=mode,  # type: ignore[arg-type]
        intervention=Intervention(
            node="retrieve",
            hop=2,
            langgraph_step=3,
            values=values if values is not None else {"docs": [{"id": "NEW", "text": "new"}]},
        ),
    )


def _own(mode: str = "regenerate", labels: dict[str, Any] | None = None) -> Trajectory:
    """The fork's own trace: read (no hop: before the fork's first own hop), one more hop, answer."""
    steps: list[Any] = [
        NodeStep(
            step_id=_sid("1", 1),
            node="read",
            langgraph_step=4,
            checkpoint_id="f3",
            start_time=_t(200),
            checkpoint_ns="read:f4",
            output={"fact": "NEW"},
        ),
    ]
    steps += _hop_block("f", 1, 5, "q3b", "d3b", 210)
    steps.append(
        NodeStep(
            step_id=_sid("2", 2),
            node="answer",
            langgraph_step=7,
            checkpoint_id="f6",
            checkpoint_ns="answer:f",
            start_time=_t(230),
            output={"answer": "NEW d3b"},
        )
    )
    steps.append(
        AnswerStep(
            step_id=_sid("3", 3),
            parent_step_id=_sid("2", 2),
            node="answer",
            langgraph_step=7,
            start_time=_t(231),
            answer="NEW d3b",
        )
    )
    hops = [
        Hop(
            index=1,
            sub_query="q3b",
            documents=[Document(id="d3b", text="text d3b")],
            steps=[s for s in steps if s.hop == 1],
            span_id=_sid("8", 1),
        )
    ]
    return Trajectory(
        run_id="b" * 32,
        thread_id="t",
        answer="NEW d3b",
        lineage=_lineage(mode),
        labels=labels or {},
        hops=hops,
        steps=steps,
        started_at=_t(199),
    )


def test_prefix_intervention_and_own_steps_in_order() -> None:
    parent, own = _parent(), _own()
    fork = stitch_fork(parent, own)
    assert is_stitched(fork) and not is_stitched(own)
    nodes = [(s.node, s.langgraph_step) for s in fork.steps if s.kind == "node"]
    assert nodes == [
        ("retrieve", 1),
        ("read", 2),
        ("retrieve", 3),
        ("read", 4),
        ("retrieve", 5),
        ("read", 6),
        ("answer", 7),
    ]
    inherited = [s for s in fork.steps if s.attributes.get(INHERITED)]
    assert {s.langgraph_step for s in inherited} == {1, 2}
    assert all(s.attributes[INHERITED] == parent.run_id for s in inherited)
    intervened = [s for s in fork.steps if s.attributes.get(INTERVENED)]
    assert [s.kind for s in intervened] == ["node", "retrieval"]
    assert intervened[0].output == {"docs": [{"id": "NEW", "text": "new"}]}
    replaced = next(
        s for s in parent.steps if s.node == "retrieve" and s.langgraph_step == 3 and s.kind == "node"
    )
    assert intervened[0].attributes["causal.replay.replaced_step_id"] == replaced.step_id
    assert intervened[1].query == "q2" and [d.id for d in intervened[1].documents] == ["NEW"]
    assert fork.answer == "NEW d3b" and fork.reference == "gold" and fork.input == {"q": "x"}
    assert fork.run_id == own.run_id and fork.lineage == own.lineage


def test_hops_renumbered_from_the_fork_hop() -> None:
    fork = stitch_fork(_parent(), _own())
    # own "read" ran before the fork's first own hop: it belongs to the fork hop (2); own hop 1 -> 3
    read4 = next(s for s in fork.steps if s.node == "read" and s.langgraph_step == 4)
    assert read4.hop == 2
    assert [h.index for h in fork.hops] == [1, 2, 3]
    assert [d.id for d in fork.hop(2).documents] == ["NEW"]
    assert fork.hop(3).sub_query == "q3b" and fork.hop(3).span_id == _sid("8", 1)
    assert fork.hop(1).sub_query == "q1" and fork.hop(1).span_id == _sid("9", 1)
    assert fork.hop(2).sub_query == "q2"


def test_hops_offset_label_keeps_instrumented_numbers() -> None:
    own = _own(labels={"replay.hops_offset": True})
    for step in own.steps:
        if step.hop == 1:
            step.hop = 3
    own.hops[0].index = 3
    fork = stitch_fork(_parent(), own)
    assert {s.hop for s in fork.steps if s.langgraph_step == 5} == {3}
    assert next(s for s in fork.steps if s.node == "read" and s.langgraph_step == 4).hop == 2
    assert fork.hop(3).sub_query == "q3b" and fork.hop(3).span_id == _sid("8", 1)


def test_replay_mode_copies_the_parents_suffix() -> None:
    parent = _parent()
    own = Trajectory(run_id="c" * 32, lineage=_lineage("replay"), answer="d1 d2 d3")
    fork = stitch_fork(parent, own)
    replayed = [s for s in fork.steps if s.attributes.get(REPLAYED)]
    assert [s.langgraph_step for s in replayed if s.kind == "node"] == [4, 5, 6, 7]
    assert fork.answer == "d1 d2 d3"
    assert [h.index for h in fork.hops] == [1, 2, 3]
    assert [d.id for d in fork.hop(3).documents] == ["d3"]
    assert own_steps(fork) == [] and executed_node_steps(fork) == []


def test_frozen_nodes_get_the_parents_recorded_children() -> None:
    parent, own = _parent(), _own("frozen")
    frozen = next(s for s in own.steps if s.node == "retrieve")
    frozen.attributes["causal.node.frozen"] = True
    own.steps = [s for s in own.steps if not (s.kind == "retrieval")]
    fork = stitch_fork(parent, own)
    copies = [s for s in fork.steps if s.attributes.get(FROZEN_COPY)]
    assert [(s.kind, s.query) for s in copies] == [("retrieval", "q3")]
    assert copies[0].parent_step_id == frozen.step_id and copies[0].hop == 3
    assert [d.id for d in fork.hop(3).documents] == ["d3"]
    executed = executed_node_steps(fork)
    assert ("retrieve", 5) not in [(s.node, s.langgraph_step) for s in executed]
    assert ("read", 4) in [(s.node, s.langgraph_step) for s in executed]


def test_bad_inputs_raise_clear_errors() -> None:
    parent = _parent()
    with pytest.raises(ValueError, match="no lineage"):
        stitch_fork(parent, parent)
    other = _own()
    other.lineage = other.lineage.model_copy(update={"parent_run_id": "f" * 32})  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="was forked from"):
        stitch_fork(parent, other)


def test_stitch_from_store_handles_missing_parents_and_plain_runs() -> None:
    parent, own = _parent(), _own()

    def missing(run_id: str) -> Trajectory:
        raise KeyError(run_id)

    assert stitch_from_store(missing, parent) is parent  # no lineage: unchanged
    orphan = stitch_from_store(missing, own)
    assert orphan.metadata["causal.replay.parent_missing"] is True and not is_stitched(orphan)
    stitched = stitch_from_store({parent.run_id: parent}.__getitem__, own)
    assert is_stitched(stitched)
    assert stitch_from_store(missing, stitched) is stitched  # idempotent


def test_documents_in_recognises_document_shapes() -> None:
    docs = documents_in(
        {
            "evidence": [
                {"id": "p1", "text": "a", "score": 0.5},
                {"page_content": "b", "metadata": {"id": "p2"}},
            ],
            "notes": ["not", "documents"],
            "count": 3,
        }
    )
    assert [(d.id, d.text, d.score) for d in docs] == [("p1", "a", 0.5), ("p2", "b", None)]
    assert documents_in({"evidence": []}) == [] and documents_in(["x"]) == []
