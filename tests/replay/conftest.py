"""Agents for the replayer tests: a custom StateGraph, the reference agent and a create_agent ReAct
agent, each with a real checkpointer, a side-effecting tool, and counters of real executions
(node bodies, tools), so tests can tell what a fork actually ran."""

from __future__ import annotations

import collections
import functools
import operator
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from _postgres import PostgresUnavailable, postgres_server
from causal_middleware.integrations.langgraph import CausalNodeWrapper, instrument, side_effecting
from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph
from causal_middleware.integrations.langgraph.replayer import Replayer
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.store.memory import InMemorySpanStore


# --- counting -----------------------------------------------------------------------------------
class CountingNode(Runnable[Any, Any]):
    """Counts real executions of a node's runnable (a frozen node never reaches it)."""

    def __init__(self, inner: Runnable[Any, Any], name: str, counter: collections.Counter[str]) -> None:
        self.inner = inner
        self.node_name = name
        self.name = getattr(inner, "name", None) or name
        self.counter = counter

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.counter[self.node_name] += 1
        return self.inner.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.counter[self.node_name] += 1
        return await self.inner.ainvoke(input, config, **kwargs)


def count_executions(ig: InstrumentedGraph) -> collections.Counter[str]:
    """Count real executions of each root node of ``ig``: the counter sits inside the
    instrumentation's node wrapper, behind the replayer's override (a frozen node never reaches it)."""
    counter: collections.Counter[str] = collections.Counter()
    for name, node in ig.graph.nodes.items():
        wrapper = node.bound
        if isinstance(wrapper, CausalNodeWrapper):
            wrapper.inner = CountingNode(wrapper.inner, name, counter)
    return counter


# --- the agent shapes ---------------------------------------------------------------------------
@dataclass
class Shape:
    """One agent under test, instrumented, with its run input and how to fork it at hop 2."""

    name: str
    graph: InstrumentedGraph
    nodes: collections.Counter[str]  # node body executions
    effects: collections.Counter[str]  # side-effecting tool executions
    input: Any
    fork_hop2: dict[str, Any]
    side_effect_tool: str
    thread_id: str = "thread-1"
    extra: dict[str, Any] = field(default_factory=dict)

    def run(self, thread_id: str | None = None) -> str:
        config = {"configurable": {"thread_id": thread_id or self.thread_id}, "recursion_limit": 60}
        self.graph.invoke(self.input, config)
        run_id = self.graph.last_run_id
        assert run_id is not None
        return run_id

    def reset(self) -> None:
        self.nodes.clear()
        self.effects.clear()


class CustomState(TypedDict, total=False):
    question: str
    hop: int
    docs: Annotated[list[dict[str, Any]], operator.add]
    answer: str
    receipt: str


