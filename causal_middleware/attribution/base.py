"""The attribution interface: a :class:`Diagnoser` reads a failed run and returns a :class:`Diagnosis`.

Every diagnoser, passive or probing, LLM or offline, has the same signature::

    diagnosis = diagnoser.diagnose(trajectory, DiagnosisContext(backend=..., adapter=..., index=...))

What a diagnoser may use comes through the :class:`DiagnosisContext` (a live agent to fork, a chat
model, the question with its gold decomposition, the retrieval index, a verifier, budgets). A
diagnoser that lacks what it needs returns ``Diagnosis(ran=False, reason=...)``: it is reported as
not run, never faked.

Diagnosers see a *blinded* copy of the run (:func:`blind`): run labels (where a fault injector
keeps its certified ``labels["fault"]``), lineage (a faulted run is a fork whose lineage names the
injected hop), the reference answer and step attributes that mark intervened or counterfactual
steps are removed before ``_diagnose`` runs. Gold information reaches a diagnoser only through the
context, and a diagnosis says whether it used any (``uses_gold``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, field_validator

from causal_middleware.attribution.targets import fill_targets
from causal_middleware.counterfactual.verifiers import as_verifier
from causal_middleware.faults.model import Stage
from causal_middleware.protocols import ForkBackend, Proposer, Verifier
from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct

ProbeMode = Literal["regenerate", "frozen"]

# Step attribute keys that would tell a diagnoser where a fork intervened: the stitcher's marks
# (``causal.replay.*``: inherited prefix, intervened step, frozen copies), frozen nodes, lineage.
_LEAKY_ATTRIBUTE_MARKERS = (
    "intervened",
    "intervention",
    "lineage",
    "counterfactual",
    "fault",
    "replay",
    "frozen",
)


class DiagnosisCost(BaseModel):
    """What a diagnosis spent."""

    model_config = ConfigDict(extra="forbid")

    llm_calls: int = 0
    tokens: int = Field(default=0, description="input + output tokens of the LLM calls")
    reexecutions: int = Field(default=0, description="forks of the run whose suffix was re-executed")
    retrievals: int = Field(default=0, description="index searches (evidence audit, repair re-retrieval)")

    def add(self, other: DiagnosisCost) -> None:
        self.llm_calls += other.llm_calls
        self.tokens += other.tokens
        self.reexecutions += other.reexecutions
        self.retrievals += other.retrievals


class ProbeRecord(BaseModel):
    """One repair probe: hop ``hop`` repaired (see :mod:`~causal_middleware.attribution.repair_op`),
    forked in ``mode``, the fork's answer judged."""

    model_config = ConfigDict(extra="forbid")

    hop: int
    mode: ProbeMode
    target: Literal["evidence", "reading"] = Field(
        default="evidence",
        description="what the probe replaced: the hop's evidence (a clean re-retrieval) or its reading "
        "(the fact it extracted, set to the gold hop answer)",
    )
    fact: str | None = Field(default=None, description="a reading probe's replacement fact")
    sub_query: str = ""
    sub_query_source: Literal["gold", "recorded"] = "recorded"
    n_documents: int = 0
    fork_run_id: str | None = None
    answer: str | None = None
    restored: bool | None = Field(default=None, description="the fork's answer is correct; None: unknown")
    uninformative: bool = Field(
        default=False,
        description="the repair retrieved exactly the evidence the hop already had, so no fork was run: "
        "the probe neither confirms nor clears the hop",
    )
    error: str | None = None


