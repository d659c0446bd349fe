"""``path_aware``: provenance first, then the cheapest probe that the suspected fault path calls for.

AgenticRAG-FP's future work, built. Four stages:

1. **Provenance (free).** From the blinded run alone (:mod:`~causal_middleware.attribution.provenance`):
   where the wrong answer's content terms entered the run (backward token tracing through bridge
   entities); which hops retrieved nothing or evidence that does not match their sub-query; and
   whether each hop found the bridge entity it searched for. A hop whose evidence matches its
   query but not its bridge entity was sent after a bad entity, so the blame moves upstream to the
   hop that produced the entity, and on along the chain while that holds.
2. **Evidence audit (one index search per hop, no re-execution).** With an index in the context
   (and ``audit=True``), each hop's recorded evidence is compared with what the index returns for
   the hop's own query (:mod:`~causal_middleware.attribution.audit`); evidence that did not come from
   the retriever is the strongest signal there is.
3. **Probe by path.** The suspects, strongest first (ties: earliest), are confirmed with the one
   probe their fault path calls for, using the shared hop repair
   (:mod:`~causal_middleware.attribution.repair_op`):

   * a corrupted **bridge** entity (the hop's output feeds later sub-queries): suffix
     regeneration from that hop, because every later hop must be redone with the repaired entity;
   * a deep **answer fact** (the content went from this hop straight into the answer, nothing
     downstream depends on it) or the last hop: a frozen suffix, re-running only the hop's reading
     and the answer;
   * empty or irrelevant **evidence**: one repair probe in the mode its position calls for.

   A suspect the audit flagged is repaired with its own recorded sub-query (its evidence, not its
   query, was foreign: :func:`recorded_query_context`); the others with the gold sub-question.
   With a conclusive audit, a probe re-retrieves as many passages as the audit-consistent hops
   recorded (:func:`trusted_k`), not the shared default (the most any hop recorded, which counts a
   planted passage). A probe that does not restore the answer rules its hop out and escalates: a frozen probe is
   retried with the suffix regenerated (the frozen suffix may hold back what the repair needs),
   then the hop that produced the entity this hop searched for becomes the next suspect (the
   entity itself may be wrong even though evidence about it exists, e.g. a corruption into
   another real name). A repair that retrieves exactly the evidence the hop already had runs no
   fork and clears nothing (``uninformative``: a fault in the corpus itself looks like this), and
   when a repair restores the answer only by replacing the entity its hop searched for, the blame
   moves to the hop that produced that entity, on up the chain while that holds. The first
   suspect whose repair restores a correct answer is the diagnosis; at most ``max_probes`` probes are spent. When no probe confirms a suspect, or another suspect at a
   different hop is as strong as the confirmed one and was not ruled out, the diagnosis is marked
   ``uncertain`` and ``candidates`` lists the entangled hops, best first.

4. **Reading repairs.** When no evidence repair confirmed a suspect and the gold decomposition is
   known, the corpus itself may state the wrong fact (every re-retrieval reads it again), so the
   hops whose reading is not their gold answer are repaired instead, earliest first (an attempt
   the agent retried, and a hop nothing later used, are left out): the hop's fact is set to its
   gold answer (:meth:`ProbeRunner.probe_reading`); the first that restores is the diagnosis,
   unless an earlier hop's reading repair, though its fork stayed wrong, set the chain right after
   it (a later gold hop read right, or searched for its right entity where the run searched for a
   wrong one): the error that kept that fork wrong arose in the fork, and the later hop's repair
   restored the answer only by bypassing the entity the earlier hop produced, so the earlier hop is
   the diagnosis.

   When no probe confirmed a suspect either way and the gold decomposition is known, the (still
   uncertain) diagnosis is the earliest hop the chain used whose reading is not its gold answer,
   where the run first left the gold path, or the answer stage when the readings state every gold
   hop's answer (no hop sent the run astray); a failed step or evidence the audit found foreign
   keeps the strongest passive suspect instead.

Without a live agent the diagnoser still runs (stages 1-2) and says so (``details.probed=False``).
It never reads run labels or lineage (the base class blinds the run). ``uses_gold`` is set only
when a probe's repair, or the first-misread fallback, used the gold decomposition (as every probe
diagnoser's repair does when the context carries the question).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.audit import EvidenceAudit, audit_evidence
from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    ProbeMode,
    ProbeRecord,
)
from causal_middleware.attribution.hops import HopView, hop_views, question_text
from causal_middleware.attribution.provenance import (
    BridgeLink,
    HopSignals,
    TokenTrace,
    bridge_links,
    hop_signals,
    impact,
    trace_terms,
    wrong_terms,
)
from causal_middleware.attribution.repair_op import (
    ProbeBudgetExhausted,
    ProbeRunner,
    RepairUnavailable,
    clean_subquery,
    gold_reading,
    reads_gold,
    repair_k,
)
from causal_middleware.attribution.text import terms
from causal_middleware.counterfactual.candidates import candidate_steps
from causal_middleware.counterfactual.crs import compute_crs
from causal_middleware.counterfactual.verifiers import CallableVerifier
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import HopGold, Question
from causal_middleware.tasks.scoring import contains_answer, is_correct

FaultPath = Literal["error", "evidence", "bridge", "answer_fact", "reading"]

STRENGTH_ERROR = 4.0
STRENGTH_AUDIT = 3.0
STRENGTH_PROVENANCE = 2.0
STRENGTH_EMPTY = 2.0
STRENGTH_BRIDGE = 1.5
STRENGTH_IRRELEVANT = 1.5
STRENGTH_NOTHING_READ = 1.25
STRENGTH_ALTERNATIVE = 1.0
OFF_TOPIC_BELOW = 0.25  # a best document this far from the query is as telling as no document


class Suspect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hop: int
    strength: float
    path: FaultPath
    reasons: list[str] = Field(default_factory=list)
    audited: bool = Field(default=False, description="the evidence audit found this hop's evidence foreign")


def recorded_query_context(context: DiagnosisContext) -> DiagnosisContext:
    """``context`` for a repair that re-retrieves with the hop's *recorded* sub-query.

    The audit found an audited hop's evidence is not what the index returns for the query the
    agent issued, so the repair that undoes exactly that is the index's answer to the same query;
    the gold sub-question can differ from it (an agent that re-queried a hop by an alias of its
    entity), and re-running the gold one can recreate the very dead end the agent had worked
    around. The question leaves the context (so the repair takes the recorded sub-query) and
    keeps judging the probe through the verifier."""
    question = context.question
    if question is None:
        return context
    verifier = context.verifier
    if verifier is None:

        def correct(answer: str | None) -> bool:
            return is_correct(answer, question)

        verifier = CallableVerifier(correct, name="the gold answer")
    return context.model_copy(update={"question": None, "verifier": verifier})


def trusted_k(views: list[HopView], audit: EvidenceAudit | None) -> int | None:
    """How many passages the agent's retriever returns, as the hops the audit found consistent
    recorded it (the most of them); None without a conclusive audit or a consistent hop.

    The shared repair's default (the most documents any hop recorded) counts a passage a fault
    planted on top of the retriever's results; re-retrieving that one extra passage can hand the
    agent a distractor it never saw and make a right repair look wrong."""
    if audit is None or not audit.conclusive:
        return None
    counts = [
        len(v.documents)
        for v in views
        if v.documents and (a := audit.hops.get(v.index)) is not None and a.checked and a.consistent
    ]
    return max(counts, default=None)


DEFAULT_STEP_K = 4


def _gold_read(views: list[HopView], question: Question) -> set[int]:
    """The gold hops some hop of the run read right."""
    return {g.index for v in views if (g := gold_reading(v, question)) is not None and reads_gold(v, g)}


def _cured_downstream(
    views: list[HopView], fork: Trajectory, question: Question, repaired: HopView
) -> list[int]:
    """Gold hops after ``repaired``'s that the run read wrong and the reading repair's fork read
    right: the repair propagated, even if the fork then went wrong elsewhere."""
    gold = gold_reading(repaired, question)
    if gold is None:
        return []
    before, after = _gold_read(views, question), _gold_read(hop_views(fork), question)
    return sorted(g for g in after - before if g > gold.index)


def _searched_right_downstream(
    views: list[HopView], fork: Trajectory, question: Question, repaired: HopView
) -> list[int]:
    """Gold hops after ``repaired``'s that the run searched for a wrong entity (no attempt named
    the hop's subject) and the reading repair's fork searched for the right one: the repair set
    the chain's next search right, even if the fork then misread what it found."""
    gold = gold_reading(repaired, question)
    if gold is None:
        return []

    def searched(hop_views_: list[HopView]) -> dict[int, bool]:
        out: dict[int, bool] = {}
        for v in hop_views_:
            g = gold_reading(v, question)
            if g is not None and g.index > gold.index:
                out[g.index] = out.get(g.index, False) or not _searched_a_wrong_entity(v, g, question)
        return out

    before, after = searched(views), searched(hop_views(fork))
    return sorted(g for g, right in after.items() if right and before.get(g) is False)


