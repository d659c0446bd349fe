"""The reference agent's nodes. Each returns a small dict update of its own channels (see state.py).

Nodes are plain functions closed over their model or retriever (what LangGraph's examples do, and
what static hop inference looks for).
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever

from . import prompts
from .state import AgentState, document_to_dict, fact_update


class Node(Protocol):
    """A node function (LangGraph matches node callables by this signature, ``state`` included)."""

    def __call__(self, state: AgentState) -> dict[str, Any]: ...


def message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


def make_decide(model: BaseChatModel, budget: int) -> Node:
    def decide(state: AgentState) -> dict[str, Any]:
        """Issue the next sub-query, or decide to answer (always, once the search budget is spent).
        With a ``plan`` in the state the next step is the plan's, filled in without a model call."""
        used = len(state.get("queries") or [])
        if used >= budget:
            return {"decision": "answer", "sub_query": None, "stop_reason": "budget"}
        plan = state.get("plan") or []
        if plan:  # plan-and-execute: the next step of the planner's plan, its #N filled in
            if used >= len(plan):
                return {"decision": "answer", "sub_query": None, "stop_reason": "answered"}
            step = prompts.fill_plan_step(plan[used], state.get("hops") or [])
            return {"decision": "search", "sub_query": step, "queries": [step]}
        messages = prompts.decide_messages(state["question"], state.get("hops") or [], used, budget)
        kind, value = prompts.parse_decision(message_text(model.invoke(messages)))
        if kind == "search":
            return {"decision": "search", "sub_query": value, "queries": [value]}
        return {"decision": "answer", "sub_query": None, "stop_reason": "answered"}

    return decide


def make_retrieve(retriever: BaseRetriever) -> Node:
    def retrieve(state: AgentState) -> dict[str, Any]:
        """Run the sub-query through the retriever (``.invoke``, so retriever callbacks fire)."""
        documents = retriever.invoke(state.get("sub_query") or "")
        return {"evidence": [document_to_dict(d) for d in documents]}

    return retrieve


def make_read(model: BaseChatModel) -> Node:
    def read(state: AgentState) -> dict[str, Any]:
        """Extract the fact answering the sub-query from this hop's evidence; append the hop record."""
        hops = state.get("hops") or []
        sub_query = state.get("sub_query") or ""
        evidence = list(state.get("evidence") or [])
        messages = prompts.read_messages(state["question"], hops, sub_query, evidence)
        raw = message_text(model.invoke(messages))
        fact, notes = prompts.parse_fact(raw)
        update = fact_update(len(hops) + 1, sub_query, evidence, fact, notes)
        update["hops"][0]["raw"] = raw
        return update

    return read


def make_answer(model: BaseChatModel) -> Node:
    def answer(state: AgentState) -> dict[str, Any]:
        """Compose the final answer from the facts found."""
        messages = prompts.answer_messages(state["question"], state.get("hops") or [])
        return {"answer": prompts.parse_answer(message_text(model.invoke(messages)))}

    return answer


def route_after_decide(state: AgentState) -> str:
    return "retrieve" if state.get("decision") == "search" else "answer"
