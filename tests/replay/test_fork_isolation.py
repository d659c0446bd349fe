"""Forks run on threads of their own: the parent's thread (its checkpoints, its latest state, its
history) is never written to, so a live chat thread is not moved by a fork of one of its turns."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph
from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer, ReplayError
from causal_middleware.integrations.langgraph.replayer.fork_thread import (
    FORK_THREAD_MARK,
    acopy_branch,
    copy_branch,
    graph_task_paths,
    new_fork_thread_id,
)
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import INHERITED, INTERVENED, is_stitched

from .conftest import checkpoint_rows

MODES = ("regenerate", "frozen", "replay")


# --- a two-turn chat agent ------------------------------------------------------------------------
class LookupChatModel(BaseChatModel):
    """Answers the latest question by looking it up: a ``lookup`` tool call, then a reply quoting the
    tool's result. Keeps every conversation it was shown."""

    shown: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "lookup-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> LookupChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.shown.append([f"{m.type}:{m.content}" for m in messages])
        question = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            message = AIMessage(content=f"{question} -> {last.content}")
        else:
            calls = [{"name": "lookup", "args": {"query": question}, "id": f"call-{question}"}]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def lookup(query: str) -> str:
    """Look a fact up."""
    return f"fact:{query}"


def chat_agent(checkpointer: Any) -> tuple[InstrumentedGraph, LookupChatModel]:
    model = LookupChatModel()
    agent = create_agent(model, [lookup], checkpointer=checkpointer)
    return instrument(agent, store=InMemorySpanStore()), model


def turn(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text)]}


def forked_fact(recorded: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [m.model_copy(update={"content": "FORKED"}) for m in recorded["messages"]]}


def thread_rows(saver: Any, thread_id: str) -> dict[Any, Any]:
    """The saver's raw rows (serialized bytes) that belong to ``thread_id``."""
    return {k: v for k, v in checkpoint_rows(saver).items() if k[1] == thread_id}


def contents(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"]]


def history_ids(graph: Any, thread_id: str) -> list[str]:
    """The thread's checkpoint ids, oldest first."""
    config = {"configurable": {"thread_id": thread_id}}
    return [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)][::-1]


def first_node_index(graph: Any, thread_id: str, run_number: int) -> int:
    """Where (in ``history_ids``) the ``run_number``-th run's first node ran from: the checkpoint
    after that run's input checkpoint."""
    snapshots = list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))[::-1]
    inputs = [i for i, s in enumerate(snapshots) if s.metadata["source"] == "input"]
    return inputs[run_number - 1] + 1


@pytest.fixture
def sqlite_path(tmp_path: Any) -> str:
    return str(tmp_path / "chat.db")


@pytest.fixture
def make_saver(sqlite_path: str, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Any]]:
    connections: list[sqlite3.Connection] = []

    def make(kind: str) -> Any:
        if kind == "memory":
            return InMemorySaver()
        if kind == "sqlite":
            conn = sqlite3.connect(sqlite_path, check_same_thread=False)
            connections.append(conn)
            return SqliteSaver(conn)
        if kind == "postgres":
            return request.getfixturevalue("postgres_saver")
        raise ValueError(kind)

    yield make
    for conn in connections:
        conn.close()


def _check_fork(fork: Any, run_1: str, thread: str, mode: str) -> None:
    assert fork.thread_id and fork.thread_id.startswith(thread + FORK_THREAD_MARK)
    assert fork.lineage is not None and fork.lineage.parent_run_id == run_1 and fork.lineage.mode == mode
    assert is_stitched(fork)
    assert any(s.attributes.get(INHERITED) == run_1 for s in fork.steps)
    assert any(s.attributes.get(INTERVENED) for s in fork.steps)
    assert fork.answer == ("q1 -> fact:q1" if mode == "replay" else "q1 -> FORKED")


def _check_fork_thread(graph: Any, fork: Any, user_ids: list[str], start: int) -> list[str]:
    """The fork thread starts with the user's checkpoints from ``start`` to the fork point (same ids),
    then has the fork's own. Returns the copied ids."""
    assert fork.lineage is not None
    fork_ids = history_ids(graph, fork.thread_id)
    copied = user_ids[start : user_ids.index(fork.lineage.fork_checkpoint_id) + 1]
    assert fork_ids[: len(copied)] == copied
    assert not set(fork_ids[len(copied) :]) & set(user_ids)
    assert fork.labels["replay.copied_checkpoints"] == len(copied)
    return copied