def _searched_a_wrong_entity(view: HopView, gold: HopGold | None, question: Question) -> bool:
    """Whether ``view``'s sub-query names neither the entity its gold hop is about (the previous
    gold hop's answer) nor any alias of it."""
    if gold is None or gold.index < 2:
        return False
    subject = next((h for h in question.hops if h.index == gold.index - 1), None)
    return subject is not None and not contains_answer(view.sub_query, subject.answer, subject.aliases)


def _misread_hops(
    views: list[HopView], question: Question, trajectory: Trajectory, last_hop: int
) -> list[HopView]:
    """The hops whose reading is not their gold hop answer, in run order: each gold hop's last attempt
    (or an attempt that misled its retry), among the hops whose output the chain used (when any is)."""
    golds = {v.index: gold_reading(v, question) for v in views}
    links = bridge_links(views, question_text(trajectory))
    # an attempt the agent retried (a later hop works on the same gold hop) is superseded by
    # its retry: what the chain went on with is the retry's reading; unless the retry searched
    # for a wrong entity that attempt produced (a false alias in its note), which carries the
    # attempt's error into the retry
    last_attempt = {g.index: v.index for v in views if (g := golds[v.index]) is not None}
    misled = {
        link.source
        for v in views
        if (link := links.get(v.index)) is not None
        and link.source is not None
        and (gold := golds[v.index]) is not None
        and golds.get(link.source) == gold  # a retry of the hop it took its entity from
        and _searched_a_wrong_entity(v, gold, question)
    }
    wrong = [
        v
        for v in views
        if (gold := golds[v.index]) is not None
        and (last_attempt[gold.index] == v.index or v.index in misled)
        and not reads_gold(v, gold)
    ]
    # a hop whose output no later hop used (a dead end the agent re-queried around) cannot have
    # carried the wrong answer; only the last hop feeds the answer directly
    used = {link.source for link in links.values()} | {last_hop}
    wrong = [v for v in wrong if v.index in used] or wrong
    return wrong


