"""What "repairing a hop" means, once, for every probing diagnoser.

**Repairing hop h** replaces hop h's retrieved evidence with a clean re-retrieval:

1. *Clean sub-query.* When the context has a :class:`~causal_middleware.tasks.model.Question` with a
   gold decomposition, the gold sub-question of the hop, with every ``#k`` replaced by gold hop
   k's answer (so a corrupted bridge entity upstream does not leak into the repair). The gold hop
   is the one whose sub-question's words best match the hop's recorded sub-query (ties and runs
   whose sub-queries match nothing: the same position), so an agent that re-queried still gets
   the sub-question it was working on. A sub-query holding every relation word of several gold
   hops (an earlier hop's whole sentence filled in as its bridge) works on the one nearest its
   position. Without a question: the hop's recorded sub-query.
2. *Evidence.* The top ``k`` passages of the context's index for that sub-query, ``k`` being
   ``DiagnosisContext.repair_k``, else the most documents any hop of the run retrieved, else 5.
3. *Update.* The documents become hop h's evidence through the agent's adapter
   (``AgentAdapter.evidence_update``), and the fork backend applies it.

A **probe** forks the failed run with that update and judges the fork's answer with the context's
verifier: ``mode="regenerate"`` re-runs everything after the repaired retrieval (suffix
regeneration); ``mode="frozen"`` holds every other step at its recorded output and re-runs only
the repaired hop's steps after its retrieval (its reading of the new evidence) and the answer
node, or the node names in ``DiagnosisContext.frozen_rerun``. Every probe is one re-execution.
With ``skip_uninformative`` (``path_aware``'s runner) a repair that retrieves exactly the evidence
the hop already had runs no fork (it would repeat the failure) and its record says
``uninformative``: such a probe neither confirms nor clears the hop (a fault in the corpus itself
looks like this). The seed diagnosers keep forking, as their published protocols do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.base import DiagnosisContext, DiagnosisCost, ProbeMode, ProbeRecord
from causal_middleware.attribution.hops import HopView, answer_node, hop_views
from causal_middleware.attribution.text import coverage, terms
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import Document, Intervention, Trajectory
from causal_middleware.tasks.model import HopGold, Question
from causal_middleware.tasks.scoring import contains_answer

DEFAULT_REPAIR_K = 5
_REF = re.compile(r"#(\d+)")


class RepairUnavailable(Exception):
    """The hop cannot be repaired (no sub-query, no index, no adapter, an adapter that refuses)."""


class ProbeBudgetExhausted(Exception):
    """The context's ``max_reexecutions`` is reached."""


class HopRepair(BaseModel):
    """The repair of one hop: the clean sub-query, the documents, the fork update."""

    model_config = ConfigDict(extra="forbid")

    hop: int
    sub_query: str
    source: Literal["gold", "recorded"]
    gold_hop: int | None = None
    documents: list[Document] = Field(default_factory=list)
    intervention: Intervention


def gold_subquestion(question: Question, gold_index: int) -> str:
    """Gold sub-question ``gold_index`` with each ``#k`` replaced by gold hop k's answer."""
    hops = {h.index: h for h in question.hops}
    if gold_index not in hops:
        raise KeyError(f"question {question.id} has no gold hop {gold_index} (it has {sorted(hops)})")

    def sub(match: re.Match[str]) -> str:
        ref = int(match.group(1))
        return hops[ref].answer if ref in hops else match.group(0)

    return _REF.sub(sub, hops[gold_index].question)


def align_gold_hop(recorded_sub_query: str, position: int, question: Question) -> int:
    """The gold hop a recorded sub-query works on (see the module docstring)."""
    if not question.hops:
        raise ValueError(f"question {question.id} has no gold decomposition")
    recorded = terms(recorded_sub_query)
    best: tuple[float, int, int] | None = None
    whole: list[int] = []  # gold hops whose every relation word the sub-query has
    for gold in question.hops:
        relation = terms(_REF.sub(" ", gold.question))
        resolved = terms(gold_subquestion(question, gold.index))
        covered = coverage(relation, recorded) if relation and recorded else 0.0
        if covered >= 1.0:
            whole.append(gold.index)
        score = covered + 0.5 * (len(resolved & recorded) / len(resolved) if resolved else 0.0)
        key = (score, -abs(gold.index - position), gold.index)
        if best is None or key > best:
            best = key
    assert best is not None
    if best[0] == 0.0:
        return min(position, max(h.index for h in question.hops))
    if len(whole) > 1:
        # several relations whole: the bridge an earlier hop filled in brought its own relation's
        # words along ("Where was <X founded Y in 1984.> born?"), so the hop nearest the position
        return min(whole, key=lambda index: (abs(index - position), -index))
    return best[2]