# --- the chat reproduction ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite", "postgres"])
def test_fork_of_a_past_turn_leaves_the_chat_thread_alone(
    make_saver: Callable[[str], Any], saver_kind: str, mode: str
) -> None:
    saver = make_saver(saver_kind)
    graph, model = chat_agent(saver)
    thread = f"chat-{uuid.uuid4().hex[:6]}"
    config = {"configurable": {"thread_id": thread}}
    graph.invoke(turn("q1"), config)
    run_1 = graph.last_run_id
    graph.invoke(turn("q2"), config)
    assert run_1 is not None
    rows = thread_rows(saver, thread)
    head = graph.graph.get_state(config)
    history = list(graph.graph.get_state_history(config))
    user_ids = history_ids(graph.graph, thread)

    fork = Replayer(graph).fork(run_1, node="tools", update=forked_fact, mode=mode)

    _check_fork(fork, run_1, thread, mode)
    # the user's thread: not a byte written, same head, same history
    assert thread_rows(saver, thread) == rows
    assert graph.graph.get_state(config) == head
    assert list(graph.graph.get_state_history(config)) == history
    assert graph.store.get_trajectory(fork.run_id).model_dump() == fork.model_dump()  # stitches
    # the fork thread: the run's checkpoints up to the fork point, then the fork's
    _check_fork_thread(graph.graph, fork, user_ids, first_node_index(graph.graph, thread, 1))
    fork_head = graph.graph.get_state({"configurable": {"thread_id": fork.thread_id}})
    final = "q1 -> fact:q1" if mode == "replay" else "q1 -> FORKED"
    assert contents(fork_head.values) == ["q1", "", "FORKED", final]
    # the user's next turn continues the real conversation, turn 2 included
    graph.invoke(turn("q3"), config)
    turns_1_2 = ["human:q1", "ai:", "tool:fact:q1", "ai:q1 -> fact:q1", "human:q2", "ai:", "tool:fact:q2"]
    assert model.shown[-2] == [*turns_1_2, "ai:q2 -> fact:q2", "human:q3"]
    assert not any("FORKED" in m for m in model.shown[-1])
    assert contents(graph.graph.get_state(config).values)[-1] == "q3 -> fact:q3"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("saver_kind", ["memory", "async-sqlite"])
def test_afork_leaves_the_chat_thread_alone(sqlite_path: str, saver_kind: str, mode: str) -> None:
    async def scenario(saver: Any) -> None:
        graph, model = chat_agent(saver)
        config = {"configurable": {"thread_id": "t"}}
        await graph.ainvoke(turn("q1"), config)
        run_1 = graph.last_run_id
        await graph.ainvoke(turn("q2"), config)
        assert run_1 is not None
        head = await graph.graph.aget_state(config)
        history = [s async for s in graph.graph.aget_state_history(config)]

        fork = await Replayer(graph).afork(run_1, node="tools", update=forked_fact, mode=mode)

        _check_fork(fork, run_1, "t", mode)
        assert await graph.graph.aget_state(config) == head
        assert [s async for s in graph.graph.aget_state_history(config)] == history
        fork_head = await graph.graph.aget_state({"configurable": {"thread_id": fork.thread_id}})
        final = "q1 -> fact:q1" if mode == "replay" else "q1 -> FORKED"
        assert contents(fork_head.values) == ["q1", "", "FORKED", final]
        await graph.ainvoke(turn("q3"), config)
        assert "ai:q2 -> fact:q2" in model.shown[-2] and not any("FORKED" in m for m in model.shown[-1])

    async def main() -> None:
        if saver_kind == "memory":
            saver = InMemorySaver()
            await scenario(saver)
            assert set(saver.storage) == {"t", _only_fork_thread(saver)}
        else:
            async with AsyncSqliteSaver.from_conn_string(sqlite_path) as saver:
                await scenario(saver)

    asyncio.run(main())


def test_afork_writes_no_row_of_the_users_thread(sqlite_path: str) -> None:
    """AsyncSqliteSaver, raw rows read back with a plain connection to the same file."""

    def rows() -> list[Any]:
        with sqlite3.connect(sqlite_path) as conn:
            return [
                conn.execute(f"SELECT * FROM {table} WHERE thread_id = 't' ORDER BY 1, 2, 3, 4").fetchall()
                for table in ("checkpoints", "writes")
            ]

    async def main() -> None:
        async with AsyncSqliteSaver.from_conn_string(sqlite_path) as saver:
            graph, _ = chat_agent(saver)
            config = {"configurable": {"thread_id": "t"}}
            await graph.ainvoke(turn("q1"), config)
            run_1 = graph.last_run_id
            await graph.ainvoke(turn("q2"), config)
            before = rows()
            assert run_1 is not None and before[0] and before[1]
            forks = await Replayer(graph).afork_many(
                [{"run_id": run_1, "node": "tools", "update": forked_fact, "mode": m} for m in MODES]
            )
            assert rows() == before
            assert len({f.thread_id for f in forks if not isinstance(f, BaseException)}) == 3

    asyncio.run(main())