class PathAwareDiagnoser(Diagnoser):
    name = "path_aware"
    uses_gold = False
    description = "provenance + evidence audit, then the cheapest discriminating probe for the fault path"

    def __init__(self, *, audit: bool = True, max_probes: int = 3, max_reading_probes: int = 2) -> None:
        if max_probes < 0:
            raise ValueError(f"max_probes must be >= 0, got {max_probes}")
        if max_reading_probes < 0:
            raise ValueError(f"max_reading_probes must be >= 0, got {max_reading_probes}")
        self.audit = audit
        self.max_probes = max_probes
        self.max_reading_probes = max_reading_probes

    # -- stage 1 + 2: suspects -------------------------------------------------------------------
    def suspects(
        self, views: list[HopView], question: str, answer: str | None, audit: EvidenceAudit | None
    ) -> tuple[list[Suspect], dict[str, Any]]:
        """Ranked suspects (strongest first, then earliest) and the evidence behind them."""
        wrong = wrong_terms(answer, question)
        signals = {s.hop: s for s in hop_signals(views, question, wrong)}
        links = bridge_links(views, question)
        found: dict[int, Suspect] = {}

        def add(hop: int, strength: float, path: FaultPath, reason: str, audited: bool = False) -> None:
            current = found.get(hop)
            if current is None:
                found[hop] = Suspect(hop=hop, strength=strength, path=path, reasons=[reason], audited=audited)
                return
            current.reasons.append(reason)
            current.audited = current.audited or audited
            if strength > current.strength:
                current.strength, current.path = strength, path

        def feeds_later(hop: int) -> bool:
            return any(link.source == hop for link in links.values())

        def upstream(hop: int) -> tuple[int, list[int]]:
            """Walk ``hop``'s bridge chain back; the blame moves to the producer of the earliest
            entity that a hop on the chain searched for and did not find (its evidence matched the
            rest of its query, so the entity, not the retrieval, is what failed)."""
            chain = [hop]
            root = hop
            while True:
                sig: HopSignals = signals[chain[-1]]
                source = sig.bridge_source
                if source is None or source in chain:
                    break
                if sig.bridge_supported is False and not sig.irrelevant:
                    root = source
                chain.append(source)
            return root, chain

        for sig in signals.values():
            if sig.error:
                add(sig.hop, STRENGTH_ERROR, "error", f"a step of hop {sig.hop} failed: {sig.error}")
        if audit is not None:
            for i, hop in enumerate(audit.inconsistent):
                note = audit.hops[hop].note
                add(
                    hop,
                    STRENGTH_AUDIT if i == 0 else STRENGTH_AUDIT - 0.5,
                    "bridge" if feeds_later(hop) else "evidence",
                    f"hop {hop}'s evidence is not what the index returns for its sub-query ({note})",
                    audited=True,
                )
        trace: TokenTrace | None = trace_terms(views, wrong) if wrong else None
        if trace is not None and trace.origin_hop is not None:
            origin = trace.origin_hop
            root, chain = upstream(origin)
            if root != origin:
                add(
                    root,
                    STRENGTH_PROVENANCE,
                    "bridge",
                    f"the wrong answer entered at hop {origin}, which searched for a bridge entity its evidence "
                    f"does not mention; the entity came from hop {root} (chain {chain})",
                )
                add(
                    origin,
                    STRENGTH_ALTERNATIVE,
                    "evidence",
                    f"the wrong answer's terms entered at hop {origin}",
                )
            else:
                path: FaultPath = "reading" if trace.origin_part == "fact" else "evidence"
                if trace.via_bridge or feeds_later(origin):
                    path = "bridge"
                elif trace.origin_part == "evidence":
                    path = "answer_fact"
                add(
                    origin,
                    STRENGTH_PROVENANCE,
                    path,
                    f"the wrong answer's terms {trace.tokens} entered at hop {origin} ({trace.origin_part})",
                )
        for sig in signals.values():
            if sig.bridge_supported is False and not sig.irrelevant and sig.bridge_source is not None:
                root, chain = upstream(sig.hop)
                add(
                    root,
                    STRENGTH_BRIDGE,
                    "bridge",
                    f"hop {sig.hop} searched for {sig.bridge_terms} (from hop {sig.bridge_source}) "
                    "and retrieved nothing about it",
                )
                add(
                    sig.hop,
                    STRENGTH_ALTERNATIVE,
                    "evidence",
                    f"hop {sig.hop} may simply have retrieved badly",
                )
        for sig in signals.values():
            if sig.empty:
                add(sig.hop, STRENGTH_EMPTY, "evidence", f"hop {sig.hop} retrieved nothing")
            elif sig.irrelevant:
                add(
                    sig.hop,
                    STRENGTH_EMPTY if sig.relevance < OFF_TOPIC_BELOW else STRENGTH_IRRELEVANT,
                    "evidence",
                    f"hop {sig.hop}'s best document covers {sig.relevance:.0%} of its sub-query",
                )
            elif sig.extracted_nothing:
                add(
                    sig.hop,
                    STRENGTH_NOTHING_READ,
                    "evidence",
                    f"hop {sig.hop} extracted nothing from its evidence",
                )
        ranked = sorted(found.values(), key=lambda s: (-s.strength, s.hop))
        evidence: dict[str, Any] = {
            "wrong_terms": sorted(wrong),
            "trace": trace.model_dump() if trace is not None else None,
            "signals": [s.model_dump() for s in signals.values()],
        }
        return ranked, evidence

    @staticmethod
    def probe_mode(suspect: Suspect, last_hop: int) -> ProbeMode:
        if suspect.path == "answer_fact":
            return "frozen"
        if suspect.path == "bridge":
            return "regenerate"
        return "frozen" if suspect.hop == last_hop else "regenerate"

    # -- stage 3: probes --------------------------------------------------------------------------
    def _probe(
        self,
        runner: ProbeRunner,
        recorded: ProbeRunner,
        ranked: list[Suspect],
        views: list[HopView],
        question: str,
        last_hop: int,
        details: dict[str, Any],
    ) -> tuple[Suspect | None, set[int]]:
        """Probe suspects in rank order; on a failed probe, escalate (see the module docstring)."""
        links = bridge_links(views, question)
        queue: list[Suspect] = list(ranked)
        if not queue and views:
            queue = [Suspect(hop=last_hop, strength=0.0, path="answer_fact", reasons=["no passive signal"])]
        ruled_out: set[int] = set()
        spent = 0
        while queue and spent < self.max_probes:
            suspect = queue.pop(0)
            if suspect.hop in ruled_out:
                continue
            modes: list[ProbeMode] = [self.probe_mode(suspect, last_hop)]
            if modes[0] == "frozen":
                modes.append("regenerate")  # a frozen suffix may hold back what the repair needs
            restored: bool | None = None
            last: ProbeRecord | None = None
            for mode in modes:
                if spent >= self.max_probes:
                    break
                try:
                    last = (recorded if suspect.audited else runner).probe(suspect.hop, mode)
                except ProbeBudgetExhausted as exc:
                    details["budget_exhausted"] = str(exc)
                    return None, ruled_out
                if last.uninformative:
                    break  # no fork was run: the other mode would re-read the same evidence too
                spent += 1
                restored = last.restored
                if restored or restored is None:
                    break
            if restored and last is not None:
                return self._entity_source(suspect, last, links, views, runner, ruled_out, details), ruled_out
            uninformative = last is not None and last.uninformative
            if restored is False or uninformative:
                if restored is False:
                    ruled_out.add(suspect.hop)  # an uninformative probe clears nothing
                source = links[suspect.hop].source if suspect.hop in links else None
                if source is not None and source not in ruled_out:
                    queue = [s for s in queue if s.hop != source]
                    queue.insert(
                        0,
                        Suspect(
                            hop=source,
                            strength=max(0.0, suspect.strength - 0.25),
                            path="bridge",
                            reasons=[
                                f"repairing hop {suspect.hop} did not restore the answer, and hop "
                                f"{suspect.hop} searched for an entity hop {source} produced"
                            ],
                        ),
                    )
        return None, ruled_out

    def _probe_readings(
        self,
        runner: ProbeRunner,
        views: list[HopView],
        last_hop: int,
        ruled_out: set[int],
        details: dict[str, Any],
        only: set[int] | None = None,
    ) -> Suspect | None:
        """When no evidence repair confirmed a suspect: repair the readings instead, earliest hop
        first, among the hops whose extracted fact is not their gold hop answer (among ``only``,
        when given).

        A corpus that itself states the wrong fact defeats every re-retrieval (the clean query
        finds the same passage again), but the hop where the wrong fact entered is still the
        earliest one whose reading, set right, restores the answer; every hop before it already
        read its gold answer. Needs the gold decomposition (the probe sets ``uses_gold``)."""
        question = runner.context.question
        if question is None or not question.hops or runner.context.adapter is None:
            return None
        wrong = _misread_hops(views, question, runner.trajectory, last_hop)
        if only is not None:
            wrong = [v for v in wrong if v.index in only]
        cured: tuple[int, str] | None = None
        for view in wrong[: self.max_reading_probes]:
            mode: ProbeMode = "frozen" if view.index == last_hop else "regenerate"
            try:
                record = runner.probe_reading(view.index, mode)
            except ProbeBudgetExhausted as exc:
                details["budget_exhausted"] = str(exc)
                return None
            if record.restored:
                reasons = [
                    f"no re-retrieval restored the answer; hop {view.index} read {view.fact.strip()!r}"
                    f" where its gold answer is {record.fact!r}, and setting it right ({mode} suffix) "
                    "restored a correct answer"
                ]
                hop = view.index
                if cured is not None:
                    # an earlier repair set the chain right past its hop; the later error that
                    # kept that fork wrong arose in the fork itself, so the earlier hop is the root
                    hop, what = cured
                    reasons.insert(
                        0,
                        f"setting hop {hop}'s reading right made {what}; the fork then failed on a "
                        "later error of its own",
                    )
                earlier = [v.index for v in views if v.index < hop]
                if earlier:
                    reasons.append(f"hops {earlier} read their gold answers")
                ruled_out.update(v.index for v in views if v.index != hop)
                ruled_out.discard(hop)
                details["reading_confirmed"] = hop
                return Suspect(
                    hop=hop,
                    strength=STRENGTH_ERROR,
                    path="bridge" if hop != last_hop else "reading",
                    reasons=reasons,
                )
            if cured is None and record.restored is False and record.fork_run_id in runner.forks:
                fork = runner.forks[record.fork_run_id]
                fixed = _cured_downstream(views, fork, question, view)
                searched = _searched_right_downstream(views, fork, question, view)
                if fixed:
                    cured = (view.index, f"the gold hops {fixed} read right too")
                elif searched:
                    # the run's later hop searched for the wrong entity, so its own reading repair
                    # restores the answer only by bypassing the entity this hop produced
                    cured = (view.index, f"the gold hops {searched} search for their right entity")
        return None

    @staticmethod
    def _first_misread(
        runner: ProbeRunner, views: list[HopView], last_hop: int, passive: Suspect | None
    ) -> Suspect | None:
        """When no probe confirmed a suspect and the gold decomposition is known: the earliest hop
        the chain used whose reading is not its gold answer, where the run first left the gold path
        (every hop before it read right, so none of them can have sent it astray). A failed step or
        evidence the audit found foreign is a stronger sign than that and keeps the passive choice.

        With a small model the probes often cannot confirm even the right hop: handed its gold
        fact, the answer step still restates the question's subject, so every repair stays wrong;
        the passive suspect then rests on where the answer's words entered the run, and an answer
        in a sentence carries the bridge entity's words back to the hop that found it."""
        question = runner.context.question
        if question is None or not question.hops:
            return None
        if passive is not None and passive.strength >= STRENGTH_AUDIT:
            return None
        wrong = _misread_hops(views, question, runner.trajectory, last_hop)
        if not wrong:
            return None
        view = wrong[0]
        if passive is not None and passive.hop == view.index:
            return passive
        gold = gold_reading(view, question)
        reasons = [
            f"no probe confirmed a suspect; hop {view.index} is the earliest hop the chain used whose "
            f"reading {view.fact.strip()[:80]!r} is not its gold answer"
            + (f" {gold.answer!r}" if gold is not None else "")
        ]
        return Suspect(
            hop=view.index,
            strength=passive.strength if passive is not None else STRENGTH_ALTERNATIVE,
            path="bridge" if view.index != last_hop else "reading",
            reasons=reasons,
        )

    @staticmethod
    def _read_every_gold_hop(runner: ProbeRunner, views: list[HopView], passive: Suspect | None) -> bool:
        """When no probe confirmed a suspect and the gold decomposition is known: whether the run's
        readings state every gold hop's answer, so that no hop sent it astray and the answer step
        is the first that went wrong. A failed step or evidence the audit found foreign is a
        stronger sign than that and keeps the passive choice."""
        question = runner.context.question
        if question is None or not question.hops:
            return False
        if passive is not None and passive.strength >= STRENGTH_AUDIT:
            return False
        read = {g.index for v in views if (g := gold_reading(v, question)) is not None and reads_gold(v, g)}
        return read >= {h.index for h in question.hops}

    @staticmethod
    def _entity_source(
        confirmed: Suspect,
        record: ProbeRecord,
        links: dict[int, BridgeLink],
        views: list[HopView],
        runner: ProbeRunner,
        ruled_out: set[int],
        details: dict[str, Any],
    ) -> Suspect:
        """The hop to blame once repairing ``confirmed`` restored the answer: that hop, unless its
        repair had to replace the entity it searched for (its recorded query names neither its gold
        subject nor an alias of it). Then the hop that produced the entity was wrong (its own
        repair, when tried, was uninformative and cleared nothing), and the blame moves to it, on
        up the chain while the same holds."""
        question = runner.context.question
        if record.sub_query_source != "gold" or question is None:
            return confirmed
        by_index = {v.index: v for v in views}
        hop, repaired = confirmed.hop, terms(record.sub_query)
        moved: list[int] = []
        while True:
            link = links.get(hop)
            if link is None or link.source is None or not link.terms:
                break
            source = link.source
            if source in ruled_out or source not in by_index:
                break
            if set(link.terms) <= repaired:
                break  # the repair kept the entity: the hop that produced it was right
            gold = gold_reading(by_index[hop], question)
            if (
                gold is not None
                and gold.index >= 2
                and not _searched_a_wrong_entity(by_index[hop], gold, question)
            ):
                # the hop's own query already named its gold subject, amid more words than the
                # repair's (a reader that answers in sentences hands the next hop a whole sentence):
                # the repair dropped words, not a wrong entity, so the hop that produced it was right
                break
            moved.append(source)
            hop = source
            try:
                repaired = terms(clean_subquery(by_index[hop], question)[0])
            except RepairUnavailable:
                break
        if not moved:
            return confirmed
        details["upstream_of"] = confirmed.hop
        return Suspect(
            hop=hop,
            strength=confirmed.strength,
            path="bridge",
            reasons=[
                *confirmed.reasons,
                f"repairing hop {confirmed.hop} restored the answer only by replacing the entity it "
                f"searched for, which hop {moved[0]} produced"
                + (f" from hop {hop}'s" if len(moved) > 1 else "")
                + "; that hop's evidence could not be repaired by re-retrieval",
            ],
        )

    # -- the diagnosis ---------------------------------------------------------------------------
    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        views = hop_views(trajectory)
        question = question_text(trajectory)
        cost = DiagnosisCost()
        audit: EvidenceAudit | None = None
        if self.audit and context.index is not None and views:
            audit = audit_evidence(views, context.index, default_k=repair_k(views, context))
            cost.retrievals += audit.searches
        ranked, evidence = self.suspects(views, question, trajectory.answer, audit)
        details: dict[str, Any] = {
            **evidence,
            "audit": audit.model_dump() if audit is not None else None,
            "suspects": [s.model_dump() for s in ranked],
        }
        if (
            context.adapter is None
            and context.backend is not None
            and self.max_probes > 0
            and context.can_judge()
        ):
            return self._probe_steps(trajectory, context, ranked, details, cost)
        can_probe = (
            self.max_probes > 0
            and context.backend is not None
            and context.adapter is not None
            and context.index is not None
            and context.can_judge()
        )
        details["probed"] = can_probe
        probe_context = context
        k = trusted_k(views, audit) if context.repair_k is None else None
        if k is not None:
            probe_context = context.model_copy(update={"repair_k": k})
            details["repair_k"] = k
        runner = (
            ProbeRunner(trajectory, probe_context, cost, views, skip_uninformative=True)
            if can_probe
            else None
        )
        last_hop = views[-1].index if views else 0
        confirmed: Suspect | None = None
        ruled_out: set[int] = set()
        if runner is not None:
            recorded = ProbeRunner(
                trajectory,
                recorded_query_context(probe_context),
                cost,
                views,
                skip_uninformative=True,
            )
            recorded.records = runner.records  # one probe log, in the order the probes ran
            confirmed, ruled_out = self._probe(runner, recorded, ranked, views, question, last_hop, details)
            if confirmed is None and "budget_exhausted" not in details:
                confirmed = self._probe_readings(runner, views, last_hop, ruled_out, details)
            elif confirmed is not None and "budget_exhausted" not in details:
                # a later repair that restores the answer does not clear an earlier hop whose
                # evidence no probe could change (its re-retrieval found the same passages): the
                # wrong fact may have entered there and a later hop's gold evidence only overrode it
                untested = {
                    r.hop
                    for r in runner.records
                    if r.uninformative and r.target == "evidence" and r.hop < confirmed.hop
                }
                if untested - ruled_out:
                    earlier = self._probe_readings(
                        runner, views, last_hop, ruled_out, details, only=untested - ruled_out
                    )
                    if earlier is not None:
                        details["overrides_evidence_repair_at"] = confirmed.hop
                        confirmed = earlier
        scores = {f"hop:{v.index}": 0.0 for v in views}
        for s in ranked:
            scores[f"hop:{s.hop}"] = round(min(1.0, s.strength / STRENGTH_ERROR), 4)
        probes = runner.records if runner is not None else []
        used_gold = runner.used_gold if runner is not None else False
        if confirmed is not None:
            scores[f"hop:{confirmed.hop}"] = 1.0
        chosen = confirmed or (ranked[0] if ranked else None)
        if confirmed is None and runner is not None:
            misread = self._first_misread(runner, views, last_hop, chosen)
            if misread is not None:
                chosen, used_gold = misread, True
                details["first_misread"] = misread.hop
            elif self._read_every_gold_hop(runner, views, chosen):
                chosen, used_gold = None, True
                details["every_gold_hop_read"] = True
        if chosen is None:
            why = "no hop shows a fault signal"
            if details.get("every_gold_hop_read"):
                why = "no probe confirmed a suspect and every gold hop was read right"
            if probes:
                why += f"; repairing the last hop ({probes[0].mode}) did not restore the answer"
            return Diagnosis(
                method=self.name,
                stage="answer",
                root_cause=why + ": the answer generation is the likeliest root cause",
                step_scores=scores,
                uncertain=True,
                candidates=[],
                uses_gold=used_gold,
                cost=cost,
                probes=probes,
                details=details,
            )
        rivals = [
            s.hop
            for s in ranked
            if s.hop != chosen.hop and s.hop not in ruled_out and s.strength >= chosen.strength
        ]
        uncertain = bool(rivals) or (confirmed is None)
        if confirmed is None and not probes and chosen.strength >= STRENGTH_PROVENANCE and not rivals:
            uncertain = False  # a strong, unrivalled passive signal stands without a probe
        # When no probe restored anything the probes could not tell the suspects apart: keep them all.
        excluded = ruled_out if confirmed is not None else set()
        candidates = [chosen.hop] + [s.hop for s in ranked if s.hop != chosen.hop and s.hop not in excluded]
        view = next(v for v in views if v.index == chosen.hop)
        sev, propagation = impact(views, question, chosen.hop)
        why = "; ".join(chosen.reasons)
        if confirmed is not None and "reading_confirmed" not in details:
            restored_hop = details.get("upstream_of", chosen.hop)
            record = next(r for r in probes if r.hop == restored_hop and r.restored)
            why += f"; repairing hop {restored_hop} ({record.mode} suffix) restored a correct answer"
        elif probes:
            why += "; no probe confirmed it"
        return Diagnosis(
            method=self.name,
            stage=view.kind,
            hop=chosen.hop,
            propagation=propagation or chosen.path == "bridge",
            severity=sev,
            root_cause=why,
            step_scores=scores,
            uncertain=uncertain,
            candidates=candidates if uncertain else [chosen.hop],
            uses_gold=used_gold,
            cost=cost,
            probes=probes,
            details={**details, "path": chosen.path, "confirmed": confirmed is not None},
        )

    def _probe_steps(
        self,
        trajectory: Trajectory,
        context: DiagnosisContext,
        ranked: list[Suspect],
        details: dict[str, Any],
        cost: DiagnosisCost,
    ) -> Diagnosis:
        """Without an agent adapter: probe the suspects' steps first with the generic intervention
        space (:mod:`~causal_middleware.attribution.step_probe`), then every other step in causal
        order; the first group with a step whose change restores the answer is the diagnosis."""
        from causal_middleware.attribution.step_probe import (
            confirm_answer_step,
            crs_diagnosis,
            generic_proposer,
        )

        steps = candidate_steps(trajectory)
        groups: list[list[str]] = []
        for suspect in ranked:
            ids = [s.step_id for s in steps if s.hop == suspect.hop]
            if ids and ids not in groups:
                groups.append(ids)
        rest = [s.step_id for s in steps if not any(s.step_id in g for g in groups)]
        if rest:
            groups.append(rest)
        proposer = generic_proposer(context)
        verify = context.verifier_callable()
        spent = 0
        last: Diagnosis | None = None
        for group in groups:
            cap = None if context.max_reexecutions is None else max(0, context.max_reexecutions - spent)
            if cap == 0:
                break
            result = compute_crs(
                trajectory,
                context.backend,  # type: ignore[arg-type]
                proposer,
                CallableVerifier(verify, on="trajectory"),
                k=DEFAULT_STEP_K,
                candidates=group,
                max_reexecutions=cap,
            )
            spent += result.cost.reexecutions
            diagnosis = crs_diagnosis(self.name, trajectory, result)
            cost.add(diagnosis.cost)
            if last is not None:
                diagnosis.details["probes"] = last.details.get("probes", []) + diagnosis.details["probes"]
            last = diagnosis
            if result.flagged:
                upstream = self._upstream(trajectory, steps, result.flagged[0].step_id, groups, group)
                if upstream:
                    cap = (
                        None if context.max_reexecutions is None else max(0, context.max_reexecutions - spent)
                    )
                    earlier = compute_crs(
                        trajectory,
                        context.backend,  # type: ignore[arg-type]
                        proposer,
                        CallableVerifier(verify, on="trajectory"),
                        k=DEFAULT_STEP_K,
                        candidates=upstream,
                        max_reexecutions=cap,
                    )
                    spent += earlier.cost.reexecutions
                    if earlier.flagged:
                        before = last.details["probes"]
                        last = crs_diagnosis(self.name, trajectory, earlier)
                        cost.add(last.cost)
                        last.details["probes"] = before + last.details["probes"]
                        last.details["upstream_of"] = result.flagged[0].step_id
                    else:
                        cost.add(crs_diagnosis(self.name, trajectory, earlier).cost)
                break
        assert last is not None or not groups
        if last is None:
            return Diagnosis(
                method=self.name, stage="answer", root_cause="the run has no step to probe", cost=cost
            )
        last.cost = cost
        last.details = {**details, **last.details, "probed": True, "generic": True}
        if last.node is None and not last.uncertain:
            last = confirm_answer_step(self.name, trajectory, context, last, k=DEFAULT_STEP_K)
        return last

    @staticmethod
    def _upstream(
        trajectory: Trajectory, steps: list[Any], flipped: str, groups: list[list[str]], current: list[str]
    ) -> list[str]:
        """Steps before the flipping one not probed yet: a change there may restore the answer too,
        and the earliest such step is the root cause (the suspect hop only propagated it)."""
        ids = [s.step_id for s in steps]
        probed = {i for g in groups[: groups.index(current) + 1] for i in g}
        before = ids[: ids.index(flipped)] if flipped in ids else []
        return [i for i in before if i not in probed]
