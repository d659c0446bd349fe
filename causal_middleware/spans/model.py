"""The typed trajectory model: a run, its hops, and the steps inside them.

Everything downstream of the span store (replay, fault injection, attribution, repair, context
debugging) reads these models, never raw spans, so diagnosers work the same on runs recorded by
our instrumentation and on traces imported from elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Status(StrEnum):
    OK = "ok"
    ERROR = "error"
    UNSET = "unset"


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class Document(_Model):
    """One retrieved passage as the agent saw it."""

    id: str
    text: str = ""
    score: float | None = None
    source: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Message(_Model):
    role: str
    content: str


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _StepBase(_Model):
    """Fields every step records, whatever its kind."""

    step_id: str = Field(description="OTel span id (16 hex digits) of the span this step came from")
    parent_step_id: str | None = None
    name: str = ""
    node: str | None = Field(default=None, description="LangGraph node the step ran in")
    hop: int | None = Field(default=None, description="1-based hop index, None outside any hop")
    langgraph_step: int | None = None
    checkpoint_id: str | None = Field(default=None, description="checkpoint the node ran from")
    checkpoint_ns: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    status: Status = Status.UNSET
    error: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict, description="extra span attributes")


class NodeStep(_StepBase):
    """One execution of a graph node (the unit LangGraph checkpoints)."""

    kind: Literal["node"] = "node"
    input: Any = None
    output: Any = None
    side_effecting: bool = False


class RetrievalStep(_StepBase):
    kind: Literal["retrieval"] = "retrieval"
    query: str = ""
    retriever: str | None = None
    documents: list[Document] = Field(default_factory=list)


class LLMStep(_StepBase):
    kind: Literal["llm"] = "llm"
    model: str | None = None
    provider: str | None = None
    messages: list[Message] = Field(default_factory=list)
    output: str = ""
    usage: Usage = Field(default_factory=Usage)
    invocation_parameters: dict[str, Any] = Field(default_factory=dict)


class ToolStep(_StepBase):
    kind: Literal["tool"] = "tool"
    tool_name: str = ""
    call_id: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    output: str = ""
    side_effecting: bool = False


class DecisionStep(_StepBase):
    """A routing decision (a conditional edge, or a node choosing what runs next)."""

    kind: Literal["decision"] = "decision"
    choice: str | None = None
    options: list[str] = Field(default_factory=list)


class AnswerStep(_StepBase):
    kind: Literal["answer"] = "answer"
    answer: str = ""


Step = Annotated[
    NodeStep | RetrievalStep | LLMStep | ToolStep | DecisionStep | AnswerStep,
    Field(discriminator="kind"),
]
STEP_KINDS = ("node", "retrieval", "llm", "tool", "decision", "answer")


class Hop(_Model):
    """One round of the agent's search: a sub-query, what it retrieved, and what it did with it."""

    index: int = Field(ge=1)
    sub_query: str | None = None
    documents: list[Document] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    span_id: str | None = None


class Cost(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    retrievals: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Intervention(_Model):
    """What a fork changed: the step it replaced and the values it put there."""

    kind: str = Field(default="replace", description="replace | fault:<family> | repair | ...")
    node: str | None = None
    hop: int | None = None
    langgraph_step: int | None = None
    values: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None


class Lineage(_Model):
    """Where a counterfactual run came from."""

    parent_run_id: str
    fork_checkpoint_id: str | None = None
    fork_hop: int | None = None
    fork_node: str | None = None
    fork_step: int | None = None
    mode: Literal["regenerate", "frozen", "replay"] = "regenerate"
    intervention: Intervention | None = None
    counterfactual: bool = True


class Trajectory(_Model):
    """One agent run, typed. ``run_id`` is the OTel trace id (32 hex digits)."""

    run_id: str
    thread_id: str | None = None
    graph: str | None = None
    input: Any = None
    answer: str | None = None
    reference: str | None = None
    outcome: Outcome | None = None
    status: Status = Status.UNSET
    error: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    cost: Cost = Field(default_factory=Cost)
    labels: dict[str, Any] = Field(default_factory=dict)
    lineage: Lineage | None = None
    hops: list[Hop] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list, description="every step of the run, in start order")
    metadata: dict[str, Any] = Field(default_factory=dict)

    def hop(self, index: int) -> Hop:
        for h in self.hops:
            if h.index == index:
                return h
        raise KeyError(f"run {self.run_id} has no hop {index} (it has {len(self.hops)})")

    def steps_of(self, kind: str) -> list[Any]:
        if kind not in STEP_KINDS:
            raise ValueError(f"unknown step kind {kind!r}; expected one of {STEP_KINDS}")
        return [s for s in self.steps if s.kind == kind]

    @property
    def is_counterfactual(self) -> bool:
        return self.lineage is not None and self.lineage.counterfactual
