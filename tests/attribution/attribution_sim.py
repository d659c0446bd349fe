"""A deterministic multi-hop RAG agent over a hand-built world, with a ForkBackend and fault injection.

The right hop of every failure is known here by construction, which is what the diagnoser tests need.

* **World** - chains ``work -created by-> org -founded by-> person -born in-> place`` written as
  passages, near-namesake distractors ("Mira Vell" beside "Mira Velt"), off-topic background
  passages, and a :class:`Question` per chain with its gold decomposition (3 hops; 2-hop questions
  start at the organisation).
* **Agent** - per hop ``decide`` (the hop's sub-query, its template filled with the previous hop's
  fact) -> ``retrieve`` (a real :class:`BM25Index`, top k) -> ``read`` (the fact, by a relation
  pattern with the exact subject; ``sloppy`` also accepts a subject sharing the first word, the way
  a model confuses near-namesakes) and finally ``answer`` (the last fact, or "unknown" when the
  chain broke). An empty read re-queries the same sub-query while the hop budget lasts.
* **Backend** - a :class:`causal_middleware.testing.FakeForkBackend`: runs land as contract spans
  in a real :class:`InMemorySpanStore` and are read back as the store's :class:`Trajectory`;
  ``fork`` keeps the recorded prefix, applies the replacement at the fork step, then runs the
  suffix live (``regenerate``) or returns recorded outputs for every later node not in ``rerun``
  (``frozen``; default re-run set: the answer node).
* **Faults** - :func:`inject` forks a successful base run with the faulted output at a hop and
  labels it with a certified :class:`FaultLabel`, like the project's fault injector.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from causal_middleware.attribution import DiagnosisContext
from causal_middleware.faults.model import CorruptionRecord, FaultLabel
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.tasks.model import HopGold, Passage, Question
from causal_middleware.tasks.scoring import answer_matches
from causal_middleware.testing import FakeForkBackend, FakeRun, Node, ScriptedAdapter, ScriptedAgent

CHAINS = [
    # work, org, person, place, person near-namesake (+ birthplace), org near-namesake (+ founder)
    ("Zorblat", "Quanta Works", "Mira Velt", "Lostra", ("Mira Vell", "Osk"), ("Quanta Workshop", "Lia Drum")),
    (
        "Quenmire",
        "Brisk Forge",
        "Doran Pike",
        "Kelvik",
        ("Doran Pyke", "Fenwick"),
        ("Brisk Forgery", "Hal Otter"),
    ),
    (
        "Ashveil",
        "Nolden Labs",
        "Sela Quorn",
        "Ombria",
        ("Sela Quinn", "Harrow"),
        ("Nolden Labworks", "Pim Ross"),
    ),
    (
        "Torvane",
        "Cavir Systems",
        "Ivo Marsh",
        "Trask",
        ("Ivo Marsch", "Belden"),
        ("Cavir Syndicate", "Uma Lorn"),
    ),
    (
        "Lumrak",
        "Ostrel Media",
        "Tess Arden",
        "Yarrow",
        ("Tess Ardent", "Copley"),
        ("Ostrel Mediaworks", "Ned Vask"),
    ),
    (
        "Pellidor",
        "Vanta Guild",
        "Rolo Fenn",
        "Dunmere",
        ("Rolo Fenner", "Astby"),
        ("Vanta Guildhall", "Kit Moor"),
    ),
]
BACKGROUND = [
    "The Sarn river winds through the Hollow valley before reaching the sea.",
    "Glass lanterns are traditionally hung over doorways during the harvest fair.",
    "The old lighthouse on Gull Point was painted red and white.",
    "Copper kettles were a common wedding gift in the northern provinces.",
    "The annual regatta draws sailing crews from many coastal towns.",
    "Migrating cranes rest on the salt marshes every autumn.",
    "The observatory dome was rebuilt after the great storm.",
    "Orchard terraces climb the southern slopes of the hills.",
]
TEMPLATES = {
    "created": ("Who created {e}?", "was created by"),
    "founded": ("Who founded {e}?", "was founded by"),
    "born": ("Where was {e} born?", "was born in"),
}
NAME = r"([A-Z]\w+(?: [A-Z]\w+)?)"


def build_passages() -> list[Passage]:
    passages: list[Passage] = []
    for i, (work, org, person, place, (p_alt, p_alt_place), (o_alt, o_alt_founder)) in enumerate(CHAINS):
        passages += [
            Passage(id=f"c{i}-work", title=work, text=f"{work} was created by {org}."),
            Passage(id=f"c{i}-org", title=org, text=f"{org} was founded by {person}."),
            Passage(id=f"c{i}-person", title=person, text=f"{person} was born in {place}."),
            Passage(id=f"c{i}-alt-person", title=p_alt, text=f"{p_alt} was born in {p_alt_place}."),
            Passage(id=f"c{i}-alt-org", title=o_alt, text=f"{o_alt} was founded by {o_alt_founder}."),
        ]
    passages += [Passage(id=f"bg{i}", title="", text=t) for i, t in enumerate(BACKGROUND)]
    return passages


def build_questions() -> list[Question]:
    questions: list[Question] = []
    for i, (work, org, person, place, *_rest) in enumerate(CHAINS):
        questions.append(
            Question(
                id=f"q{i}-3",
                text=f"Where was the founder of the organisation that created {work} born?",
                answer=place,
                hops=[
                    HopGold(
                        index=1,
                        question=f"Who created {work}?",
                        answer=org,
                        supporting_passage_ids=[f"c{i}-work"],
                    ),
                    HopGold(
                        index=2,
                        question="Who founded #1?",
                        answer=person,
                        supporting_passage_ids=[f"c{i}-org"],
                    ),
                    HopGold(
                        index=3,
                        question="Where was #2 born?",
                        answer=place,
                        supporting_passage_ids=[f"c{i}-person"],
                    ),
                ],
            )
        )
        questions.append(
            Question(
                id=f"q{i}-2",
                text=f"Where was the founder of {org} born?",
                answer=place,
                hops=[
                    HopGold(
                        index=1,
                        question=f"Who founded {org}?",
                        answer=person,
                        supporting_passage_ids=[f"c{i}-org"],
                    ),
                    HopGold(
                        index=2,
                        question="Where was #1 born?",
                        answer=place,
                        supporting_passage_ids=[f"c{i}-person"],
                    ),
                ],
            )
        )
    return questions


def plan_of(question: str) -> tuple[str, list[str]]:
    """The start entity and relation plan the agent reads off the question text."""
    m = re.fullmatch(r"Where was the founder of the organisation that created (.+) born\?", question)
    if m:
        return m.group(1), ["created", "founded", "born"]
    m = re.fullmatch(r"Where was the founder of (.+) born\?", question)
    if m:
        return m.group(1), ["founded", "born"]
    raise ValueError(f"the simulated agent cannot plan {question!r}")


@dataclass
class SimAgent:
    index: BM25Index
    k: int = 3
    sloppy: bool = False
    budget_slack: int = 0

    def scripted(self) -> ScriptedAgent:
        """This program as a :class:`ScriptedAgent` (hop = the hop about to run; answer has none)."""

        def route(state: dict[str, Any], node: str, output: dict[str, Any]) -> str | None:
            return apply(
                state, node, output, self.budget(state["question"]), len(plan_of(state["question"])[1])
            )

        return ScriptedAgent(
            nodes=[
                Node("decide", lambda s: self.node("decide", s)),
                Node(
                    "retrieve",
                    lambda s: self.node("retrieve", s),
                    query=lambda s: s["sub_query"],
                    retriever="bm25",
                ),
                Node("read", lambda s: self.node("read", s)),
                Node("answer", lambda s: self.node("answer", s), answer_key="answer"),
            ],
            entry="decide",
            route=route,
            start=lambda question: {
                "question": question,
                "hops": [],
                "facts": [],
                "position": 0,
                "sub_query": "",
                "evidence": [],
            },
            hop_of=lambda state, node: len(state["hops"]) + 1 if node != "answer" else None,
            name="attribution-sim",
        )

    def node(self, name: str, state: dict[str, Any]) -> dict[str, Any]:
        start, plan = plan_of(state["question"])
        if name == "decide":
            template, _ = TEMPLATES[plan[state["position"]]]
            entity = state["facts"][-1] if state["facts"] else start
            return {"sub_query": template.format(e=entity)}
        if name == "retrieve":
            hits = self.index.search(state["sub_query"], self.k)
            return {
                "evidence": [
                    {
                        "id": h.passage.id,
                        "text": h.passage.text,
                        "score": round(h.score, 4),
                        "title": h.passage.title,
                    }
                    for h in hits
                ]
            }
        if name == "read":
            return {"fact": self.read(state["sub_query"], state["evidence"], plan[state["position"]])}
        if name == "answer":
            done = state["position"] == len(plan)
            return {"answer": state["facts"][-1] if done and state["facts"] else "unknown"}
        raise KeyError(name)

    def read(self, sub_query: str, evidence: list[dict[str, Any]], relation_key: str) -> str:
        template, relation = TEMPLATES[relation_key]
        pattern = re.escape(template).replace(re.escape("{e}"), "(.*)")
        m = re.fullmatch(pattern, sub_query)
        entity = m.group(1) if m else sub_query
        exact = re.escape(entity)
        for doc in evidence:
            found = re.search(rf"(?<!\w){exact} {relation} {NAME}", doc["text"])
            if found:
                return found.group(1)
        if self.sloppy:
            first = re.escape(entity.split()[0])
            for doc in evidence:
                found = re.search(rf"(?<!\w){first}\w* ?\w* {relation} {NAME}", doc["text"])
                if found:
                    return found.group(1)
        return ""

    def budget(self, question: str) -> int:
        return len(plan_of(question)[1]) + self.budget_slack


def apply(state: dict[str, Any], node: str, output: dict[str, Any], budget: int, n_plan: int) -> str | None:
    """Fold a node's output into the state; the next node (None when the run ends)."""
    if node == "decide":
        state["sub_query"] = output.get("sub_query", "")
        return "retrieve"
    if node == "retrieve":
        state["evidence"] = output.get("evidence", [])
        return "read"
    if node == "read":
        fact = output.get("fact", "")
        state["hops"].append({"sub_query": state["sub_query"], "evidence": state["evidence"], "fact": fact})
        if fact:
            state["facts"].append(fact)
            state["position"] += 1
        if state["position"] == n_plan or len(state["hops"]) >= budget:
            return "answer"
        return "decide"
    if node == "answer":
        state["answer"] = output.get("answer")
        return None
    raise KeyError(node)


