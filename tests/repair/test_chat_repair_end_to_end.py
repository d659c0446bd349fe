"""Closing the loop for a chat agent: the user's correction becomes the repair's reference.

A real ``create_agent`` ReAct agent with one tool whose data is stale (Australia -> "Sydney") is
instrumented with ``on_failure=`` a ``RepairQueue`` bound to a real ``RepairService`` (the
``Replayer`` of the same graph, an ``LLMProposer`` driven by a scripted model, a
``ReferenceVerifier`` with no fixed answer). The user's "No, that's wrong, it's Canberra." in
turn 2 blames turn 1; the judge reads "Canberra" off the correction, the queue makes it turn 1's
reference, and the repair finds that the ``tools`` step's output is to blame, all on fork threads
while the user's thread stays as the user left it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph
from causal_middleware.integrations.langgraph.replayer import Replayer
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import Field

from causal_middleware import instrument
from causal_middleware.context.judges import DissatisfactionVerifier
from causal_middleware.protocols import ProposalBatch, Verdict
from causal_middleware.repair import (
    LLMProposer,
    ReferenceVerifier,
    RepairQueue,
    RepairResult,
    RepairService,
)
from causal_middleware.repair.trigger import root_span_id
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import NodeStep, Outcome, Trajectory
from causal_middleware.store.memory import InMemorySpanStore

GUARD = 30.0  # upper bound so a broken worker fails the test instead of hanging it
THREAD = "chat"
CONFIG = {"configurable": {"thread_id": THREAD}}
QUESTION = "What is the capital of Australia?"
CORRECTION = "No, that's wrong, it's Canberra."
CAPITALS = {"australia": "Sydney", "france": "Paris"}  # Australia's entry is stale
WORKER = "causal-repair-worker"


@tool
def lookup_capital(country: str) -> str:
    """The capital city of a country, from the agent's (stale) table."""
    return CAPITALS[country.lower()]


class CapitalChatModel(BaseChatModel):
    """The agent's model: a question about a capital calls ``lookup_capital``; after the tool it
    answers from the tool message it was given (so a changed tool output changes the answer);
    anything else gets a short acknowledgement. Records every input it was given."""

    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "capital-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> CapitalChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self.lock:
            self.inputs.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"The capital of Australia is {last.content}.")
        elif isinstance(last, HumanMessage) and "capital of australia" in str(last.content).lower():
            call = {"name": "lookup_capital", "args": {"country": "Australia"}, "id": "call-capital"}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content="Noted, thank you.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


class ProposerChatModel(BaseChatModel):
    """The repair proposer's model: for the ``tools`` step it proposes the tool message with the
    right capital (same tool call id); for any other step it proposes nothing. Records prompts."""

    temperature: float = 0.0
    prompts: list[str] = Field(default_factory=list)
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "scripted-proposer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        with self.lock:
            self.prompts.append(prompt)
        if 'Step: node "tools"' in prompt:
            fixed = {
                "type": "tool",
                "content": "Canberra",
                "name": "lookup_capital",
                "tool_call_id": "call-capital",
            }
            text = json.dumps([{"messages": [fixed]}])
        else:
            text = "[]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class GatedProposer(LLMProposer):
    """``LLMProposer`` that records the feedback and thread of each call and, on its first call,
    waits for the test to open ``gate`` (so the test can look at the world while the repair is
    provably still running)."""

    def __init__(self, model: BaseChatModel) -> None:
        super().__init__(model, temperature=0.0)
        self.gate = threading.Event()
        self.gate_opened: list[bool] = []
        self.calls: list[tuple[str | None, str, str]] = []

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        if not self.gate_opened:
            self.gate_opened.append(self.gate.wait(GUARD))
        self.calls.append((step.node, feedback, threading.current_thread().name))
        return super().propose(trajectory, step, k, feedback=feedback)


def _memory_saver(tmp_path: Path) -> BaseCheckpointSaver:
    return InMemorySaver()


def _sqlite_saver(tmp_path: Path) -> BaseCheckpointSaver:
    return SqliteSaver(sqlite3.connect(str(tmp_path / "checkpoints.db"), check_same_thread=False))


def _say(agent: InstrumentedGraph, text: str) -> tuple[str, Any]:
    out = agent.invoke({"messages": [{"role": "user", "content": text}]}, CONFIG)
    assert agent.last_run_id is not None
    return agent.last_run_id, out