def clean_subquery(
    view: HopView, question: Question | None
) -> tuple[str, Literal["gold", "recorded"], int | None]:
    """The sub-query a repair of ``view``'s hop retrieves with, its source and the gold hop used."""
    if question is not None and question.hops:
        gold = align_gold_hop(view.sub_query, view.index, question)
        return gold_subquestion(question, gold), "gold", gold
    if not view.sub_query.strip():
        raise RepairUnavailable(f"hop {view.index} has no recorded sub-query and no gold question is given")
    return view.sub_query, "recorded", None


def gold_reading(view: HopView, question: Question | None) -> HopGold | None:
    """The gold hop ``view``'s hop works on (aligned as :func:`clean_subquery` aligns it), when the
    question has a gold decomposition; what a reading repair sets the hop's fact to."""
    if question is None or not question.hops:
        return None
    gold = align_gold_hop(view.sub_query, view.index, question)
    return next(h for h in question.hops if h.index == gold)


def reads_gold(view: HopView, gold: HopGold) -> bool:
    """Whether the hop's reading already states its gold answer anywhere (a reading repair would
    change nothing): readers wrap the fact in notes and labels, so a whole-token match inside the
    text counts."""
    return contains_answer(view.fact, gold.answer, gold.aliases)


def retrieve_documents(index: Index, query: str, k: int) -> list[Document]:
    """The top ``k`` passages of ``index`` for ``query`` as trajectory documents."""
    docs: list[Document] = []
    for hit in index.search(query, k):
        passage = hit.passage
        metadata: dict[str, object] = {"title": passage.title} if passage.title else {}
        if passage.date is not None:
            metadata["date"] = passage.date.isoformat()
        docs.append(
            Document(id=passage.id, text=passage.text, score=hit.score, source=index.name, metadata=metadata)
        )
    return docs


def repair_k(views: Sequence[HopView], context: DiagnosisContext) -> int:
    if context.repair_k is not None:
        return context.repair_k
    most = max((len(v.documents) for v in views), default=0)
    return most or DEFAULT_REPAIR_K


def repair_hop(
    trajectory: Trajectory,
    hop: int,
    context: DiagnosisContext,
    views: Sequence[HopView] | None = None,
) -> HopRepair:
    """Build the repair of hop ``hop`` (no fork yet). Raises :class:`RepairUnavailable`."""
    views = list(views) if views is not None else hop_views(trajectory)
    view = next((v for v in views if v.index == hop), None)
    if view is None:
        raise RepairUnavailable(
            f"run {trajectory.run_id} has no hop {hop} (hops: {[v.index for v in views]})"
        )
    if context.index is None:
        raise RepairUnavailable("repairing a hop needs a retrieval index in the context")
    if context.adapter is None:
        raise RepairUnavailable("repairing a hop needs an agent adapter in the context")
    sub_query, source, gold = clean_subquery(view, context.question)
    documents = retrieve_documents(context.index, sub_query, repair_k(views, context))
    try:
        intervention = context.adapter.evidence_update(trajectory, hop, documents)
    except (NotImplementedError, KeyError, ValueError, IndexError) as exc:
        raise RepairUnavailable(f"the adapter cannot replace hop {hop}'s evidence: {exc}") from exc
    intervention = intervention.model_copy(
        update={
            "kind": "repair",
            "description": intervention.description or f"re-retrieval for {sub_query!r}",
        }
    )
    return HopRepair(
        hop=hop,
        sub_query=sub_query,
        source=source,
        gold_hop=gold,
        documents=documents,
        intervention=intervention,
    )


def _same_evidence(repaired: Sequence[Document], recorded: Sequence[Document]) -> bool:
    return [(d.id, d.text) for d in repaired] == [(d.id, d.text) for d in recorded]


