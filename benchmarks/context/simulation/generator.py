"""The simulation benchmark generator: context sources -> fault definitions -> execution traces.

For each trace the generator plants one fault in a copy of the domain's workspace, then writes a
session against that workspace: every tool output is an exact copy of a workspace file (KB search
results come from a real BM25 search over the faulty workspace), the agent answers from what it
retrieved, and the user reacts. Ground truth records the fault, the root node (the first node that
retrieved or used the faulty content), attributions summing to 1 and the expected fix. Six fault
categories, complexity tiers of 2-8, 9-11 and 15-16 nodes, seeded.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.context.simulation.domain import Domain, Fact, Skill, Tool
from benchmarks.context.simulation.domains import get_domain
from benchmarks.context.simulation.render import (
    AUTHORS,
    base_files,
    fact_path,
    front,
    render_fact,
    render_skill,
    render_system_prompt,
    render_tool,
    skill_path,
)
from benchmarks.context.simulation.schema import (
    TIERS,
    Benchmark,
    ExpectedFix,
    FaultSpec,
    GroundTruth,
    SimTrace,
)
from benchmarks.context.simulation.session import SessionBuilder
from causal_middleware.context.conversation import NodeType
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.root_cause import CATEGORY_COMPONENT, FaultCategory
from causal_middleware.context.workspace import (
    SYSTEM_PROMPT_PATH,
    Workspace,
    split_front_matter,
    tool_prompt_path,
)

CATEGORY_ORDER = (
    FaultCategory.KB_CONTENT_STALE,
    FaultCategory.KB_CONTENT_GAP,
    FaultCategory.RETRIEVAL_FAILURE,
    FaultCategory.SKILL_FILE_STALE,
    FaultCategory.TOOL_PROMPT_ERROR,
    FaultCategory.SYSTEM_PROMPT_GAP,
)
AUTHORITY_VARIANTS = ("supersession", "status", "hierarchy", "recency", "ownership")


class GenerationError(RuntimeError):
    """The generator could not build a trace that satisfies its own constraints."""


def generate_benchmark(
    domain: str | Domain = "finance",
    *,
    seed: int = 0,
    n_dissatisfied: int = 60,
    n_control: int = 15,
) -> Benchmark:
    """A seeded benchmark: ``n_dissatisfied`` faulty traces (categories in turn) and ``n_control`` clean ones."""
    dom = get_domain(domain) if isinstance(domain, str) else domain
    if n_dissatisfied < 0 or n_control < 0:
        raise ValueError(
            f"trace counts must be >= 0, got n_dissatisfied={n_dissatisfied}, n_control={n_control}"
        )
    base = base_files(dom, seed)
    traces = [_dissatisfied(dom, seed, i, base) for i in range(n_dissatisfied)]
    traces += [_control(dom, seed, j, base) for j in range(n_control)]
    return Benchmark(domain=dom.name, seed=seed, base_files=base, traces=traces)


# --- scenarios --------------------------------------------------------------------------------


@dataclass
class _Scenario:
    category: FaultCategory
    variant: str
    changes: dict[str, str | None]
    faulty_path: str | None
    faulty_text: str | None
    correct_text: str
    fix: ExpectedFix
    core: Callable[[SessionBuilder], None]
    ack: str
    avoid: set[str] = field(default_factory=set)
    description: str = ""
    fault_turn: int = 0
    boundary: str = ""


def _pick(rng: random.Random, items: list) -> object:
    return items[rng.randrange(len(items))]


def _query(rng: random.Random, subject: str, question: str) -> list[str]:
    """Search queries the simulated agent may use, preferred first."""
    forms = [subject, question.rstrip("?")]
    return forms if rng.random() < 0.7 else forms[::-1]


def _answer(rng: random.Random, dom: Domain, sentence: str) -> str:
    prefix = str(_pick(rng, dom.phrasing.answer_prefixes))
    return prefix + (sentence[0].lower() + sentence[1:] if prefix and not prefix.endswith(". ") else sentence)


def _top(ws: Workspace, query: str) -> str | None:
    hits = ws.search_kb(query, k=3)
    return hits[0].path if hits else None


def _kb_stale(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    fact: Fact = _pick(rng, dom.facts)  # type: ignore[assignment]
    stale = str(_pick(rng, fact.stale))
    path = fact_path(fact)
    healthy = base[path]
    right_claim, stale_claim = fact.claim.format(value=fact.value), fact.claim.format(value=stale)
    roll = rng.random()
    changes: dict[str, str | None]
    if roll < 0.4:
        variant = "delete:" + str(_pick(rng, list(AUTHORITY_VARIANTS)))
        rule = variant.split(":")[1]
        meta, _ = split_front_matter(healthy)
        year = int(str(meta["modified"])[:4])
        dup_id = f"kb-{fact.key}-{year - 1}"
        archived = rng.random() < 0.5
        dup_path = f"kb/archive/{fact.key}.md" if archived else f"kb/{fact.section}/{fact.key}-{year - 1}.md"
        dup_meta = {"status": "official", "level": "department", "owner": "knowledge-team"}
        cur_meta = dict(dup_meta)
        dup_date, cur_date = f"{year - 1}-05-14", str(meta["modified"])
        supersedes = None
        if rule == "supersession":
            supersedes = [dup_id]
        elif rule == "status":
            dup_meta["status"] = str(_pick(rng, ["draft", "deprecated"]))
            dup_date = f"{year}-12-20"
        elif rule == "hierarchy":
            dup_meta["level"] = "team"
            dup_date = f"{year}-12-20"
        elif rule == "ownership":
            dup_meta["owner"] = None  # type: ignore[assignment]
            dup_date = cur_date
        current = render_fact(
            fact,
            fact.value,
            modified=cur_date,
            author=str(meta.get("author")),
            version=int(meta.get("version", 3)),
            status=cur_meta["status"],
            level=cur_meta["level"],
            owner=cur_meta["owner"],
            supersedes=supersedes,
        )
        dup = render_fact(
            fact,
            stale,
            modified=dup_date,
            author=str(_pick(rng, list(AUTHORS))),
            version=1,
            status=dup_meta["status"],
            level=dup_meta["level"],
            owner=dup_meta["owner"],
            title=f"{fact.title} ({year - 1})",
            entry_id=dup_id,
            extra=False,
        )
        changes = {path: current, dup_path: dup}
        faulty, fix = (
            dup_path,
            ExpectedFix(
                operation=Operation.DELETE,
                target_path=dup_path,
                authoritative_source=path,
                authority_rule=rule,
            ),
        )
    else:
        changes = {path: healthy.replace(right_claim, stale_claim)}
        faulty = path
        if roll < 0.7:
            variant = "announcement"
            meta, _ = split_front_matter(healthy)
            year = int(str(meta["modified"])[:4]) + 1
            month = rng.choice(["January", "February", "March", "April", "May", "June"])
            ann_path = f"kb/announcements/{fact.section}-update-{month.lower()}-{year}.md"
            ann = (
                front(
                    {
                        "id": f"ann-{fact.section}-{month.lower()}-{year}",
                        "title": f"{fact.section.capitalize()} update, {month} {year}",
                        "modified": f"{year}-{dt.datetime.strptime(month, '%B').month:02d}-01",
                        "author": _pick(rng, list(AUTHORS)),
                        "status": "official",
                        "owner": "communications",
                        "level": "department",
                    }
                )
                + f"# {fact.section.capitalize()} update, {month} {year}\n\nEffective {month} 1, {year}: {right_claim[0].lower() + right_claim[1:]}\n"
            )
            changes[ann_path] = ann
            fix = ExpectedFix(
                operation=Operation.UPDATE,
                target_path=path,
                authoritative_source=ann_path,
                authority_rule="recency",
            )
        else:
            variant = "update"
            fix = ExpectedFix(operation=Operation.UPDATE, target_path=path)
    ws = Workspace.from_files(base).with_changes(changes)
    question = str(_pick(rng, fact.questions))
    queries = [q for q in _query(rng, fact.subject, question) if _top(ws, q) == faulty]
    if not queries:
        return None
    earlier = (
        variant in ("update", "announcement")
        and fact.extra_question is not None
        and rng.random() < 0.35
        and _top(ws, fact.extra_question.rstrip("?")) == faulty
    )
    double_read = rng.random() < 0.3
    reasoning = rng.random() < 0.5
    phr = dom.phrasing
    sc = _Scenario(
        category=FaultCategory.KB_CONTENT_STALE,
        variant=variant + ("+earlier" if earlier else "") + ("+reread" if double_read else ""),
        changes=changes,
        faulty_path=faulty,
        faulty_text=stale,
        correct_text=fact.value,
        fix=fix,
        core=lambda b: None,
        ack=str(_pick(rng, phr.acknowledgements)).format(subject=fact.subject, expected=fact.value),
        avoid={faulty},
        description=f"{faulty} states the {fact.subject} as {stale} (now {fact.value})",
    )
    correction = str(_pick(rng, phr.stale_corrections)).format(
        expected=fact.value, got=stale, subject=fact.subject
    )

    def core(b: SessionBuilder) -> None:
        if earlier:
            b.user(str(fact.extra_question))
            b.search(str(fact.extra_question).rstrip("?"))
            b.agent(_answer(rng, dom, fact.extra[0]))
            b.user(question)
            sc.fault_turn = b.turn
            b.reasoning(f"The {fact.title} entry I retrieved earlier covers this.")
        else:
            b.user(question)
            sc.fault_turn = b.turn
            if reasoning:
                b.reasoning(str(_pick(rng, phr.reasoning)).format(subject=fact.subject))
            b.search(queries[0])
            if double_read:
                b.read_entry(faulty)
        b.agent(_answer(rng, dom, stale_claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _kb_gap(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    fact: Fact = _pick(rng, dom.facts)  # type: ignore[assignment]
    path = fact_path(fact)
    changes: dict[str, str | None] = {path: None}
    ws = Workspace.from_files(base).with_changes(changes)
    question = str(_pick(rng, fact.questions))
    query = _query(rng, fact.subject, question)[0]
    phr = dom.phrasing
    reasoning = rng.random() < 0.5
    sc = _Scenario(
        category=FaultCategory.KB_CONTENT_GAP,
        variant="gap",
        changes=changes,
        faulty_path=None,
        faulty_text=None,
        correct_text=fact.value,
        fix=ExpectedFix(operation=Operation.CREATE, target_path=path),
        core=lambda b: None,
        ack=str(_pick(rng, phr.acknowledgements)).format(subject=fact.subject, expected=fact.value),
        description=f"the knowledge base has no entry on the {fact.subject}",
    )
    correction = str(_pick(rng, phr.gap_corrections)).format(expected=fact.value, subject=fact.subject)
    del ws

    def core(b: SessionBuilder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(str(_pick(rng, phr.reasoning)).format(subject=fact.subject))
        b.search(query)
        b.agent(str(_pick(rng, phr.gap_replies)).format(subject=fact.subject))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _retrieval_failure(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    ws = Workspace.from_files(base)
    by_path = {fact_path(f): f for f in dom.facts}
    options = []
    for fact in dom.facts:
        for alias in fact.alias_questions:
            hits = ws.search_kb(alias.rstrip("?"), k=3)
            paths = [h.path for h in hits]
            # A plausible confusion: the search lands on another entry of the same section.
            if (
                paths
                and paths[0] in by_path
                and paths[0] != fact_path(fact)
                and by_path[paths[0]].section == fact.section
            ):
                options.append((fact, alias, by_path[paths[0]]))
    if not options:
        raise GenerationError(f"domain {dom.name!r}: no alias question routes the search to another entry")
    fact, alias, decoy = options[rng.randrange(len(options))]
    phr = dom.phrasing
    decoy_claim = decoy.claim.format(value=decoy.value)
    sc = _Scenario(
        category=FaultCategory.RETRIEVAL_FAILURE,
        variant="alias",
        changes={},
        faulty_path=fact_path(decoy),
        faulty_text=decoy.value,
        correct_text=fact.value,
        fix=ExpectedFix(
            operation=Operation.UPDATE,
            target_path=fact_path(fact),
            authoritative_source=fact_path(fact),
            authority_rule="only",
        ),
        core=lambda b: None,
        ack=str(_pick(rng, phr.acknowledgements)).format(subject=fact.subject, expected=fact.value),
        avoid={fact_path(decoy), fact_path(fact)},
        description=f"'{alias}' retrieves {fact_path(decoy)} instead of {fact_path(fact)}",
    )
    correction = str(_pick(rng, phr.rf_corrections)).format(expected=fact.value, subject=fact.subject)
    reasoning = rng.random() < 0.5

    def core(b: SessionBuilder) -> None:
        b.user(alias)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning("Let me search the knowledge base for that.")
        b.search(alias.rstrip("?"))
        b.agent(_answer(rng, dom, decoy_claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _skill_stale(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    skill: Skill = _pick(rng, dom.skills)  # type: ignore[assignment]
    stale = str(_pick(rng, skill.stale))
    path = skill_path(skill)
    meta, _ = split_front_matter(base[path])
    changes: dict[str, str | None] = {path: render_skill(skill, stale, modified=str(meta["modified"]))}
    fix = ExpectedFix(operation=Operation.UPDATE, target_path=path)
    variant = "skill"
    if rng.random() < 0.5:
        policy_path = f"kb/policies/{skill.name}.md"
        claim = skill.claim.format(value=skill.value)
        changes[policy_path] = (
            front(
                {
                    "id": f"policy-{skill.name}",
                    "title": f"{skill.title} policy",
                    "modified": "2025-02-03",
                    "author": _pick(rng, list(AUTHORS)),
                    "status": "official",
                    "owner": "compliance",
                    "level": "organization",
                }
            )
            + f"# {skill.title} policy\n\n{claim}\n"
        )
        fix = ExpectedFix(
            operation=Operation.UPDATE,
            target_path=path,
            authoritative_source=policy_path,
            authority_rule="hierarchy",
        )
        variant = "skill+policy"
    phr = dom.phrasing
    question = str(_pick(rng, skill.questions))
    stale_claim = skill.claim.format(value=stale)
    templates = [t for t in phr.stale_corrections if "{subject}" not in t]
    correction = str(_pick(rng, templates)).format(expected=skill.value, got=stale)
    reasoning = rng.random() < 0.6
    sc = _Scenario(
        category=FaultCategory.SKILL_FILE_STALE,
        variant=variant,
        changes=changes,
        faulty_path=path,
        faulty_text=stale,
        correct_text=skill.value,
        fix=fix,
        core=lambda b: None,
        ack=f"You're right, I apologize: {skill.claim.format(value=skill.value)[0].lower() + skill.claim.format(value=skill.value)[1:]}",
        avoid={path},
        description=f"{path} states {stale} (now {skill.value})",
    )

    def core(b: SessionBuilder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(f"This is covered by the {skill.title.lower()} procedure.")
        b.read_skill(skill.name, path)
        b.agent(_answer(rng, dom, stale_claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _tool_args(tool: Tool, literal: str) -> dict[str, str]:
    return {k.replace("{literal}", literal): v.replace("{literal}", literal) for k, v in tool.args.items()}


def _tool_error(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    tool: Tool = _pick(rng, dom.tools)  # type: ignore[assignment]
    wrong = str(_pick(rng, tool.wrong))
    path = tool_prompt_path(tool.name)
    meta, _ = split_front_matter(base[path])
    changes: dict[str, str | None] = {path: render_tool(tool, wrong, modified=str(meta["modified"]))}
    phr = dom.phrasing
    request = str(_pick(rng, tool.requests))
    retry = rng.random() < 0.4
    reasoning = rng.random() < 0.5
    error = tool.error.replace("{wrong}", wrong).replace(
        "{right}", tool.right
    )  # errors may contain JSON braces
    sc = _Scenario(
        category=FaultCategory.TOOL_PROMPT_ERROR,
        variant="tool" + ("+retry" if retry else ""),
        changes=changes,
        faulty_path=path,
        faulty_text=wrong,
        correct_text=tool.right,
        fix=ExpectedFix(operation=Operation.UPDATE, target_path=path),
        core=lambda b: None,
        ack="I'm sorry about that. I've reported the problem so it can be fixed.",
        avoid={path},
        description=f"{path} documents {wrong!r}; the tool expects {tool.right!r}",
    )
    complaint = str(_pick(rng, phr.tool_complaints))

    def core(b: SessionBuilder) -> None:
        b.user(request)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(f"I'll use {tool.name} for this.")
        b.call_tool(tool.name, _tool_args(tool, wrong), error, error=True)
        if retry:
            b.call_tool(tool.name, _tool_args(tool, wrong), error, error=True)
        b.agent(str(_pick(rng, phr.tool_failure_replies)))
        sc.boundary = b.user(complaint).id

    sc.core = core
    return sc


def _system_gap(dom: Domain, rng: random.Random, base: dict[str, str]) -> _Scenario | None:
    index = rng.randrange(len(dom.policies))
    policy = dom.policies[index]
    changes: dict[str, str | None] = {SYSTEM_PROMPT_PATH: render_system_prompt(dom, skip_policy=index)}
    question = str(_pick(rng, policy.questions))
    correction = str(_pick(rng, policy.corrections))
    search = rng.random() < 0.4
    sc = _Scenario(
        category=FaultCategory.SYSTEM_PROMPT_GAP,
        variant="policy",
        changes=changes,
        faulty_path=SYSTEM_PROMPT_PATH,
        faulty_text=None,
        correct_text=policy.instruction,
        fix=ExpectedFix(operation=Operation.UPDATE, target_path=SYSTEM_PROMPT_PATH),
        core=lambda b: None,
        ack="You're right, I'm sorry. " + policy.good_reply,
        avoid=set(),
        description=f"the system prompt lacks: {policy.instruction}",
    )

    def core(b: SessionBuilder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if search:
            b.search(question.rstrip("?"))
        b.agent(policy.bad_reply)
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


SCENARIOS: dict[FaultCategory, Callable[[Domain, random.Random, dict[str, str]], _Scenario | None]] = {
    FaultCategory.KB_CONTENT_STALE: _kb_stale,
    FaultCategory.KB_CONTENT_GAP: _kb_gap,
    FaultCategory.RETRIEVAL_FAILURE: _retrieval_failure,
    FaultCategory.SKILL_FILE_STALE: _skill_stale,
    FaultCategory.TOOL_PROMPT_ERROR: _tool_error,
    FaultCategory.SYSTEM_PROMPT_GAP: _system_gap,
}


# --- fillers ----------------------------------------------------------------------------------


@dataclass
class _Filler:
    fact: Fact
    question: str
    query: str
    reasoning: bool
    opener: str


def _fillers(
    dom: Domain, rng: random.Random, ws: Workspace, avoid: set[str], exclude: set[str]
) -> list[_Filler]:
    """Normal question-and-answer turns about healthy facts whose search does not touch ``avoid``."""
    out = []
    facts = [f for f in dom.facts if f.key not in exclude]
    rng.shuffle(facts)
    for fact in facts:
        path = fact_path(fact)
        if path in avoid or not ws.exists(path) or fact.value not in ws.read(path):
            continue
        question = str(_pick(rng, fact.questions))
        for query in _query(rng, fact.subject, question):
            hits = [h.path for h in ws.search_kb(query, k=3)]
            if hits and hits[0] == path and not (set(hits) & avoid):
                out.append(
                    _Filler(
                        fact,
                        question,
                        query,
                        rng.random() < 0.4,
                        str(_pick(rng, dom.phrasing.control_openers)),
                    )
                )
                break
    return out


def _qa(b: SessionBuilder, rng: random.Random, dom: Domain, f: _Filler, *, first: bool) -> None:
    b.user(f.question if first else f.opener.format(question=f.question))
    if f.reasoning:
        b.reasoning(str(_pick(rng, dom.phrasing.reasoning)).format(subject=f.fact.subject))
    b.search(f.query)
    b.agent(_answer(rng, dom, f.fact.claim.format(value=f.fact.value)))


def _plans(
    core_size: int, tier: int, n_fillers: int, post_options: dict[str, int]
) -> list[tuple[tuple[int, ...], str]]:
    """(pre-filler sizes, post option) combinations whose total lands in the tier's range."""
    lo, hi = TIERS[tier]
    plans = []
    for n_pre in range(0, min(3, n_fillers) + 1):
        for sizes in itertools.product((3, 4), repeat=n_pre):
            for post, size in post_options.items():
                need_filler = 1 if "filler" in post else 0
                if n_pre + need_filler > n_fillers:
                    continue
                total = 1 + core_size + sum(sizes) + size
                if lo <= total <= hi:
                    plans.append((sizes, post))
    return plans


