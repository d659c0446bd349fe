"""The resumable fault-injection sweep: base questions x depths x families -> forks in the store.

For every question the sweep first needs a *base run* on the live agent (reused from the store
when an earlier sweep made one and its checkpoints are still there). Then each unit
(question, family, depth) is planned (:func:`~causal_middleware.faults.families.plan_fault`)
and, when eligible and certifiable, forked from the base run at the injected hop with
``mode="regenerate"``: the faulted step's output is replaced and the agent runs the rest live.
The fork is stored as a new run whose lineage names the base run, labelled
``{"fault": FaultLabel, "question_id", "depth", "fault_sweep.unit": key}`` and annotated with its
outcome and reference. Every unit, forked or not, leaves one :class:`UnitRecord` as an
``"intervention"`` record (on the fork run, else on the base run).

Resuming: a unit whose latest record is not an error is finished and skipped on re-run; its key
is (dataset, retriever, question id, family, depth, seed, persistent). Errors are recorded per
unit (``status="error"`` with the exception) and retried on the next run; the sweep itself does
not stop. Units of one question run in order in one worker thread; questions run in parallel on
``workers`` threads, or on any :class:`~causal_middleware.faults.executor.Executor`: a remote one
(Ray) gets an ``env_spec`` that each of its worker processes builds the agent from once, and the
driver imports the runs and records it sends back (:mod:`causal_middleware.faults.distributed`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from pydantic import BaseModel, Field
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from causal_middleware.faults.corpus import FaultCorpus
from causal_middleware.faults.distributed import EnvSpec, FollowUp, QuestionOutcome, SweepWorker, import_run
from causal_middleware.faults.executor import Executor, ThreadExecutor
from causal_middleware.faults.families import FaultContext, FaultPlan, plan_fault
from causal_middleware.faults.grammar import PLAIN_GRAMMAR, QuestionGrammar
from causal_middleware.faults.model import (
    ALL_FAMILIES,
    PERSISTABLE_FAMILIES,
    ContentOutcome,
    FaultFamily,
    FaultLabel,
    FaultSite,
    UnitRecord,
)
from causal_middleware.faults.outcomes import content_outcome, outcome_of, query_contaminated
from causal_middleware.faults.persistent import ScopedIndex, corrupted_copy
from causal_middleware.protocols import DiscardingForkBackend, ForkBackend
from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.store.base import RunSummary, SpanStore
from causal_middleware.tasks.model import Dataset, Question
from causal_middleware.tasks.scoring import is_correct

RECORD_KIND = "intervention"
BASE_LABEL = "fault_sweep.base"
UNIT_LABEL = "fault_sweep.unit"

__all__ = [
    "BASE_LABEL",
    "RECORD_KIND",
    "UNIT_LABEL",
    "FaultUnit",
    "SweepEnvironment",
    "SweepResult",
    "base_key",
    "base_run",
    "finished_keys",
    "iter_units",
    "latest_records",
    "run_sweep",
    "unit_key",
]


@dataclass
class SweepEnvironment:
    """The live agent a sweep injects into, and where it keeps runs.

    Args:
        store: the span store the agent's runs (base and forks) are written to.
        backend: forks runs (the LangGraph ``Replayer``); must re-run the suffix in ``regenerate``.
        adapter: turns hop-level faults into node outputs for this agent.
        dataset: the questions and the corpus the agent retrieves from.
        run_base: runs one question on the instrumented agent and returns its run id.
        scoped_index: the index the agent searches, when persistent faults are wanted.
        can_fork: whether a stored base run can still be forked (its checkpoints exist).
        retriever: the retriever's name, part of every unit key.
        corpus: the dataset's :class:`FaultCorpus` (built on first use when None).
        grammar: the questions' grammar, for faults phrased the way the corpus states facts.
        close: releases what the environment opened (call it when the sweeps are done).
    """

    store: SpanStore
    backend: ForkBackend
    adapter: AgentAdapter
    dataset: Dataset
    run_base: Callable[[Question], str]
    scoped_index: ScopedIndex | None = None
    can_fork: Callable[[Trajectory], bool] = field(default=lambda trajectory: True)
    retriever: str = "bm25"
    corpus: FaultCorpus | None = None
    close: Callable[[], None] = field(default=lambda: None)
    grammar: QuestionGrammar = PLAIN_GRAMMAR

    def fault_corpus(self) -> FaultCorpus:
        if self.corpus is None:
            self.corpus = FaultCorpus.from_dataset(self.dataset, grammar=self.grammar)
        return self.corpus


class SweepResult(BaseModel):
    """What one ``run_sweep`` call did (the stored records hold the details)."""

    dataset: str
    retriever: str
    seed: int
    persistent: bool
    site: FaultSite = "trace"
    families: list[str]
    depths: list[int]
    questions: int
    units: int = Field(description="units in the sweep")
    resumed: int = Field(description="units already finished in the store, skipped")
    statuses: dict[str, int] = Field(default_factory=dict, description="status -> units run now")
    base_runs: int = Field(default=0, description="base runs made now (the rest were reused)")
    base_correct: int = Field(default=0, description="questions whose (latest) base run answered correctly")
    elapsed_s: float = 0.0
    cpu_s: float = Field(default=0.0, description="CPU seconds the process spent (all threads)")
    keys: list[str] = Field(default_factory=list, description="every unit key of the sweep")
    records: list[UnitRecord] = Field(default_factory=list, description="the records written now")


class FaultUnit(NamedTuple):
    """One finished faulted unit, as the attribution benchmark consumes it."""

    base: Trajectory
    faulted: Trajectory
    label: FaultLabel
    recovered: bool
    content_outcome: ContentOutcome | None
    question: Question


def unit_key(
    question_id: str,
    family: str,
    depth: int,
    seed: int,
    persistent: bool,
    *,
    dataset: str,
    retriever: str,
    site: FaultSite = "trace",
) -> str:
    """The resume key of a unit (JSON text, stable across runs; a corpus-site unit's ends with
    ``"corpus"``)."""
    parts: list[object] = [dataset, retriever, question_id, family, depth, seed, bool(persistent)]
    if site != "trace":
        parts.append(site)
    return json.dumps(parts)


def latest_records(store: SpanStore) -> dict[str, UnitRecord]:
    """The latest intervention record of every unit key in ``store``."""
    out: dict[str, UnitRecord] = {}
    for payload in store.get_records(RECORD_KIND):
        if "key" not in payload or "status" not in payload:
            continue  # someone else's intervention record
        record = UnitRecord.model_validate(payload)
        out[record.key] = record
    return out


def finished_keys(store: SpanStore) -> set[str]:
    """Keys of units whose latest record is not an error (skipped when the sweep runs again)."""
    return {key for key, record in latest_records(store).items() if record.status != "error"}


def base_key(dataset: str, retriever: str, seed: int, question_id: str) -> str:
    """The ``BASE_LABEL`` value a sweep gives the base run of ``question_id``."""
    return json.dumps([dataset, retriever, seed, question_id])


def _replace_with(values: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    def fault_output(_recorded: Any) -> dict[str, Any]:
        copy: dict[str, Any] = json.loads(json.dumps(values))  # a fresh copy per call
        return copy

    return fault_output


class _Sweep:
    def __init__(
        self,
        env: SweepEnvironment,
        *,
        seed: int,
        persistent: bool,
        on_unit: Callable[[UnitRecord], None],
        site: FaultSite = "trace",
    ) -> None:
        self.env = env
        self.store = env.store
        self.seed = seed
        self.persistent = persistent or site == "corpus"  # a corpus fault persists by construction
        self.site = site
        self.on_unit = on_unit
        self.corpus = env.fault_corpus()
        self.dataset = env.dataset.name
        self.base_made = 0
        self._lock = threading.Lock()
        self._bases = self._stored_bases()

    def _stored_bases(self) -> dict[str, list[RunSummary]]:
        bases: dict[str, list[RunSummary]] = {}
        for summary in self.store.list_runs(label=BASE_LABEL, limit=None):  # newest first
            bases.setdefault(str(summary.labels.get(BASE_LABEL)), []).append(summary)
        return bases

    def base_key(self, question: Question) -> str:
        return base_key(self.dataset, self.env.retriever, self.seed, question.id)

    def base_correct(self, questions: Iterable[Question]) -> int:
        """Questions whose newest stored base run is annotated a success."""
        bases = self._stored_bases()
        return sum(
            1
            for q in questions
            if (runs := bases.get(self.base_key(q))) and runs[0].outcome == Outcome.SUCCESS
        )

    def key(self, question: Question, family: str, depth: int) -> str:
        return unit_key(
            question.id,
            family,
            depth,
            self.seed,
            self.persistent,
            dataset=self.dataset,
            retriever=self.env.retriever,
            site=self.site,
        )

    def base_run(self, question: Question) -> Trajectory:
        key = self.base_key(question)
        for summary in self._bases.get(key, []):  # newest first
            trajectory = self.store.get_trajectory(summary.run_id)
            if self.env.can_fork(trajectory):
                return trajectory
        run_id = self.env.run_base(question)
        correct = is_correct(self.store.get_trajectory(run_id).answer, question)
        self.store.annotate(
            run_id,
            outcome=Outcome.SUCCESS if correct else Outcome.FAILURE,
            reference=question.answer,
            labels={BASE_LABEL: key, "question_id": question.id},
        )
        with self._lock:
            self.base_made += 1
        return self.store.get_trajectory(run_id)

    def run_question(self, question: Question, units: Sequence[tuple[FaultFamily, int]]) -> list[UnitRecord]:
        records = []
        base: Trajectory | None = None
        failure: Exception | None = None
        try:
            base = self.base_run(question)
        except Exception as exc:
            failure = exc
        for family, depth in units:
            start = time.perf_counter()
            record = self._blank(question, family, depth, base)
            try:
                if base is None:
                    raise RuntimeError(
                        f"the base run of question {question.id} failed: {failure!r}"
                    ) from failure
                record = self._unit(question, family, depth, base, record)
            except Exception as exc:
                record = record.model_copy(
                    update={"status": "error", "error": _error_text(exc), "fork_run_id": None}
                )
            record.elapsed_s = round(time.perf_counter() - start, 4)
            run_id = record.fork_run_id or record.base_run_id or f"question:{question.id}"
            self.store.put_record(RECORD_KIND, run_id, record.model_dump(mode="json"))
            records.append(record)
            self.on_unit(record)
        return records

    def _blank(
        self, question: Question, family: FaultFamily, depth: int, base: Trajectory | None
    ) -> UnitRecord:
        return UnitRecord(
            key=self.key(question, family, depth),
            status="error",
            family=family,
            requested_hop=depth,
            seed=self.seed,
            persistent=self.persistent,
            site=self.site,
            dataset=self.dataset,
            retriever=self.env.retriever,
            question_id=question.id,
            base_run_id=base.run_id if base is not None else None,
            base_answer=base.answer if base is not None else None,
            question=question.model_dump(mode="json"),
        )

    def _unit(
        self, question: Question, family: FaultFamily, depth: int, base: Trajectory, record: UnitRecord
    ) -> UnitRecord:
        ctx = FaultContext(
            trajectory=base, question=question, corpus=self.corpus, adapter=self.env.adapter, seed=self.seed
        )
        plan = plan_fault(family, ctx, depth, persistent=self.persistent)
        if self.site == "corpus":
            plan = _corpus_plan(plan, base, self.env.adapter)
        record = record.model_copy(
            update={
                "status": plan.status,
                "injected_hop": plan.injected_hop,
                "stage": plan.stage,
                "reason": plan.reason,
                "reason_code": plan.reason_code,
            }
        )
        if plan.status != "ready":
            return record
        fork = self._fork(base, question, depth, plan, record.key)
        label, intervention = plan.label, plan.intervention
        assert label is not None and intervention is not None
        if plan.upserts:
            record = record.model_copy(update={"upserts": list(plan.upserts), "fork_run_id": fork.run_id})
        if self.site == "corpus":
            retrieved = _retrieved_label(plan, fork)
            if retrieved is None:
                self._drop(fork.run_id)
                ids = [p.id for p in plan.upserts]
                return record.model_copy(
                    update={
                        "status": "skipped",
                        "reason_code": "not_retrieved",
                        "reason": f"the corpus passage(s) {ids} were not retrieved at hop "
                        f"{plan.injected_hop} of the fork",
                        "fork_answer": fork.answer,
                    }
                )
            label = retrieved
        outcome = outcome_of(fork.answer, question)
        self.store.annotate(
            fork.run_id,
            outcome=Outcome.SUCCESS if outcome == "recovered" else Outcome.FAILURE,
            reference=question.answer,
            # the corpus site learns the real ranks only from the fork: its label is the final one
            labels={"fault": label.model_dump(mode="json")} if self.site == "corpus" else None,
        )
        update: dict[str, Any] = {
            "status": "done",
            "fork_run_id": fork.run_id,
            "fork_answer": fork.answer,
            "label": label,
            "intervention": intervention.model_dump(mode="json"),
            "outcome": outcome,
        }
        corruption = label.corruption
        if corruption is not None:
            update["content_outcome"] = content_outcome(fork.answer, question, corruption)
            update["query_contamination"] = query_contaminated(fork, corruption, label.injected_hop)
        return record.model_copy(update=update)

    def _drop(self, run_id: str) -> None:
        """A fork whose fault never reached the agent: its checkpoints freed where the backend can,
        its spans marked so no one takes it for a faulted run."""
        backend = self.env.backend
        if isinstance(backend, DiscardingForkBackend):
            with contextlib.suppress(ValueError):
                backend.discard_fork(run_id)
        self.store.annotate(run_id, labels={"fault_sweep.not_retrieved": True})

    def _fork(
        self, base: Trajectory, question: Question, depth: int, plan: FaultPlan, key: str
    ) -> Trajectory:
        assert plan.label is not None and plan.intervention is not None
        intervention = plan.intervention
        labels = {
            "fault": plan.label.model_dump(mode="json"),
            "question_id": question.id,
            "depth": depth,
            UNIT_LABEL: key,
        }
        kwargs: dict[str, Any] = {
            "hop": intervention.hop,
            "node": intervention.node,
            "update": _replace_with(intervention.values),
            "mode": "regenerate",
            "intervention_kind": intervention.kind,
            "labels": labels,
        }
        if not plan.upserts:
            return self.env.backend.fork(base.run_id, **kwargs)
        if self.env.scoped_index is None:
            raise ValueError(
                "persistent faults need the agent to search a ScopedIndex (SweepEnvironment.scoped_index)"
            )
        private = corrupted_copy(self.env.scoped_index.base, plan.upserts)
        with self.env.scoped_index.override(private):
            return self.env.backend.fork(base.run_id, **kwargs)


def _corpus_plan(plan: FaultPlan, base: Trajectory, adapter: AgentAdapter) -> FaultPlan:
    """The trace-site plan moved into the corpus: the passages it would have put into the hop's
    evidence go into a private corpus copy, and the fork re-runs the hop's retrieval on it (the
    hop's own sub-query, re-issued) instead of replacing the retrieval's output."""
    if plan.status != "ready" or plan.label is None or plan.intervention is None:
        return plan
    hop = plan.injected_hop
    if not plan.upserts:
        reason = (
            f"{plan.family} at hop {hop} writes nothing new into the corpus (its passage is already there)"
        )
        return replace(plan, status="skipped", reason=reason, reason_code="not_certifiable")
    sub_query = base.hop(hop).sub_query if hop is not None else None
    if hop is None or not sub_query:
        return replace(
            plan,
            status="skipped",
            reason=f"hop {hop} has no sub-query to re-run",
            reason_code="not_certifiable",
        )
    rerun = adapter.subquery_update(base, hop, sub_query)
    intervention = rerun.model_copy(
        update={
            "kind": plan.intervention.kind,
            "description": f"{plan.intervention.description} (in a private corpus copy; hop {hop}'s "
            "retrieval re-run live)",
        }
    )
    label = plan.label.model_copy(update={"site": "corpus", "persistent": True, "node": rerun.node})
    return replace(plan, intervention=intervention, label=label)


def _retrieved_label(plan: FaultPlan, fork: Trajectory) -> FaultLabel | None:
    """The label with the ranks the corpus passages really got at the injected hop of ``fork``;
    None when the retrieval returned none of them (the fault never reached the agent there)."""
    assert plan.label is not None and plan.injected_hop is not None
    try:
        documents = fork.hop(plan.injected_hop).documents
    except KeyError:
        return None
    ranks = {d.id: rank for rank, d in enumerate(documents, start=1)}
    found = [ranks[p.id] for p in plan.upserts if p.id in ranks]
    if not found:
        return None
    label = plan.label
    detail = (
        f"{(label.detail or '').replace(' added at rank 1', '')}; written into the corpus, retrieved "
        f"at rank {min(found)}"
    )
    planted = [
        p.model_copy(update={"rank": ranks[p.passage_id]}) if p.passage_id in ranks else p
        for p in label.planted
    ]
    corruption = label.corruption
    if corruption is not None and corruption.passage_id in ranks:
        corruption = corruption.model_copy(update={"rank": ranks[corruption.passage_id]})
    return label.model_copy(update={"planted": planted, "corruption": corruption, "detail": detail})


def _error_text(exc: BaseException) -> str:
    tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return f"{type(exc).__name__}: {exc}\n{tail}".strip()


def _check(depths: Sequence[int], families: Sequence[str], workers: int) -> None:
    if not depths:
        raise ValueError("depths is empty; give at least one hop, e.g. [1, 2, 3]")
    bad = [d for d in depths if not isinstance(d, int) or isinstance(d, bool) or d < 1]
    if bad:
        raise ValueError(f"depths must be positive integers (1-based hops), got {bad}")
    if not families:
        raise ValueError("families is empty; give at least one fault family")
    unknown = [f for f in families if f not in ALL_FAMILIES]
    if unknown:
        raise ValueError(f"unknown fault families {unknown}; expected some of {list(ALL_FAMILIES)}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")


def run_sweep(
    env: SweepEnvironment,
    questions: Iterable[Question] | None = None,
    *,
    depths: Sequence[int] = (1, 2, 3),
    families: Sequence[FaultFamily] = ALL_FAMILIES,
    seed: int = 0,
    persistent: bool = False,
    workers: int = 2,
    progress: bool = False,
    executor: Executor | None = None,
    env_spec: EnvSpec | None = None,
    follow_up: FollowUp | None = None,
    site: FaultSite = "trace",
) -> SweepResult:
    """Run (or resume) a sweep over ``questions`` (default: all of ``env.dataset``'s).

    ``persistent`` also writes a content-corruption, false-premise or stale passage into a private
    copy of the index for that fork (``env.scoped_index`` required). ``site="corpus"`` puts the
    fault only there (families in ``PERSISTABLE_FAMILIES``): the fork re-runs the hop's retrieval
    on the private copy, so the trace holds what the retriever really returned, and a unit whose
    retrieval does not return the passage is ``skipped`` (``not_retrieved``). ``progress`` shows a rich
    progress bar on stderr. Returns a :class:`SweepResult`; the records are in ``env.store``.

    ``executor`` runs the questions (default: ``workers`` threads). A remote one needs
    ``env_spec``, the same agent as ``env`` rebuilt in each worker process; its runs and records
    are imported into ``env.store``, and ``follow_up(worker_env, records)`` runs there after each
    question's units, its records kept too. Results are those of the local executor.
    """
    _check(depths, families, workers)
    executor = executor if executor is not None else ThreadExecutor(workers)
    if executor.remote and env_spec is None:
        raise ValueError(f"{executor!r} runs units in other processes: give run_sweep an env_spec")
    depths, families = list(dict.fromkeys(depths)), list(dict.fromkeys(families))
    given = list(questions) if questions is not None else list(env.dataset.questions)
    chosen = list({q.id: q for q in given}.values())
    if not chosen:
        raise ValueError("no questions to sweep")
    if site not in ("trace", "corpus"):
        raise ValueError(f"site must be 'trace' or 'corpus', got {site!r}")
    if site == "corpus":
        other = [f for f in families if f not in PERSISTABLE_FAMILIES]
        if other:
            raise ValueError(
                f"site='corpus' puts passages into the corpus; {other} have no corpus form "
                f"(use some of {list(PERSISTABLE_FAMILIES)}, or faults='content')"
            )
    if (persistent or site == "corpus") and env.scoped_index is None:
        raise ValueError(
            "persistent and corpus faults need the agent to search a ScopedIndex (SweepEnvironment.scoped_index)"
        )
    start, cpu_start = time.perf_counter(), time.process_time()
    done = finished_keys(env.store)
    statuses: Counter[str] = Counter()
    records: list[UnitRecord] = []

    bar = Progress(
        TextColumn("[bold]inject[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not progress,
    )

    lock = threading.Lock()

    def on_unit(record: UnitRecord) -> None:
        with lock:
            statuses[record.status] += 1
        bar.update(
            task, advance=1, description=f"{record.question_id} {record.family} h{record.requested_hop}"
        )

    sweep = _Sweep(env, seed=seed, persistent=persistent, on_unit=on_unit, site=site)
    plan: list[tuple[Question, list[tuple[FaultFamily, int]]]] = []
    keys: list[str] = []
    resumed = 0
    for question in chosen:
        pending = []
        for depth in depths:
            for family in families:
                keys.append(sweep.key(question, family, depth))
                if keys[-1] in done:
                    resumed += 1
                else:
                    pending.append((family, depth))
        if pending:
            plan.append((question, pending))
    with bar:
        task = bar.add_task("units", total=len(keys) - resumed)
        if executor.remote:
            assert env_spec is not None
            worker = SweepWorker(env_spec, seed=seed, persistent=persistent, follow_up=follow_up, site=site)
            for outcome in executor.map(worker, plan):
                records.extend(_absorb(env.store, outcome, on_unit))
                sweep.base_made += outcome.base_made
        else:
            for batch in executor.map(lambda item: sweep.run_question(*item), plan):
                records.extend(batch)
    return SweepResult(
        dataset=env.dataset.name,
        retriever=env.retriever,
        seed=seed,
        persistent=persistent,
        site=site,
        families=list(families),
        depths=list(depths),
        questions=len(chosen),
        units=len(keys),
        resumed=resumed,
        statuses=dict(statuses),
        base_runs=sweep.base_made,
        base_correct=sweep.base_correct(chosen),
        elapsed_s=round(time.perf_counter() - start, 3),
        cpu_s=round(time.process_time() - cpu_start, 3),
        keys=keys,
        records=records,
    )


def _absorb(
    store: SpanStore, outcome: QuestionOutcome, on_unit: Callable[[UnitRecord], None]
) -> list[UnitRecord]:
    """Keep what a worker sent back: its runs, then the unit records (as the local sweep writes
    them), then the follow-up's records."""
    for run in outcome.runs:
        import_run(store, run)
    for record in outcome.records:
        run_id = record.fork_run_id or record.base_run_id or f"question:{record.question_id}"
        store.put_record(RECORD_KIND, run_id, record.model_dump(mode="json"))
        on_unit(record)
    for extra in outcome.extra:
        store.put_record(extra.kind, extra.run_id, extra.payload)
    return outcome.records


def base_run(env: SweepEnvironment, question: Question, *, seed: int = 0) -> Trajectory:
    """The question's base run for sweeps with ``seed``: the stored one when it can still be forked,
    else a new run on the live agent (annotated with its outcome, reference and base label)."""
    return _Sweep(env, seed=seed, persistent=False, on_unit=lambda record: None).base_run(question)


def iter_units(
    store: SpanStore,
    *,
    families: Iterable[str] | None = None,
    depths: Iterable[int] | None = None,
    persistent: bool | None = None,
    dataset: str | None = None,
    retriever: str | None = None,
    site: FaultSite | None = "trace",
) -> Iterator[FaultUnit]:
    """Finished faulted units in ``store`` (status ``done``, so eligible and forked), in record order:
    (base trajectory, faulted trajectory, FaultLabel, recovered, content outcome, question).
    ``site`` defaults to trace-site units: a corpus-site run only replays against its private
    corpus copy (``UnitRecord.upserts``); None takes both."""
    wanted_families = set(families) if families is not None else None
    wanted_depths = set(depths) if depths is not None else None
    for record in latest_records(store).values():
        if record.status != "done" or record.label is None or record.fork_run_id is None:
            continue
        if wanted_families is not None and record.family not in wanted_families:
            continue
        if wanted_depths is not None and record.requested_hop not in wanted_depths:
            continue
        if persistent is not None and record.persistent != persistent:
            continue
        if dataset is not None and record.dataset != dataset:
            continue
        if retriever is not None and record.retriever != retriever:
            continue
        if site is not None and record.site != site:
            continue
        assert record.base_run_id is not None and record.question is not None
        yield FaultUnit(
            base=store.get_trajectory(record.base_run_id),
            faulted=store.get_trajectory(record.fork_run_id),
            label=record.label,
            recovered=record.outcome == "recovered",
            content_outcome=record.content_outcome,
            question=Question.model_validate(record.question),
        )