class ProbeRunner:
    """Runs repair probes on one failed run, counting cost and honouring the re-execution budget.

    Probes are cached per (hop, mode) so a diagnoser never pays twice for the same fork.
    """

    def __init__(
        self,
        trajectory: Trajectory,
        context: DiagnosisContext,
        cost: DiagnosisCost,
        views: Sequence[HopView] | None = None,
        *,
        skip_uninformative: bool = False,
    ) -> None:
        if context.backend is None:
            raise RepairUnavailable("probes need a fork backend (a live agent)")
        self.skip_uninformative = skip_uninformative
        self.trajectory = trajectory
        self.context = context
        self.cost = cost
        self.views = list(views) if views is not None else hop_views(trajectory)
        self.records: list[ProbeRecord] = []
        self.used_gold = False
        self._cache: dict[tuple[int, str], ProbeRecord] = {}
        self.forks: dict[str, Trajectory] = {}  # the probes' forks by run id, for a closer look
        self._answer_node = answer_node(trajectory)

    def rerun_for(self, hop: int) -> list[str] | None:
        """Node names a frozen probe of ``hop`` re-runs (see the module docstring)."""
        if self.context.frozen_rerun is not None:
            return list(self.context.frozen_rerun)
        view = next((v for v in self.views if v.index == hop), None)
        names = list(view.after_nodes) if view is not None else []
        if self._answer_node and self._answer_node not in names:
            names.append(self._answer_node)
        return names or None

    @property
    def budget_left(self) -> int | None:
        cap = self.context.max_reexecutions
        return None if cap is None else max(0, cap - self.cost.reexecutions)

    def probe(self, hop: int, mode: ProbeMode) -> ProbeRecord:
        """Repair ``hop``, fork in ``mode``, judge. Raises :class:`ProbeBudgetExhausted`."""
        key = (hop, mode)
        if key in self._cache:
            return self._cache[key]
        try:
            repair = repair_hop(self.trajectory, hop, self.context, self.views)
        except RepairUnavailable as exc:
            record = ProbeRecord(hop=hop, mode=mode, error=str(exc))
            self._cache[key] = record
            self.records.append(record)
            return record
        self.cost.retrievals += 1
        self.used_gold = self.used_gold or repair.source == "gold"
        if self.budget_left == 0:
            raise ProbeBudgetExhausted(f"re-execution budget {self.context.max_reexecutions} reached")
        record = ProbeRecord(
            hop=hop,
            mode=mode,
            sub_query=repair.sub_query,
            sub_query_source=repair.source,
            n_documents=len(repair.documents),
        )
        view = next((v for v in self.views if v.index == hop), None)
        if self.skip_uninformative and view is not None and _same_evidence(repair.documents, view.documents):
            # re-running the hop would read what it read before: a fault there (a corrupted corpus,
            # say) cannot be repaired this way, and a fork would only repeat the failure
            record.uninformative = True
            self._cache[key] = record
            self.records.append(record)
            return record
        self._fork(record, repair.intervention, hop, mode)
        self._cache[key] = record
        self.records.append(record)
        return record

    def probe_reading(self, hop: int, mode: ProbeMode) -> ProbeRecord:
        """Repair ``hop``'s *reading*: set the fact it extracted to its gold hop answer, fork in
        ``mode``, judge. The repair for a hop whose evidence cannot be repaired by re-retrieval
        (the corpus itself states the wrong fact, so a clean retrieval reads it again). A hop that
        already read its gold answer runs no fork (``uninformative``). Raises
        :class:`ProbeBudgetExhausted`."""
        key = (hop, f"reading:{mode}")
        if key in self._cache:
            return self._cache[key]
        record = ProbeRecord(hop=hop, mode=mode, target="reading")
        view = next((v for v in self.views if v.index == hop), None)
        gold = gold_reading(view, self.context.question) if view is not None else None
        adapter = self.context.adapter
        if view is None or gold is None or adapter is None:
            record.error = f"hop {hop} has no gold reading to repair it with (needs a gold decomposition)"
        else:
            record.fact = gold.answer
            record.sub_query_source = "gold"
            if reads_gold(view, gold):
                record.uninformative = True
            else:
                try:
                    iv = adapter.fact_update(self.trajectory, hop, gold.answer)
                except (NotImplementedError, KeyError, ValueError, IndexError) as exc:
                    record.error = f"the adapter cannot replace hop {hop}'s fact: {exc}"
                else:
                    self.used_gold = True
                    self._fork(record, iv, hop, mode)
        self._cache[key] = record
        self.records.append(record)
        return record

    def _fork(self, record: ProbeRecord, iv: Intervention, hop: int, mode: ProbeMode) -> None:
        """Fork the failed run with ``iv`` in ``mode`` and judge it into ``record``."""
        if self.budget_left == 0:
            raise ProbeBudgetExhausted(f"re-execution budget {self.context.max_reexecutions} reached")
        rerun = self.rerun_for(hop) if mode == "frozen" else None
        backend = self.context.backend
        assert backend is not None
        self.cost.reexecutions += 1
        try:
            fork = backend.fork(
                self.trajectory.run_id,
                hop=iv.hop if iv.hop is not None else hop,
                node=iv.node,
                step=iv.langgraph_step,
                values=iv.values,
                mode=mode,
                rerun=rerun,
                intervention_kind="repair",
                labels={
                    "attribution_probe": {
                        "parent_run_id": self.trajectory.run_id,
                        "hop": hop,
                        "mode": mode,
                        "target": record.target,
                    }
                },
            )
        except Exception as exc:  # a fork the agent cannot take is a failed probe, not a crash
            record.error = f"{type(exc).__name__}: {exc}"
        else:
            record.fork_run_id = fork.run_id
            self.forks[fork.run_id] = fork
            record.answer = fork.answer
            record.restored = self.context.judge(fork)