@pytest.mark.parametrize("make_saver", [_memory_saver, _sqlite_saver], ids=["memory", "sqlite"])
def test_the_users_correction_is_the_reference_the_repair_is_verified_against(
    make_saver: Callable[[Path], BaseCheckpointSaver],
    tmp_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    store = InMemorySpanStore()
    chat_model = CapitalChatModel()
    proposer = GatedProposer(ProposerChatModel())
    judged: list[tuple[str, Verdict, str]] = []
    queues: list[RepairQueue] = []

    class RecordingJudge(DissatisfactionVerifier):
        def verify(self, trajectory: Trajectory) -> Verdict:
            verdict = super().verify(trajectory)
            judged.append((trajectory.run_id, verdict, threading.current_thread().name))
            return verdict

    def repair_queue(instrumented: InstrumentedGraph) -> RepairQueue:
        service = RepairService(
            backend=Replayer(instrumented),
            proposer=proposer,
            verifier=ReferenceVerifier(),
            store=store,
        )
        queue = RepairQueue(
            service, judge=RecordingJudge(store), store=store, tracer_provider=tracer_provider
        )
        queues.append(queue)
        return queue

    graph = create_agent(
        chat_model,
        tools=[lookup_capital],
        system_prompt="You answer geography questions.",
        checkpointer=(saver := make_saver(tmp_path)),
    )
    agent = instrument(graph, store=store, tracer_provider=tracer_provider, on_failure=repair_queue)
    [queue] = queues
    try:
        first, out1 = _say(agent, QUESTION)
        assert out1["messages"][-1].content == "The capital of Australia is Sydney."
        second, out2 = _say(agent, CORRECTION)
        # invoke returned while the repair is held at the proposer's gate: nothing repaired yet
        assert store.get_records("repair", first) == [] and not queue.results
        proposer.gate.set()
        assert queue.wait_idle(GUARD)

        # the judge (in the worker) blamed turn 1 and read the right answer off the correction
        assert [(run_id, thread) for run_id, _, thread in judged] == [(first, WORKER), (second, WORKER)]
        blame = judged[1][1]
        assert blame.failed is True and blame.run_id == first and blame.expected == "Canberra"
        stored = store.get_trajectory(first)
        assert stored.reference == "Canberra" and stored.outcome == Outcome.FAILURE
        assert store.get_trajectory(second).reference is None

        # the repair: the tools step is to blame, its fork answers Canberra, validated m of n
        assert proposer.gate_opened == [True]
        [record] = store.get_records("repair", first)
        result = RepairResult.model_validate(record)
        assert result.status == "repaired" and queue.stats.repaired == 1 and queue.stats.errors == 0
        repair = result.repair
        assert repair is not None
        assert repair.node == "tools" and repair.step_id in {
            s.step_id for s in stored.steps if isinstance(s, NodeStep) and s.node == "tools"
        }
        assert "Canberra" in (repair.answer_after or "") and repair.answer_before == stored.answer
        validation = repair.validation
        assert validation.passed and validation.only_change
        assert (validation.flips, validation.n_runs, validation.min_flips) == (3, 3, 2)
        assert repair.fork_run_id is not None
        fork = store.get_trajectory(repair.fork_run_id)
        assert fork.is_counterfactual and "Canberra" in (fork.answer or "")
        assert fork.thread_id is not None and fork.thread_id != THREAD
        # the scripted proposer model saw "tools" only when asked about it: the first model step
        # (the tool call) got no proposal, so the flip is credited to the tools step
        asked = [node for node, _, _ in proposer.calls]
        assert asked == ["model", "tools"]

        # the proposer got the verifier's verdict against the user's value and the quoted correction
        for _, feedback, thread in proposer.calls:
            assert thread == WORKER
            assert f'CORRECTION in turn 2: "{CORRECTION}"' in feedback
            assert "does not match the reference answer 'Canberra'" in feedback
        proposer_model = proposer.model  # the LLMProposer's own copy (sampling temperature set)
        assert isinstance(proposer_model, ProposerChatModel)
        [model_prompt, tools_prompt] = proposer_model.prompts
        assert (
            'Step: node "tools"' in tools_prompt and f'\\"{CORRECTION}\\"' in tools_prompt
        )  # quoted inside the fenced feedback

        # the repair span (new trace) links to run 1's root span
        [span] = [
            s
            for s in span_exporter.get_finished_spans()
            if (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == "repair"
        ]
        attrs = span.attributes or {}
        assert attrs[A.CAUSAL_REPAIR_RUN_ID] == first and attrs[A.CAUSAL_REPAIR_STATUS] == "repaired"
        assert attrs[A.CAUSAL_NODE] == "tools" and attrs[A.CAUSAL_REPAIR_VALIDATED] is True
        [link] = span.links
        root = root_span_id(store, first)
        assert root is not None
        assert format(link.context.trace_id, "032x") == first
        assert format(link.context.span_id, "016x") == root

        # the user's thread is as the user left it: turn 2's messages at its head, no fork writes
        head = agent.get_state(CONFIG).values["messages"]
        assert [type(m).__name__ for m in head] == [
            "HumanMessage",
            "AIMessage",
            "ToolMessage",
            "AIMessage",
            "HumanMessage",
            "AIMessage",
        ]
        assert head[3].content == "The capital of Australia is Sydney."
        assert head[-2].content == CORRECTION and head[-1].content == out2["messages"][-1].content
        sources = {snap.metadata.get("source") for snap in agent.get_state_history(CONFIG)}
        assert sources <= {"input", "loop"}  # update_state / fork writes would show "update" / "fork"

        # and a third turn continues from turn 2
        before = len(chat_model.inputs)
        third, out3 = _say(agent, "Thanks!")
        assert queue.wait_idle(GUARD)
        [turn3_input] = chat_model.inputs[before:]
        texts = [str(m.content) for m in turn3_input]
        assert texts[-3:] == [CORRECTION, "Noted, thank you.", "Thanks!"]
        assert "The capital of Australia is Sydney." in texts  # turn 1 as it ran, not a fork's answer
        assert not any("Canberra." in t and t.startswith("The capital") for t in texts)
        assert len(agent.get_state(CONFIG).values["messages"]) == 8
        assert judged[-1][0] == third and judged[-1][1].failed is False
        assert queue.stats.repaired == 1 and queue.stats.judged_failed == 1
    finally:
        proposer.gate.set()
        queue.close()
        if isinstance(saver, SqliteSaver):
            saver.conn.close()