def _build(
    dom: Domain,
    rng: random.Random,
    sid: str,
    ws: Workspace,
    core: Callable[[SessionBuilder], None],
    pre: list[_Filler],
    post: str,
    post_filler: _Filler | None,
    ack: str,
) -> SessionBuilder:
    b = SessionBuilder(sid, ws)
    b.system()
    for i, f in enumerate(pre):
        _qa(b, rng, dom, f, first=i == 0)
    core(b)
    phr = dom.phrasing
    if post.startswith("ack"):
        b.agent(ack)
    if "filler" in post and post_filler is not None:
        _qa(b, rng, dom, post_filler, first=False)
    if "thanks" in post:
        b.user(str(_pick(rng, phr.thanks)))
    if "welcome" in post:
        b.agent(str(_pick(rng, phr.welcome)))
    if post == "giveup":
        b.user(str(_pick(rng, phr.give_up)))
    return b


_POST_DISSATISFIED = {
    "none": 0,
    "giveup": 1,
    "ack": 1,
    "ack+thanks": 2,
    "ack+thanks+welcome": 3,
    "ack+filler3": 4,
    "ack+filler4": 5,
    "ack+filler3+thanks": 5,
    "ack+filler4+thanks": 6,
}


def _dissatisfied(dom: Domain, seed: int, i: int, base: dict[str, str]) -> SimTrace:
    category = CATEGORY_ORDER[i % len(CATEGORY_ORDER)]
    tier = (i // len(CATEGORY_ORDER)) % 3 + 1
    rng = random.Random(f"{dom.name}:{seed}:d{i}")
    sid = f"{dom.name}-s{seed}-{i:03d}"
    for _ in range(200):
        sc = SCENARIOS[category](dom, rng, base)
        if sc is None:
            continue
        ws = Workspace.from_files(base).with_changes(sc.changes)
        probe = SessionBuilder(sid, ws)
        state = rng.getstate()
        sc.core(probe)
        rng.setstate(state)
        core_size = len(probe.nodes)
        exclude = {p.split("/")[-1].removesuffix(".md") for p in sc.changes} | {
            p.split("/")[-1].removesuffix(".md") for p in sc.avoid
        }
        fillers = _fillers(dom, rng, ws, sc.avoid, exclude)
        plans = _plans(core_size, tier, len(fillers), _POST_DISSATISFIED)
        if not plans:
            continue
        sizes, post = plans[rng.randrange(len(plans))]
        pre = [fillers[k] for k in range(len(sizes))]
        for f, size in zip(pre, sizes, strict=True):
            f.reasoning = size == 4
        post_filler = fillers[len(sizes)] if "filler" in post else None
        if post_filler is not None:
            post_filler.reasoning = "filler4" in post
        b = _build(dom, rng, sid, ws, sc.core, pre, post, post_filler, sc.ack)
        conv = b.build()
        gt = _ground_truth(dom, seed, sid, tier, conv, sc)
        return SimTrace(conversation=conv, ground_truth=gt, workspace_changes=sc.changes)
    raise GenerationError(f"could not build a {category} trace of tier {tier} for domain {dom.name!r}")


def _ground_truth(dom: Domain, seed: int, sid: str, tier: int, conv, sc: _Scenario) -> GroundTruth:  # type: ignore[no-untyped-def]
    nodes = conv.nodes
    boundary = conv.index(sc.boundary)
    if sc.faulty_path is not None:
        root = next(n for n in nodes if sc.faulty_path in n.sources)
    else:
        root = next(n for n in nodes if n.type == NodeType.KB_RETRIEVAL and n.turn == sc.fault_turn)
    start = conv.index(root.id)
    propagation = []
    for n in nodes[start + 1 : boundary]:
        if (
            n.type in (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP, NodeType.TOOL_CALL)
            and sc.faulty_path in n.sources
        ):
            propagation.append(n.id)
        elif n.type in (NodeType.AGENT, NodeType.REASONING) and n.turn == sc.fault_turn:
            propagation.append(n.id)
    attributions = (
        {root.id: 1.0}
        if not propagation
        else {root.id: 0.6, **{p: round(0.4 / len(propagation), 6) for p in propagation}}
    )
    fault = FaultSpec(
        category=sc.category,
        variant=sc.variant,
        faulty_path=sc.faulty_path,
        faulty_text=sc.faulty_text,
        correct_text=sc.correct_text,
        fault_turn=sc.fault_turn,
        description=sc.description,
    )
    return GroundTruth(
        trace_id=sid,
        domain=dom.name,
        seed=seed,
        dissatisfied=True,
        tier=tier,
        n_nodes=len(nodes),
        fault=fault,
        root_node_id=root.id,
        attributions=attributions,
        component_type=CATEGORY_COMPONENT[sc.category],
        component_path=sc.fix.target_path
        if sc.category in (FaultCategory.KB_CONTENT_GAP, FaultCategory.RETRIEVAL_FAILURE)
        else sc.faulty_path,
        fix=sc.fix,
    )


# --- controls ---------------------------------------------------------------------------------

_POST_CONTROL = {
    "none": 0,
    "thanks": 1,
    "thanks+welcome": 2,
    "filler3": 3,
    "filler4": 4,
    "filler3+thanks": 4,
    "filler4+thanks": 5,
}


def _control(dom: Domain, seed: int, j: int, base: dict[str, str]) -> SimTrace:
    tier = j % 3 + 1
    rng = random.Random(f"{dom.name}:{seed}:c{j}")
    sid = f"{dom.name}-s{seed}-c{j:02d}"
    ws = Workspace.from_files(base)
    kind = ("fact", "skill", "tool", "policy")[j % 4]
    for _ in range(200):
        core, exclude = _control_core(dom, rng, ws, kind)
        probe = SessionBuilder(sid, ws)
        state = rng.getstate()
        core(probe)
        rng.setstate(state)
        fillers = _fillers(dom, rng, ws, set(), exclude)
        plans = _plans(len(probe.nodes), tier, len(fillers), _POST_CONTROL)
        if not plans:
            continue
        sizes, post = plans[rng.randrange(len(plans))]
        pre = fillers[: len(sizes)]
        for f, size in zip(pre, sizes, strict=True):
            f.reasoning = size == 4
        b = SessionBuilder(sid, ws)
        b.system()
        for k, f in enumerate(pre):
            _qa(b, rng, dom, f, first=k == 0)
        core(b)
        if "filler" in post:
            pf = fillers[len(sizes)]
            pf.reasoning = "filler4" in post
            _qa(b, rng, dom, pf, first=False)
        if "thanks" in post:
            b.user(str(_pick(rng, dom.phrasing.thanks)))
        if "welcome" in post:
            b.agent(str(_pick(rng, dom.phrasing.welcome)))
        conv = b.build()
        gt = GroundTruth(
            trace_id=sid, domain=dom.name, seed=seed, dissatisfied=False, tier=tier, n_nodes=len(conv.nodes)
        )
        return SimTrace(conversation=conv, ground_truth=gt)
    raise GenerationError(f"could not build a control trace of tier {tier} for domain {dom.name!r}")


def _control_core(
    dom: Domain, rng: random.Random, ws: Workspace, kind: str
) -> tuple[Callable[[SessionBuilder], None], set[str]]:
    phr = dom.phrasing
    if kind == "skill":
        skill: Skill = _pick(rng, dom.skills)  # type: ignore[assignment]
        question = str(_pick(rng, skill.questions))

        def skill_core(b: SessionBuilder) -> None:
            b.user(question)
            b.read_skill(skill.name, skill_path(skill))
            b.agent(_answer(rng, dom, skill.claim.format(value=skill.value)))

        return skill_core, set()
    if kind == "tool":
        tool: Tool = _pick(rng, dom.tools)  # type: ignore[assignment]
        request = str(_pick(rng, tool.requests))

        def tool_core(b: SessionBuilder) -> None:
            b.user(request)
            b.reasoning(f"I'll use {tool.name} for this.")
            b.call_tool(tool.name, _tool_args(tool, tool.right), tool.success, error=False)
            b.agent(tool.done_reply)

        return tool_core, set()
    if kind == "policy":
        policy = dom.policies[rng.randrange(len(dom.policies))]
        question = str(_pick(rng, policy.questions))

        def policy_core(b: SessionBuilder) -> None:
            b.user(question)
            b.agent(policy.good_reply)

        return policy_core, set()
    fact: Fact = _pick(rng, dom.facts)  # type: ignore[assignment]
    question = str(_pick(rng, fact.questions))
    query = _query(rng, fact.subject, question)[0]
    extra = fact.extra_question if fact.extra_question and rng.random() < 0.5 else None

    def core(b: SessionBuilder) -> None:
        b.user(question)
        b.search(query)
        b.agent(_answer(rng, dom, fact.claim.format(value=fact.value)))
        if extra:
            b.user(str(_pick(rng, phr.control_openers)).format(question=extra))
            b.agent(_answer(rng, dom, fact.extra[0]))

    return core, {fact.key}


def dumps(benchmark: Benchmark) -> str:
    """Canonical JSON of a benchmark (for determinism checks and files)."""
    return json.dumps(benchmark.model_dump(mode="json"), sort_keys=True)


__all__ = ["GenerationError", "generate_benchmark", "dumps"]
