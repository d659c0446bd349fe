"""The generated world's language: relations, their paraphrase templates and the question grammar.

The generator writes passages and questions with these templates; the offline model reads
passages and questions with the same inventory (the way a language model knows that "was
established by" means "was founded by"). Nothing here is a hidden label: it is the grammar of
the text itself.

Question grammar (MuSiQue-style composition): a question is a final question form of the last
relation applied to a nested noun phrase, e.g. ``When was the employer of the founder of Velmora
Industries founded?`` = founded_in(employer(founded_by("Velmora Industries"))).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

ENTITY_TYPES = ("person", "org", "city", "country", "work", "year", "quantity")
TERMINAL_TYPES = frozenset({"year", "quantity"})


@dataclass(frozen=True)
class Relation:
    """One relation type: signature, how passages state it, and how questions ask about it."""

    name: str
    subject: str
    object: str
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    noun_phrases: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    dated_statements: tuple[str, ...] = ()
    dated: bool = False
    pronoun_ok: tuple[str, ...] = field(default=())

    @property
    def all_statements(self) -> tuple[str, ...]:
        return self.statements + self.dated_statements

    @property
    def all_queries(self) -> tuple[str, ...]:
        """Sub-query forms: the canonical question, the keyword reformulations (relation synonyms),
        then the other question forms."""
        return self.questions[:1] + self.queries + self.questions[1:]


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation(
            name="born_in",
            subject="person",
            object="city",
            statements=(
                "{s} was born in {o}.",
                "{s} is a native of {o}.",
                "{s}, {occ}, was born in {o}.",
                "{o} is the birthplace of {s}.",
                "{s} grew up in {o}, where {pron_lower} was born.",
            ),
            questions=("Where was {x} born?", "In which city was {x} born?"),
            noun_phrases=("the birthplace of {x}",),
            queries=("{x} birthplace native of", "{x} hometown born city"),
        ),
        Relation(
            name="employer",
            subject="person",
            object="org",
            statements=(
                "{s} works for {o}.",
                "{s} is employed by {o}.",
                "{s} is {occ} at {o}.",
            ),
            dated_statements=(
                "In {year}, {s} joined {o}.",
                "As of {year}, {s} worked for {o}.",
                "Since {year}, {s} has been employed by {o}.",
            ),
            dated=True,
            questions=("Which organisation does {x} work for?", "Who employs {x}?"),
            noun_phrases=("the employer of {x}",),
            queries=("{x} employer employed works for", "{x} joined organisation staff"),
        ),
        Relation(
            name="created_by",
            subject="work",
            object="person",
            statements=(
                "{s} is {kind} by {o}.",
                "{s} was created by {o}.",
                "{s} was written by {o}.",
                "{s} was directed by {o}.",
                "{s} was recorded by {o}.",
                "{s} was painted by {o}.",
                "{o} is the author of {s}.",
                "{s} is the best-known work of {o}.",
            ),
            questions=("Who created {x}?", "Who is the creator of {x}?"),
            noun_phrases=("the creator of {x}",),
            queries=("{x} author creator written by", "{x} created directed recorded painted by"),
        ),
        Relation(
            name="published_by",
            subject="work",
            object="org",
            statements=(
                "{s} was published by {o}.",
                "{o} released {s}.",
                "{s} appeared under the {o} imprint.",
            ),
            questions=("Who published {x}?", "Which company published {x}?"),
            noun_phrases=("the publisher of {x}",),
            queries=("{x} publisher released imprint", "{x} published release label"),
        ),
        Relation(
            name="founded_by",
            subject="org",
            object="person",
            statements=(
                "{s} was founded by {o}.",
                "{o} established {s}.",
                "{s} was started by {o}.",
                "{o} is the founder of {s}.",
            ),
            questions=("Who founded {x}?", "Who is the founder of {x}?"),
            noun_phrases=("the founder of {x}",),
            queries=("{x} founder established started by", "{x} founded established origins"),
        ),
        Relation(
            name="headquartered_in",
            subject="org",
            object="city",
            statements=(
                "{s} is headquartered in {o}.",
                "{s} has its head office in {o}.",
                "The headquarters of {s} are in {o}.",
            ),
            dated_statements=(
                "As of {year}, {s} had its headquarters in {o}.",
                "In {year}, {s} moved its headquarters to {o}.",
                "Since {year}, {s} has been based in {o}.",
            ),
            dated=True,
            questions=("Where is {x} headquartered?", "In which city is {x} based?"),
            noun_phrases=("the city where {x} is headquartered",),
            queries=("{x} headquarters head office based", "{x} moved headquarters city"),
        ),
        Relation(
            name="founded_in",
            subject="org",
            object="year",
            statements=(
                "{s} was founded in {o}.",
                "{s} was established in {o}.",
                "{s} dates back to {o}.",
            ),
            questions=("When was {x} founded?", "In what year was {x} founded?"),
            queries=("{x} founded year established", "{x} founding date history"),
        ),
        Relation(
            name="located_in",
            subject="city",
            object="country",
            statements=(
                "{s} is a city in {o}.",
                "{s} lies in {o}.",
                "{s} is located in {o}.",
            ),
            questions=("In which country is {x}?", "Which country is {x} in?"),
            noun_phrases=("the country where {x} is located",),
            queries=("{x} country located lies in", "{x} city nation region"),
        ),
        Relation(
            name="population",
            subject="city",
            object="quantity",
            statements=(
                "{s} has a population of {o}.",
                "{s} is home to {o} people.",
                "The population of {s} is {o}.",
            ),
            questions=("What is the population of {x}?", "How many people live in {x}?"),
            queries=("{x} population inhabitants people", "{x} home to residents census"),
        ),
        Relation(
            name="mayor",
            subject="city",
            object="person",
            statements=(
                "The mayor of {s} is {o}.",
                "{o} is the mayor of {s}.",
                "{o} serves as mayor of {s}.",
            ),
            questions=("Who is the mayor of {x}?",),
            noun_phrases=("the mayor of {x}",),
            queries=("{x} mayor serves as", "{x} city mayor leader elected"),
        ),
        Relation(
            name="capital",
            subject="country",
            object="city",
            statements=(
                "The capital of {s} is {o}.",
                "{o} is the capital of {s}.",
                "{s} has its capital at {o}.",
            ),
            questions=("What is the capital of {x}?",),
            noun_phrases=("the capital of {x}",),
            queries=("{x} capital city seat government", "{x} capital"),
        ),
    )
}

RELATIONS_BY_SUBJECT: dict[str, tuple[str, ...]] = {
    t: tuple(name for name, r in RELATIONS.items() if r.subject == t) for t in ENTITY_TYPES
}

# Profile sentences: introduce an entity (and its alias). ``{occ}``/``{kind}`` carry their article.
INTRO = {
    "person": ("{s} is {occ}.", "{s}, also known as {alias}, is {occ}."),
    "org": ("{s} is {kind}.", "{s}, also known as {alias}, is {kind}."),
    "city": ("{s} is a city.", "{s}, also known as {alias}, is a city."),
    "country": ("{s} is a country.", "{s}, also known as {alias}, is a country."),
    "work": ("{s} is {kind}.", "{s}, also known as {alias}, is {kind}."),
}
OCCUPATIONS = (
    "chemist", "novelist", "architect", "engineer", "painter", "historian", "composer",
    "economist", "film director", "physician", "sculptor", "journalist", "mathematician",
)  # fmt: skip
ORG_KIND_DESCRIPTIONS = {
    "company": "company",
    "publisher": "publishing house",
    "university": "university",
}
WORK_KINDS = ("novel", "film", "album", "painting")
WORK_VERBS = {"novel": "written", "film": "directed", "album": "recorded", "painting": "painted"}

# Chatter: sentences that mention an entity together with a relation's keywords without stating
# the fact. They compete with the fact's passage in lexical retrieval and give a reader nothing.
CHATTER: dict[str, tuple[str, ...]] = {
    "born_in": (
        "Biographers still argue about where {s} was born.",
        "{s} rarely spoke about the town where {pron_lower} was born.",
    ),
    "employer": (
        "{s} once said that the organisation one works for matters less than the work.",
        "Few colleagues knew which organisation employs {s} these days.",
    ),
    "created_by": (
        "Critics have long debated who really created {s}.",
        "The creator of {s} gave few interviews about it.",
    ),
    "published_by": (
        "{s} was nearly published by a different house.",
        "Which company published {s} first is a question collectors enjoy.",
    ),
    "founded_by": (
        "The founder of {s} is the subject of a new biography.",
        "Stories about who founded {s} circulate among its staff.",
    ),
    "headquartered_in": (
        "{s} has considered moving its headquarters several times.",
        "Where {s} should be headquartered was debated for years.",
    ),
    "founded_in": (
        "The year {s} was founded is printed on its letterhead.",
        "{s} celebrated another anniversary of the day it was founded.",
    ),
    "located_in": (
        "Travellers often ask which country {s} is in.",
        "Maps of the region show {s} near a disputed border.",
    ),
    "population": (
        "The population of {s} has grown steadily.",
        "How many people live in {s} depends on who is counting.",
    ),
    "mayor": (
        "The mayor of {s} opened a new library last spring.",
        "Every mayor of {s} has promised a new harbour.",
    ),
    "capital": (
        "The capital of {s} hosts a yearly festival.",
        "Debates about moving the capital of {s} resurface every decade.",
    ),
}

# Subjects a sentence may use instead of the entity's name; a reader resolves them to the
# passage's title.
PRONOUNS = {
    "person": ("He", "She"),
    "org": ("It", "The company"),
    "city": ("It", "The city"),
    "country": ("It", "The country"),
    "work": ("It",),
}
PRONOUN_WORDS = frozenset(
    {"he", "she", "it", "they", "the company", "the city", "the country", "the firm", "the work"}
)


# --- regular expressions -------------------------------------------------------------------
_NAME = r"[A-Z][\w\-]*(?: [A-Z][\w\-]*)*"
_SLOTS: dict[str, str] = {
    "s": rf"(?P<s>{_NAME}|The company|The city|The country)",
    "year": r"(?P<year>\d{4})",
    "occ": r"an? [a-z][a-z ]*?",
    "kind": r"an? [a-z][a-z ]*?",
    "pron_lower": r"(?:he|she|it|they)",
}
_OBJECT_SLOT = {
    "year": r"(?P<o>\d{4})",
    "quantity": r"(?P<o>\d{1,3}(?:,\d{3})+|\d+)",
}


def with_article(noun: str) -> str:
    """``"an economist"``, ``"a novel"``."""
    return f"an {noun}" if noun[:1].lower() in "aeio" else f"a {noun}"


def _template_regex(template: str, object_type: str) -> re.Pattern[str]:
    body = template.rstrip(".")
    pattern = ""
    for literal, slot in _split_template(body):
        pattern += re.escape(literal)
        if slot is None:
            continue
        if slot == "o":  # depends on the relation's object type
            pattern += _OBJECT_SLOT.get(object_type, rf"(?P<o>{_NAME})")
        else:
            pattern += _SLOTS[slot]
    return re.compile(rf"^{pattern}\.?$")


def _split_template(template: str) -> list[tuple[str, str | None]]:
    parts: list[tuple[str, str | None]] = []
    pos = 0
    for m in re.finditer(r"\{(\w+)\}", template):
        parts.append((template[pos : m.start()], m.group(1)))
        pos = m.end()
    parts.append((template[pos:], None))
    return parts


@dataclass(frozen=True)
class StatementPattern:
    relation: str
    template: str
    regex: re.Pattern[str]
    dated: bool


@cache
def statement_patterns() -> tuple[StatementPattern, ...]:
    """Every statement template of every relation, compiled to a full-sentence regex."""
    out = []
    for r in RELATIONS.values():
        for t in r.statements:
            out.append(StatementPattern(r.name, t, _template_regex(t, r.object), False))
        for t in r.dated_statements:
            out.append(StatementPattern(r.name, t, _template_regex(t, r.object), True))
    return tuple(out)


def _form_regex(form: str) -> re.Pattern[str]:
    before, after = form.split("{x}")
    return re.compile(rf"^{re.escape(before)}(?P<x>.+?){re.escape(after)}$", re.IGNORECASE)


@cache
def question_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(relation, regex) for every final question form and sub-query form."""
    out = []
    for r in RELATIONS.values():
        for form in r.all_queries:
            out.append((r.name, _form_regex(form)))
    return tuple(out)


