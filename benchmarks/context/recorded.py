"""The benchmark's sessions played by a real ``create_agent`` agent and read back from its spans.

The simulation writes each session as conversation nodes. Here every session is played again by
a LangGraph agent made with ``create_agent`` and recorded with ``instrument()`` into a SQLite span
store, and the pipeline reads it the way it reads a user's agent: ``load_conversation`` from the
store, ``align_to_workspace`` by content, then detect -> diagnose -> recommend. What this measures
is what the simulation skips: the spans, the store, turning runs back into a conversation, and
tying tools of the user's own naming and output format to the workspace's files.

The agent's chat model is scripted to say and call what the session's agent did (one model call
per tool call, reasoning as the text of the call before a tool). Its tools are named and shaped the
way a user's would be, not the simulation's: ``find_articles`` prints the pages it found as plain
text (no paths, no JSON), ``open_article`` and ``open_runbook`` print one file, and each API tool of
the workspace fails by raising ``ToolException`` with the session's error (``handle_tool_error``:
the agent gets the error and goes on). Every output is the session's own, from the faulty
workspace.

A session's gold root node is carried over by position: the k-th node of its type in the
simulated session is the k-th node of that type in the recorded one, once aligned. A session whose
recorded node types do not line up with the simulated ones is counted in ``shape_mismatches``
and scored as it comes (its root rarely maps right).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from causal_middleware.integrations.langgraph.instrument import instrument
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, ConfigDict

from benchmarks.context.simulation.schema import Benchmark, SimTrace
from causal_middleware.context.conversation import (
    Conversation,
    ConversationNode,
    NodeType,
    align_to_workspace,
)
from causal_middleware.context.sessions import load_conversation
from causal_middleware.store.base import SpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

#: the agent's reply to a user turn the simulated session leaves unanswered (its last one)
CLOSING_REPLY = "Thank you for letting me know."
_TOOL_TYPES = (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP, NodeType.TOOL_CALL)


class _Script(FakeMessagesListChatModel):
    """The session's agent turns, in order (``bind_tools`` returns itself)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> _Script:
        return self


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


def _tool_call(node: ConversationNode) -> tuple[str, dict[str, Any]]:
    """The user-way tool name and arguments that play ``node``."""
    args = json.loads(node.content) if node.content.strip().startswith("{") else {}
    if node.type == NodeType.KB_RETRIEVAL:
        if "path" in args and "query" not in args:
            return "open_article", {"path": str(args["path"])}
        return "find_articles", {"query": str(args.get("query", node.content))}
    if node.type == NodeType.SKILL_LOOKUP:
        return "open_runbook", {"name": str(args.get("name") or node.name or "")}
    return str(node.name), {str(k): v for k, v in args.items()}


def _plain_hits(node: ConversationNode) -> str:
    """A search's pages the way a help-centre tool prints them: their text, no paths, no scores."""
    if not node.documents:
        return "No articles found."
    return "Articles found:\n\n" + "\n\n-----\n\n".join(d.content.strip() for d in node.documents)


class _Outputs:
    """What each tool returns, call by call, from the session's nodes."""

    def __init__(self) -> None:
        self.queue: dict[str, list[tuple[str, bool]]] = {}

    def add(self, name: str, output: str, error: bool) -> None:
        self.queue.setdefault(name, []).append((output, error))

    def tool(self, name: str) -> BaseTool:
        def run(**_: Any) -> str:
            pending = self.queue.get(name) or []
            if not pending:
                raise ToolException(f"{name}: no recorded output left")
            output, error = pending.pop(0)
            if error:
                raise ToolException(output)
            return output

        return StructuredTool.from_function(
            run,
            name=name,
            description=f"The {name} tool.",
            args_schema=_AnyArgs,
            handle_tool_error=True,
        )


def script_session(conversation: Conversation) -> tuple[list[str], list[AIMessage], list[BaseTool], int]:
    """The user turns, the scripted model's messages, the tools that play ``conversation``, and how
    many reasoning nodes had no tool call to ride on (dropped)."""
    users: list[str] = []
    messages: list[AIMessage] = []
    outputs = _Outputs()
    dropped = 0
    turns: dict[int, list[ConversationNode]] = {}
    for node in conversation.nodes:
        if node.type == NodeType.USER:
            users.append(node.content)
        if node.turn >= 1 and node.type != NodeType.USER:
            turns.setdefault(node.turn, []).append(node)
    for turn in range(1, len(users) + 1):
        reasoning: list[str] = []
        replies: list[str] = []
        for node in turns.get(turn, []):
            if node.type == NodeType.REASONING:
                reasoning.append(node.content)
            elif node.type == NodeType.AGENT:
                replies.append(node.content)
            elif node.type in _TOOL_TYPES:
                name, args = _tool_call(node)
                text = _plain_hits(node) if name == "find_articles" else node.output
                outputs.add(name, text, node.type == NodeType.TOOL_CALL and node.status == "error")
                messages.append(
                    AIMessage(
                        content=" ".join(reasoning),
                        tool_calls=[{"name": name, "args": args, "id": f"call-{len(messages)}"}],
                    )
                )
                reasoning = []
        dropped += len(reasoning)
        messages.append(AIMessage(content="\n\n".join(replies) if replies else CLOSING_REPLY))
    tools = [outputs.tool(name) for name in outputs.queue]
    for name in ("find_articles", "open_article", "open_runbook"):
        if name not in outputs.queue:
            tools.append(outputs.tool(name))
    return users, messages, tools, dropped


