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
* **Backend** - runs are emitted as contract spans through a real OTel ``TracerProvider`` into a
  real :class:`InMemorySpanStore` and read back as the store's :class:`Trajectory`. ``fork`` keeps
  the recorded prefix, applies the replacement at the fork step, then runs the suffix live
  (``regenerate``) or returns recorded outputs for every later node not in ``rerun``
  (``frozen``; default re-run set: the answer node).
* **Faults** - :func:`inject` forks a successful base run with the faulted output at a hop and
  labels it with a certified :class:`FaultLabel`, like the project's fault injector.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic import Field

from causal_middleware.attribution import DiagnosisContext
from causal_middleware.faults.model import CorruptionRecord, FaultLabel
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Document, Intervention, Lineage, Outcome, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.world.model import HopGold, Passage, Question
from causal_middleware.world.scoring import is_correct

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
    executions: int = 0

    def node(self, name: str, state: dict[str, Any]) -> dict[str, Any]:
        self.executions += 1
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


Executed = list[tuple[str, int | None, dict[str, Any]]]


@dataclass
class SimRun:
    trajectory: Trajectory
    question: Question
    executed: Executed


class SimBackend:
    """ForkBackend over :class:`SimAgent`; every run also lands in a real in-memory span store."""

    def __init__(self, agent: SimAgent, store: SpanStore | None = None) -> None:
        self.agent = agent
        self.store: SpanStore = store if store is not None else InMemorySpanStore()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.store))
        self.runs: dict[str, SimRun] = {}
        self.forks = 0

    def run(self, question: Question) -> Trajectory:
        return self._execute(question, [], None, None, None)

    def fork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: str = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory:
        if run_id not in self.runs:
            raise KeyError(f"unknown run {run_id}")
        if mode not in ("regenerate", "frozen"):
            raise ValueError(f"unsupported mode {mode!r}")
        self.forks += 1
        parent = self.runs[run_id]
        at = next(
            (i for i, (name, h, _) in enumerate(parent.executed) if name == node and h == hop),
            None,
        )
        if at is None:
            raise KeyError(f"run {run_id} has no step node={node} hop={hop}")
        fixed = parent.executed[:at] + [(node, hop, dict(values or {}))]
        frozen = None
        if mode == "frozen":
            frozen = {(name, h): out for name, h, out in parent.executed[at + 1 :]}
            frozen["__rerun__"] = set(rerun or ["answer"])  # type: ignore[assignment]
        lineage = Lineage(
            parent_run_id=run_id,
            fork_hop=hop,
            fork_node=node,
            fork_step=at + 1,
            mode=mode,  # type: ignore[arg-type]
            intervention=Intervention(kind=intervention_kind, node=node, hop=hop, values=dict(values or {})),
        )
        return self._execute(parent.question, fixed, frozen, lineage, labels)

    def _execute(
        self,
        question: Question,
        fixed: Executed,
        frozen: dict[Any, Any] | None,
        lineage: Lineage | None,
        labels: dict[str, Any] | None,
    ) -> Trajectory:
        state: dict[str, Any] = {
            "question": question.text,
            "hops": [],
            "facts": [],
            "position": 0,
            "sub_query": "",
            "evidence": [],
        }
        budget = self.agent.budget(question.text)
        n_plan = len(plan_of(question.text)[1])
        executed: Executed = []
        nxt: str | None = "decide"
        i = 0
        while nxt is not None:
            hop = len(state["hops"]) + 1 if nxt != "answer" else None
            if i < len(fixed):
                name, _, output = fixed[i]
                assert name == nxt, f"prefix diverged: {name} vs {nxt}"
            elif frozen is not None and nxt not in frozen["__rerun__"] and (nxt, hop) in frozen:
                output = frozen[(nxt, hop)]
            else:
                output = self.agent.node(nxt, state)
            executed.append((nxt, hop, output))
            nxt = apply(state, nxt, output, budget, n_plan)
            i += 1
        own_from = len(fixed) if lineage is not None else 0
        frozen_nodes = set()
        if frozen is not None:
            frozen_nodes = {
                i
                for i, (name, h, _) in enumerate(executed)
                if i >= own_from and name not in frozen["__rerun__"]
            }
        trajectory = self._emit(question, executed, state, lineage, labels, own_from, frozen_nodes)
        self.runs[trajectory.run_id] = SimRun(trajectory, question, executed)
        return trajectory

    def _emit(
        self,
        question: Question,
        executed: Executed,
        state: dict[str, Any],
        lineage: Lineage | None,
        labels: dict[str, Any] | None,
        own_from: int = 0,
        frozen_nodes: set[int] | None = None,
    ) -> Trajectory:
        """Emit the run's spans and read the run back from the store.

        A fork emits only what it ran itself (steps after the intervened one), numbered like the
        replayer's forks: langgraph steps continue the parent's, steps before the fork's first own
        hop carry no hop, own hops count from 1; frozen nodes are marked and have no children. The
        store stitches the parent's prefix and the intervened step back on when reading it.
        """
        tracer = self.provider.get_tracer("attribution-sim")
        fork_hop = lineage.fork_hop or 0 if lineage is not None else 0
        answer = state.get("answer")
        run_attrs = {
            A.CAUSAL_SPAN_TYPE: "run",
            A.OPENINFERENCE_SPAN_KIND: "CHAIN",
            A.GEN_AI_OPERATION_NAME: "invoke_agent",
            A.CAUSAL_RUN_GRAPH: "attribution-sim",
            A.INPUT_VALUE: question.text,
            A.OUTPUT_VALUE: str(answer),
        }
        with tracer.start_as_current_span(
            "attribution-sim", context=otel_context.Context(), attributes=run_attrs
        ) as root:
            run_id = format(root.get_span_context().trace_id, "032x")
            hop_span: Any = None
            current_hop: int | None = None
            sub_query = ""
            for n, (name, real_hop, output) in enumerate(executed, start=1):
                if name == "decide":
                    sub_query = output.get("sub_query", "")
                if n - 1 < own_from:
                    continue
                hop = real_hop - fork_hop if real_hop is not None and real_hop > fork_hop else None
                if lineage is None:
                    hop = real_hop
                if hop != current_hop:
                    if hop_span is not None:
                        hop_span.end()
                        hop_span = None
                    current_hop = hop
                    if hop is not None:
                        hop_span = tracer.start_span(
                            f"hop {hop}", attributes={A.CAUSAL_SPAN_TYPE: "hop", A.CAUSAL_HOP_INDEX: hop}
                        )
                parent = trace.set_span_in_context(hop_span) if hop_span is not None else None
                common: dict[str, Any] = {A.CAUSAL_NODE: name, A.CAUSAL_LANGGRAPH_STEP: n}
                if hop is not None:
                    common[A.CAUSAL_HOP_INDEX] = hop
                node_attrs = {
                    **common,
                    A.CAUSAL_SPAN_TYPE: "node",
                    A.OUTPUT_VALUE: json.dumps(output),
                    A.OUTPUT_MIME_TYPE: "application/json",
                }
                frozen_here = frozen_nodes is not None and (n - 1) in frozen_nodes
                if frozen_here:
                    node_attrs[A.CAUSAL_NODE_FROZEN] = True
                with tracer.start_as_current_span(name, context=parent, attributes=node_attrs):
                    if name == "retrieve" and not frozen_here:
                        attrs = {**common, A.CAUSAL_SPAN_TYPE: "retrieval", A.INPUT_VALUE: sub_query}
                        for j, d in enumerate(output.get("evidence", [])):
                            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_ID, j)] = d["id"]
                            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, j)] = d["text"]
                            if d.get("score") is not None:
                                attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE, j)] = float(d["score"])
                        tracer.start_span("bm25", attributes=attrs).end()
                    if name == "answer":
                        answer_attrs = {
                            **common,
                            A.CAUSAL_SPAN_TYPE: "answer",
                            A.CAUSAL_ANSWER_TEXT: output["answer"],
                        }
                        tracer.start_span("answer", attributes=answer_attrs).end()
            if hop_span is not None:
                hop_span.end()
        ok = is_correct(answer, question)
        self.store.annotate(
            run_id,
            reference=question.answer,
            outcome=Outcome.SUCCESS if ok else Outcome.FAILURE,
            labels=labels,
            lineage=lineage,
        )
        return self.store.get_trajectory(run_id)


class SimAdapter:
    """AgentAdapter of the simulated agent: sub-query -> decide, evidence -> retrieve, fact -> read."""

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        return Intervention(node="decide", hop=hop, values={"sub_query": sub_query})

    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        evidence = [
            {"id": d.id, "text": d.text, "score": d.score, "title": d.metadata.get("title", "")}
            for d in documents
        ]
        return Intervention(node="retrieve", hop=hop, values={"evidence": evidence})

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        raise NotImplementedError("the simulated agent decides when to answer itself")

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        return Intervention(node="read", hop=hop, values={"fact": fact})


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
    run = world.backend.runs[run_id]
    return next(out["evidence"] for name, h, out in run.executed if name == "retrieve" and h == hop)


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
    run = world.backend.runs[base.run_id]
    question = run.question
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
