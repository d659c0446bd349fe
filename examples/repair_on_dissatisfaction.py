"""Repair on dissatisfaction: the user's correction in turn 2 queues a repair of turn 1's run.

A ``create_agent`` chat agent (driven by a scripted chat model, so it runs offline in seconds) is
instrumented with ``on_failure=RepairQueue(..., judge=DissatisfactionVerifier(store))``. Turn 1
answers wrongly; in turn 2 the user says so. The dissatisfaction detector, run in the queue's
worker thread, blames turn 1's run, which is annotated ``failure`` and handed to the repairer
(here a function that prints what it got; in production a ``RepairService`` bound to a replayer).

Run: python examples/repair_on_dissatisfaction.py
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware import instrument
from causal_middleware.context.judges import DissatisfactionVerifier
from causal_middleware.counterfactual.models import CRSResult
from causal_middleware.protocols import Verdict
from causal_middleware.repair import RepairQueue
from causal_middleware.repair.models import RepairResult
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replays scripted replies; ``bind_tools`` returns itself so ``create_agent`` accepts it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


def repairer(trajectory: Trajectory) -> RepairResult:
    print(
        f"repairing run {trajectory.run_id[:8]} (answer {trajectory.answer!r}, outcome {trajectory.outcome})"
    )
    crs = CRSResult(run_id=trajectory.run_id, k=0, baseline_success=False)
    return RepairResult(run_id=trajectory.run_id, status="no_flip", crs=crs, explanation="demo repairer")


def report(run_id: str, verdict: Verdict, result: RepairResult | None) -> None:
    print(f"run {run_id[:8]}: failed={verdict.failed}  {verdict.feedback}")


def main() -> None:
    store = InMemorySpanStore()
    queue = RepairQueue(repairer, judge=DissatisfactionVerifier(store), store=store, on_result=report)
    model = ScriptedChatModel(
        responses=[
            AIMessage(content="The capital of Australia is Sydney."),
            AIMessage(content="You are right, the capital of Australia is Canberra."),
        ]
    )
    agent = instrument(
        create_agent(model, tools=[], checkpointer=InMemorySaver()), store=store, on_failure=queue
    )
    config = {"configurable": {"thread_id": "chat-1"}}
    for text in ("What is the capital of Australia?", "No, that's wrong, it's Canberra."):
        reply = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        print(f"user: {text}\nagent: {reply['messages'][-1].content}")
    queue.wait_idle(10)
    queue.close()
    print(queue.stats.model_dump())


if __name__ == "__main__":
    main()
