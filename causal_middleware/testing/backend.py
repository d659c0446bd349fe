"""A :class:`ForkBackend` over a :class:`ScriptedAgent`, recording every run into a span store.

Like the OpenTelemetry SDK's ``InMemorySpanExporter``, it lets tests of diagnosers and repairers
fork runs without a LangGraph graph or a model: ``run`` executes the agent, ``fork`` replays the
recorded prefix, puts the new output at the fork step and then

* ``regenerate``: runs every later node live;
* ``frozen``: returns the parent's recorded output (matched by node and hop) for every later node
  not in ``rerun`` (default: the agent's answer nodes), running live only nodes in ``rerun`` and
  those the parent never ran at that hop (the path diverged);
* ``replay``: executes nothing: follows the parent's recorded outputs (``ValueError`` when the new
  output leads off the recorded path).

Runs land in the store as real spans and come back as the store's (stitched) :class:`Trajectory`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from causal_middleware.replay.request import ForkRequest, SuffixMode
from causal_middleware.spans.model import Intervention, Lineage, Outcome, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import HOPS_OFFSET_LABEL
from causal_middleware.testing.agent import ExecutedStep, Output, ScriptedAgent, State
from causal_middleware.testing.emit import emit_run

__all__ = ["DiscardingFakeForkBackend", "FakeForkBackend", "FakeRun", "Judge", "exact_match"]

Judge = Callable[[str | None, str], bool]
"""Whether a run's answer (None when it gave none) is correct for its reference."""

MAX_STEPS = 1000


def exact_match(answer: str | None, reference: str) -> bool:
    """The default judge: the answer equals the reference after stripping whitespace."""
    return answer is not None and answer.strip() == reference.strip()


@dataclass
class FakeRun:
    """What the backend remembers of one run: enough to fork it again."""

    trajectory: Trajectory
    input: str
    reference: str | None
    steps: list[ExecutedStep]
    answer: str | None
    is_fork: bool = False
    labels: dict[str, Any] = field(default_factory=dict)


