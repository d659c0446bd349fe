"""Reading evidence the way the offline model does: find the sentences that state the needed fact.

A sentence states a fact when it matches one of the world's statement templates
(:mod:`benchmarks.world.templates`, relation synonyms included) and its subject is the
entity asked about (or one of its aliases; pronoun subjects resolve to the passage title).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.models.offline_prompts import EvidenceDoc
from benchmarks.world.names import GENERIC_NAME_WORDS
from benchmarks.world.templates import (
    PRONOUN_WORDS,
    RELATIONS,
    statement_patterns,
)
from causal_middleware.faults.grammar import ALIAS_PATTERNS, CONFIDENCE_MARKERS

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_ALIAS_NOTE = re.compile(r"^(?P<a>.+?) is also known as (?P<b>.+?)\.?$")


def norm(name: str) -> str:
    return " ".join(name.casefold().split())


@dataclass
class Candidate:
    """A value some sentence of the evidence gives for a (subject, relation)."""

    value: str
    relation: str
    subject: str
    rank: int
    doc_id: str
    sentence: str
    year: int | None
    confident: bool
    match: str  # exact | namesake | other


class AliasBook:
    """Equivalence classes of names that denote the same entity (union-find over alias pairs)."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        self._surface: dict[str, str] = {}

    def _find(self, key: str) -> str:
        self._parent.setdefault(key, key)
        while self._parent[key] != key:
            self._parent[key] = self._parent[self._parent[key]]
            key = self._parent[key]
        return key

    def add(self, a: str, b: str) -> None:
        ka, kb = norm(a), norm(b)
        self._surface.setdefault(ka, a.strip())
        self._surface.setdefault(kb, b.strip())
        ra, rb = self._find(ka), self._find(kb)
        if ra != rb:
            self._parent[rb] = ra

    def names(self, name: str) -> list[str]:
        """``name`` and every known alias of it, ``name`` first."""
        key = norm(name)
        root = self._find(key)
        others = [self._surface[k] for k in self._parent if k != key and self._find(k) == root]
        return [name, *sorted(others)]

    def same(self, a: str, b: str) -> bool:
        return self._find(norm(a)) == self._find(norm(b))

    def add_notes(self, notes: Iterable[str]) -> None:
        for note in notes:
            m = _ALIAS_NOTE.match(note.strip())
            if m:
                self.add(m.group("a"), m.group("b"))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s.strip()]


def strip_confidence(sentence: str) -> tuple[str, bool]:
    for marker in CONFIDENCE_MARKERS:
        if sentence.startswith(marker):
            rest = sentence[len(marker) :]
            return rest[:1].upper() + rest[1:], True
    return sentence, False


def alias_pairs(docs: Iterable[EvidenceDoc]) -> list[tuple[str, str]]:
    pairs = []
    for doc in docs:
        for sentence in sentences(doc.text):
            sentence, _ = strip_confidence(sentence)
            for rx in ALIAS_PATTERNS:
                m = rx.match(sentence)
                if m:
                    pairs.append((m.group("a").strip(), m.group("b").strip()))
    return pairs


def _one_edit(a: str, b: str) -> bool:
    if len(a) != len(b) or a == b:
        return False
    return sum(x != y for x, y in zip(a, b, strict=True)) == 1


def is_near_namesake(a: str, b: str) -> bool:
    """Different names a hurried reader could confuse: one letter apart, or sharing a long token."""
    na, nb = norm(a), norm(b)
    if na == nb:
        return False
    if _one_edit(na, nb):
        return True
    shared = set(na.split()) & set(nb.split())
    return any(len(t) >= 4 and t not in GENERIC_NAME_WORDS for t in shared)


def statements(docs: Iterable[EvidenceDoc]) -> list[tuple[EvidenceDoc, str, str, str, str, int | None, bool]]:
    """Every (doc, sentence, relation, subject, object, year, confident) the evidence states."""
    out = []
    for doc in docs:
        for raw in sentences(doc.text):
            sentence, confident = strip_confidence(raw)
            for pattern in statement_patterns():
                m = pattern.regex.match(sentence)
                if not m:
                    continue
                subject = m.group("s")
                if norm(subject) in PRONOUN_WORDS:
                    subject = doc.title
                year = int(m.group("year")) if "year" in m.groupdict() and m.group("year") else None
                out.append((doc, raw, pattern.relation, subject, m.group("o"), year, confident))
    return out


def candidates(docs: list[EvidenceDoc], relation: str, subject: str, aliases: AliasBook) -> list[Candidate]:
    """Values the evidence gives for ``relation`` of ``subject``, exact matches and near-namesakes."""
    out = []
    for doc, sentence, rel, subj, obj, year, confident in statements(docs):
        if rel != relation:
            continue
        if aliases.same(subj, subject):
            match = "exact"
        elif any(is_near_namesake(subj, name) for name in aliases.names(subject)):
            match = "namesake"
        else:
            continue
        out.append(Candidate(obj, rel, subj, doc.rank, doc.id, sentence, year, confident, match))
    return out


def plausible_values(docs: list[EvidenceDoc], relation: str) -> list[Candidate]:
    """Values of the right type the evidence states about anything (what a careless reader grabs)."""
    wanted = RELATIONS[relation].object
    out = []
    for doc, sentence, rel, subj, obj, year, confident in statements(docs):
        if RELATIONS[rel].object == wanted:
            out.append(Candidate(obj, rel, subj, doc.rank, doc.id, sentence, year, confident, "other"))
    return out