def record_session(trace: SimTrace, system_prompt: str, store: SpanStore) -> tuple[int, int]:
    """Play ``trace`` with a ``create_agent`` agent recorded into ``store`` (thread id: the trace
    id); returns (runs, dropped reasoning nodes)."""
    users, messages, tools, dropped = script_session(trace.conversation)
    agent = create_agent(
        _Script(responses=list[BaseMessage](messages)),
        tools=tools,
        system_prompt=system_prompt,
        checkpointer=InMemorySaver(),
    )
    graph = instrument(agent, store=store)
    try:
        config = {"configurable": {"thread_id": trace.ground_truth.trace_id}, "recursion_limit": 200}
        for text in users:
            graph.invoke({"messages": [{"role": "user", "content": text}]}, config)
        graph.force_flush()
    finally:
        graph.shutdown()
    return len(users), dropped


def _shape(conversation: Conversation) -> list[NodeType]:
    return [n.type for n in conversation.nodes if n.type != NodeType.REASONING]


def same_shape(simulated: Conversation, recorded: Conversation) -> bool:
    """The same node types in the same order, reasoning aside and the agent's closing replies to
    user turns the simulated session leaves unanswered (a real agent answers every turn)."""
    closing = [n for n in recorded.nodes if not (n.type == NodeType.AGENT and n.content == CLOSING_REPLY)]
    return _shape(simulated) == _shape(recorded.model_copy(update={"nodes": closing}))


def carried_root(simulated: Conversation, recorded: Conversation, root: str | None) -> str | None:
    """The recorded node in the gold root's place: the same type, the same ordinal."""
    if root is None:
        return None
    gold = simulated.node(root)
    ordinal = [n.id for n in simulated.nodes if n.type == gold.type].index(root)
    same = [n.id for n in recorded.nodes if n.type == gold.type]
    return same[ordinal] if ordinal < len(same) else None


def recorded_traces(
    bench: Benchmark, folder: Path, progress: Callable[[int, int], None] | None = None
) -> tuple[list[SimTrace], dict[str, Any]]:
    """Every trace of ``bench`` recorded by a real agent and read back: the traces with the
    recorded, aligned conversation and the carried-over root, and what the recording did."""
    store = SqliteSpanStore(folder / f"{bench.domain}-{bench.seed}.db")
    started = time.perf_counter()
    runs = dropped = mismatches = 0
    out: list[SimTrace] = []
    try:
        for i, trace in enumerate(bench.traces):
            ws = bench.workspace(trace)
            n_runs, n_dropped = record_session(trace, ws.read(ws.system_prompt_path), store)
            runs, dropped = runs + n_runs, dropped + n_dropped
            recorded = align_to_workspace(load_conversation(store, trace.ground_truth.trace_id), ws)
            if not same_shape(trace.conversation, recorded):
                mismatches += 1
            gt = trace.ground_truth.model_copy(
                update={
                    "root_node_id": carried_root(
                        trace.conversation, recorded, trace.ground_truth.root_node_id
                    ),
                    "n_nodes": len(recorded.nodes),
                }
            )
            out.append(trace.model_copy(update={"conversation": recorded, "ground_truth": gt}))
            if progress is not None:
                progress(i + 1, len(bench.traces))
        spans = sum(r.n_spans for r in store.list_runs(limit=None))
    finally:
        store.close()
    info = {
        "sessions": len(out),
        "runs": runs,
        "spans": spans,
        "shape_mismatches": mismatches,
        "reasoning_dropped": dropped,
        "record_seconds": round(time.perf_counter() - started, 2),
    }
    return out, info


def score_recorded(
    benches: Sequence[Benchmark], *, primary: str, seed: int = 0, include_traces: bool = False
) -> dict[str, Any]:
    """The report of :func:`benchmarks.context.bench.score_benchmarks` on the recorded sessions
    (``mode``: ``"offline, recorded"``), plus ``recorded`` (per domain: sessions, runs, spans,
    shape mismatches, reasoning nodes dropped, seconds)."""
    from benchmarks.context.bench import score_benchmarks, verified

    recorded: dict[str, Any] = {}
    replayed: list[Benchmark] = []
    with tempfile.TemporaryDirectory(prefix="causal-mw-recorded-") as tmp:
        for bench in benches:
            verified(bench, seed)  # the simulated set must hold before it is played
            traces, info = recorded_traces(bench, Path(tmp))
            recorded[bench.domain] = info
            replayed.append(bench.model_copy(update={"traces": traces}))
    out = score_benchmarks(replayed, primary=primary, seed=seed, include_traces=include_traces, verify=False)
    out["mode"] = "offline, recorded"
    out["recorded"] = recorded
    return out


__all__ = [
    "CLOSING_REPLY",
    "carried_root",
    "record_session",
    "recorded_traces",
    "same_shape",
    "score_recorded",
    "script_session",
]