class SimBackend(FakeForkBackend):
    """The fake fork backend over :class:`SimAgent`; runs are judged against their question."""

    def __init__(self, agent: SimAgent, store: SpanStore | None = None) -> None:
        super().__init__(agent.scripted(), store, judge=answer_matches)
        self.questions: dict[str, Question] = {}

    def run(self, question: Question) -> Trajectory:  # type: ignore[override]
        self.questions[question.text] = question
        return super().run(question.text, reference=question.answer)

    def question_of(self, run_id: str) -> Question:
        return self.questions[self.runs[run_id].input]


SimAdapter = ScriptedAdapter  # sub-query -> decide, evidence -> retrieve, fact -> read


@dataclass
class World:
    passages: list[Passage]
    questions: dict[str, Question]
    index: BM25Index
    agent: SimAgent
    backend: SimBackend
    adapter: SimAdapter = field(default_factory=SimAdapter)

    def passage(self, pid: str) -> Passage:
        return next(p for p in self.passages if p.id == pid)


def make_world(
    *, sloppy: bool = False, k: int = 3, budget_slack: int = 0, store: SpanStore | None = None
) -> World:
    passages = build_passages()
    index = BM25Index(passages)
    agent = SimAgent(index=index, k=k, sloppy=sloppy, budget_slack=budget_slack)
    return World(
        passages=passages,
        questions={q.id: q for q in build_questions()},
        index=index,
        agent=agent,
        backend=SimBackend(agent, store),
    )


