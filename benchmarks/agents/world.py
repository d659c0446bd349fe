"""Procedural worlds and tasks, from a seed.

A *task* is one question asked of one agent in one small world (a corpus of passages, a lookup
table and an entity linker's gazetteer), with a failure of known cause *planted in that world*:

* ``poisoned_document``: a keyword-stuffed passage that states a wrong value is added to the corpus
  (it outranks the true passage for the hop's sub-query);
* ``missing_document``: the true passage of the hop's fact is removed from the corpus; a distractor
  (the same phrase in another context: a remake, a disputed biography) then answers; the fact
  survives only in a secondary mention passage that ranks lower;
* ``stale_tool_row``: the lookup table served an outdated row during the run; it is refreshed after
  the run (a re-run of the tool now answers with the current value);
* ``planner_error``: the planner's entity linker (a gazetteer, part of the world) maps the
  entity to a near-namesake that also exists in the world, so the plan names the wrong entity;
* ``reader_error``: the true passage (or table row) is phrased with a ``", formerly ..."`` aside
  that triggers a deterministic bug of the agent's reader (it then takes the *last* name/number of
  the sentence).

The ground truth of a task is the node whose execution the plant corrupts and which execution
(``truth_occurrence``: the k-th execution of that node, or the execution whose input names
``truth_entity``); it is mapped onto the recorded trajectory's step (and so its hop index) by
:func:`benchmarks.agents.runner.true_step`. Nothing is ever written into a trace.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

CAUSES = ("poisoned_document", "missing_document", "stale_tool_row", "planner_error", "reader_error")

_SYL = "ka ro mi ve tal sun dor ela pri vos an ther qui lo zen bar ist mu cor fen gal hal".split()
_SUFFIX = ["er", "a", "is", "on", "el"]

# relation -> (sub-question template, anchored phrase template)
RELATIONS: dict[str, tuple[str, str]] = {
    "director": ("Who directed {s}?", "{s} was directed by"),
    "author": ("By whom was {s} written?", "{s} was written by"),
    "founder": ("Who founded {s}?", "{s} was founded by"),
    "birthplace": ("Where was {s} born?", "{s} was born in"),
    "alma_mater": ("At which school had {s} studied?", "{s} studied at"),
    "released": ("When was {s} released?", "{s} was released in"),
}
# the word a keyword-stuffed passage repeats
KEYWORD = {
    "director": "directed",
    "author": "written",
    "founder": "founded",
    "birthplace": "born",
    "alma_mater": "studied",
    "released": "released",
}
WORK_KIND = {"director": "film", "author": "book", "founder": "company"}
# (first relation, second relation) -> question template
BRIDGE_QUESTIONS = {
    "birthplace": "In which city was the {r1} of {e} born?",
    "alma_mater": "Which university did the {r1} of {e} attend?",
}
DISTRACTOR = {
    "director": "A stage adaptation of {s} was directed by {v} last spring.",
    "author": "A sequel to {s} was written by {v} under a pen name.",
    "founder": "A rival of {s} was founded by {v} two years later.",
    "birthplace": "An early profile claims {s} was born in {v}, which the family disputes.",
    "alma_mater": "A tabloid wrote that {s} studied at {v} for one term.",
    "released": "A restored cut of {s} was released in {v} on disc.",
}
MENTION = {
    "director": "Looking back, critics agree that {s} was directed by {v} on a small budget.",
    "author": "Looking back, critics agree that {s} was written by {v} in one winter.",
    "founder": "Looking back, analysts agree that {s} was founded by {v} in a garage.",
    "birthplace": "Looking back, neighbours agree that {s} was born in {v} during a storm.",
    "alma_mater": "Looking back, classmates agree that {s} studied at {v} with distinction.",
    "released": "Looking back, festival notes agree that {s} was released in {v} to little fanfare.",
}
FILLER = [
    "{s} is often discussed in retrospectives of the period.",
    "Several archives hold material about {s}.",
    "{s} appears in a number of regional histories.",
]


def sub_question(relation: str, subject: str) -> str:
    return RELATIONS[relation][0].format(s=subject)


_SUBQ_PATTERNS = [
    (rel, re.compile("^" + re.escape(t).replace(r"\{s\}", "(?P<s>.+)") + "$"))
    for rel, (t, _) in RELATIONS.items()
]


def parse_sub_question(text: str) -> tuple[str, str] | None:
    """(relation, subject) of a sub-question written by :func:`sub_question`."""
    for rel, pattern in _SUBQ_PATTERNS:
        m = pattern.match((text or "").strip())
        if m:
            return rel, m.group("s")
    return None


@dataclass
class Passage:
    id: str
    text: str
    title: str = ""


@dataclass
class Task:
    """One question in one world with one planted failure (see the module docstring)."""

    id: str
    agent: str
    family: str  # bridge | compare
    cause: str
    hop: int  # the hop (1-based, of the question's chain) the plant corrupts
    question: str
    gold: str
    chain: list[tuple[str, str, str]]  # (subject, relation, value) facts of the question
    passages: list[Passage] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # entity linker gazetteer
    table: dict[tuple[str, str], str] = field(default_factory=dict)  # current lookup table
    stale: dict[tuple[str, str], str] = field(default_factory=dict)  # rows served during the run
    notes: dict[tuple[str, str], str] = field(default_factory=dict)  # table notes column
    truth_node: str = ""
    truth_occurrence: int | None = None  # k-th execution (1-based) of truth_node
    truth_entity: str | None = None  # or: the execution whose input names this entity
    plant: dict[str, Any] = field(default_factory=dict)  # what was planted, for the report

    def corpus_ids(self) -> set[str]:
        return {p.id for p in self.passages}


class Names:
    """Unique pronounceable names from a seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, n: int) -> str:
        return "".join(self.rng.choice(_SYL) for _ in range(n)).capitalize()

    def name(self, tail: str = "") -> str:
        for _ in range(1000):
            words = [self.word(2), self.word(self.rng.choice([1, 2]))]
            name = " ".join(words) + (f" {tail}" if tail else "")
            if name not in self.used and not any(name in u or u in name for u in self.used):
                self.used.add(name)
                return name
        raise RuntimeError("ran out of names")

    def namesake(self, name: str, kind: str) -> str:
        """A near-namesake of ``name``, unused so far: ``kind="extended"`` appends letters to its
        second word ("Tal Kell" -> "Tal Keller"), ``"vowel"`` changes one vowel of it ("Tal Kel")."""
        words = name.split()
        second = words[1]
        options: list[str] = []
        if kind == "extended":
            options = [second + suffix for suffix in self.rng.sample(_SUFFIX, len(_SUFFIX))]
        else:
            for i, ch in enumerate(second):
                if i > 0 and ch in "aeiou":
                    options += [second[:i] + v + second[i + 1 :] for v in "aeiou" if v != ch]
            self.rng.shuffle(options)
        for word in options:
            other = " ".join([words[0], word, *words[2:]])
            if other not in self.used and not any(other in u or u in other for u in self.used if u != name):
                self.used.add(other)
                return other
        if kind == "vowel":  # no inner vowel to change
            return self.namesake(name, "extended")
        raise RuntimeError(f"no namesake for {name}")