class KeywordRetriever(BaseRetriever):
    """Returns one document per query, id derived from the query."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(page_content=f"text about {query}", metadata={"id": f"{query}-d", "score": 0.5})]


def build_custom(checkpointer: Any, store: Any) -> Shape:
    """decide -> retrieve (x3) -> answer (calls send_report, and page_oncall for urgent documents)
    -> notify (a side-effecting node)."""
    effects: collections.Counter[str] = collections.Counter()
    retriever = KeywordRetriever()

    @side_effecting
    @tool
    def send_report(text: str) -> str:
        """Send the report to the outside world."""
        effects["send_report"] += 1
        return f"sent:{text}"

    def decide(state: CustomState) -> dict[str, Any]:
        return {}

    def retrieve(state: CustomState) -> dict[str, Any]:
        hop = state.get("hop", 0)
        docs = retriever.invoke(f"q{hop + 1}")
        return {
            "docs": [
                {"id": d.metadata["id"], "text": d.page_content, "score": d.metadata["score"]} for d in docs
            ],
            "hop": hop + 1,
        }

    @side_effecting
    @tool
    def page_oncall(text: str) -> str:
        """Page the on-call engineer (only for urgent documents)."""
        effects["page_oncall"] += 1
        return f"paged:{text}"

    def answer(state: CustomState) -> dict[str, Any]:
        text = ",".join(d["id"] for d in state["docs"])
        if any(d["id"].startswith("URGENT") for d in state["docs"]):
            page_oncall.invoke({"text": text})
        # the report's arguments do not depend on the documents: forks that change them still match
        # the recorded call (a call with changed arguments is refused, see tests/reliability_io)
        return {"answer": text, "receipt": send_report.invoke({"text": "daily report"})}

    @side_effecting
    def notify(state: CustomState) -> dict[str, Any]:
        effects["notify"] += 1
        return {}

    def route(state: CustomState) -> str:
        return "retrieve" if state.get("hop", 0) < 3 else "answer"

    builder = StateGraph(CustomState)
    for name, fn in (("decide", decide), ("retrieve", retrieve), ("answer", answer), ("notify", notify)):
        builder.add_node(name, fn)
    builder.add_edge(START, "decide")
    builder.add_conditional_edges("decide", route, ["retrieve", "answer"])
    builder.add_edge("retrieve", "decide")
    builder.add_edge("answer", "notify")
    builder.add_edge("notify", END)
    graph = builder.compile(checkpointer=checkpointer, name="custom")
    ig = instrument(graph, store=store, hop_nodes=["retrieve"], answer_nodes=["answer"])
    nodes = count_executions(ig)
    return Shape(
        name="custom",
        graph=ig,
        nodes=nodes,
        effects=effects,
        input={"question": "which docs?", "hop": 0},
        fork_hop2={"hop": 2, "values": {"docs": [{"id": "NEW", "text": "replacement", "score": 1.0}]}},
        side_effect_tool="send_report",
    )


class AuditedRetriever(BaseRetriever):
    """Wraps a retriever and writes every query to an audit log (a side-effecting tool)."""

    inner: BaseRetriever
    audit: Any

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        # one audit entry per retrieval, the same arguments whatever the query (forks change queries)
        self.audit.invoke({"query": "retrieval"}, config={"callbacks": run_manager.get_child()})
        return self.inner.invoke(query, config={"callbacks": run_manager.get_child()})


@functools.cache
def small_world() -> tuple[Any, Any]:
    """A small generated world of 3-hop questions and its BM25 index (built once per session)."""
    from benchmarks.world.generator import generate_world
    from causal_middleware.retrieval.bm25 import BM25Index

    dataset = generate_world(4, seed=3, hop_mix={3: 1.0})
    return dataset, BM25Index(dataset.passages)


def build_reference(checkpointer: Any, store: Any) -> Shape:
    """The reference agent over a small generated world (3-hop questions), offline model + BM25."""
    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.reference_agent import (
        REFERENCE_ANSWER_NODES,
        REFERENCE_HOP_NODES,
        build_reference_agent,
    )
    from causal_middleware.retrieval.langchain import IndexRetriever

    effects: collections.Counter[str] = collections.Counter()

    @side_effecting
    @tool
    def audit_log(query: str) -> str:
        """Append the query to the external audit log."""
        effects["audit_log"] += 1
        return f"logged:{query}"

    dataset, index = small_world()
    retriever = AuditedRetriever(inner=IndexRetriever(index=index, k=3), audit=audit_log)
    agent = build_reference_agent(retriever, OfflineChatModel(seed=0), checkpointer=checkpointer)
    ig = instrument(agent, store=store, hop_nodes=REFERENCE_HOP_NODES, answer_nodes=REFERENCE_ANSWER_NODES)
    nodes = count_executions(ig)
    question = dataset.questions[0]
    return Shape(
        name="reference",
        graph=ig,
        nodes=nodes,
        effects=effects,
        input={"question": question.text},
        fork_hop2={"hop": 2, "node": "retrieve", "values": {"evidence": []}},
        side_effect_tool="audit_log",
        extra={"question": question},
    )


class ScriptedReActModel(BaseChatModel):
    """Plays a ReAct agent from the conversation so far: search twice, e-mail the results, answer."""

    @property
    def _llm_type(self) -> str:
        return "scripted-react"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedReActModel:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        n = len(results)
        if n < 2:
            calls = [{"name": "search", "args": {"query": f"q{n + 1}"}, "id": f"call{n + 1}"}]
            message = AIMessage(content="", tool_calls=calls)
        elif n == 2:
            calls = [{"name": "send_email", "args": {"to": "boss", "body": "weekly summary"}, "id": "call3"}]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content="final: " + "|".join(results[:2]))
        return ChatResult(generations=[ChatGeneration(message=message)])


def build_react(checkpointer: Any, store: Any) -> Shape:
    """``langchain.agents.create_agent`` with a scripted model, a search tool and a side-effecting e-mail tool."""
    effects: collections.Counter[str] = collections.Counter()

    @tool
    def search(query: str) -> str:
        """Search the web."""
        return f"result for {query}"

    @side_effecting
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        effects["send_email"] += 1
        return f"sent to {to}"

    agent = create_agent(ScriptedReActModel(), [search, send_email], checkpointer=checkpointer)
    ig = instrument(agent, store=store)
    nodes = count_executions(ig)

    def changed_result(recorded: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [m.model_copy(update={"content": "CHANGED"}) for m in recorded["messages"]]}

    return Shape(
        name="react",
        graph=ig,
        nodes=nodes,
        effects=effects,
        input={"messages": [{"role": "user", "content": "research and report"}]},
        fork_hop2={"hop": 2, "update": changed_result},
        side_effect_tool="send_email",
    )


BUILDERS: dict[str, Callable[[Any, Any], Shape]] = {
    "custom": build_custom,
    "reference": build_reference,
    "react": build_react,
}


@pytest.fixture
def sqlite_saver(tmp_path: Any) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@pytest.fixture(params=sorted(BUILDERS))
def shape(request: pytest.FixtureRequest) -> Shape:
    """Each agent shape, on an InMemorySaver and an in-memory span store."""
    return BUILDERS[request.param](InMemorySaver(), InMemorySpanStore())


@pytest.fixture
def make_shape() -> Callable[..., Shape]:
    def make(name: str, checkpointer: Any = None, store: Any = None) -> Shape:
        return BUILDERS[name](
            checkpointer if checkpointer is not None else InMemorySaver(), store or InMemorySpanStore()
        )

    return make


def replayer_for(shape: Shape, **kwargs: Any) -> Replayer:
    return Replayer(shape.graph, **kwargs)


# --- "byte-for-byte unchanged" ------------------------------------------------------------------
def checkpoint_rows(saver: Any) -> dict[Any, Any]:
    """Every stored checkpoint and write of a saver, keyed by primary key (raw serialized bytes)."""
    if isinstance(saver, InMemorySaver):
        rows: dict[Any, Any] = {}
        for thread, namespaces in saver.storage.items():
            for ns, checkpoints in namespaces.items():
                for checkpoint_id, value in checkpoints.items():
                    rows[("checkpoint", thread, ns, checkpoint_id)] = value
        for key, writes in saver.writes.items():
            for write_key, value in writes.items():
                rows[("write", *key, *write_key)] = value
        for key, value in saver.blobs.items():
            rows[("blob", *key)] = value
        return rows
    if isinstance(saver, SqliteSaver):
        rows = {}
        with saver.lock:
            for row in saver.conn.execute("SELECT * FROM checkpoints"):
                rows[("checkpoint", *row[:3])] = row
            for row in saver.conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type, value "
                "FROM writes"
            ):
                rows[("write", *row[:5])] = row
        return rows
    if type(saver).__name__ == "PostgresSaver":
        return postgres_rows(saver)
    raise TypeError(type(saver).__name__)


def run_snapshot(store: Any, run_id: str) -> tuple[list[str], str]:
    """The run's stored spans (JSON) and its trajectory (JSON)."""
    return [s.model_dump_json() for s in store.get_spans(run_id)], store.get_trajectory(
        run_id
    ).model_dump_json()