# --- fault injection ------------------------------------------------------------------------------


def _evidence_at(world: World, run_id: str, hop: int) -> list[dict[str, Any]]:
    run: FakeRun = world.backend.runs[run_id]
    return next(s.output["evidence"] for s in run.steps if s.node == "retrieve" and s.hop == hop)


def _doc(p: Passage, text: str | None = None) -> dict[str, Any]:
    return {"id": p.id, "text": text if text is not None else p.text, "score": 1.0, "title": p.title}


CORRUPT_NAMES = {
    "Quanta Works": "Quintar Holdings",
    "Brisk Forge": "Bramble Foundry",
    "Nolden Labs": "Norvel Studios",
    "Cavir Systems": "Corwin Partners",
    "Ostrel Media": "Ulmer Press",
    "Vanta Guild": "Verrin League",
    "Mira Velt": "Garo Stint",
    "Doran Pike": "Fela Brun",
    "Sela Quorn": "Bex Tallow",
    "Ivo Marsh": "Nim Carrow",
    "Tess Arden": "Ora Spindle",
    "Rolo Fenn": "Wick Dallow",
    "Lostra": "Mervane",
    "Kelvik": "Pollard",
    "Ombria": "Scarrow",
    "Trask": "Elmsby",
    "Yarrow": "Quillon",
    "Dunmere": "Rathby",
}


