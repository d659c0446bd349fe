"""The embedded default world: a seeded knowledge graph written out as passages, and multi-hop
questions composed over it the way MuSiQue composes single-hop questions.

``generate_world(n_questions=50, seed=0)`` returns a :class:`~causal_middleware.tasks.model.Dataset`:

- entities of several types (people, organisations, cities, countries, creative works) with
  invented syllable names, and literal values (years, population counts);
- relations between them (``born_in``, ``employer``, ``created_by``, ``published_by``,
  ``founded_by``, ``headquartered_in``, ``founded_in``, ``located_in``, ``population``,
  ``mayor``, ``capital``), each stated in passages with several paraphrase templates and
  relation synonyms (a literal sub-query can miss its passage);
- aliases ("Velmora Industries, also known as VLMI, ...") used in some passages instead of the
  canonical name; pronoun subjects ("She was born in ...") resolved through the passage title;
- dated facts with superseded values ("As of 2009, X had its headquarters in A." / "In 2019, X
  moved its headquarters to B."): the current value, and the gold answer, is the most recent;
- near-namesake distractor entities (one letter different, or sharing a token) with their own,
  different facts;
- 2- to 4-hop questions, each with its gold decomposition (``#k`` references), per-hop answers,
  aliases, bridge entities and supporting passage ids.

Generation is deterministic: the same arguments give byte-identical JSON. The questions and the
ids of the passages they need do not depend on ``n_passages``: background passages about extra
entities are added (with ids ``b...``) until the corpus reaches ``n_passages``.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator

from benchmarks.world.names import NameForge
from benchmarks.world.templates import (
    CHATTER,
    INTRO,
    OCCUPATIONS,
    ORG_KIND_DESCRIPTIONS,
    PRONOUNS,
    RELATIONS,
    RELATIONS_BY_SUBJECT,
    TERMINAL_TYPES,
    WORK_KINDS,
    WORK_VERBS,
    compose_question,
    with_article,
)
from causal_middleware.tasks.model import Dataset, HopGold, Passage, Question

GENERATOR_VERSION = 1
DEFAULT_HOP_MIX: dict[int, float] = {2: 0.35, 3: 0.4, 4: 0.25}
MAX_HOPS = 5


class WorldConfig(BaseModel):
    """Knobs of the generated world. The defaults are what the calibration figures refer to."""

    hop_mix: dict[int, float] = Field(
        default_factory=lambda: dict(DEFAULT_HOP_MIX),
        description="hop count -> weight; question counts are allotted by largest remainder",
    )
    alias_rate: float = Field(default=0.3, ge=0, le=1, description="share of entities that have an alias")
    alias_use: float = Field(
        default=0.45, ge=0, le=1, description="share of an aliased entity's passages naming it by alias"
    )
    alias_object_use: float = Field(
        default=0.15, ge=0, le=1, description="share of mentions as an object that use the alias"
    )
    pronoun_rate: float = Field(
        default=0.3, ge=0, le=1, description="later sentences of a passage using a pronoun subject"
    )
    history_rate: float = Field(
        default=0.5, ge=0, le=1, description="dated relations with a superseded earlier value"
    )
    distractors: float = Field(
        default=1.2, ge=0, le=5, description="near-namesakes per core entity, on average (countries get none)"
    )
    shared_token_share: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="near-namesakes sharing a name token (the rest are one letter off)",
    )
    chatter_rate: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="per relation of an entity: a passage mentioning it without stating the fact",
    )

    @field_validator("hop_mix")
    @classmethod
    def _check_hop_mix(cls, v: dict[int, float]) -> dict[int, float]:
        if not v:
            raise ValueError("hop_mix is empty; give at least one hop count, e.g. {3: 1.0}")
        for hops, weight in v.items():
            if not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
                raise ValueError(f"hop_mix key {hops!r} is not a hop count between 1 and {MAX_HOPS}")
            if weight < 0:
                raise ValueError(f"hop_mix weight for {hops} hops is negative ({weight})")
        if sum(v.values()) <= 0:
            raise ValueError("hop_mix weights sum to zero")
        return dict(sorted(v.items()))


@dataclass(slots=True)
class _Entity:
    id: int
    type: str
    name: str
    role: str  # core | namesake | background
    kind: str | None = None
    occ: str | None = None
    pronoun: str = "It"
    alias: str | None = None
    namesake_of: int | None = None
    # relation -> [(year or None, value)], oldest first; the last entry is the current value.
    facts: dict[str, list[tuple[int | None, Any]]] = field(default_factory=dict)


@dataclass(slots=True)
class _Draft:
    """A passage before ids are assigned."""

    title: str
    text: str
    date: dt.date | None
    entity: int
    relations: list[str]
    stale: bool
    alias_subject: bool


def allot_hops(n_questions: int, hop_mix: Mapping[int, float]) -> dict[int, int]:
    """Split ``n_questions`` over hop counts by largest remainder (deterministic)."""
    total = sum(hop_mix.values())
    exact = {h: n_questions * w / total for h, w in hop_mix.items()}
    counts = {h: int(x) for h, x in exact.items()}
    left = n_questions - sum(counts.values())
    for h in sorted(exact, key=lambda h: (-(exact[h] - counts[h]), h))[:left]:
        counts[h] += 1
    return counts


class _Builder:
    def __init__(self, seed: int, config: WorldConfig) -> None:
        self.seed = seed
        self.config = config
        self.rng = random.Random(f"world:{seed}:core")
        self.forge = NameForge(self.rng)
        self.entities: list[_Entity] = []
        self.pools: dict[str, list[int]] = {t: [] for t in ("person", "org", "city", "country", "work")}
        self.orgs_by_kind: dict[str, list[int]] = {k: [] for k in ORG_KIND_DESCRIPTIONS}
        self.cities_of: dict[int, list[int]] = {}

    # --- entities ------------------------------------------------------------------------
    def _new(self, etype: str, role: str, name: str | None = None, **kw: Any) -> _Entity:
        rng = self.rng
        if etype == "org":
            kind = kw.pop("kind", None) or rng.choice(list(ORG_KIND_DESCRIPTIONS))
            kw["kind"] = kind
            name = name or self.forge.org(kind)
        elif etype == "work":
            kw.setdefault("kind", rng.choice(WORK_KINDS))
            name = name or self.forge.work()
        elif etype == "person":
            kw.setdefault("occ", rng.choice(OCCUPATIONS))
            kw.setdefault("pronoun", rng.choice(("He", "She")))
            name = name or self.forge.person()
        elif etype == "city":
            name = name or self.forge.city()
        elif etype == "country":
            name = name or self.forge.country()
        if name is None:
            raise ValueError(f"unknown entity type {etype!r}")
        e = _Entity(id=len(self.entities), type=etype, name=name, role=role, **kw)
        self.entities.append(e)
        if role != "namesake":
            self.pools[etype].append(e.id)
            if etype == "org":
                self.orgs_by_kind[e.kind or "company"].append(e.id)
        return e

    def _maybe_alias(self, e: _Entity) -> None:
        if self.rng.random() >= self.config.alias_rate:
            return
        if e.type == "org":
            e.alias = self.forge.acronym(e.name)
        elif e.type == "work" and e.name.startswith("The "):
            candidate = e.name.split(" ", 2)[-1]
            e.alias = candidate if self.forge.claim(candidate) else self.forge.alias_word()
        else:
            e.alias = self.forge.alias_word()

    # --- relations -----------------------------------------------------------------------
    def _year(self, lo: int = 1820, hi: int = 2015) -> str:
        return str(self.rng.randint(lo, hi))

    def _dated(self, current: int, choices: list[int]) -> list[tuple[int | None, Any]]:
        """Current value, with a superseded earlier value for some entities."""
        rng = self.rng
        others = [c for c in choices if c != current]
        if others and rng.random() < self.config.history_rate:
            old_year = rng.randint(1960, 2008)
            new_year = rng.randint(old_year + 3, 2023)
            return [(old_year, rng.choice(others)), (new_year, current)]
        return [(None, current)]

    def _assign(self, e: _Entity, avoid: Any = None) -> None:
        rng = self.rng
        pools = self.pools

        def pick(candidates: list[int], relation: str) -> int:
            bad = avoid.get(relation) if avoid else None
            for _ in range(10):
                v = rng.choice(candidates)
                if v != bad and v != e.id:
                    return v
            return v

        if e.type == "person":
            e.facts["born_in"] = [(None, pick(pools["city"], "born_in"))]
            employers = self.orgs_by_kind["company"] + self.orgs_by_kind["university"]
            e.facts["employer"] = self._dated(pick(employers, "employer"), employers)
        elif e.type == "org":
            e.facts["founded_by"] = [(None, pick(pools["person"], "founded_by"))]
            e.facts["headquartered_in"] = self._dated(pick(pools["city"], "headquartered_in"), pools["city"])
            year = self._year()
            if avoid and avoid.get("founded_in") == year:
                year = str(int(year) + rng.randint(1, 30))
            e.facts["founded_in"] = [(None, year)]
        elif e.type == "city":
            if "located_in" not in e.facts:
                country = pick(pools["country"], "located_in")
                e.facts["located_in"] = [(None, country)]
                if e.role != "namesake":
                    self.cities_of.setdefault(country, []).append(e.id)
            population = rng.randint(5_000, 3_000_000)
            if avoid and avoid.get("population") == f"{population:,}":
                population += rng.randint(1, 999)
            e.facts["population"] = [(None, f"{population:,}")]
            e.facts["mayor"] = [(None, pick(pools["person"], "mayor"))]
        elif e.type == "country":
            cities = self.cities_of.get(e.id) or pools["city"]
            e.facts["capital"] = [(None, pick(cities, "capital"))]
        elif e.type == "work":
            e.facts["created_by"] = [(None, pick(pools["person"], "created_by"))]
            e.facts["published_by"] = [(None, pick(self.orgs_by_kind["publisher"], "published_by"))]

    def populate(self, counts: dict[str, int], role: str) -> list[_Entity]:
        """Create entities of each type, then relate them to everything created so far."""
        new: list[_Entity] = []
        for etype in ("country", "city", "person", "org", "work"):
            for i in range(counts.get(etype, 0)):
                if etype == "org":
                    kinds = list(ORG_KIND_DESCRIPTIONS)
                    # every batch has at least one publisher and one employer of each kind
                    kind = kinds[i] if i < len(kinds) else None
                    new.append(self._new(etype, role, kind=kind))
                else:
                    new.append(self._new(etype, role))
        new_countries = [e for e in new if e.type == "country"]
        for e in new:
            self._maybe_alias(e)
        cities = [e for e in new if e.type == "city"]
        for i, city in enumerate(cities):
            if i < len(new_countries):  # every new country gets at least one city
                country = new_countries[i].id
                city.facts["located_in"] = [(None, country)]
                self.cities_of.setdefault(country, []).append(city.id)
        for e in new:
            if e.type != "country":
                self._assign(e)
        for e in new_countries:
            self._assign(e)
        return new

    def add_namesakes(self, originals: list[_Entity]) -> list[_Entity]:
        """Near-namesakes of ``originals``: ``distractors`` per entity on average (a whole part plus
        a chance of one more), each sharing a name token or one letter off, with its own facts."""
        out = []
        whole, frac = divmod(self.config.distractors, 1.0)
        for orig in originals:
            if orig.type == "country":
                continue
            n = int(whole) + (1 if self.rng.random() < frac else 0)
            for _ in range(n):
                if self.rng.random() < self.config.shared_token_share:
                    name = self.forge.shared_token(
                        orig.name, orig.type, orig.kind
                    ) or self.forge.one_letter_off(orig.name)
                else:
                    name = self.forge.one_letter_off(orig.name) or self.forge.shared_token(
                        orig.name, orig.type, orig.kind
                    )
                if name is None:
                    continue
                twin = self._new(orig.type, "namesake", name=name, kind=orig.kind, namesake_of=orig.id)
                avoid = {rel: values[-1][1] for rel, values in orig.facts.items()}
                self._assign(twin, avoid=avoid)
                out.append(twin)
        return out

    # --- passages ------------------------------------------------------------------------
    def _object_text(self, value: Any, relation: str) -> str:
        if RELATIONS[relation].object in TERMINAL_TYPES:
            return str(value)
        target = self.entities[value]
        if target.alias and self.rng.random() < self.config.alias_object_use:
            return target.alias
        return target.name

    def _templates_for(self, e: _Entity, relation: str, dated: bool) -> list[str]:
        r = RELATIONS[relation]
        templates = list(r.dated_statements if dated else r.statements)
        if relation == "created_by":
            verb = WORK_VERBS.get(e.kind or "", "")
            verbs = set(WORK_VERBS.values())
            templates = [
                t
                for t in templates
                if not any(v in t and v != verb for v in verbs) and ("author" not in t or e.kind == "novel")
            ]
        return templates

    def _sentence(self, e: _Entity, template: str, subject: str, obj: str, year: int | None) -> str:
        return template.format(
            s=subject, o=obj, occ=_occ(e), kind=_kind(e), year=year, pron_lower=e.pronoun.lower()
        )

    def write(self, e: _Entity) -> list[_Draft]:
        rng = self.rng
        cfg = self.config
        drafts: list[_Draft] = []
        intro_forms = INTRO[e.type]
        intro = (intro_forms[1] if e.alias else intro_forms[0]).format(
            s=e.name, alias=e.alias, occ=_occ(e), kind=_kind(e)
        )
        static: list[tuple[str, Any]] = []
        for relation, values in e.facts.items():
            if len(values) == 1 and values[0][0] is None:
                static.append((relation, values[0][1]))
        rng.shuffle(static)
        chunks: list[list[tuple[str, Any]]] = []
        n_profile = rng.randint(0, min(1, len(static)))
        profile, rest = static[:n_profile], static[n_profile:]
        while rest:
            size = rng.randint(1, 2)
            chunks.append(rest[:size])
            rest = rest[size:]

        def render(facts: list[tuple[str, Any]], subject: str, sentences: list[str]) -> None:
            for relation, value in facts:
                template = rng.choice(self._templates_for(e, relation, dated=False))
                subj = subject
                if sentences and template.startswith("{s}") and rng.random() < cfg.pronoun_rate:
                    subj = rng.choice(PRONOUNS[e.type]) if e.type != "person" else e.pronoun
                sentences.append(self._sentence(e, template, subj, self._object_text(value, relation), None))

        sentences = [intro]
        render(profile, e.name, sentences)
        drafts.append(_Draft(e.name, " ".join(sentences), None, e.id, [r for r, _ in profile], False, False))
        for chunk in chunks:
            use_alias = bool(e.alias) and rng.random() < cfg.alias_use
            subject = e.alias if use_alias and e.alias else e.name
            sentences = []
            render(chunk, subject, sentences)
            drafts.append(
                _Draft(subject, " ".join(sentences), None, e.id, [r for r, _ in chunk], False, use_alias)
            )
        for relation, values in e.facts.items():
            if len(values) == 1 and values[0][0] is None:
                continue
            for i, (year, value) in enumerate(values):
                use_alias = bool(e.alias) and rng.random() < cfg.alias_use
                subject = e.alias if use_alias and e.alias else e.name
                template = rng.choice(self._templates_for(e, relation, dated=True))
                text = self._sentence(e, template, subject, self._object_text(value, relation), year)
                date = dt.date(year, 1, 1) if year else None
                stale = i < len(values) - 1
                drafts.append(_Draft(subject, text, date, e.id, [relation], stale, use_alias))
        chatter = [r for r in e.facts if rng.random() < cfg.chatter_rate]
        for relation in chatter:
            text = rng.choice(CHATTER[relation]).format(s=e.name, pron_lower=e.pronoun.lower())
            drafts.append(_Draft(e.name, text, None, e.id, [], False, False))
        return drafts


def _occ(e: _Entity) -> str:
    return with_article(e.occ) if e.occ else ""


def _kind(e: _Entity) -> str:
    if e.type == "org":
        return with_article(ORG_KIND_DESCRIPTIONS[e.kind or "company"])
    return with_article(e.kind) if e.kind else ""


def _entity_answer(b: _Builder, value: Any, relation: str) -> tuple[str, list[str]]:
    if RELATIONS[relation].object in TERMINAL_TYPES:
        text = str(value)
        aliases = [text.replace(",", "")] if "," in text else []
        return text, aliases
    e = b.entities[value]
    return e.name, [e.alias] if e.alias else []


def generate_world(
    n_questions: int = 50,
    *,
    seed: int = 0,
    n_passages: int | None = None,
    hop_mix: Mapping[int, float] | None = None,
    config: WorldConfig | None = None,
) -> Dataset:
    """Generate the default world: a corpus and ``n_questions`` multi-hop questions over it.

    ``n_passages`` (optional) pads the corpus with background passages up to exactly that many;
    it must be at least the number of passages the questions' world needs. ``hop_mix`` maps hop
    counts (1-5) to weights and overrides ``config.hop_mix``.
    """
    if not isinstance(n_questions, int) or n_questions < 1:
        raise ValueError(f"n_questions must be a positive integer, got {n_questions!r}")
    config = (config or WorldConfig()).model_copy()
    if hop_mix is not None:
        config = WorldConfig.model_validate({**config.model_dump(), "hop_mix": dict(hop_mix)})
    b = _Builder(seed, config)
    q = n_questions
    counts = {
        "country": max(4, round(q * 0.12)),
        "city": max(10, round(q * 0.7)),
        "person": max(16, round(q * 1.3)),
        "org": max(12, round(q * 0.65)),
        "work": max(8, round(q * 0.5)),
    }
    core = b.populate(counts, "core")
    namesakes = b.add_namesakes(core)

    # --- questions -----------------------------------------------------------------------
    allotment = allot_hops(n_questions, config.hop_mix)
    chains: list[tuple[_Entity, list[tuple[str, Any]]]] = []
    seen: set[tuple[int, tuple[str, ...]]] = set()
    starts = [e for e in core if RELATIONS_BY_SUBJECT[e.type]]
    for n_hops, wanted in allotment.items():
        made = 0
        attempts = 0
        while made < wanted:
            attempts += 1
            if attempts > 2000 * max(1, wanted):
                raise ValueError(
                    f"could not compose {wanted} distinct {n_hops}-hop questions from this world; "
                    "lower n_questions or the weight of that hop count"
                )
            start = b.rng.choice(starts)
            chain = _walk(b, start, n_hops)
            if chain is None:
                continue
            key = (start.id, tuple(r for r, _ in chain))
            if key in seen:
                continue
            seen.add(key)
            chains.append((start, chain))
            made += 1

    # --- passages ------------------------------------------------------------------------
    drafts: list[_Draft] = []
    for e in core + namesakes:
        drafts.extend(b.write(e))
    b.rng.shuffle(drafts)
    core_passages = [_to_passage(d, f"p{i:06d}", b) for i, d in enumerate(drafts)]
    fact_index: dict[tuple[int, str], list[str]] = {}
    stale_index: dict[tuple[int, str], list[str]] = {}
    alias_subject: set[str] = set()
    by_entity: dict[int, list[str]] = {}
    for d, p in zip(drafts, core_passages, strict=True):
        by_entity.setdefault(d.entity, []).append(p.id)
        if d.alias_subject:
            alias_subject.add(p.id)
        for relation in d.relations:
            target = stale_index if d.stale else fact_index
            target.setdefault((d.entity, relation), []).append(p.id)

    twins: dict[int, list[int]] = {}
    for twin in namesakes:
        if twin.namesake_of is not None:
            twins.setdefault(twin.namesake_of, []).append(twin.id)
    questions = []
    for i, (start, chain) in enumerate(chains):
        relations = [r for r, _ in chain]
        text = compose_question(start.name, relations, question_form=b.rng.randrange(2))
        hops: list[HopGold] = []
        subject = start
        stale_ids: list[str] = []
        distractor_ids: list[str] = []
        entities = [start.name]
        for k, (relation, value) in enumerate(chain, start=1):
            answer, aliases = _entity_answer(b, value, relation)
            support = fact_index[(subject.id, relation)]
            stale_ids += stale_index.get((subject.id, relation), [])
            for twin_id in twins.get(subject.id, []):
                distractor_ids += by_entity.get(twin_id, [])
            hops.append(
                HopGold(
                    index=k,
                    question=RELATIONS[relation].questions[0].format(x=start.name if k == 1 else f"#{k - 1}"),
                    answer=answer,
                    aliases=aliases,
                    bridge_entity=answer if k < len(chain) else None,
                    supporting_passage_ids=list(support),
                    relation=relation,
                )
            )
            entities.append(answer)
            if RELATIONS[relation].object not in TERMINAL_TYPES:
                subject = b.entities[value]
        questions.append(
            Question(
                id=f"q{i:04d}",
                text=text,
                answer=hops[-1].answer,
                aliases=hops[-1].aliases,
                hops=hops,
                dataset="world",
                metadata={
                    "relations": relations,
                    "entities": entities,
                    "stale_passage_ids": stale_ids,
                    "distractor_passage_ids": distractor_ids,
                    "alias_subject_hops": [
                        h.index for h in hops if any(pid in alias_subject for pid in h.supporting_passage_ids)
                    ],
                },
            )
        )

    passages = core_passages
    if n_passages is not None:
        if n_passages < len(core_passages):
            raise ValueError(
                f"n_passages={n_passages} is smaller than the {len(core_passages)} passages that "
                f"{n_questions} questions need; pass n_passages >= {len(core_passages)} or None"
            )
        passages = core_passages + _background(b, n_passages - len(core_passages))
        random.Random(f"world:{seed}:order").shuffle(passages)

    return Dataset(
        name=f"world-s{seed}",
        passages=passages,
        questions=questions,
        seed=seed,
        metadata={
            "generator": "benchmarks.world.generator",
            "generator_version": GENERATOR_VERSION,
            "n_questions": n_questions,
            "n_passages": len(passages),
            "n_core_passages": len(core_passages),
            "hop_counts": {str(h): c for h, c in allotment.items()},
            "config": config.model_dump(mode="json"),
        },
    )


def _walk(b: _Builder, start: _Entity, n_hops: int) -> list[tuple[str, Any]] | None:
    visited = {start.id}
    current = start
    chain: list[tuple[str, Any]] = []
    for k in range(n_hops):
        relations = list(RELATIONS_BY_SUBJECT[current.type])
        if k < n_hops - 1:
            relations = [r for r in relations if RELATIONS[r].object not in TERMINAL_TYPES]
        if not relations:
            return None
        relation = b.rng.choice(relations)
        value = current.facts[relation][-1][1]
        chain.append((relation, value))
        if RELATIONS[relation].object in TERMINAL_TYPES:
            continue
        if value in visited:
            return None
        visited.add(value)
        current = b.entities[value]
    return chain


def _to_passage(d: _Draft, pid: str, b: _Builder) -> Passage:
    e = b.entities[d.entity]
    meta: dict[str, Any] = {"entity": e.name, "type": e.type, "role": e.role, "relations": d.relations}
    if d.stale:
        meta["stale"] = True
    return Passage(id=pid, title=d.title, text=d.text, date=d.date, metadata=meta)


def _background(b: _Builder, n: int) -> list[Passage]:
    """``n`` passages about extra entities related to the core world and to each other."""
    b.rng = random.Random(f"world:{b.seed}:background")
    b.forge.rng = b.rng
    batch = {"country": 2, "city": 12, "person": 24, "org": 12, "work": 10}
    out: list[Passage] = []
    while len(out) < n:
        for e in b.populate(batch, "background"):
            for d in b.write(e):
                out.append(_to_passage(d, f"b{len(out):06d}", b))
                if len(out) == n:
                    return out
    return out
