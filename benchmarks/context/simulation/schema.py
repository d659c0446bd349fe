"""The ground-truth schema of the simulated context benchmark."""

from __future__ import annotations

from pydantic import BaseModel, Field

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.recommendation import Classification, Operation
from causal_middleware.context.root_cause import FaultCategory
from causal_middleware.context.workspace import ComponentType, Workspace

TIERS: dict[int, tuple[int, int]] = {1: (2, 8), 2: (9, 11), 3: (15, 16)}


class FaultSpec(BaseModel):
    """The fault planted in the trace's workspace."""

    category: FaultCategory
    variant: str = Field(description="e.g. update, announcement, delete:status, gap, alias, ...")
    faulty_path: str | None = Field(
        description="the source holding the faulty content (None: content missing)"
    )
    faulty_text: str | None = Field(default=None, description="the wrong value as it appears in faulty_path")
    correct_text: str = Field(description="the value or rule that should have been used")
    fault_turn: int = Field(description="turn of the question the fault broke")
    description: str = ""


class ExpectedFix(BaseModel):
    operation: Operation
    target_path: str
    authoritative_source: str | None = Field(
        default=None, description="a workspace path; None: the user's word"
    )
    authority_rule: str | None = None
    classification: Classification = Classification.SYSTEMIC


class GroundTruth(BaseModel):
    trace_id: str
    domain: str
    seed: int
    dissatisfied: bool
    tier: int
    n_nodes: int
    fault: FaultSpec | None = None
    root_node_id: str | None = None
    attributions: dict[str, float] = Field(default_factory=dict)
    component_type: ComponentType | None = None
    component_path: str | None = None
    fix: ExpectedFix | None = None


class SimTrace(BaseModel):
    conversation: Conversation
    ground_truth: GroundTruth
    workspace_changes: dict[str, str | None] = Field(
        default_factory=dict,
        description="files added/replaced (text) or removed (None) vs the base workspace",
    )


class Benchmark(BaseModel):
    domain: str
    seed: int
    base_files: dict[str, str]
    traces: list[SimTrace]

    def workspace(self, trace: SimTrace) -> Workspace:
        """The workspace the trace ran against: the base files with the trace's fault applied."""
        return Workspace.from_files(self.base_files).with_changes(trace.workspace_changes)

    @property
    def dissatisfied(self) -> list[SimTrace]:
        return [t for t in self.traces if t.ground_truth.dissatisfied]

    @property
    def controls(self) -> list[SimTrace]:
        return [t for t in self.traces if not t.ground_truth.dissatisfied]
