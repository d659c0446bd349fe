"""Proposers: K alternative outputs for one step of a failed run.

* :class:`OfflineProposer` - deterministic, no model: draws alternatives from the environment
  through an :class:`~causal_middleware.replay.adapter.AgentAdapter` (which knows which node
  issues the sub-query, retrieves the evidence and extracts the fact) and an optional
  :class:`~causal_middleware.retrieval.base.Index` (re-retrieval, restoring altered passages).
* :class:`LLMProposer` - a chat model given the trace context, the failed step and the failure
  feedback writes alternative outputs as JSON, sampled with temperature.

Both return a :class:`~causal_middleware.protocols.ProposalBatch`; the CRS core deduplicates,
ranks by minimality and forks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from causal_middleware.counterfactual.llm import (
    call_model,
    input_text,
    json_list_prefix,
    parse_json,
    render_trace,
)
from causal_middleware.counterfactual.render import canonical_json, render_output, shorten, to_jsonable
from causal_middleware.interventions.describe import change_target
from causal_middleware.interventions.locate import state_update
from causal_middleware.interventions.values import (
    alias_map,
    entities,
    fact_candidates,
    interleave,
    stated_values,
)
from causal_middleware.interventions.values import similarity as _similarity
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import describe_error, with_temperature
from causal_middleware.protocols import Proposal, ProposalBatch, RepairCost
from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.retrieval.base import Index, hit_document
from causal_middleware.spans.model import Document, Intervention, NodeStep, Trajectory
from causal_middleware.text import WORD, content_words


@runtime_checkable
class Proposer(Protocol):
    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        """Up to ``k`` alternative outputs for ``step`` of the failed ``trajectory``."""
        ...


# --- offline ----------------------------------------------------------------------------------

ROLES = ("subquery", "evidence", "fact")


class OfflineProposer:
    """Deterministic proposals drawn from the environment, no model calls.

    For a candidate step at hop ``h`` the proposer asks the adapter which role the step's node
    plays there (issuing the sub-query, retrieving the evidence, extracting the fact) and proposes,
    in this order of preference:

    * **sub-query**: the recorded sub-query expanded with, then with a name swapped for, an alias
      the run's evidence or notes give ("X, also known as Y"); the sub-query with which a later hop of the run found a
      fact for the same relation (a reformulation that worked, asked earlier); a name that is not
      the question's own swapped for a similar name seen in the run (near-namesakes first); the
      sub-query stripped of words found nowhere in the question or evidence (drift re-anchored);
    * **evidence**: each passage restored to the index's current text when it differs; each
      passage the index would not return for the hop's sub-query (planted or off-topic evidence)
      replaced in place by the best re-retrieved hit not already there, then dropped (when every
      passage is off-topic: the first one replaced by each of the three best new hits); the
      lowest-ranked passage replaced by the passage from which a later hop read its fact for the
      same relation; the lowest-ranked passage replaced by the next re-retrieved hit for the hop's
      sub-query; a fresh top-k re-retrieval (re-retrieval needs ``index``);
    * **fact**: other candidate facts present in the hop's evidence (:func:`fact_candidates`):
      a value the recorded fact states amid other words first (a reader that copied the whole
      sentence; the next hop's search gets the value alone), then a near-namesake of the recorded
      fact, then names and numbers of the sentences that share the most words with the sub-query.

    Proposals equal to the recorded output are dropped; the first ``k`` distinct ones are returned.
    """

    def __init__(self, adapter: AgentAdapter, index: Index | None = None, *, top_k: int = 5) -> None:
        if not isinstance(adapter, AgentAdapter):
            raise TypeError(f"OfflineProposer needs an AgentAdapter, got {type(adapter).__name__}")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.adapter = adapter
        self.index = index
        self.top_k = top_k

    # -- roles ---------------------------------------------------------------------------------
    def roles(self, trajectory: Trajectory, step: NodeStep) -> dict[str, Intervention]:
        """The roles ``step`` plays, each with the adapter's identity intervention for it."""
        if step.hop is None:
            return {}
        try:
            hop = trajectory.hop(step.hop)
        except KeyError:
            return {}
        probes: dict[str, Callable[[], Intervention]] = {
            "subquery": lambda: self.adapter.subquery_update(trajectory, hop.index, hop.sub_query or ""),
            "evidence": lambda: self.adapter.evidence_update(trajectory, hop.index, list(hop.documents)),
            "fact": lambda: self.adapter.fact_update(trajectory, hop.index, recorded_fact(step) or ""),
        }
        found: dict[str, Intervention] = {}
        for role, probe in probes.items():
            try:
                intervention = probe()
            except (NotImplementedError, KeyError, ValueError, IndexError):
                continue
            if intervention.node != step.node:
                continue
            if intervention.langgraph_step is not None and step.langgraph_step is not None:
                if intervention.langgraph_step != step.langgraph_step:
                    continue
            found[role] = intervention
        return found

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        trajectory = with_recorded_documents(trajectory)
        roles = self.roles(trajectory, step)
        if not roles:
            return ProposalBatch(note=f"the adapter gives node {step.node!r} no sub-query/evidence/fact role")
        streams = [self._stream(role, trajectory, step) for role in ROLES if role in roles]
        original = canonical_json(step.output) if isinstance(step.output, dict) else None
        seen: set[str] = set()
        proposals: list[Proposal] = []
        for intervention, source, description in interleave(streams):
            key = canonical_json(intervention.values)
            if key in seen or key == original:
                continue
            seen.add(key)
            proposals.append(
                Proposal(
                    step_id=step.step_id,
                    node=step.node or intervention.node or "",
                    hop=step.hop,
                    langgraph_step=step.langgraph_step,
                    values=to_jsonable(intervention.values),
                    source=source,
                    description=description,
                )
            )
            if len(proposals) >= k:
                break
        baseline = step.output if isinstance(step.output, dict) else None
        return ProposalBatch(proposals=proposals, baseline=to_jsonable(baseline) if baseline else None)

    def _stream(
        self, role: str, trajectory: Trajectory, step: NodeStep
    ) -> Iterator[tuple[Intervention, str, str]]:
        hop = trajectory.hop(step.hop or 0)
        if role == "subquery":
            for query, why in self._subqueries(trajectory, hop.index):
                yield self.adapter.subquery_update(trajectory, hop.index, query), "offline:subquery", why
        elif role == "evidence":
            for docs, why in self._evidence(trajectory, hop.index):
                yield self.adapter.evidence_update(trajectory, hop.index, docs), "offline:evidence", why
        elif role == "fact":
            for fact, why in self._facts(trajectory, step):
                yield self.adapter.fact_update(trajectory, hop.index, fact), "offline:fact", why

    # -- strategies ------------------------------------------------------------------------------
    def _subqueries(self, trajectory: Trajectory, hop_index: int) -> Iterator[tuple[str, str]]:
        query = trajectory.hop(hop_index).sub_query or ""
        names = entities(query)
        aliases = alias_map(run_texts(trajectory))
        for name in names:
            for alias in aliases.get(name, []):
                if alias not in query:
                    # expansion keeps every recorded token in place; the swap reads more naturally
                    yield f"{query} {alias}", f"sub-query expanded with {name!r}'s alias {alias!r}"
                    yield query.replace(name, alias), f"sub-query names {name!r} by its alias {alias!r}"
        for later in later_findings(trajectory, hop_index):
            yield (
                later.sub_query,
                f"the sub-query with which hop {later.hop} found {later.fact!r}, asked at hop {hop_index}",
            )
        pool = [e for text in run_texts(trajectory) for e in entities(text)]
        pool = list(dict.fromkeys(pool))
        question = input_text(trajectory.input or "")
        for name in names:
            if name in question:  # the question's own entity is right by definition; only aliases apply
                continue
            ranked = sorted(
                (c for c in pool if c != name and c not in query and _similarity(c, name) >= 0.5),
                key=lambda c: (-_similarity(c, name), pool.index(c)),
            )
            for other in ranked:
                yield query.replace(name, other), f"sub-query names {other!r} instead of {name!r}"
        known = content_words(
            input_text(trajectory.input or "")
            + " "
            + " ".join(d.text for h in trajectory.hops for d in h.documents)
        )
        kept = [w for w in query.split() if content_words(w) & known or not content_words(w)]
        if kept and len(kept) < len(query.split()):
            yield " ".join(kept), "sub-query re-anchored on words of the question and the evidence"

    def _evidence(self, trajectory: Trajectory, hop_index: int) -> Iterator[tuple[list[Document], str]]:
        hop = trajectory.hop(hop_index)
        recorded = recorded_documents(trajectory)
        docs = [enrich(d, recorded) for d in hop.documents]
        # each passage as the index holds it now (None: not in the index); one search per passage
        looked_up: list[Document | None] = (
            [self._lookup(doc) for doc in docs] if self.index is not None else [None] * len(docs)
        )
        for i, (doc, fresh) in enumerate(zip(docs, looked_up, strict=True)):
            if fresh is not None and fresh.text != doc.text:
                restored = docs[:i] + [fresh] + docs[i + 1 :]
                yield restored, f"passage {doc.id!r} restored to the index's text"
        present = {d.id for d in docs}
        query = hop.sub_query or input_text(trajectory.input or "")
        hits = [hit_document(h) for h in self.index.search(query, self.top_k * 2)] if self.index else []
        new = [d for d in hits if d.id not in present]
        suspects = self._suspects(docs, hits, looked_up) if new else []
        if suspects and len(suspects) == len(docs):
            # nothing on topic: which hit carries the fact is unknown, so vary the hit, not the slot
            i, why = suspects[0]
            for doc in new[:3]:
                yield (
                    docs[:i] + [doc] + docs[i + 1 :],
                    f"passage {docs[i].id!r} ({why}) replaced by re-retrieved {doc.id!r}",
                )
        else:
            for i, why in suspects:
                yield (
                    docs[:i] + [new[0]] + docs[i + 1 :],
                    f"passage {docs[i].id!r} ({why}) replaced by re-retrieved {new[0].id!r}",
                )
                yield docs[:i] + docs[i + 1 :], f"passage {docs[i].id!r} ({why}) dropped"
        for later in later_findings(trajectory, hop_index):
            for doc in later.documents:
                if doc.id not in present and later.fact.lower() in doc.text.lower():
                    doc = enrich(doc, recorded)
                    swapped = docs[:-1] + [doc] if docs else [doc]
                    yield (
                        swapped,
                        f"passage {doc.id!r}, which gave hop {later.hop} its fact {later.fact!r}, retrieved here",
                    )
                    break
        if self.index is None:
            return
        if docs:
            for doc in new:
                yield docs[:-1] + [doc], f"passage {docs[-1].id!r} replaced by re-retrieved {doc.id!r}"
        fresh_top = hits[: max(len(docs), self.top_k) if docs else self.top_k]
        if fresh_top and [d.id for d in fresh_top] != [d.id for d in docs]:
            yield fresh_top, f"evidence re-retrieved for {shorten(query, 80)!r}"

    @staticmethod
    def _suspects(
        docs: list[Document], hits: list[Document], looked_up: list[Document | None]
    ) -> list[tuple[int, str]]:
        """Passages of the hop the index would not have returned for its sub-query (among the top
        ``2 x top_k`` hits), in rank order, with why: planted or off-topic evidence. Replacing one
        of them in place changes only its own fields, and names the passage that misled the agent.
        ``looked_up``: each passage as the index holds it (None when it is not in the index)."""
        returned = {d.id for d in hits}
        suspects: list[tuple[int, str]] = []
        for i, doc in enumerate(docs):
            if doc.id in returned:
                continue
            why = "not returned by the index for this sub-query" if looked_up[i] else "not in the index"
            suspects.append((i, why))
        return suspects

    def _lookup(self, doc: Document) -> Document | None:
        assert self.index is not None
        query = f"{doc.metadata.get('title', '')} {doc.text}".strip()
        for hit in self.index.search(query, self.top_k):
            if hit.passage.id == doc.id:
                return hit_document(hit, score=doc.score)
        return None

    def _facts(self, trajectory: Trajectory, step: NodeStep) -> Iterator[tuple[str, str]]:
        hop = trajectory.hop(step.hop or 0)
        current = recorded_fact(step) or ""
        for later in later_findings(trajectory, hop.index):
            if later.fact != current:
                yield later.fact, f"fact {later.fact!r}, which hop {later.hop} found for a similar sub-query"
        stated = stated_values(current)
        for name in fact_candidates(hop.documents, hop.sub_query or "", current):
            if name in stated:
                yield name, f"fact {name!r}, the value the recorded fact {current!r} states, without the rest"
            else:
                yield name, f"fact {name!r} read from the evidence instead of {current or 'nothing'!r}"


class LaterFinding(BaseModel):
    """A later hop of the run that asked a related sub-query and found a fact."""

    hop: int
    sub_query: str
    fact: str
    documents: list[Document]


def later_findings(trajectory: Trajectory, hop_index: int) -> list[LaterFinding]:
    """Later hops whose sub-query shares a non-name word with hop ``hop_index``'s (the same question,
    reformulated, e.g. through an alias) and whose node outputs recorded a ``fact``: the run's own
    evidence of what would have worked earlier. Nearest hop first."""
    query = trajectory.hop(hop_index).sub_query or ""
    relation = _relation_words(query)
    facts = {h.index: _hop_fact(trajectory, h.index) for h in trajectory.hops}
    found: list[LaterFinding] = []
    for hop in trajectory.hops:
        if hop.index <= hop_index or not hop.sub_query or hop.sub_query == query:
            continue
        # a later sub-query that has an earlier hop's whole reading filled in (a reader that copied
        # a sentence, handed on as the bridge) shares that reading's words, not the question's
        embedded = {
            w
            for i, f in facts.items()
            if hop_index <= i < hop.index
            and f
            and (line := _first_line(f))
            and _contains_phrase(hop.sub_query, line)
            for w in content_words(line)
        }
        if not relation & (_relation_words(hop.sub_query) - embedded):
            continue
        fact = facts.get(hop.index)
        if fact and fact.strip().upper() not in ("NONE", "NOT FOUND", "UNKNOWN"):
            found.append(
                LaterFinding(hop=hop.index, sub_query=hop.sub_query, fact=fact, documents=list(hop.documents))
            )
    return found


def _hop_fact(trajectory: Trajectory, hop_index: int) -> str | None:
    """The first ``fact`` a node step of the hop recorded."""
    return next(
        (
            f
            for s in trajectory.steps
            if isinstance(s, NodeStep)
            and s.hop == hop_index
            and isinstance(f := _find_key(s.output, "fact"), str)
        ),
        None,
    )


def _contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def _first_line(text: str) -> str:
    """The first non-empty line, without a closing full stop."""
    return next((line.strip().rstrip(".").strip() for line in text.splitlines() if line.strip()), "")


def _relation_words(query: str) -> set[str]:
    names = {w.lower() for n in entities(query) for w in WORD.findall(n)}
    return content_words(query) - names


def run_texts(trajectory: Trajectory) -> list[str]:
    """Every text of the run: the question, the evidence, and the string leaves of node outputs
    (notes an agent wrote, facts it read)."""
    texts = [input_text(trajectory.input or "")]
    texts.extend(d.text for h in trajectory.hops for d in h.documents)
    for step in trajectory.steps:
        if isinstance(step, NodeStep) and step.output is not None:
            texts.extend(t for t in render_output(step.output).splitlines() if len(t) < 300)
    return texts


def recorded_fact(step: NodeStep) -> str | None:
    """The fact a node step recorded: its output when a string; else the string under a ``fact``
    key anywhere in its output (the first one); else the single string value of its output dict."""
    output = step.output
    if isinstance(output, str):
        return output
    found = _find_key(output, "fact")
    if isinstance(found, str):
        return found
    if isinstance(output, dict):
        strings = [v for v in output.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return None


def _find_key(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in value:
            return value[key]
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = _find_key(item, key)
        if found is not None:
            return found
    return None


def recorded_documents(trajectory: Trajectory) -> dict[str, dict[str, Any]]:
    """Document-shaped dicts (an ``id`` and a ``text``/``page_content``) found in the run's node
    outputs, by id: what the agent's state really held, fields a span may not carry included."""
    found: dict[str, dict[str, Any]] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("id"), str) and isinstance(
                value.get("text", value.get("page_content")), str
            ):
                found.setdefault(value["id"], value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for step in trajectory.steps:
        if isinstance(step, NodeStep):
            walk(step.output)
    return found


def with_recorded_documents(trajectory: Trajectory) -> Trajectory:
    """A copy of ``trajectory`` whose hop documents carry the fields the agent's state held
    (:func:`enrich`); unchanged when nothing is missing."""
    recorded = recorded_documents(trajectory)
    hops = [
        h.model_copy(update={"documents": [enrich(d, recorded) for d in h.documents]})
        for h in trajectory.hops
    ]
    if all(a.documents == b.documents for a, b in zip(hops, trajectory.hops, strict=True)):
        return trajectory
    return trajectory.model_copy(update={"hops": hops})


def enrich(doc: Document, recorded: dict[str, dict[str, Any]]) -> Document:
    """``doc`` with the scalar fields its recorded dict has (``title``, ``date``, ...) added to its
    metadata when missing, so an adapter rebuilding the agent's documents loses nothing."""
    extra = {
        k: v
        for k, v in recorded.get(doc.id, {}).items()
        if k not in ("id", "text", "page_content", "score", "metadata")
        and k not in doc.metadata
        and isinstance(v, str | int | float | bool)
    }
    return doc.model_copy(update={"metadata": {**doc.metadata, **extra}}) if extra else doc


# --- LLM ----------------------------------------------------------------------------------------

_PROPOSER_SYSTEM = (
    "You repair failed runs of an AI agent. One step of the run may have produced a wrong output. "
    "Propose alternative outputs for that step that would let the agent succeed, changing as "
    "little as possible. Reply with JSON only, no prose: a list of objects, one per alternative. "
    "Each object holds the keys of the step's original output that you change, with their new "
    "values; keys you leave out keep their original values. Use no other keys."
)


def _proposer_prompt(
    trajectory: Trajectory, step: NodeStep, original: dict[str, Any], k: int, feedback: str, limit: int
) -> tuple[str, str]:
    """``(user, system)`` of a proposer call: the trace, the step's output, the answer and the
    feedback are fenced data (:class:`~causal_middleware.prompts.Fence`)."""
    fence = Fence()
    trace = render_trace(trajectory, upto=step.step_id, limit=limit, fence=fence)
    case = fence.block(
        "step",
        f"Step: node {fence.inline(step.node, 80)}, hop {step.hop}, langgraph step {step.langgraph_step}\n"
        f"Its output: {fence.as_json(original)}\n"
        f"Run's final answer: {fence.inline(trajectory.answer, 600)}\n"
        f"Failure feedback: {fence.inline(feedback or 'the run failed', 600)}",
    )
    user = (
        f"Trace before the step:\n{trace}\n\n{case}\n\n"
        f"Give {k} different alternative outputs for this step, as the JSON list."
    )
    return user, fence.system(_PROPOSER_SYSTEM)


def _proposal_shaped(value: Any) -> bool:
    """A reply value that can hold proposals: an object, or a list (empty, or holding an object)."""
    if isinstance(value, dict):
        return bool(value)
    return isinstance(value, list) and (not value or any(isinstance(item, dict) for item in value))


class LLMProposer:
    """A chat model proposes ``k`` alternative outputs for a step (one call, sampled at
    ``temperature``), given the trace up to the step, the step's output and the failure feedback.

    The model may write whole outputs or only the keys it changes (the rest keep their recorded
    values). Replies are parsed robustly: prose around the JSON is skipped, and a reply cut off at
    the model's output-token limit keeps its complete items. Items that are not objects, or that
    have keys the original output lacks, are dropped. What went wrong (a reply with no JSON, dropped
    items, a cut-off reply, a model call that raised, e.g. an API error that outlived the client's
    retries) is said in ``ProposalBatch.note``; a failed call gives no proposals, never an exception.
    ``temperature`` is checked against the model's own field (``ValueError`` when out of range).
    """

    def __init__(self, model: BaseChatModel, *, temperature: float = 0.7, trace_limit: int = 400) -> None:
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"LLMProposer needs a LangChain chat model, got {type(model).__name__}")
        self.model = with_temperature(model, temperature)
        self.temperature = temperature
        self.trace_limit = trace_limit

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        cost = RepairCost()
        original = to_jsonable(state_update(step.output))
        if not isinstance(original, dict):
            original = {"output": original}
        user, system = _proposer_prompt(trajectory, step, original, k, feedback, self.trace_limit)
        try:
            reply = call_model(self.model, system, user, cost)
        except Exception as exc:  # an outage or a malformed response costs the proposals, not the repair
            return ProposalBatch(
                baseline=original, cost=cost, note=f"model call failed: {describe_error(exc)}"
            )
        notes: list[str] = []
        items: list[Any] = []
        if reply.truncated:
            notes.append("reply cut off at the model's output-token limit (raise its max_tokens)")
            items = json_list_prefix(reply.text, accept=lambda item: isinstance(item, dict))
        if not items:
            try:
                data = parse_json(reply.text, accept=_proposal_shaped)
            except ValueError as exc:
                return ProposalBatch(baseline=original, cost=cost, note="; ".join([str(exc), *notes]))
            items = data if isinstance(data, list) else [data]
        proposals: list[Proposal] = []
        dropped = 0
        for item in items:
            if not isinstance(item, dict) or not item or not set(item) <= set(original):
                dropped += 1
                continue
            values = to_jsonable({**original, **item})
            target, evidence = change_target(trajectory, step, original, values)
            proposals.append(
                Proposal(
                    step_id=step.step_id,
                    node=step.node or "",
                    hop=step.hop,
                    langgraph_step=step.langgraph_step,
                    values=values,
                    source="llm",
                    description=f"LLM proposal (temperature {self.temperature})"
                    + (f" for {target}" if target else "")
                    + (f" ({', '.join(evidence)})" if evidence else ""),
                    target=target,
                    evidence=evidence,
                )
            )
        if dropped:
            notes.insert(0, f"{dropped} malformed proposal(s) dropped")
        return ProposalBatch(
            proposals=proposals[:k], baseline=original, cost=cost, note="; ".join(notes) or None
        )