class Diagnosis(BaseModel):
    """Which hop (and stage) a diagnoser blames for a failed run, and what it spent finding out.

    ``hop`` is the 1-based hop of the root cause; None when the blame is outside every hop (stage
    ``answer``: the final answer generation) or when the diagnoser did not run. Hops are a
    grouping: the target is a step, ``step_id`` (a span id), with its ``agent`` on multi-agent
    traces (:mod:`~causal_middleware.attribution.targets`). ``step_scores``
    maps ``"hop:N"`` (hop-level methods) or step ids (step-level methods) to a blame score in
    [0, 1]. ``severity`` is the share of the run's hops the root cause reached (see
    :func:`~causal_middleware.attribution.provenance.reach`).
    """

    model_config = ConfigDict(extra="forbid")

    method: str
    run_id: str | None = None
    ran: bool = True
    reason: str | None = Field(default=None, description="why the diagnoser did not run")
    stage: Stage | None = None
    hop: int | None = Field(default=None, ge=1)
    step_id: str | None = Field(
        default=None,
        description="the span id of the step blamed; filled for every diagnosis that ran (see step_from)",
    )
    step_from: Literal["method", "hop", "answer"] | None = Field(
        default=None,
        description="where step_id came from: the method named it, or it stands for the blamed hop "
        "(its first LLM step) or for the answer stage (the step that wrote the answer)",
    )
    agent: str | None = Field(
        default=None, description="the agent of the blamed step, on multi-agent traces (agent.name)"
    )
    node: str | None = None
    propagation: bool = Field(default=False, description="the root cause propagated through later hops")
    severity: float | None = Field(default=None, ge=0.0, le=1.0)
    root_cause: str = ""
    step_scores: dict[str, float] = Field(default_factory=dict)
    uncertain: bool = Field(default=False, description="the evidence could not separate the candidates")
    candidates: list[int] = Field(default_factory=list, description="hops still suspected, best first")
    uses_gold: bool = False
    cost: DiagnosisCost = Field(default_factory=DiagnosisCost)
    probes: list[ProbeRecord] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def not_run(
        cls, method: str, reason: str, *, run_id: str | None = None, uses_gold: bool = False
    ) -> Diagnosis:
        return cls(method=method, run_id=run_id, ran=False, reason=reason, uses_gold=uses_gold)


