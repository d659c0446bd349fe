"""Fakes for the repair tests: a scripted proposer and a scripted chat model with token usage."""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from causal_middleware.protocols import Proposal, ProposalBatch
from causal_middleware.spans.model import NodeStep, Trajectory


class ScriptedProposer:
    """Proposes fixed values per (node, hop); records which steps it was asked about."""

    def __init__(self, script: dict[tuple[str, int | None], list[dict[str, Any]]]) -> None:
        self.script = script
        self.asked: list[tuple[str | None, int | None]] = []
        self.feedback: list[str] = []

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        self.asked.append((step.node, step.hop))
        self.feedback.append(feedback)
        values = self.script.get((step.node or "", step.hop), [])
        return ProposalBatch(
            proposals=[
                Proposal(
                    step_id=step.step_id,
                    node=step.node or "",
                    hop=step.hop,
                    langgraph_step=step.langgraph_step,
                    values=v,
                    source="scripted",
                )
                for v in values[:k]
            ]
        )


class ScriptedChatModel(BaseChatModel):
    """Replies with the scripted texts in turn (the last one repeats), with token usage."""

    replies: list[str]
    temperature: float = 0.0
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self.lock:
            text = self.replies[min(len(self.calls), len(self.replies) - 1)]
            self.calls.append(list(messages))
        prompt_tokens = sum(len(str(m.content).split()) for m in messages)
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": len(text.split()),
                "total_tokens": prompt_tokens + len(text.split()),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