@cache
def noun_phrase_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    out = []
    for r in RELATIONS.values():
        for form in r.noun_phrases:
            out.append((r.name, _form_regex(form)))
    return tuple(out)


def parse_noun_phrase(text: str) -> tuple[str, list[str]]:
    """Unfold a nested noun phrase into (base entity, relations innermost first)."""
    relations: list[str] = []
    current = text.strip()
    while True:
        for name, rx in noun_phrase_patterns():
            m = rx.match(current)
            if m:
                relations.append(name)
                current = m.group("x").strip()
                break
        else:
            return current, list(reversed(relations))


def chain_is_well_typed(relations: list[str]) -> bool:
    for a, b in zip(relations, relations[1:], strict=False):
        if RELATIONS[a].object != RELATIONS[b].subject:
            return False
    return True


def parse_question(text: str) -> tuple[str, list[str]] | None:
    """Parse a composed question into (base entity, relation chain in hop order), or None.

    >>> parse_question("Where was the founder of Velmora Industries born?")
    ('Velmora Industries', ['founded_by', 'born_in'])
    """
    q = " ".join(text.split())
    for name, rx in question_patterns():
        m = rx.match(q)
        if not m:
            continue
        base, inner = parse_noun_phrase(m.group("x"))
        chain = [*inner, name]
        if base and chain_is_well_typed(chain):
            return base, chain
    return None


def parse_sub_query(text: str) -> tuple[str, str] | None:
    """Parse a single-hop sub-query into (relation, subject), or None when it is not one."""
    parsed = parse_question(text)
    if parsed is None:
        return None
    base, chain = parsed
    if len(chain) != 1:
        return None
    return chain[0], base


def compose_question(base: str, relations: list[str], *, question_form: int = 0, np_form: int = 0) -> str:
    """Build the composed question for a chain of relations starting at ``base``."""
    phrase = base
    for name in relations[:-1]:
        forms = RELATIONS[name].noun_phrases
        if not forms:
            raise ValueError(f"relation {name!r} is terminal and cannot be used inside a chain")
        phrase = forms[np_form % len(forms)].format(x=phrase)
    final = RELATIONS[relations[-1]].questions
    return final[question_form % len(final)].format(x=phrase)


def sub_query(relation: str, subject: str, attempt: int = 0) -> str:
    """The ``attempt``-th way to search for ``relation`` of ``subject`` (0 = canonical question)."""
    forms = RELATIONS[relation].all_queries
    return forms[attempt % len(forms)].format(x=subject)