class DiagnosisContext(BaseModel):
    """Everything a diagnoser may use besides the failed run. All optional.

    * ``backend`` + ``adapter`` + ``index``: a live agent to fork, the adapter that turns "hop h's
      evidence becomes these documents" into a fork update, and the index to re-retrieve from
      (probe diagnosers need all three);
    * ``chat_model``: the judge / tracer model of the LLM diagnosers;
    * ``question``: the question with its gold answer and decomposition (gold information);
    * ``reference``: a gold answer when no ``question`` is given (defaults to the run's own);
    * ``verifier``: a :class:`~causal_middleware.protocols.Verifier` (a plain
      ``callable(answer) -> bool | None`` is wrapped once by ``as_verifier``); default: answer
      correctness against ``question`` or ``reference``;
    * ``proposer``: the CRS :class:`~causal_middleware.protocols.Proposer` (default: the repair
      package's offline proposer);
    * ``state_keys`` / ``rerun_tool``: for the generic intervention space (no adapter): which state
      key holds a node's documents when several do, and how to re-run a tool live;
    * budgets: ``max_reexecutions`` (forks per diagnosis), ``max_llm_calls``;
    * repair knobs: ``repair_k`` (documents re-retrieved; default: the most a hop of the run
      retrieved, else 5) and ``frozen_rerun`` (node names a frozen probe re-runs; default: the
      repaired hop's nodes after retrieval plus the answer node).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    backend: ForkBackend | None = None
    adapter: AgentAdapter | None = None
    chat_model: BaseChatModel | None = None
    question: Question | None = None
    reference: str | None = None
    index: Index | None = None
    verifier: Verifier | None = None
    proposer: Proposer | None = None
    max_reexecutions: int | None = Field(default=None, ge=0)
    max_llm_calls: int | None = Field(default=None, ge=0)
    repair_k: int | None = Field(default=None, ge=1)
    frozen_rerun: list[str] | None = None
    indexes: dict[str, Index] | None = Field(
        default=None, description="node -> the index its retriever searches (graphs with several retrievers)"
    )
    state_keys: dict[str, str] | None = Field(
        default=None, description="node -> state key holding its retrieved documents (when ambiguous)"
    )
    rerun_tool: Callable[[str, dict[str, Any]], str | None] | None = Field(
        default=None, description="re-runs a non-side-effecting tool live: (tool name, args) -> output"
    )

    @field_validator("verifier", mode="before")
    @classmethod
    def _wrap_callable_verifier(cls, value: object) -> object:
        if value is None or isinstance(value, Verifier):
            return value
        if not callable(value):
            raise TypeError(f"verifier must be callable or have verify(), got {type(value).__name__}")

        return as_verifier(value)

    # -- gold ----------------------------------------------------------------------------------
    def expected_answer(self) -> tuple[str, list[str]] | None:
        """The gold answer and its aliases, from ``question`` or ``reference``; None without gold."""
        if self.question is not None:
            return self.question.answer, list(self.question.aliases)
        if self.reference is not None:
            return self.reference, []
        return None

    # -- verdicts ------------------------------------------------------------------------------
    def can_judge(self) -> bool:
        return self.verifier is not None or self.expected_answer() is not None

    def judge(self, trajectory: Trajectory) -> bool | None:
        """Is ``trajectory``'s answer correct? The verifier's ``Verdict.success`` (the run given the
        context's gold answer as its reference when it has none), else correctness against the
        gold answer; None when nothing can tell."""
        gold = self.expected_answer()
        if self.verifier is not None:
            if trajectory.reference is None and gold is not None:
                trajectory = trajectory.model_copy(update={"reference": gold[0]})
            return self.verifier.verify(trajectory).success
        if gold is None:
            return None
        answer, aliases = gold
        question = self.question or Question(id="reference", text="", answer=answer, aliases=aliases)
        return is_correct(trajectory.answer, question)

    def verifier_callable(self) -> Callable[[Trajectory], bool | None]:
        """The verdict as a function of the whole trajectory (what CRS takes)."""

        def verify(trajectory: Trajectory) -> bool | None:
            return self.judge(trajectory)

        return verify


def blind(trajectory: Trajectory) -> Trajectory:
    """A copy of ``trajectory`` without what would reveal an injected fault or the gold answer.

    Removed: ``labels`` (``labels["fault"]`` is the certified fault), ``lineage`` (a faulted run
    is a fork whose lineage names the intervened hop), ``reference`` (gold answer), ``metadata``
    (a stitched fork's bookkeeping), step times (the stitched intervened step is stamped with the
    fork's start) and step attributes whose key mentions an intervention, replay, frozen node,
    lineage, counterfactual or fault.
    """

    def clean(step: Any) -> Any:
        attrs = {
            k: v
            for k, v in step.attributes.items()
            if not any(m in k.lower() for m in _LEAKY_ATTRIBUTE_MARKERS)
        }
        return step.model_copy(update={"attributes": attrs, "start_time": None, "end_time": None})

    hops = [h.model_copy(update={"steps": [clean(s) for s in h.steps]}) for h in trajectory.hops]
    return trajectory.model_copy(
        update={
            "labels": {},
            "lineage": None,
            "reference": None,
            "metadata": {},
            "started_at": None,
            "ended_at": None,
            "steps": [clean(s) for s in trajectory.steps],
            "hops": hops,
        }
    )


class Diagnoser(ABC):
    """Base class of every diagnoser. Subclasses set ``name``, ``uses_gold`` and implement
    :meth:`_diagnose`; :meth:`requirements` names what must be in the context for it to run."""

    name: ClassVar[str] = "diagnoser"
    uses_gold: ClassVar[bool] = False
    needs_live_agent: ClassVar[bool] = False
    description: ClassVar[str] = ""

    def diagnose(self, trajectory: Trajectory, context: DiagnosisContext | None = None) -> Diagnosis:
        """Diagnose one failed run. Never raises for a missing capability: returns ``ran=False``."""
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"diagnose() needs a Trajectory, got {type(trajectory).__name__}")
        ctx = context if context is not None else DiagnosisContext()
        if not isinstance(ctx, DiagnosisContext):
            raise TypeError(f"context must be a DiagnosisContext, got {type(ctx).__name__}")
        if ctx.reference is None and ctx.question is None and trajectory.reference is not None:
            ctx = ctx.model_copy(update={"reference": trajectory.reference})
        missing = self.requirements(ctx)
        if missing:
            return Diagnosis.not_run(
                self.name, f"{self.name} needs {missing}", run_id=trajectory.run_id, uses_gold=self.uses_gold
            )
        blinded = blind(trajectory)
        diagnosis = self._diagnose(blinded, ctx)
        fill_targets(blinded, diagnosis)
        diagnosis.method = self.name
        diagnosis.run_id = trajectory.run_id
        diagnosis.uses_gold = diagnosis.uses_gold or self.uses_gold
        return diagnosis

    def requirements(self, context: DiagnosisContext) -> str | None:
        """What the context lacks for this diagnoser to run, in words; None when it can run."""
        return None

    @abstractmethod
    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis: ...


def missing_parts(context: DiagnosisContext, *names: str) -> str | None:
    """``"a backend and an index"``-style list of the context fields in ``names`` that are unset."""
    labels = {
        "backend": "a fork backend (a live agent: --graph)",
        "adapter": "an agent adapter",
        "index": "a retrieval index",
        "chat_model": "a chat model",
        "gold": "a gold answer (question or reference)",
        "verdict": "a verifier or a gold answer",
    }
    missing: list[str] = []
    for name in names:
        if name == "gold":
            if context.expected_answer() is None:
                missing.append(labels[name])
        elif name == "verdict":
            if not context.can_judge():
                missing.append(labels[name])
        elif getattr(context, name) is None:
            missing.append(labels.get(name, name))
    if not missing:
        return None
    return missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