# --- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """A PostgreSQL server of its own (one per test session, i.e. per xdist worker): tests/_postgres.py."""
    pytest.importorskip(
        "langgraph.checkpoint.postgres", reason="langgraph-checkpoint-postgres is not installed"
    )
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def postgres_saver(postgres_uri: str) -> Iterator[Any]:
    """A PostgresSaver on a connection pool, its tables emptied."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool(
        postgres_uri,
        min_size=1,
        max_size=8,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    try:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        with pool.connection() as conn:
            conn.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        yield saver
    finally:
        pool.close()


def postgres_rows(saver: Any) -> dict[Any, Any]:
    """Every stored checkpoint, write and blob of a PostgresSaver, keyed by primary key."""
    rows: dict[Any, Any] = {}
    with saver.conn.connection() as conn:  # type: ignore[union-attr]
        for row in conn.execute("SELECT * FROM checkpoints"):
            rows[("checkpoint", row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"])] = row
        for row in conn.execute("SELECT * FROM checkpoint_writes"):
            key = (
                "write",
                row["thread_id"],
                row["checkpoint_ns"],
                row["checkpoint_id"],
                row["task_id"],
                row["idx"],
            )
            rows[key] = row
        for row in conn.execute("SELECT * FROM checkpoint_blobs"):
            rows[("blob", row["thread_id"], row["checkpoint_ns"], row["channel"], row["version"])] = row
    return rows
