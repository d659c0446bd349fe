"""What the offline model decides, given what it read in a prompt.

Two policies share one interface (``decide``, ``read``, ``answer`` -> reply text):

- :class:`WorldPolicy` (default) plans from the question's wording alone: it unfolds the
  composed question with the world's question grammar, fills each sub-query's subject with the
  previous hop's extracted answer, and extracts facts by matching statement templates in the
  evidence text. Its reactions to bad evidence follow a :class:`Susceptibility` profile.
- :class:`SimulatedPolicy` (``simulate`` mode, for MuSiQue/HotpotQA whose questions it cannot
  parse) plans from a gold decomposition given at construction and "reads" a hop's answer only
  when the retrieved evidence text contains the gold answer or an alias.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from benchmarks.models.offline_prompts import NOT_FOUND, EvidenceDoc, FactLine, PromptView
from benchmarks.models.offline_reader import (
    AliasBook,
    Candidate,
    alias_pairs,
    candidates,
    norm,
    plausible_values,
)
from benchmarks.world.templates import RELATIONS, parse_question, parse_sub_query, sub_query
from causal_middleware.tasks.model import HopGold, Question

UNKNOWN_ANSWER = "unknown"


class Susceptibility(BaseModel):
    """How the offline model reacts to bad evidence. Probabilities are per decision, drawn from a
    generator seeded by (model seed, prompt), so a run is reproducible."""

    model_config = ConfigDict(extra="forbid")

    copy_corrupted_value: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="evidence gives conflicting values for the needed fact and neither dates nor a "
        "confident assertion settles it: probability of copying the top-ranked value. Otherwise it "
        "takes the value most passages support, and on a tie reports NONE and re-queries.",
    )
    false_premise: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="probability of believing a confidently asserted statement ('It is well "
        "established that ...', see faults.grammar.CONFIDENCE_MARKERS) over conflicting evidence",
    )
    prefer_recent: bool = Field(
        default=True,
        description="among conflicting dated statements take the most recent (undated present-tense "
        "statements count as current); when False, take the top-ranked one",
    )
    detect_off_topic: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="evidence does not state the needed fact: probability of noticing and "
        "re-querying; otherwise it grabs a value of the right type from the off-topic evidence",
    )
    namesake_confusion: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="a near-namesake's statement of the fact (one letter different, or a shared "
        "name token) ranks above any statement about the entity asked about, or is the only one: "
        "probability of taking it for the entity asked about",
    )
    accept_drifted_fact: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="the last search answered a different entity's question than the open hop "
        "(query drift): probability of carrying that answer on as the hop's answer",
    )
    verify_dead_ends: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="a search about a bridge entity hit a dead end (no retrieved passage mentions the "
        "entity at all, so the name may be wrong): probability of suspecting the previous hop's fact "
        "and re-checking it with a reformulated search for the previous sub-question, when the budget "
        "leaves room for the re-check and one search per open hop; a re-check that states a different value replaces the "
        "earlier fact and the chain continues from it",
    )

    @classmethod
    def robust(cls) -> Susceptibility:
        """Never misled: notices every conflict, off-topic document and namesake."""
        return cls(
            copy_corrupted_value=0,
            false_premise=0,
            prefer_recent=True,
            detect_off_topic=1,
            namesake_confusion=0,
            accept_drifted_fact=0,
            verify_dead_ends=1,
        )

    @classmethod
    def gullible(cls) -> Susceptibility:
        """Misled by everything."""
        return cls(
            copy_corrupted_value=1,
            false_premise=1,
            prefer_recent=False,
            detect_off_topic=0,
            namesake_confusion=1,
            accept_drifted_fact=1,
            verify_dead_ends=0,
        )


class GoldDecompositionPlanner(BaseModel):
    """Gold decompositions keyed by question text, for simulating an agent on real corpora."""

    hops: dict[str, list[HopGold]]
    answers: dict[str, str] = Field(default_factory=dict)
    answer_aliases: dict[str, list[str]] = Field(default_factory=dict)

    @classmethod
    def from_questions(cls, questions: Iterable[Question]) -> GoldDecompositionPlanner:
        hops, answers, aliases = {}, {}, {}
        for q in questions:
            if not q.hops:
                raise ValueError(f"question {q.id} has no gold decomposition (hops); cannot simulate it")
            key = _question_key(q.text)
            hops[key] = list(q.hops)
            answers[key] = q.answer
            aliases[key] = list(q.aliases)
        return cls(hops=hops, answers=answers, answer_aliases=aliases)

    def lookup(self, question: str) -> list[HopGold] | None:
        return self.hops.get(_question_key(question))


def _question_key(text: str) -> str:
    return " ".join(text.split()).casefold()


class Dice:
    """Uniform draws in [0, 1) fixed by (seed, purpose, prompt).

    ``resample`` (a sampling model's) may replace a prompt-specific draw with a fresh one: it
    returns a new draw, or None to keep the fixed one. Stable draws are never resampled.
    """

    def __init__(self, seed: int, prompt: str, resample: Callable[[], float | None] | None = None) -> None:
        self.seed = seed
        self.prompt_digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        self.resample = resample

    def draw(self, purpose: str) -> float:
        """A draw specific to this prompt (fresh, when the model samples and resamples it)."""
        if self.resample is not None:
            fresh = self.resample()
            if fresh is not None:
                return fresh
        return self.draw_stable(f"{purpose}|{self.prompt_digest}")

    def draw_stable(self, key: str) -> float:
        """A draw that depends only on the seed and ``key``, whatever the prompt."""
        h = hashlib.sha256(f"{self.seed}|{key}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64


@dataclass
class _Progress:
    """Where a world-question plan stands after the facts found so far."""

    chain: list[str]
    subjects: list[str]  # each hop's subject, up to and including the open hop's
    answers: list[str]
    open_hop: int | None  # 0-based index of the first unanswered hop, None when complete
    subject: str  # the open hop's subject (or the final answer when complete)
    tried: list[str]  # queries already issued for the open hop


DEAD_END_NOTE = "dead end: no evidence mentions {subject}"


def _is_dead_end(fact: FactLine, subject: str) -> bool:
    return not fact.found and any(norm(n) == norm(DEAD_END_NOTE.format(subject=subject)) for n in fact.notes)


def _mentions(docs: Iterable[EvidenceDoc], names: Iterable[str]) -> bool:
    text = norm(" ".join(f"{d.title} {d.text}" for d in docs))
    return any(re.search(rf"(?<!\w){re.escape(norm(n))}(?!\w)", text) for n in names if n.strip())


def _fact_answers(facts: list[FactLine]) -> list[tuple[FactLine, tuple[str, str] | None]]:
    return [(f, parse_sub_query(f.query)) for f in facts]


_FUNCTION_WORDS = frozenset(
    "a an and are as at by did do does for from has have in is it of on or the to was were what when "
    "where which who whom how".split()
)


def _content_words(query: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"\w+", query.casefold()) if w not in _FUNCTION_WORDS)


class WorldPolicy:
    """Plays the agent on generated-world questions from their wording alone."""

    def __init__(self, susceptibility: Susceptibility) -> None:
        self.s = susceptibility

    # --- planning ------------------------------------------------------------------------
    def _progress(self, view: PromptView, dice: Dice) -> _Progress | None:
        parsed = parse_question(view.question or "")
        if parsed is None:
            return None
        base, chain = parsed
        book = AliasBook()
        book.add_notes(view.notes)
        facts = _fact_answers(view.facts)
        used: set[int] = set()
        answers: list[str] = []
        subjects: list[str] = []
        subject = base
        for k, relation in enumerate(chain):
            subjects.append(subject)
            # the latest statement of the hop wins: a re-check after a dead end replaces the first
            hits: list[int] = []
            tried = []
            for i, (fact, parsed_q) in enumerate(facts):
                if i in used or parsed_q is None:
                    continue
                rel, subj = parsed_q
                if rel == relation and book.same(subj, subject):
                    tried.append(fact.query)
                    if fact.found:
                        hits.append(i)
            hit = hits[-1] if hits else self._drifted_answer(facts, used, relation, subject, book, dice)
            if hit is None:
                return _Progress(chain, subjects, answers, k, subject, tried)
            used.update(hits or [hit])
            answer = facts[hit][0].answer or ""
            answers.append(answer)
            subject = answer
        return _Progress(chain, subjects, answers, None, subject, [])

    def _drifted_answer(self, facts, used, relation, subject, book, dice) -> int | None:
        """A found fact that answered some other question, if the model lets it stand in for the hop.

        The model itself only issues sub-queries that match its plan, so such a fact comes from a
        changed (drifted) sub-query. The draw is keyed by the fact, not the prompt, so later calls
        keep the same belief."""
        for i, (fact, parsed_q) in enumerate(facts):
            if i in used or not fact.found:
                continue
            if parsed_q is not None:
                rel, subj = parsed_q
                if rel != relation or book.same(subj, subject):
                    continue
            if (
                dice.draw_stable(f"drift|{fact.query}|{fact.answer}|{relation}|{subject}")
                < self.s.accept_drifted_fact
            ):
                return i
        return None

    def decide(self, view: PromptView, dice: Dice) -> str:
        progress = self._progress(view, dice)
        if progress is None:
            if not view.facts:
                return f"SUBQUERY: {view.question}"
            found = [f.answer for f in view.facts if f.found]
            return f"ANSWER: {found[-1] if found else UNKNOWN_ANSWER}"
        if progress.open_hop is None:
            return f"ANSWER: {progress.subject}"
        if view.budget is not None and view.searches_used is not None and view.searches_used >= view.budget:
            return self.answer(view, dice)
        book = AliasBook()
        book.add_notes(view.notes)
        if self._should_recheck(view, progress, book, dice):
            hop = progress.open_hop - 1
            return self._search(
                view, progress.chain[hop], progress.subjects[hop], book, progress.tried, reword_first=True
            )
        relation = progress.chain[progress.open_hop]
        return self._search(view, relation, progress.subject, book, progress.tried)

    @staticmethod
    def _search(
        view: PromptView,
        relation: str,
        subject: str,
        book: AliasBook,
        tried: list[str],
        reword_first: bool = False,
    ) -> str:
        names = book.names(subject)
        # Reformulate after a miss: another name for the entity first (an alias learned from the
        # evidence), then relation synonyms; never a search with the same content words as one made.
        # A re-check (reword_first) keeps the name that found the fact and rewords the relation.
        attempts = range(len(RELATIONS[relation].all_queries))
        if reword_first:
            options = [sub_query(relation, n, a) for n in names for a in attempts]
        else:
            options = [sub_query(relation, n, a) for a in attempts for n in names]
        issued = {_content_words(f.query) for f in view.facts}
        for option in options:
            if _content_words(option) not in issued:
                return f"SUBQUERY: {option}"
        return f"SUBQUERY: {options[len(tried) % len(options)]}"

    def _should_recheck(self, view: PromptView, progress: _Progress, book: AliasBook, dice: Dice) -> bool:
        """After a dead end on the open hop's bridge entity, re-check the fact that named it?

        Only once per dead end (not when the previous sub-question was already searched again after
        it), only when the budget leaves room for the re-check and one search per hop still open,
        and with probability ``verify_dead_ends``, drawn per dead end so later calls keep the same
        choice."""
        k = progress.open_hop
        if not k:
            return False
        if view.budget is not None and view.searches_used is not None:
            if view.budget - view.searches_used < 1 + len(progress.chain) - k:
                return False
        relation, subject = progress.chain[k], progress.subject
        prev_relation, prev_subject = progress.chain[k - 1], progress.subjects[k - 1]
        facts = _fact_answers(view.facts)
        for j, (fact, parsed_q) in enumerate(facts):
            if parsed_q is None or parsed_q[0] != relation or not book.same(parsed_q[1], subject):
                continue
            if not _is_dead_end(fact, parsed_q[1]):
                continue
            rechecked = any(
                q is not None and q[0] == prev_relation and book.same(q[1], prev_subject)
                for _, q in facts[j + 1 :]
            )
            if rechecked:
                return False
            return dice.draw_stable(f"verify|{fact.query}|{subject}") < self.s.verify_dead_ends
        return False

    def answer(self, view: PromptView, dice: Dice) -> str:
        progress = self._progress(view, dice)
        if progress is None:
            found = [f.answer for f in view.facts if f.found]
            return f"ANSWER: {found[-1] if found else UNKNOWN_ANSWER}"
        if progress.open_hop is None:
            return f"ANSWER: {progress.subject}"
        return f"ANSWER: {UNKNOWN_ANSWER}"

    # --- reading -------------------------------------------------------------------------
    def read(self, view: PromptView, dice: Dice) -> str:
        target = parse_sub_query(view.sub_question or "")
        if target is None:
            return "FACT: NONE\nNOTE: the sub-question does not ask for one fact about one entity"
        relation, subject = target
        book = AliasBook()
        book.add_notes(view.notes)
        for a, b in alias_pairs(view.evidence):
            book.add(a, b)
        found = candidates(view.evidence, relation, subject, book)
        exact = [c for c in found if c.match == "exact"]
        notes = [f"{subject} is also known as {n}" for n in book.names(subject)[1:]]
        namesakes = [c for c in found if c.match == "namesake"]
        outranked = bool(namesakes) and (not exact or namesakes[0].rank < exact[0].rank)
        value: str | None
        if outranked and dice.draw("namesake") < self.s.namesake_confusion:
            value = namesakes[0].value
        elif exact:
            value, conflict_note = self._resolve(exact, relation, dice)
            if conflict_note:
                notes.append(conflict_note)
        else:
            value = None
            if dice.draw("off-topic") >= self.s.detect_off_topic:
                grabbed = plausible_values(view.evidence, relation)
                if grabbed:
                    value = grabbed[0].value
        if value is None:
            if view.evidence and not namesakes and not _mentions(view.evidence, book.names(subject)):
                notes.append(DEAD_END_NOTE.format(subject=subject))
            return "FACT: NONE" + "".join(f"\nNOTE: {n}" for n in notes)
        for alias in book.names(value)[1:]:
            notes.append(f"{value} is also known as {alias}")
        return f"FACT: {value}" + "".join(f"\nNOTE: {n}" for n in notes)

    def _resolve(self, exact: list[Candidate], relation: str, dice: Dice) -> tuple[str | None, str | None]:
        distinct: dict[str, list[Candidate]] = {}
        for c in exact:
            distinct.setdefault(norm(c.value), []).append(c)
        if len(distinct) == 1:
            return exact[0].value, None
        if RELATIONS[relation].dated and self.s.prefer_recent:
            # undated statements are in the present tense: they describe the current value
            def recency(c: Candidate) -> float:
                return float("inf") if c.year is None else float(c.year)

            best = max(exact, key=recency)
            if (
                sum(1 for c in exact if recency(c) == recency(best) and norm(c.value) != norm(best.value))
                == 0
            ):
                return best.value, None
        confident = [c for c in exact if c.confident]
        if confident and dice.draw("false-premise") < self.s.false_premise:
            return confident[0].value, None
        if dice.draw("copy") < self.s.copy_corrupted_value:
            return exact[0].value, None
        support = sorted(distinct.values(), key=lambda cs: (-len(cs), cs[0].rank))
        if len(support[0]) > len(support[1]):
            return support[0][0].value, None
        values = " vs ".join(cs[0].value for cs in support)
        return None, f"the evidence conflicts ({values})"


class SimulatedPolicy:
    """Plans from gold decompositions; reads a hop's answer only when the evidence contains it."""

    def __init__(self, planner: GoldDecompositionPlanner) -> None:
        self.planner = planner

    def _hops(self, view: PromptView) -> list[HopGold]:
        hops = self.planner.lookup(view.question or "")
        if hops is None:
            raise ValueError(
                f"simulate mode: no gold decomposition for question {view.question!r}; "
                "build the planner from the questions you run"
            )
        return hops

    @staticmethod
    def _found(view: PromptView) -> list[str]:
        return [f.answer for f in view.facts if f.found and f.answer]

    @staticmethod
    def _fill(question: str, answers: list[str]) -> str:
        return re.sub(
            r"#(\d+)",
            lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers) else m.group(0),
            question,
        )

    def decide(self, view: PromptView, dice: Dice) -> str:
        hops = self._hops(view)
        answers = self._found(view)
        if len(answers) >= len(hops):
            return self.answer(view, dice)
        question = self._fill(hops[len(answers)].question, answers)
        keywords = " ".join(w for w in re.findall(r"[\w'-]+", question) if w.casefold() not in _WH_WORDS)
        options = [question, keywords, f"{keywords} {view.question}"]
        issued = {norm(f.query) for f in view.facts}
        for option in options:
            if norm(option) not in issued:
                return f"SUBQUERY: {option}"
        return f"SUBQUERY: {question}"

    def read(self, view: PromptView, dice: Dice) -> str:
        hops = self._hops(view)
        answers = self._found(view)
        if len(answers) >= len(hops):
            return "FACT: NONE"
        hop = hops[len(answers)]
        text = norm(" ".join(f"{d.title} {d.text}" for d in view.evidence))
        for name in [hop.answer, *hop.aliases]:
            if name and re.search(rf"(?<!\w){re.escape(norm(name))}(?!\w)", text):
                return f"FACT: {hop.answer}"
        return "FACT: NONE"

    def answer(self, view: PromptView, dice: Dice) -> str:
        hops = self._hops(view)
        answers = self._found(view)
        if len(answers) < len(hops):
            return f"ANSWER: {UNKNOWN_ANSWER}"
        key = _question_key(view.question or "")
        return f"ANSWER: {self.planner.answers.get(key, answers[len(hops) - 1])}"


_WH_WORDS = frozenset(
    {"who", "what", "where", "when", "which", "how", "is", "was", "the", "did", "does", "in", "of"}
)
__all__ = [
    "NOT_FOUND",
    "UNKNOWN_ANSWER",
    "Dice",
    "GoldDecompositionPlanner",
    "SimulatedPolicy",
    "Susceptibility",
    "WorldPolicy",
]