def _only_fork_thread(saver: InMemorySaver) -> str:
    forks = [t for t in saver.storage if t != "t"]
    assert len(forks) == 1 and forks[0].startswith("t" + FORK_THREAD_MARK)
    return forks[0]


def retarget_lookup(recorded: dict[str, Any]) -> dict[str, Any]:
    """The model's tool call, asking for something else."""
    (message,) = recorded["messages"]
    calls = [{**c, "args": {"query": "other"}} for c in message.tool_calls]
    return {"messages": [message.model_copy(update={"tool_calls": calls})]}


@pytest.mark.parametrize("history", ["run", "thread"])
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_fork_history_run_or_whole_thread(
    make_saver: Callable[[str], Any], saver_kind: str, history: str
) -> None:
    saver = make_saver(saver_kind)
    graph, _ = chat_agent(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(turn("q1"), config)
    graph.invoke(turn("q2"), config)
    run_2 = graph.last_run_id
    assert run_2 is not None
    rows, user_ids = thread_rows(saver, "t"), history_ids(graph.graph, "t")
    replayer = Replayer(graph, fork_history=history)  # type: ignore[arg-type]

    fork = replayer.fork(run_2, node="tools", update=forked_fact)

    assert fork.answer == "q2 -> FORKED" and thread_rows(saver, "t") == rows
    start = first_node_index(graph.graph, "t", 2) if history == "run" else 0
    copied = _check_fork_thread(graph.graph, fork, user_ids, start)
    first = graph.graph.get_state(
        {"configurable": {"thread_id": fork.thread_id, "checkpoint_ns": "", "checkpoint_id": copied[0]}}
    )
    if history == "run":  # the run's first checkpoint is the fork thread's root
        assert first.parent_config is None and len(copied) < len(user_ids) / 2
    else:  # the whole thread, parent links included
        assert first.parent_config is None and copied[0] == user_ids[0]
        parents = [
            graph.graph.get_state(
                {"configurable": {"thread_id": t, "checkpoint_ns": "", "checkpoint_id": c}}
            ).parent_config
            for c in copied[1:]
            for t in ("t", fork.thread_id)
        ]
        assert [p["configurable"]["checkpoint_id"] for p in parents[::2]] == copied[:-1]  # type: ignore[index]
        assert [p["configurable"]["checkpoint_id"] for p in parents[1::2]] == copied[:-1]  # type: ignore[index]
    # either way the fork thread holds the whole conversation (a checkpoint holds the whole state)
    fork_head = graph.graph.get_state({"configurable": {"thread_id": fork.thread_id}})
    assert contents(fork_head.values) == [
        "q1",
        "",
        "fact:q1",
        "q1 -> fact:q1",
        "q2",
        "",
        "FORKED",
        "q2 -> FORKED",
    ]
    # a fork of the fork at the first step of its stitched prefix (the copy's first checkpoint)
    nested = replayer.fork(fork.run_id, node="model", update=retarget_lookup)
    assert nested.answer == "q2 -> fact:other" and nested.lineage is not None
    assert nested.lineage.fork_checkpoint_id == user_ids[first_node_index(graph.graph, "t", 2)]
    assert thread_rows(saver, "t") == rows


def _merge(state: list[str] | None, writes: Any) -> list[str]:
    return [*(state or []), *(x for w in writes for x in w)]


class DeltaState(TypedDict, total=False):
    x: str
    log: Annotated[list[str], DeltaChannel(_merge)]


def test_delta_channel_graphs_copy_the_whole_thread() -> None:
    """A DeltaChannel's value is rebuilt from the ancestors' writes: a copy from the run's start
    would lose what earlier runs of the thread wrote."""
    builder = StateGraph(DeltaState)
    builder.add_node("a", lambda s: {"log": [f"a:{s['x']}"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    graph = instrument(builder.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"x": "1"}, config)
    graph.invoke({"x": "2"}, config)
    run_2 = graph.last_run_id
    assert run_2 is not None

    fork = Replayer(graph).fork(run_2, node="b", values={"log": ["B!"]})  # fork_history="run"

    assert fork.labels["replay.copied_checkpoints"] == len(history_ids(graph.graph, "t")) - 1
    assert graph.graph.get_state({"configurable": {"thread_id": fork.thread_id}}).values == {
        "x": "2",
        "log": ["a:1", "b", "a:2", "B!"],
    }
    assert graph.graph.get_state(config).values["log"] == ["a:1", "b", "a:2", "b"]


# --- forks of forks, many forks, failed forks -----------------------------------------------------
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_nested_forks_at_prefix_own_and_intervened_steps(
    make_shape: Any, make_saver: Callable[[str], Any], saver_kind: str
) -> None:
    shape = make_shape("custom", checkpointer=make_saver(saver_kind))
    saver = shape.graph.graph.checkpointer
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    user_rows = thread_rows(saver, shape.thread_id)
    first = replayer.fork(run_id, hop=3, values={"docs": [{"id": "X", "text": "", "score": 0}]})
    assert first.answer == "q1-d,q2-d,X" and first.thread_id
    first_rows = thread_rows(saver, first.thread_id)

    # hop 1 is in the first fork's stitched prefix: its checkpoint was copied to the fork thread
    at_prefix = replayer.fork(first.run_id, hop=1, values={"docs": [{"id": "Y", "text": "", "score": 0}]})
    # a frozen node of the first fork's own suffix
    at_own = replayer.fork(first.run_id, node="answer", values={"answer": "overridden"}, mode="replay")
    # the first fork's intervened step: update= receives the intervened output
    at_intervened = replayer.fork(first.run_id, hop=3, update=lambda out: {**out, "docs": out["docs"] * 2})

    assert at_prefix.answer == "Y,q2-d,q3-d"
    assert at_own.answer == "overridden"
    assert at_intervened.answer == "q1-d,q2-d,X,X"
    for nested in (at_prefix, at_own, at_intervened):
        assert nested.lineage is not None and nested.lineage.parent_run_id == first.run_id
        assert nested.thread_id and nested.thread_id.startswith(first.thread_id + FORK_THREAD_MARK)
    assert thread_rows(saver, shape.thread_id) == user_rows
    assert thread_rows(saver, first.thread_id) == first_rows
    assert len({f.thread_id for f in (first, at_prefix, at_own, at_intervened)}) == 4
    # and deeper: a fork of the fork of the fork, at a step two generations back
    deeper = replayer.fork(at_prefix.run_id, hop=2, values={"docs": []})
    assert deeper.answer == "Y,q3-d"


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_concurrent_forks_of_one_run_are_each_isolated(
    make_shape: Any, make_saver: Callable[[str], Any], saver_kind: str
) -> None:
    shape = make_shape("custom", checkpointer=make_saver(saver_kind))
    saver = shape.graph.graph.checkpointer
    run_id = shape.run()
    user_rows = thread_rows(saver, shape.thread_id)
    user_ids = history_ids(shape.graph.graph, shape.thread_id)
    start = first_node_index(shape.graph.graph, shape.thread_id, 1)
    requests = [
        ForkRequest(
            run_id=run_id,
            hop=2,
            mode=MODES[i % 3],  # type: ignore[arg-type]
            values={"docs": [{"id": f"N{i}", "text": "", "score": 0}]},
        )
        for i in range(6)
    ]
    forks = Replayer(shape.graph, max_concurrency=3).fork_many(requests)
    assert thread_rows(saver, shape.thread_id) == user_rows
    own_ids: dict[str, set[str]] = {}
    for fork in forks:
        assert not isinstance(fork, BaseException) and fork.thread_id and fork.lineage
        copied = _check_fork_thread(shape.graph.graph, fork, user_ids, start)
        own_ids[fork.run_id] = set(history_ids(shape.graph.graph, fork.thread_id)[len(copied) :])
        assert fork.labels["replay.branch_checkpoint_id"] in own_ids[fork.run_id]
    # no fork's checkpoints appear on another fork's thread
    assert sum(len(v) for v in own_ids.values()) == len(set().union(*own_ids.values()))
    assert len({f.thread_id for f in forks if not isinstance(f, BaseException)}) == 6


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_a_fork_that_cannot_be_written_leaves_no_thread_behind(
    make_shape: Any, make_saver: Callable[[str], Any], saver_kind: str
) -> None:
    shape = make_shape("custom", checkpointer=make_saver(saver_kind))
    saver = shape.graph.graph.checkpointer
    run_id = shape.run()
    rows = checkpoint_rows(saver)
    with pytest.raises(ReplayError, match="cannot write the new output of node 'retrieve'"):
        Replayer(shape.graph).fork(run_id, hop=2, update=lambda out: {"docs": 5})  # list + int
    assert checkpoint_rows(saver) == rows


# --- the branch copy itself -----------------------------------------------------------------------
class FanState(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    total: int


def fan_out_graph(checkpointer: Any) -> Any:
    """start -> (left, right, in parallel) -> join: two tasks write at one checkpoint."""

    def start(state: FanState) -> dict[str, Any]:
        return {"notes": ["start"], "total": 1}

    def left(state: FanState) -> dict[str, Any]:
        return {"notes": ["left"]}

    def right(state: FanState) -> dict[str, Any]:
        return {"notes": ["right"]}

    def join(state: FanState) -> dict[str, Any]:
        return {"total": len(state["notes"])}

    builder = StateGraph(FanState)
    for name, fn in (("start", start), ("left", left), ("right", right), ("join", join)):
        builder.add_node(name, fn)
    builder.add_edge(START, "start")
    builder.add_edge("start", "left")
    builder.add_edge("start", "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    return builder.compile(checkpointer=checkpointer)


def _comparable(
    rows: dict[Any, Any], thread: str, serde: Any = None
) -> tuple[dict[Any, Any], dict[Any, str]]:
    """A thread's rows with the thread id taken out (to compare a copy with its source), and the
    ``task_path`` of each write apart: the copy keeps it only where several tasks wrote at one
    checkpoint (elsewhere it orders nothing and the saver API does not expose it).

    With ``serde``, serialized values (SQLite checkpoints and writes, PostgreSQL blobs and writes)
    are compared decoded: re-serializing a value that holds a ``set`` may order its items
    differently, which is the same value."""
    out: dict[Any, Any] = {}
    paths: dict[Any, str] = {}
    for key, row in rows.items():
        key = tuple(k for k in key if k != thread)
        if isinstance(row, dict):  # PostgreSQL
            row = {k: v for k, v in row.items() if k != "thread_id"}
            if key[0] == "write":
                paths[key] = row.pop("task_path")
            if serde is not None and "type" in row and isinstance(row.get("blob"), bytes | memoryview):
                row["blob"] = serde.loads_typed((row["type"], bytes(row["blob"])))
        elif key[0] == "write" and len(row) == 4:  # InMemorySaver: (task_id, channel, value, task_path)
            paths[key], row = row[3], row[:3]
            if serde is not None:
                row = (*row[:2], serde.loads_typed(row[2]))
        elif key[0] == "blob" and serde is not None:  # InMemorySaver: (type, bytes); "empty": no value
            row = row if row[0] == "empty" else serde.loads_typed(row)
        elif key[0] == "checkpoint" and len(row) == 3 and serde is not None:  # InMemorySaver
            row = (serde.loads_typed(row[0]), serde.loads_typed(row[1]), row[2])
        elif isinstance(row, tuple) and row[0] == thread:  # SQLite: thread_id first (writes: task_path 6th)
            row = row[1:]
            if key[0] == "write":
                paths[key], row = row[4], row[:4] + row[5:]
                if serde is not None:  # (ns, id, task_id, idx, channel, type, value)
                    row = (*row[:6], serde.loads_typed((row[5], row[6])))
            elif serde is not None:  # (ns, id, parent, type, checkpoint, metadata)
                row = (*row[:4], serde.loads_typed((row[3], row[4])), row[5])
        out[key] = row
    return out, paths


def _same_tuples(saver: Any, source: str, target: str, ids: list[str]) -> None:
    for checkpoint_id in ids:
        a = saver.get_tuple(
            {"configurable": {"thread_id": source, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
        )
        b = saver.get_tuple(
            {"configurable": {"thread_id": target, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
        )
        assert b is not None, checkpoint_id
        assert (b.checkpoint, b.metadata, b.pending_writes) == (a.checkpoint, a.metadata, a.pending_writes)
        parent = (a.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        assert (b.parent_config or {}).get("configurable", {}).get("checkpoint_id") == parent
        if parent is not None:
            assert b.parent_config["configurable"]["thread_id"] == target  # type: ignore[index]


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite", "postgres"])
def test_copied_branch_reads_back_identical(make_saver: Callable[[str], Any], saver_kind: str) -> None:
    saver = make_saver(saver_kind)
    graph = fan_out_graph(saver)
    config = {"configurable": {"thread_id": "src"}}
    graph.invoke({"notes": []}, config)
    head = graph.get_state(config).config["configurable"]["checkpoint_id"]
    # the checkpoint before left/right holds writes of two tasks: their order needs the task paths
    before_fan = next(s for s in graph.get_state_history(config) if set(s.next) == {"left", "right"})
    assert len({w[0] for w in saver.get_tuple(before_fan.config).pending_writes}) == 2
    source_rows = thread_rows(saver, "src")

    copied = copy_branch(saver, "src", head, "copy", task_paths=graph_task_paths(graph))

    assert copied.checkpoint_ids == history_ids(graph, "src") and copied.head == head
    _same_tuples(saver, "src", "copy", copied.checkpoint_ids)
    # row for row, values (decoded) and write indexes included, but for the thread id ...
    copy_rows, copy_paths = _comparable(thread_rows(saver, "copy"), "copy", saver.serde)
    rows, paths = _comparable(source_rows, "src", saver.serde)
    assert copy_rows == rows
    # ... and the task paths of the writes that need them to keep their order
    fan_id = before_fan.config["configurable"]["checkpoint_id"]
    fan_paths = {k: v for k, v in paths.items() if fan_id in k}
    assert len(set(fan_paths.values())) == 2 and "" not in fan_paths.values()
    assert {k: copy_paths[k] for k in fan_paths} == fan_paths
    assert thread_rows(saver, "src") == source_rows
    # the copy behaves like the source: re-running the fan-out from it gives the recorded result
    at_fan = {"configurable": {"thread_id": "copy", "checkpoint_ns": "", "checkpoint_id": fan_id}}
    assert (
        graph.invoke(None, at_fan)
        == graph.get_state(config).values
        == {
            "notes": ["start", "left", "right"],
            "total": 3,
        }
    )


@pytest.mark.parametrize("saver_kind", ["memory", "async-sqlite"])
def test_async_copy_matches_the_sync_one(sqlite_path: str, saver_kind: str) -> None:
    async def scenario(saver: Any) -> None:
        graph = fan_out_graph(saver)
        config = {"configurable": {"thread_id": "src"}}
        await graph.ainvoke({"notes": []}, config)
        head = (await graph.aget_state(config)).config["configurable"]["checkpoint_id"]

        async def paths(cfg: Any) -> dict[str, str]:
            from causal_middleware.integrations.langgraph.replayer.fork_thread import task_path_str

            return {t.id: task_path_str(t.path) for t in (await graph.aget_state(cfg)).tasks}

        copied = await acopy_branch(saver, "src", head, "copy", task_paths=paths)
        for checkpoint_id in copied.checkpoint_ids:
            a = await saver.aget_tuple(
                {"configurable": {"thread_id": "src", "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
            )
            b = await saver.aget_tuple(
                {"configurable": {"thread_id": "copy", "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
            )
            assert (b.checkpoint, b.metadata, b.pending_writes) == (
                a.checkpoint,
                a.metadata,
                a.pending_writes,
            )
        assert len(copied.checkpoint_ids) == len([s async for s in graph.aget_state_history(config)])

    async def main() -> None:
        if saver_kind == "memory":
            await scenario(InMemorySaver())
        else:
            async with AsyncSqliteSaver.from_conn_string(sqlite_path) as saver:
                await scenario(saver)

    asyncio.run(main())


def test_copy_refuses_bad_targets_and_missing_checkpoints() -> None:
    saver = InMemorySaver()
    with pytest.raises(ValueError, match="new thread id"):
        copy_branch(saver, "t", "x", "t")
    with pytest.raises(ReplayError, match="checkpoint nope of thread 't' is not in"):
        copy_branch(saver, "t", "nope", "t2")
    with pytest.raises(ReplayError, match="not a BaseCheckpointSaver"):
        copy_branch(object(), "t", "x", "t2")
    assert not any(t.startswith("t2") for t in saver.storage)


def test_fork_thread_ids() -> None:
    a, b = new_fork_thread_id("chat-7"), new_fork_thread_id("chat-7")
    assert a != b and a.startswith("chat-7::fork-") and len(a) == len("chat-7::fork-") + 12
    assert new_fork_thread_id(a).startswith(a + "::fork-")
    with pytest.raises(ValueError, match="non-empty"):
        new_fork_thread_id("")