# --------------------------------------------------------------------------------------------
# bridge worlds: work -r1-> person -r2-> place
# --------------------------------------------------------------------------------------------


@dataclass
class BridgeWorld:
    works: dict[str, tuple[str, str]]  # work -> (r1, person)
    people: dict[str, dict[str, str]]  # person -> {birthplace: city, alma_mater: univ}
    cities: list[str]
    univs: list[str]


def _bridge_world(rng: random.Random, names: Names, r1: str) -> BridgeWorld:
    # every person has their own birthplace and school: a wrong bridge entity always gives a wrong
    # answer (no accidental restorations through a shared value)
    cities = [names.name() for _ in range(10)]
    univs = [names.name("Institute") for _ in range(10)]
    people: dict[str, dict[str, str]] = {}
    for city, univ in zip(rng.sample(cities, 7), rng.sample(univs, 7), strict=True):
        people[names.name()] = {"birthplace": city, "alma_mater": univ}
    works = {names.name(): (r1, p) for p in rng.sample(list(people), 5)}
    return BridgeWorld(works, people, cities, univs)


def _anchored(rel: str, s: str, v: str) -> str:
    return RELATIONS[rel][1].format(s=s) + f" {v}."


def _bridge_passages(world: BridgeWorld, rng: random.Random) -> list[Passage]:
    out: list[Passage] = []
    for w, (r1, p) in world.works.items():
        kind = WORK_KIND[r1]
        out.append(Passage(f"{_slug(w)}-{r1}", f"{_anchored(r1, w, p)} The {kind} is well known.", w))
        other = rng.choice([q for q in world.people if q != p])
        out.append(Passage(f"{_slug(w)}-{r1}-x", DISTRACTOR[r1].format(s=w, v=other), w))
    for p, rels in world.people.items():
        for rel, v in rels.items():
            out.append(
                Passage(f"{_slug(p)}-{rel}", f"{_anchored(rel, p, v)} " + rng.choice(FILLER).format(s=p), p)
            )
            pool = world.cities if rel == "birthplace" else world.univs
            other = rng.choice([c for c in pool if c != v])
            out.append(Passage(f"{_slug(p)}-{rel}-x", DISTRACTOR[rel].format(s=p, v=other), p))
    for c in world.cities:
        out.append(Passage(f"{_slug(c)}-about", f"{c} is a city. " + rng.choice(FILLER).format(s=c), c))
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def bridge_task(
    rng: random.Random, task_id: str, agent: str, cause: str, hop: int, *, control: bool = False
) -> Task:
    """A 2-hop bridge question with ``cause`` planted at ``hop`` (1 or 2). ``control``: the same
    world (same draws) without the plant applied, to check the agent answers it correctly."""
    names = Names(rng)
    r1 = rng.choice(list(WORK_KIND))
    r2 = rng.choice(list(BRIDGE_QUESTIONS))
    world = _bridge_world(rng, names, r1)
    work = rng.choice(list(world.works))
    person = world.works[work][1]
    gold = world.people[person][r2]
    question = BRIDGE_QUESTIONS[r2].format(r1=r1, e=work)
    chain = [(work, r1, person), (person, r2, gold)]
    subj, rel, val = chain[hop - 1]
    plant: dict[str, Any] = {"subject": subj, "relation": rel, "true_value": val}

    def wrong_value() -> str:
        """A wrong value for the hop's fact that still leads to a wrong final answer."""
        if rel == r1:
            pool = [q for q in world.people if q != person and world.people[q][r2] != gold]
        else:
            pool = [c for c in (world.cities if rel == "birthplace" else world.univs) if c != gold]
        return rng.choice(pool)

    if cause == "planner_error":
        kind = rng.choice(["extended", "vowel"])
        other = names.namesake(subj, kind)
        plant["namesake_kind"] = kind
        if hop == 1:
            # the namesake work exists in the world, made by someone whose answer differs
            maker = rng.choice([q for q in world.people if world.people[q][r2] != gold])
            world.works[other] = (r1, maker)
        else:
            taken = {v for rels in world.people.values() for v in rels.values()}
            world.people[other] = {
                "birthplace": rng.choice([c for c in world.cities if c not in taken]),
                "alma_mater": rng.choice([u for u in world.univs if u not in taken]),
            }
        plant.update(linked_to=other)
    passages = _bridge_passages(world, rng)
    task = Task(
        id=task_id,
        agent=agent,
        family="bridge",
        cause=cause,
        hop=hop,
        question=question,
        gold=gold,
        chain=chain,
        passages=passages,
        plant=plant,
    )
    task.table = {(w, r): p for w, (r, p) in world.works.items()}
    task.table.update({(p, r): v for p, rels in world.people.items() for r, v in rels.items()})
    true_id = f"{_slug(subj)}-{rel}"
    if control:
        return task
    if cause == "poisoned_document":
        wrong = wrong_value()
        q = sub_question(rel, subj)
        key = KEYWORD[rel]
        text = f"{q} {subj} {key} {subj} {key}. {_anchored(rel, subj, wrong)}"
        task.passages.append(Passage(f"{_slug(subj)}-{rel}-faq", text, subj))
        plant.update(planted_doc=f"{_slug(subj)}-{rel}-faq", wrong_value=wrong, true_doc=true_id)
    elif cause == "missing_document":
        task.passages = [p for p in task.passages if p.id != true_id]
        task.passages.append(Passage(f"{_slug(subj)}-{rel}-m", MENTION[rel].format(s=subj, v=val), subj))
        plant.update(removed_doc=true_id, mention_doc=f"{_slug(subj)}-{rel}-m", distractor=f"{true_id}-x")
    elif cause == "reader_error":
        wrong = wrong_value()
        for p in task.passages:
            if p.id == true_id:
                p.text = RELATIONS[rel][1].format(s=subj) + f" {val}, formerly linked to {wrong}."
        task.notes[(subj, rel)] = f"formerly linked to {wrong}"
        plant.update(marked_doc=true_id, misread_as=wrong)
    elif cause == "stale_tool_row":
        wrong = wrong_value()
        task.stale[(subj, rel)] = wrong
        plant.update(stale_row=[subj, rel], stale_value=wrong, current_value=val)
    elif cause == "planner_error":
        task.aliases[subj] = plant["linked_to"]
    return task


