"""Certified content corruption: change one fact span in otherwise relevant evidence.

The span is chosen by priority (AgenticRAG-FP item 2):

1. **answer fact**: the gold answer (or an alias) occurs in the hop's evidence;
2. **bridge entity**: an entity that occurs in the hop's evidence and in a later sub-query of the
   run but not in the question (the gold decomposition's bridge entities are tried first);
3. **salient entity or number**: a known entity name or a number in the evidence, in rank and
   text order, that the question does not mention.

Numbers get deterministic perturbations (years shift by 2-12, counts scale, keeping their
format); entities get an in-domain distractor (same entity type on the generated world, same
shape elsewhere) that shares no token with the original nor with the gold answer. A replacement
is *certified* when it differs from the original, is not another name of the same entity and
cannot be scored correct; a span with no certified replacement is passed over, and a hop with
none raises :class:`NotCertifiable` (the sweep skips and counts it). Every occurrence of the
span in the chosen passage (the best-ranked one holding it) is replaced; the other passages are
left as they were. Choices are drawn from ``random.Random(corruption_seed(seed, trace, hop))``.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from causal_middleware.faults.corpus import FaultCorpus, is_number
from causal_middleware.faults.model import CorruptionKind, CorruptionRecord
from causal_middleware.spans.model import Document, Trajectory
from causal_middleware.tasks.model import Passage, Question
from causal_middleware.tasks.scoring import contains_answer, is_correct, normalize_answer, token_set

_CAPITALISED_RUN = re.compile(r"[A-Z][\w\-]*(?: [A-Z][\w\-]*)*")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w,])\d{1,3}(?:,\d{3})+(?![\w,])|(?<![\w,])\d+(?![\w,])")
_MAX_NAME_TOKENS = 5


class NotCertifiable(Exception):
    """Nothing in the hop can be changed with a certified replacement; the unit is skipped."""


@dataclass(frozen=True)
class CorruptionPlan:
    """A certified corruption: the record, the faulted evidence and the corrupted passage."""

    record: CorruptionRecord
    documents: list[Document]
    passage: Passage


def corruption_seed(seed: int, trace: str, hop: int) -> int:
    """The seed of one (trace, hop): the same sweep seed, trace key and hop give the same choices."""
    digest = hashlib.sha256(f"{seed}|{trace}|{hop}".encode()).hexdigest()
    return int(digest[:12], 16)


def perturb_number(text: str, rng: random.Random) -> str:
    """A different number in the same format: years shift by 2-12 either way, comma-grouped
    counts scale by 0.5-2x, other integers grow by a few."""
    digits = text.replace(",", "")
    if not digits.isdigit():
        raise ValueError(f"not a number: {text!r}")
    value = int(digits)
    if "," not in text and len(digits) == 4 and 1000 <= value <= 2100:
        return str(value + rng.choice([d for d in range(-12, 13) if abs(d) >= 2]))
    if "," in text:
        new = max(1, round(value * rng.choice((0.5, 0.6, 0.7, 0.8, 1.25, 1.4, 1.6, 1.8, 2.0))))
        return f"{new if new != value else value + 1:,}"
    return str(value + rng.randint(1, max(2, value // 3 + 1)))


def span_pattern(surface: str) -> re.Pattern[str]:
    """Whole-token, case-insensitive occurrences of ``surface``."""
    return re.compile(rf"(?<![\w]){re.escape(surface)}(?![\w])", re.IGNORECASE)


def _occurs(text: str, surface: str) -> re.Match[str] | None:
    return span_pattern(surface).search(text) if surface.strip() else None


def _golds(question: Question) -> list[str]:
    return [g for g in (question.answer, *question.aliases) if g]


def _is_wrong(candidate: str, question: Question, original: str, corpus: FaultCorpus) -> bool:
    """Certification: a different value, not the same entity, and not scored correct."""
    if normalize_answer(candidate) == normalize_answer(original) or not normalize_answer(candidate):
        return False
    if token_set(candidate) & token_set(original) and not is_number(original):
        return False
    if corpus.same_entity(candidate, original):
        return False
    return not is_correct(candidate, question)


def _entity_type_for(name: str, question: Question, corpus: FaultCorpus) -> str | None:
    for hop in question.hops:
        relation = corpus.grammar.relation(hop.relation) if hop.relation else None
        if relation is not None and any(
            normalize_answer(name) == normalize_answer(n) for n in (hop.answer, *hop.aliases)
        ):
            return relation.object
    return corpus.entity_type(name)


def replacement_for(
    original: str, question: Question, corpus: FaultCorpus, rng: random.Random, *, passage_text: str = ""
) -> str | None:
    """A certified replacement for span ``original`` (see the module docstring), or None."""
    if is_number(original):
        for _ in range(8):
            candidate = perturb_number(original, rng)
            if _is_wrong(candidate, question, original, corpus):
                return candidate
        return None
    etype = _entity_type_for(original, question, corpus)
    pool = corpus.distractors(original, etype=etype, avoid=_golds(question))
    rng.shuffle(pool)
    for candidate in pool:
        if not _occurs(passage_text, candidate) and _is_wrong(candidate, question, original, corpus):
            return candidate
    return None


def _entities_in(text: str, corpus: FaultCorpus) -> list[tuple[int, str]]:
    """(position, surface) of known entity names in ``text``, longest match first in each run."""
    found: list[tuple[int, str]] = []
    for run in _CAPITALISED_RUN.finditer(text):
        words = run.group(0).split(" ")
        i = 0
        while i < len(words):
            for j in range(min(len(words), i + _MAX_NAME_TOKENS), i, -1):
                name = " ".join(words[i:j])
                if corpus.is_entity(name):
                    offset = run.start() + len(" ".join(words[:i])) + (1 if i else 0)
                    found.append((offset, name))
                    i = j
                    break
            else:
                i += 1
    return found


def _spans_in(text: str, corpus: FaultCorpus) -> list[tuple[str, CorruptionKind]]:
    spans = [(pos, name, "salient_entity") for pos, name in _entities_in(text, corpus)]
    spans += [(m.start(), m.group(0), "number") for m in _NUMBER_IN_TEXT.finditer(text)]
    return [(name, kind) for _, name, kind in sorted(spans)]  # type: ignore[misc]


def _bridges(question: Question, documents: Sequence[Document], corpus: FaultCorpus) -> list[str]:
    names = []
    for hop in question.hops[:-1]:
        for name in (hop.bridge_entity or hop.answer, *hop.aliases):
            if name and name not in names:
                names.append(name)
    for doc in documents:
        for _, name in _entities_in(doc.text, corpus):
            if name not in names:
                names.append(name)
    return names


def _apply(
    documents: Sequence[Document],
    rank: int,
    original: str,
    corrupted: str,
    kind: CorruptionKind,
    seed: int,
    corpus: FaultCorpus,
) -> CorruptionPlan:
    doc = documents[rank]
    new_text, count = span_pattern(original).subn(corrupted, doc.text)
    faulted = [d if i != rank else d.model_copy(update={"text": new_text}) for i, d in enumerate(documents)]
    source = corpus.by_id.get(doc.id)
    if source is not None:
        passage = source.model_copy(update={"text": new_text})
    else:
        passage = Passage(id=doc.id, title=str(doc.metadata.get("title") or ""), text=new_text)
    record = CorruptionRecord(
        kind=kind,
        original=original,
        corrupted=corrupted,
        passage_id=doc.id,
        seed=seed,
        occurrences=max(1, count),
        rank=rank + 1,
    )
    return CorruptionPlan(record=record, documents=faulted, passage=passage)


def _first_holding(documents: Sequence[Document], surfaces: Iterable[str]) -> tuple[int, str] | None:
    for rank, doc in enumerate(documents):
        for surface in surfaces:
            m = _occurs(doc.text, surface)
            if m:
                return rank, m.group(0)
    return None


def certify_corruption(
    question: Question,
    trajectory: Trajectory,
    hop: int,
    corpus: FaultCorpus,
    *,
    seed: int,
    trace: str | None = None,
) -> CorruptionPlan:
    """Corrupt one certified span of hop ``hop``'s evidence in ``trajectory`` (see the module
    docstring). ``trace`` keys the seed (default: the question id). Raises :class:`NotCertifiable`."""
    documents = list(trajectory.hop(hop).documents)
    if not documents:
        raise NotCertifiable(f"hop {hop} retrieved no evidence")
    unit_seed = corruption_seed(seed, trace or question.id, hop)
    rng = random.Random(unit_seed)

    holding = _first_holding(documents, _golds(question))
    if holding is not None:
        rank, surface = holding
        corrupted = replacement_for(surface, question, corpus, rng, passage_text=documents[rank].text)
        if corrupted is not None:
            return _apply(documents, rank, surface, corrupted, "answer_fact", unit_seed, corpus)

    later = [h.sub_query for h in trajectory.hops if h.index > hop and h.sub_query]
    for name in _bridges(question, documents, corpus):
        if contains_answer(question.text, name) or not any(contains_answer(q, name) for q in later):
            continue
        holding = _first_holding(documents, [name])
        if holding is None:
            continue
        rank, surface = holding
        corrupted = replacement_for(surface, question, corpus, rng, passage_text=documents[rank].text)
        if corrupted is not None:
            return _apply(documents, rank, surface, corrupted, "bridge_entity", unit_seed, corpus)

    for rank, doc in enumerate(documents):
        for surface, kind in _spans_in(doc.text, corpus):
            if contains_answer(question.text, surface):
                continue
            corrupted = replacement_for(surface, question, corpus, rng, passage_text=doc.text)
            if corrupted is not None:
                return _apply(documents, rank, surface, corrupted, kind, unit_seed, corpus)
    raise NotCertifiable(
        f"no certifiable answer fact, bridge entity, entity or number in hop {hop}'s evidence"
    )
