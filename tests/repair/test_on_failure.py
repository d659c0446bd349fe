"""``instrument(graph, on_failure=...)``: every user run is handed to the queue once it ends (invoke,
ainvoke, stream, astream), forks are not, and the queue judges in its own worker thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import instrument
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.protocols import Verdict
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.trigger import RepairQueue
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore

GUARD = 10.0


class State(TypedDict, total=False):
    question: str
    answer: str


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("answer", lambda state: {"answer": state["question"].upper()})
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=InMemorySaver())


class RecordingJudge:
    def __init__(self) -> None:
        self.judged: list[tuple[str, str | None]] = []
        self.threads: set[str] = set()

    def verify(self, trajectory: Trajectory) -> Verdict:
        self.threads.add(threading.current_thread().name)
        self.judged.append((trajectory.run_id, trajectory.answer))
        return Verdict(success=True, feedback="recorded")


def _unused_repair(trajectory: Trajectory) -> RepairResult:
    raise AssertionError("nothing is judged failed here")


def _cfg(i: int) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t{i}"}}


def test_every_kind_of_run_is_submitted_once_it_ends() -> None:
    store = InMemorySpanStore()
    judge = RecordingJudge()
    made: list[RepairQueue] = []

    def factory(instrumented: Any) -> RepairQueue:  # the queue may need the instrumented graph
        assert instrumented.store is store
        made.append(RepairQueue(_unused_repair, judge=judge, store=instrumented.store))
        return made[0]

    graph = instrument(_graph(), store=store, on_failure=factory)
    assert graph.on_failure is made[0]
    graph.invoke({"question": "a"}, _cfg(1))
    first = graph.last_run_id
    assert asyncio.run(graph.ainvoke({"question": "b"}, _cfg(2)))["answer"] == "B"
    assert list(graph.stream({"question": "c"}, _cfg(3)))

    async def consume() -> None:
        async for _ in graph.astream({"question": "d"}, _cfg(4)):
            pass

    asyncio.run(consume())
    # a fork (the replayer passes its lineage in the metadata) is not a user run: not submitted
    graph.invoke(
        {"question": "e"},
        {**_cfg(5), "metadata": {"causal_lineage": {"parent_run_id": first, "mode": "regenerate"}}},
    )
    assert made[0].wait_idle(GUARD)
    made[0].close()
    assert [answer for _, answer in judge.judged] == ["A", "B", "C", "D"]
    assert judge.judged[0][0] == first
    stored = {r.run_id for r in store.list_runs(limit=None)}
    assert len(stored) == 5 and {run_id for run_id, _ in judge.judged} < stored
    assert judge.threads == {"causal-repair-worker"}
    assert made[0].stats.submitted == 4


def test_on_failure_must_be_a_queue_and_failures_to_submit_are_swallowed() -> None:
    graph = instrument(_graph(), store=InMemorySpanStore())
    with pytest.raises(TypeError, match="submit"):
        graph.on_failure = object()

    class Broken:
        def submit(self, run_id: str) -> bool:
            raise RuntimeError("queue gone")

    graph.on_failure = Broken()
    assert graph.invoke({"question": "x"}, _cfg(9))["answer"] == "X"  # the run is unaffected
    assert graph.health.errors.get("instrument.on_failure") == 1