# --------------------------------------------------------------------------------------------
# comparison worlds: which of two films was released first
# --------------------------------------------------------------------------------------------


def compare_task(
    rng: random.Random, task_id: str, agent: str, cause: str, target: int, *, control: bool = False
) -> Task:
    """ "Which was released first, A or B?" with ``cause`` planted on film ``target`` (1: A, 2: B)."""
    names = Names(rng)
    films = {names.name(): rng.randint(1950, 2015) for _ in range(6)}
    a, b = rng.sample(list(films), 2)
    while films[a] == films[b]:
        films[b] = rng.randint(1950, 2015)
    gold = a if films[a] < films[b] else b
    question = f"Which was released first, {a} or {b}?"
    subj = a if target == 1 else b
    other_film = b if target == 1 else a
    val = str(films[subj])
    plant: dict[str, Any] = {"subject": subj, "relation": "released", "true_value": val}

    def flipping_year() -> str:
        """A year for ``subj`` that flips the comparison."""
        o = films[other_film]
        if films[subj] < o:
            return str(rng.randint(o + 1, o + 12))
        return str(rng.randint(o - 12, o - 1))

    if cause == "planner_error":
        kind = rng.choice(["extended", "vowel"])
        namesake = names.namesake(subj, kind)
        plant["namesake_kind"] = kind
        films[namesake] = int(flipping_year())
        plant.update(linked_to=namesake)
    passages: list[Passage] = []
    for f, y in films.items():
        passages.append(
            Passage(f"{_slug(f)}-released", f"{_anchored('released', f, str(y))} It ran for weeks.", f)
        )
        later = str(y + rng.randint(15, 40))
        passages.append(Passage(f"{_slug(f)}-released-x", DISTRACTOR["released"].format(s=f, v=later), f))
        passages.append(Passage(f"{_slug(f)}-cast", f"The cast of {f} toured the festival circuit.", f))
    task = Task(
        id=task_id,
        agent=agent,
        family="compare",
        cause=cause,
        hop=target,
        question=question,
        gold=gold,
        chain=[(a, "released", str(films[a])), (b, "released", str(films[b]))],
        passages=passages,
        plant=plant,
    )
    true_id = f"{_slug(subj)}-released"
    if control:
        return task
    if cause == "poisoned_document":
        wrong = flipping_year()
        q = sub_question("released", subj)
        text = f"{q} {subj} released {subj} release. {_anchored('released', subj, wrong)}"
        task.passages.append(Passage(f"{_slug(subj)}-released-faq", text, subj))
        plant.update(planted_doc=f"{_slug(subj)}-released-faq", wrong_value=wrong, true_doc=true_id)
    elif cause == "missing_document":
        task.passages = [p for p in task.passages if p.id != true_id]
        # the distractor now answers: make sure it flips the comparison
        flip = flipping_year()
        for p in task.passages:
            if p.id == f"{true_id}-x":
                p.text = DISTRACTOR["released"].format(s=subj, v=flip)
        task.passages.append(Passage(f"{true_id}-m", MENTION["released"].format(s=subj, v=val), subj))
        plant.update(removed_doc=true_id, mention_doc=f"{true_id}-m", distractor=f"{true_id}-x")
    elif cause == "reader_error":
        wrong = flipping_year()
        for p in task.passages:
            if p.id == true_id:
                p.text = f"{RELATIONS['released'][1].format(s=subj)} {val}, formerly slated for {wrong}."
        plant.update(marked_doc=true_id, misread_as=wrong)
    elif cause == "planner_error":
        task.aliases[subj] = plant["linked_to"]
    return task
