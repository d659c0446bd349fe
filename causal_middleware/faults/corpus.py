"""What fault injection needs to know about a corpus: its entities, their types and aliases,
in-domain distractors, near-namesakes, off-topic passages and superseded (stale) passages.

Built once per dataset (:meth:`FaultCorpus.from_dataset`) and shared by every unit of a sweep;
read-only after construction, so threads can share it. On the generated world the passages'
metadata names each passage's entity and its type; on MuSiQue/HotpotQA entities are the passage
titles and the gold hop answers, untyped (distractors then match the original's shape instead).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from causal_middleware.faults.grammar import ALIAS_PATTERNS, PLAIN_GRAMMAR, QuestionGrammar
from causal_middleware.tasks.model import Dataset, Passage, Question
from causal_middleware.tasks.scoring import normalize_answer, token_set

_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})+$|^\d+$")
_DISAMBIGUATOR = re.compile(r"\s*\([^)]*\)\s*$")


def is_number(text: str) -> bool:
    """A plain integer or a comma-grouped one (``1823``, ``1,234,567``)."""
    return bool(_NUMBER.match(text.strip()))


def shape(name: str) -> tuple[str, int]:
    """(``"number"`` or ``"name"``, token count): what an untyped distractor must match."""
    return ("number" if is_number(name) else "name", len(normalize_answer(name).split()))


def _one_letter_off(a: str, b: str) -> bool:
    return len(a) == len(b) and a != b and sum(x != y for x, y in zip(a, b, strict=True)) == 1


def near_namesake(a: str, b: str) -> bool:
    """Different names a reader could confuse: one letter apart, or sharing a token of 4+ letters."""
    return _near_keys(normalize_answer(a), normalize_answer(b))


def _near_keys(na: str, nb: str) -> bool:
    if not na or not nb or na == nb:
        return False
    if _one_letter_off(na, nb):
        return True
    long_a = {t for t in na.split() if len(t) >= 4}
    long_b = {t for t in nb.split() if len(t) >= 4}
    return bool(long_a & long_b)


@dataclass(frozen=True)
class _Name:
    surface: str
    key: str  # normalised
    canonical: str  # normalised name of the entity it names
    tokens: frozenset[str]
    shape: tuple[str, int]


class FaultCorpus:
    """Entity inventory and passage lookups over one corpus (see the module docstring)."""

    def __init__(
        self,
        passages: Sequence[Passage],
        questions: Iterable[Question] = (),
        *,
        grammar: QuestionGrammar = PLAIN_GRAMMAR,
    ) -> None:
        if not passages:
            raise ValueError("FaultCorpus needs at least one passage")
        self.grammar = grammar
        self.passages: list[Passage] = list(passages)
        self.by_id: dict[str, Passage] = {p.id: p for p in self.passages}
        self._tokens: dict[str, frozenset[str]] = {}
        self._names: dict[str, _Name] = {}  # normalised name -> entry, every known entity name
        self._types: dict[str, str] = {}  # normalised canonical name -> entity type (world metadata)
        for p in self.passages:
            entity, etype = p.metadata.get("entity"), p.metadata.get("type")
            if isinstance(entity, str) and entity:
                self._add_name(entity, entity, etype if isinstance(etype, str) else None)
            elif p.title:
                title = _DISAMBIGUATOR.sub("", p.title).strip()
                if title:
                    self._add_name(title, title, None)
            for rx in ALIAS_PATTERNS:  # "X, also known as Y, is ..." opens a passage
                m = rx.match(p.text)
                if m:
                    a, b = m.group("a").strip(), m.group("b").strip()
                    known = self._names.get(normalize_answer(a))
                    self._add_name(b, known.canonical if known else a, None)
        for q in questions:
            for hop in q.hops:
                for name in (hop.answer, *hop.aliases):
                    if name and not is_number(name):
                        self._add_name(name, hop.answer, None)
        self._sorted = sorted(self._names.values(), key=lambda n: n.surface)

    @classmethod
    def from_dataset(cls, dataset: Dataset, *, grammar: QuestionGrammar = PLAIN_GRAMMAR) -> FaultCorpus:
        return cls(dataset.passages, dataset.questions, grammar=grammar)

    def _add_name(self, name: str, canonical: str, etype: str | None) -> None:
        key = normalize_answer(name)
        if not key:
            return
        if key not in self._names:
            canon = normalize_answer(canonical) or key
            self._names[key] = _Name(name, key, canon, token_set(name), shape(name))
        if etype:
            self._types.setdefault(self._names[key].canonical, etype)

    # --- entities ------------------------------------------------------------------------
    def entity_names(self) -> list[str]:
        """Every known entity name (canonical names and aliases), sorted."""
        return [n.surface for n in self._sorted]

    def is_entity(self, name: str) -> bool:
        return normalize_answer(name) in self._names

    def _canonical(self, name: str) -> str:
        key = normalize_answer(name)
        entry = self._names.get(key)
        return entry.canonical if entry is not None else key

    def entity_type(self, name: str) -> str | None:
        """The entity type of ``name`` (or of the entity it is an alias of); None when unknown."""
        return self._types.get(self._canonical(name))

    def same_entity(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` name the same entity (equal, or one is an alias of the other)."""
        return self._canonical(a) == self._canonical(b)

    def distractors(self, original: str, *, etype: str | None = None, avoid: Iterable[str] = ()) -> list[str]:
        """In-domain replacements for entity ``original``, sorted: entities of its type (or, untyped,
        of its shape) sharing no token with ``original`` nor with any name in ``avoid``, and not
        another name of the same entity."""
        etype = etype or self.entity_type(original)
        banned = set(token_set(original))
        for name in avoid:
            banned |= token_set(name)
        canonical = self._canonical(original)
        want_shape = shape(original)
        out = []
        for entry in self._sorted:
            if entry.shape[0] == "number" or banned & entry.tokens or entry.canonical == canonical:
                continue
            if etype is not None:
                if self._types.get(entry.canonical) != etype:
                    continue
            elif entry.shape != want_shape:
                continue
            out.append(entry.surface)
        return out

    def names_in(self, text: str) -> list[str]:
        """Known entity names occurring in ``text`` as whole tokens, longest first."""
        padded = f" {normalize_answer(text)} "
        found = [e.surface for e in self._sorted if f" {e.key} " in padded]
        return sorted(found, key=lambda name: (-len(name), name))

    def near_namesakes(self, name: str) -> list[str]:
        """Known entities whose names a reader could confuse with ``name`` (not its aliases), sorted."""
        etype = self.entity_type(name)
        canonical = self._canonical(name)
        key = normalize_answer(name)
        return [
            entry.surface
            for entry in self._sorted
            if entry.canonical != canonical
            and (etype is None or self._types.get(entry.canonical) in (None, etype))
            and _near_keys(entry.key, key)
        ]

    # --- passages ------------------------------------------------------------------------
    def tokens(self, passage: Passage) -> frozenset[str]:
        """Normalised tokens of a passage's title and text (cached)."""
        cached = self._tokens.get(passage.id)
        if cached is None:
            cached = token_set(f"{passage.title} {passage.text}")
            self._tokens[passage.id] = cached
        return cached

    def off_topic(
        self, avoid: Iterable[str], n: int, rng: random.Random, *, exclude_ids: Iterable[str] = ()
    ) -> list[Passage]:
        """``n`` passages (drawn with ``rng``) sharing no token with any text in ``avoid``."""
        banned: set[str] = set()
        for text in avoid:
            banned |= token_set(text)
        excluded = set(exclude_ids)
        order = list(range(len(self.passages)))
        rng.shuffle(order)
        out: list[Passage] = []
        for i in order:
            p = self.passages[i]
            if p.id in excluded or self.tokens(p) & banned:
                continue
            out.append(p)
            if len(out) == n:
                break
        return out

    def stale_passages(self, subject: str, relation: str | None) -> list[Passage]:
        """The corpus's superseded statements of ``relation`` of ``subject`` (world metadata), by id."""
        out = []
        for p in self.passages:
            if not p.metadata.get("stale"):
                continue
            entity = p.metadata.get("entity")
            relations = p.metadata.get("relations") or []
            if isinstance(entity, str) and self.same_entity(entity, subject):
                if relation is None or relation in relations:
                    out.append(p)
        return sorted(out, key=lambda p: p.id)

    def new_id(self, *parts: object) -> str:
        """A passage id derived from ``parts`` that no corpus passage has."""
        digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
        for start in range(0, len(digest) - 10):
            pid = f"x{digest[start : start + 10]}"
            if pid not in self.by_id:
                return pid
        raise RuntimeError("could not derive an unused passage id")  # pragma: no cover
