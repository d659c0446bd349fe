"""What a user implements to plug into causal-middleware, and the data those parts exchange.

Defined here (import them from ``causal_middleware.protocols`` and nowhere else):

* :class:`ForkBackend` (and :class:`AsyncForkBackend`, :class:`DiscardingForkBackend`): a live
  agent the probing diagnosers and repair fork; ``causal_middleware.Replayer`` is the LangGraph one.
* :class:`Verifier`, returning a :class:`Verdict`: did a run succeed? The one verdict concept:
  repair judges its forks with one, and the repair queue and workers decide which finished runs
  failed with one (a verdict may blame another run, e.g. the previous turn a user rejected).
  A plain ``callable(answer) -> bool | None`` becomes one with
  :func:`causal_middleware.counterfactual.verifiers.as_verifier`.
* :class:`Proposer`, returning a :class:`ProposalBatch` of :class:`Proposal`: alternative outputs
  for one step of a failed run (what CRS forks).
* :class:`FailureSink`: where ``instrument(graph, on_failure=...)`` hands each finished run.
* :class:`RepairCost`: what a verifier, a proposer or a repair spent.

Defined where they live (abstract base classes with shared code, each importable from one path):

* the span store: ``causal_middleware.store.base.SpanStore``;
* the retrieval index: ``causal_middleware.retrieval.base.Index``;
* the diagnoser: ``causal_middleware.attribution.base.Diagnoser``.

This module sits below faults, attribution, repair and context, so each of them can take these
types; it imports only spans, replay and interventions data.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.interventions.edit import StepEdit
from causal_middleware.replay.request import SuffixMode
from causal_middleware.spans.model import NodeStep, Trajectory

__all__ = [
    "AsyncForkBackend",
    "DiscardingForkBackend",
    "FailureSink",
    "ForkBackend",
    "Proposal",
    "ProposalBatch",
    "Proposer",
    "RepairCost",
    "Verdict",
    "Verifier",
]


# --- fork backends ------------------------------------------------------------------------------


@runtime_checkable
class ForkBackend(Protocol):
    """A live agent that forks a recorded run. Diagnosers and repairers that probe by intervention
    (frozen-hop repair, suffix regeneration, Causal Responsibility Scores, CausalFlow repair) call
    it; passive diagnosers run on imported traces with no backend at all."""

    def fork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory:
        """Fork ``run_id`` before the given step, replace its output, run the suffix; return the fork."""
        ...


@runtime_checkable
class AsyncForkBackend(Protocol):
    async def afork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory: ...


@runtime_checkable
class DiscardingForkBackend(Protocol):
    """Optional capability of a :class:`ForkBackend`: discard a fork it made (repair drops its
    probe forks with it); check with ``isinstance(backend, DiscardingForkBackend)``."""

    def discard_fork(self, run_id: str) -> bool:
        """Free what the fork ``run_id`` keeps in the agent's checkpointer (its fork thread); its
        spans stay in the store. True when something was deleted, False when there was nothing to
        delete (already discarded) or the checkpointer cannot delete. Raises ``ValueError`` for a
        run that is not a fork this backend may discard (e.g. a user's own run)."""
        ...


# --- costs, verdicts, proposals -----------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RepairCost(_Model):
    """What a repair spent. ``naive_reexecutions`` is the exhaustive baseline: candidate steps x K."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reexecutions: int = Field(default=0, description="forks whose suffix was re-executed")
    forks_reused: int = Field(default=0, description="probes answered from the fork cache")
    duplicates_skipped: int = Field(default=0, description="proposals dropped as duplicates or no-ops")
    naive_reexecutions: int = 0
    forks_discarded: int = Field(
        default=0, description="forks whose checkpoints were deleted from the agent's checkpointer"
    )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add_llm(self, calls: int = 1, input_tokens: int = 0, output_tokens: int = 0) -> None:
        self.llm_calls += calls
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def absorb(self, other: RepairCost) -> None:
        """Add ``other``'s spending (not its naive baseline) to this one."""
        self.llm_calls += other.llm_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reexecutions += other.reexecutions
        self.forks_reused += other.forks_reused
        self.duplicates_skipped += other.duplicates_skipped
        self.forks_discarded += other.forks_discarded


class Verdict(_Model):
    """A verifier's judgement of one run's outcome. ``success`` is None when it could not judge.

    ``run_id`` names the run that failed when it is not the judged one (e.g. the user's reply in
    this run rejects the previous run's answer); None means the judged run itself. ``expected`` is
    the right answer when the failure signal states one (e.g. "No, it's Canberra." gives
    ``"Canberra"``); the repair queue makes it the failed run's reference when it has none.
    """

    success: bool | None
    feedback: str = ""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    cost: RepairCost = Field(default_factory=RepairCost)
    run_id: str | None = None
    expected: str | None = None

    @property
    def failed(self) -> bool | None:
        """True when the verdict says the run failed; None when it could not judge."""
        return None if self.success is None else not self.success


@runtime_checkable
class Verifier(Protocol):
    def verify(self, trajectory: Trajectory) -> Verdict:
        """Judge ``trajectory``'s outcome. ``Verdict.success`` is None when it cannot tell."""
        ...


class Proposal(_Model):
    """One candidate replacement for a step's output (the ``values`` a fork puts there)."""

    step_id: str
    node: str
    hop: int | None = None
    langgraph_step: int | None = None
    values: dict[str, Any]
    source: str = Field(
        description="who proposed it: offline:subquery | offline:evidence | offline:fact | trace:evidence | trace:tool | trace:text | llm"
    )
    description: str = ""
    minimality: float | None = Field(default=None, description="against the step's original output")
    rank: int | None = Field(
        default=None,
        ge=0,
        description="where the proposer put it among this step's proposals (0: its first choice); "
        "the search sets it, and tries proposals most minimal first",
    )
    edit: StepEdit | None = Field(
        default=None,
        description="the change as an edit of the node's live output (generic proposals); forks apply "
        "it to the recorded objects instead of writing ``values`` (its JSON image)",
    )
    target: str | None = Field(default=None, description="the state key (path) the proposal changes")
    evidence: list[str] = Field(
        default_factory=list, description="document ids / tool names the proposal removes or brings in"
    )


class ProposalBatch(_Model):
    """A proposer's answer for one step: up to K proposals, the step's original output in the same
    representation (what minimality compares against), and what proposing cost."""

    proposals: list[Proposal] = Field(default_factory=list)
    baseline: dict[str, Any] | None = Field(
        default=None, description="the step's recorded output as the proposer would write it"
    )
    cost: RepairCost = Field(default_factory=RepairCost)
    note: str | None = None


@runtime_checkable
class Proposer(Protocol):
    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        """Up to ``k`` alternative outputs for ``step`` of the failed ``trajectory``."""
        ...


# --- where finished runs go -----------------------------------------------------------------------


@runtime_checkable
class FailureSink(Protocol):
    """What ``instrument(graph, on_failure=...)`` hands each finished user run (never forks) to,
    on the agent's thread: ``submit`` must not block and must not raise (what it returns is
    ignored). ``causal_middleware.repair.trigger.RepairQueue`` judges and repairs in a background
    thread; ``causal_middleware.repair.enqueue.DurableEnqueuer`` enqueues into the store for
    ``causal-mw worker``. An optional ``drain(timeout)`` is called at shutdown."""

    def submit(self, run_id: str) -> object: ...
