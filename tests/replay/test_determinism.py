"""Determinism: what makes a re-run reproducible, and the repeated-fork check."""

from __future__ import annotations

import random
from typing import Any, TypedDict

from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.replay.determinism import compare_suffixes, determinism_settings, suffix_signature
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory
from causal_middleware.store.memory import InMemorySpanStore

from .conftest import Shape


def test_settings_read_models_temperatures_and_seeds() -> None:
    steps = [
        LLMStep(step_id="1" * 16, model="m-a", provider="p", invocation_parameters={"temperature": 0.0}),
        LLMStep(step_id="2" * 16, model="m-b", invocation_parameters={"temperature": 0.7, "seed": 42}),
        LLMStep(step_id="3" * 16, invocation_parameters={"model": "m-a", "temperature": 1}),
    ]
    settings = determinism_settings(Trajectory(run_id="a" * 32, steps=steps))
    assert settings.models == ["m-a", "m-b"] and settings.providers == ["p"]
    assert settings.temperatures == [0.0, 0.7, 1.0] and settings.seeds == [None, 42, None]
    assert settings.llm_calls == 3 and not settings.pinned
    assert determinism_settings(Trajectory(run_id="a" * 32, steps=steps[:2])).pinned


def test_compare_suffixes_finds_the_first_difference() -> None:
    def run(outputs: list[Any]) -> Trajectory:
        steps = [
            NodeStep(step_id=f"{i:016x}", node=f"n{i}", langgraph_step=i, output=o)
            for i, o in enumerate(outputs)
        ]
        return Trajectory(run_id="b" * 32, steps=steps)

    same = [run([{"a": 1}, {"b": 2}]), run([{"a": 1}, {"b": 2}])]
    assert compare_suffixes(same) is None
    difference = compare_suffixes([run([{"a": 1}, {"b": 2}]), run([{"a": 1}, {"b": 3}]), run([{"a": 1}])])
    assert difference is not None and (difference.position, difference.repeat) == (1, 1)
    assert difference.expected["node"] == "n1" and difference.actual["output"] == '{"b": 3}'  # type: ignore[index]
    assert compare_suffixes([run([{"a": 1}]), run([])]).actual is None  # type: ignore[union-attr]
    assert suffix_signature(run([None])) == [
        {"kind": "node", "node": "n0", "langgraph_step": 0, "output": "null"}
    ]


def test_reference_agent_forks_are_deterministic_and_labelled(make_shape: Any) -> None:
    shape: Shape = make_shape("reference")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    report = replayer.check_determinism(run_id, hop=2, node="retrieve", values={"evidence": []})
    assert report.deterministic and report.first_difference is None
    assert report.repeats == 2 and len(set(report.fork_run_ids)) == 2
    assert report.answers[0] == report.answers[1]
    assert report.fork_node == "retrieve" and report.settings.llm_calls > 0
    assert report.settings.models  # the offline model's id, read off the run's LLM steps
    fork = shape.graph.store.get_trajectory(report.fork_run_ids[0])
    assert fork.labels["replay.determinism"]["models"] == report.settings.models


class _State(TypedDict, total=False):
    x: int
    noise: float
    answer: str


def test_a_nondeterministic_node_is_reported() -> None:
    rng = random.Random(7)

    def start(state: _State) -> dict[str, Any]:
        return {"x": state.get("x", 0) + 1}

    def sample(state: _State) -> dict[str, Any]:
        return {"noise": rng.random()}

    def answer(state: _State) -> dict[str, Any]:
        return {"answer": f"{state['x']}:{state['noise']:.6f}"}

    builder = StateGraph(_State)
    for name, fn in (("start", start), ("sample", sample), ("answer", answer)):
        builder.add_node(name, fn)
    builder.add_edge(START, "start")
    builder.add_edge("start", "sample")
    builder.add_edge("sample", "answer")
    builder.add_edge("answer", END)
    graph = instrument(builder.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore())
    graph.invoke({"x": 0}, {"configurable": {"thread_id": "n"}})
    report = Replayer(graph).check_determinism(graph.last_run_id, repeats=3)  # type: ignore[arg-type]
    assert not report.deterministic
    assert report.fork_node == "start" and report.fork_step == 1
    assert report.first_difference is not None
    assert report.first_difference.expected["node"] == "sample"  # type: ignore[index]
    assert len(set(report.answers)) == 3