class FakeForkBackend:
    """:class:`~causal_middleware.protocols.ForkBackend` over a scripted agent.

    ``store`` defaults to a fresh :class:`InMemorySpanStore`; ``judge`` sets each run's outcome
    against its reference (runs without a reference have no outcome). ``runs`` maps run ids to
    :class:`FakeRun`; ``requests`` lists every fork request received, in order.
    """

    def __init__(
        self, agent: ScriptedAgent, store: SpanStore | None = None, *, judge: Judge = exact_match
    ) -> None:
        self.agent = agent
        self.store: SpanStore = store if store is not None else InMemorySpanStore()
        self.judge = judge
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.store))
        self.runs: dict[str, FakeRun] = {}
        self.requests: list[ForkRequest] = []

    def run(
        self, input_text: str, *, reference: str | None = None, labels: dict[str, Any] | None = None
    ) -> Trajectory:
        """Run the agent on ``input_text`` from its entry node; returns the recorded run."""
        steps, frozen, answer = self._execute(input_text, [], None, frozenset(), replay=False)
        return self._record(input_text, reference, steps, answer, 0, frozen, None, labels)

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
        """Fork ``run_id`` at the step named by ``step`` or ``node``/``hop``; see the module doc."""
        request = ForkRequest(
            run_id=run_id,
            hop=hop,
            node=node,
            step=step,
            values=values,
            update=update,
            mode=mode,
            rerun=rerun,
            allow_side_effects=allow_side_effects,
            intervention_kind=intervention_kind,
            labels=labels,
        )
        return self.fork_request(request)

    def fork_request(self, request: ForkRequest) -> Trajectory:
        """:meth:`fork` with its arguments as one :class:`ForkRequest`."""
        parent = self.runs.get(request.run_id)
        if parent is None:
            raise KeyError(f"unknown run {request.run_id}")
        known = {n.name for n in self.agent.nodes}
        unknown = sorted(set(request.rerun or ()) - known)
        if unknown:
            raise ValueError(f"rerun names unknown node(s) {unknown}; the agent's nodes are {sorted(known)}")
        self.requests.append(request)
        at = _locate(parent, request)
        target = parent.steps[at]
        new_output = _new_output(target.output, request)
        fixed = [*parent.steps[:at], ExecutedStep(target.node, target.hop, new_output, target.query)]
        recorded = None
        if request.mode != "regenerate":
            recorded = {(s.node, s.hop): s.output for s in parent.steps[at + 1 :]}
        rerun = frozenset(request.rerun) if request.rerun is not None else self.agent.answer_nodes
        if request.mode == "replay":
            rerun = frozenset()
        steps, frozen, answer = self._execute(
            parent.input, fixed, recorded, rerun, replay=request.mode == "replay"
        )
        lineage = Lineage(
            parent_run_id=parent.trajectory.run_id,
            fork_hop=target.hop,
            fork_node=target.node,
            fork_step=at + 1,
            mode=request.mode,
            intervention=Intervention(
                kind=request.intervention_kind, node=target.node, hop=target.hop, values=new_output
            ),
        )
        # a replayed fork executed nothing of its own: the store copies the parent's suffix
        own_from = len(steps) if request.mode == "replay" else at + 1
        labels = {**(request.labels or {}), HOPS_OFFSET_LABEL: True}
        return self._record(parent.input, parent.reference, steps, answer, own_from, frozen, lineage, labels)

    def _execute(
        self,
        input_text: str,
        fixed: list[ExecutedStep],
        recorded: dict[tuple[str, int | None], Output] | None,
        rerun: frozenset[str],
        *,
        replay: bool,
    ) -> tuple[list[ExecutedStep], set[int], str | None]:
        """Run the agent: ``fixed`` outputs first, then recorded (unless in ``rerun``) or live ones."""
        agent = self.agent
        state: State = agent.start(input_text)
        steps: list[ExecutedStep] = []
        frozen: set[int] = set()
        answer: str | None = None
        name: str | None = agent.entry
        while name is not None:
            if len(steps) >= MAX_STEPS:
                raise RuntimeError(f"the scripted agent ran {MAX_STEPS} steps without ending")
            node = agent.node(name)
            hop = agent.hop_of(state, name)
            query = node.query(state) if node.query is not None else None
            i = len(steps)
            if i < len(fixed):
                if fixed[i].node != name:
                    raise RuntimeError(
                        f"the recorded prefix diverged at step {i + 1}: {fixed[i].node} vs {name}"
                    )
                output = copy.deepcopy(fixed[i].output)
            elif recorded is not None and name not in rerun and (name, hop) in recorded:
                output = copy.deepcopy(recorded[(name, hop)])
                frozen.add(i)
            elif replay:
                raise ValueError(
                    f"replay cannot follow the new output: the parent never ran {name!r} at hop {hop}"
                )
            else:
                output = agent.execute(name, state)
            steps.append(ExecutedStep(name, hop, output, query))
            if node.answer_key is not None:
                value = output.get(node.answer_key)
                answer = None if value is None else str(value)
            name = agent.route(state, name, output)
        return steps, frozen, answer

    def _record(
        self,
        input_text: str,
        reference: str | None,
        steps: list[ExecutedStep],
        answer: str | None,
        own_from: int,
        frozen: set[int],
        lineage: Lineage | None,
        labels: dict[str, Any] | None,
    ) -> Trajectory:
        run_id = emit_run(
            self.provider,
            self.agent,
            input_text=input_text,
            steps=steps,
            answer=answer,
            own_from=own_from,
            frozen=frozen,
        )
        outcome = None
        if reference is not None:
            outcome = Outcome.SUCCESS if self.judge(answer, reference) else Outcome.FAILURE
        self.store.annotate(run_id, reference=reference, outcome=outcome, labels=labels, lineage=lineage)
        trajectory = self.store.get_trajectory(run_id)
        self.runs[run_id] = FakeRun(
            trajectory,
            input_text,
            reference,
            steps,
            answer,
            is_fork=lineage is not None,
            labels=dict(labels or {}),
        )
        return trajectory


class DiscardingFakeForkBackend(FakeForkBackend):
    """A :class:`FakeForkBackend` that also implements
    :class:`~causal_middleware.protocols.DiscardingForkBackend`: discarding a fork forgets
    it (it can no longer be forked); its spans stay in the store. ``discarded`` lists them."""

    def __init__(
        self, agent: ScriptedAgent, store: SpanStore | None = None, *, judge: Judge = exact_match
    ) -> None:
        super().__init__(agent, store, judge=judge)
        self.discarded: list[str] = []

    def discard_fork(self, run_id: str) -> bool:
        if run_id in self.discarded:
            return False
        run = self.runs.get(run_id)
        if run is None or not run.is_fork:
            raise ValueError(f"run {run_id} is not a fork this backend made")
        del self.runs[run_id]
        self.discarded.append(run_id)
        return True


def _locate(parent: FakeRun, request: ForkRequest) -> int:
    """Index of the fork step in ``parent.steps``: by ``step`` (1-based, optionally checked
    against ``node``), else the first execution of ``node`` (any node when None) at ``hop``."""
    for i, s in enumerate(parent.steps):
        if request.step is not None:
            if i + 1 == request.step and request.node in (None, s.node):
                return i
        elif request.node in (None, s.node) and (request.hop is None or s.hop == request.hop):
            return i
    raise KeyError(
        f"run {request.run_id} has no step node={request.node} hop={request.hop} step={request.step}"
    )


def _new_output(recorded: Output, request: ForkRequest) -> Output:
    if request.update is not None:
        new = request.update(copy.deepcopy(recorded))
        if not isinstance(new, dict):
            raise TypeError("update= must return the node's new output as a dict")
        return new
    if request.values is not None:
        return {**copy.deepcopy(recorded), **copy.deepcopy(request.values)}
    return copy.deepcopy(recorded)
