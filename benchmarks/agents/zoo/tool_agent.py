"""(d) A ``langchain.agents.create_agent`` tool agent: a scripted, deterministic chat model (a
langchain-core fake chat model whose ``bind_tools`` returns itself) decides each tool call from the
messages (it parses the question, links its entity, and reads the last tool result), over a
``lookup(entity, relation)`` tool backed by the world's table. Nodes: ``model`` and ``tools``."""

from __future__ import annotations

import itertools
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ..readers import link, parse_bridge, read_row
from ..world import Task
from .base import AgentUnderTest

SHAPE = "tool_agent"
FAMILY = "bridge"
CAUSES = ("stale_tool_row", "planner_error", "reader_error")

_ids = itertools.count()


class ScriptedToolModel(FakeMessagesListChatModel):
    """Decides from the messages alone (so a fork that edits a message changes what it does)."""

    responses: list[BaseMessage] = []
    aliases: dict[str, str] = {}

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:  # type: ignore[override]
        return self

    def _decide(self, messages: list[BaseMessage]) -> AIMessage:
        question = next((m.content for m in messages if isinstance(m, HumanMessage)), "")
        parsed = parse_bridge(str(question))
        if parsed is None:
            return AIMessage(content="unknown")
        r1, r2, entity = parsed
        results = [m for m in messages if isinstance(m, ToolMessage)]
        calls = [c for m in messages if isinstance(m, AIMessage) for c in (m.tool_calls or [])]
        if not results:
            return _call(link(entity, self.aliases), r1)
        value = read_row(str(results[-1].content), calls[len(results) - 1]["args"]["relation"])
        if len(results) == 1 and value != "unknown":
            return _call(link(value, self.aliases), r2)
        return AIMessage(content=value)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])


def _call(entity: str, relation: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": "lookup", "args": {"entity": entity, "relation": relation}, "id": f"call_{next(_ids)}"}
        ],
    )


def build(task: Task) -> AgentUnderTest:
    table = dict(task.table)
    served = {**table, **task.stale}  # what the table serves during the run (stale rows included)
    notes = dict(task.notes)

    @tool
    def lookup(entity: str, relation: str) -> str:
        """Look up one fact: the row for ``entity`` and ``relation`` of the knowledge table."""
        value = served.get((entity, relation))
        if value is None:
            return f"{entity} | {relation} | no row"
        note = notes.get((entity, relation))
        return f"{entity} | {relation} | {value}" + (f" | {note}" if note else "")

    def refresh() -> None:  # after the run the stale rows are replaced by the current values
        served.clear()
        served.update(table)

    model = ScriptedToolModel(responses=[], aliases=dict(task.aliases))
    graph = create_agent(model, tools=[lookup], checkpointer=InMemorySaver())
    return AgentUnderTest(graph, {"messages": [HumanMessage(task.question)]}, after_run=refresh)


def truth(task: Task) -> tuple[str, int]:
    """stale row at hop k: the k-th ``tools`` execution; the planner's link: the first ``model``
    call; a misread of hop k's row: the model call right after it (the (k+1)-th)."""
    if task.cause == "stale_tool_row":
        return "tools", task.hop
    if task.cause == "planner_error":
        return "model", 1 if task.hop == 1 else 2
    return "model", task.hop + 1


def answer(output: dict[str, Any]) -> str | None:
    messages = output.get("messages") or []
    return str(messages[-1].content) if messages else None