def inject(
    world: World,
    base: Trajectory,
    family: str,
    hop: int,
    *,
    persistent: bool = False,
    corrupt_to: str | None = None,
) -> Trajectory:
    """Fork successful ``base`` with ``family``'s fault at ``hop``; the fork carries its FaultLabel."""
    question = world.backend.question_of(base.run_id)
    gold = question.hops[hop - 1]
    evidence = _evidence_at(world, base.run_id, hop)
    corruption = None
    if family == "empty_retrieval":
        faulted: list[dict[str, Any]] = []
    elif family == "irrelevant_documents":
        faulted = [_doc(p) for p in world.passages if p.id.startswith("bg")][: len(evidence) or 3]
    elif family in ("content_corruption", "false_premise", "stale_evidence"):
        support = world.passage(gold.supporting_passage_ids[0])
        new = corrupt_to or CORRUPT_NAMES[gold.answer]
        if family == "content_corruption":
            text = support.text.replace(gold.answer, new)
            corruption = CorruptionRecord(
                kind="answer_fact" if hop == len(question.hops) else "bridge_entity",
                original=gold.answer,
                corrupted=new,
                passage_id=support.id,
                seed=0,
            )
            if persistent:
                world.index.upsert(support.model_copy(update={"text": text}))
            faulted = [(_doc(support, text) if d["id"] == support.id else d) for d in evidence]
        elif family == "false_premise":
            claim = support.text.replace(gold.answer, new)
            faulted = [
                {
                    "id": f"premise-{support.id}",
                    "text": f"It is well established that {claim}",
                    "score": 9.0,
                    "title": "",
                }
            ] + [d for d in evidence if d["id"] != support.id]
        else:
            old = support.text.replace(gold.answer, new)
            faulted = [
                {"id": f"stale-{support.id}", "text": f"As of 1990, {old}", "score": 5.0, "title": ""}
            ] + [d for d in evidence if d["id"] != support.id]
    else:
        raise ValueError(f"unknown fault family {family!r}")
    label = FaultLabel(
        family=family,  # type: ignore[arg-type]
        stage="retrieval",
        requested_hop=hop,
        injected_hop=hop,
        base_run_id=base.run_id,
        question_id=question.id,
        persistent=persistent,
        corruption=corruption,
    )
    return world.backend.fork(
        base.run_id,
        hop=hop,
        node="retrieve",
        values={"evidence": faulted},
        mode="regenerate",
        intervention_kind=f"fault:{family}",
        labels={"fault": label.model_dump()},
    )


# --- test helpers ---------------------------------------------------------------------------------


def faulted_run(world: World, family: str, hop: int, qid: str = "q0-3", **kw: Any) -> Trajectory:
    base = world.backend.run(world.questions[qid])
    return inject(world, base, family, hop, **kw)


def context_for(world: World, qid: str = "q0-3", **kw: Any) -> DiagnosisContext:
    return DiagnosisContext(
        backend=world.backend, adapter=world.adapter, index=world.index, question=world.questions[qid], **kw
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is a function of the prompt; records every prompt it got."""

    responder: Callable[[list[BaseMessage]], str]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    model_name: str = "scripted-judge"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        text = self.responder(messages)
        message = AIMessage(
            content=text, usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
