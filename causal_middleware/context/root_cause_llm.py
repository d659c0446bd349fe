"""Root cause, LLM forms: holistic (one call) and the iterative per-node baseline (N+2 calls).

Each call declares its reply schema (node ids and categories as enums, strings bounded, the
attributions last so a reply cut at the output limit has already named the root); the reply is
read tolerantly: attribution keys that name no node of the session are dropped, a missing
``attributions`` object leaves the root alone with the whole score. A root that names no node, an
unknown category or a non-numeric score is an :class:`LLMResponseError`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.delta import Delta
from causal_middleware.context.failure import FailurePoint, locate_failure
from causal_middleware.context.llm import (
    NOT_CONFIGURED,
    LLMResponseError,
    ask_json,
    fenced_transcript,
    require,
)
from causal_middleware.context.root_cause import Attribution, ContextDiagnosis, FaultCategory, Method
from causal_middleware.context.signals import Detection
from causal_middleware.context.workspace import component_type
from causal_middleware.prompts import Fence
from causal_middleware.prompts.schema import (
    JsonSchema,
    nullable,
    one_of,
    reply_schema,
    text,
    unit_number,
)

SYSTEM = (
    "You debug the context of an AI agent (system prompt, tool descriptions, skill files, knowledge "
    "base). Find the node where wrong or missing content entered the session. Answer with JSON only."
)
CATEGORIES = ", ".join(c.value for c in FaultCategory)

HOLISTIC = """Session {session_id} (nodes in order; the user complains at node {anchor}):
{transcript}

1. State the delta: what the user expected and what the agent produced.
2. Walk the nodes in REVERSE order from node {anchor} and find the root: the FIRST node that
   brought the faulty content into the context (or that should have, for missing content).
3. Give every node that contributed an attribution score; scores sum to 1.
Categories: {categories}.
Answer as {{"expected": "...", "got": "..." or null, "root_node_id": "<id>",
"category": "<category>", "component_path": "<workspace path of the faulty source, e.g. kb/x.md,
skills/y/SKILL.md, tools/z.md, system_prompt.md>" or null, "attributions": {{"<id>": <score>, ...}}}}"""

DELTA = """Session {session_id}:
{transcript}

The user signals a problem at node {anchor}. Answer as {{"expected": "...", "got": "..." or null}}."""

NODE = """The agent produced {got} where {expected} was expected (session {session_id}).
{node}

Is this node where the faulty content entered? Answer as {{"score": <0..1>, "reason": "..."}}."""

FINAL = """Per-node scores for session {session_id} (expected {expected}, got {got}):
{scores}
Nodes:
{transcript}

Pick the root node. Categories: {categories}. Answer as {{"root_node_id": "<id>",
"category": "<category>", "component_path": "<path>" or null}}."""


def _expected() -> JsonSchema:
    return text(160, "what the user expected")


def _got() -> JsonSchema:
    return nullable(text(160, "what the agent produced"))


def _root(conversation: Conversation) -> JsonSchema:
    return one_of([n.id for n in conversation.nodes], "the node where the faulty content entered")


def _category() -> JsonSchema:
    return one_of([*(c.value for c in FaultCategory), None])


def _path() -> JsonSchema:
    return nullable(text(120, "workspace path of the faulty source"))


def holistic_schema(conversation: Conversation) -> JsonSchema:
    """The holistic reply: the delta, the root, its category and path, per-node scores."""
    return reply_schema(
        "context_root_cause",
        "Where the faulty content entered the session.",
        {
            "expected": _expected(),
            "got": _got(),
            "root_node_id": _root(conversation),
            "category": _category(),
            "component_path": _path(),
            "attributions": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}},
        },
    )


def delta_schema() -> JsonSchema:
    return reply_schema(
        "context_delta",
        "What the user expected and what the agent produced.",
        {"expected": _expected(), "got": _got()},
    )


def node_schema() -> JsonSchema:
    return reply_schema(
        "context_node_score",
        "How likely this node is where the faulty content entered.",
        {"score": unit_number(), "reason": text(160)},
    )


def final_schema(conversation: Conversation) -> JsonSchema:
    return reply_schema(
        "context_root_pick",
        "The root node, its fault category and the faulty source's path.",
        {"root_node_id": _root(conversation), "category": _category(), "component_path": _path()},
    )


def diagnose_llm(
    conversation: Conversation,
    detection: Detection,
    model: BaseChatModel | None,
    *,
    method: Method = "holistic",
) -> ContextDiagnosis:
    if model is None:
        return ContextDiagnosis(
            session_id=conversation.session_id,
            method=method,
            mode="llm",
            status="not_run",
            reason=NOT_CONFIGURED,
        )
    fp = locate_failure(conversation, detection)
    if fp is None:
        return ContextDiagnosis(
            session_id=conversation.session_id,
            method=method,
            mode="llm",
            status="no_failure",
            reason="no dissatisfaction signal",
        )
    if method == "holistic":
        return _holistic(conversation, fp, model)
    return _iterative(conversation, fp, model)


def _holistic(conversation: Conversation, fp: FailurePoint, model: BaseChatModel) -> ContextDiagnosis:
    fence = Fence()
    data = ask_json(
        model,
        SYSTEM,
        HOLISTIC.format(
            session_id=fence.inline(conversation.session_id, 120),
            anchor=fence.inline(fp.anchor.id, 80),
            transcript=fenced_transcript(conversation, fence),
            categories=CATEGORIES,
        ),
        keys=("root_node_id", "attributions"),
        fence=fence,
        schema=holistic_schema(conversation),
    )
    delta = _delta(data, fp)
    root = _node_id(conversation, require(data, "root_node_id", str, "root cause"), "root_node_id")
    raw = require(data, "attributions", dict, "root cause") if "attributions" in data else {}
    ids = {n.id for n in conversation.nodes}
    scores = {k: _number(v, f"attributions[{k!r}]") for k, v in raw.items() if k in ids}
    return _result(conversation, fp, data, "holistic", root, scores, delta, calls=1)


def _iterative(conversation: Conversation, fp: FailurePoint, model: BaseChatModel) -> ContextDiagnosis:
    fence = Fence()
    data = ask_json(
        model,
        SYSTEM,
        DELTA.format(
            session_id=fence.inline(conversation.session_id, 120),
            transcript=fenced_transcript(conversation, fence),
            anchor=fence.inline(fp.anchor.id, 80),
        ),
        keys=("expected", "got"),
        fence=fence,
        schema=delta_schema(),
    )
    delta = _delta(data, fp)
    scores: dict[str, float] = {}
    for node in conversation.nodes:
        fence = Fence()
        answer = ask_json(
            model,
            SYSTEM,
            NODE.format(
                got=fence.inline(delta.got, 300),
                expected=fence.inline(delta.expected, 300),
                session_id=fence.inline(conversation.session_id, 120),
                node=fence.block(
                    "node",
                    f"Node {fence.inline(node.id, 80)} ({node.type.value}"
                    + (f", source {fence.inline(node.source, 200)}" if node.source else "")
                    + f"): {fence.inline(node.text[:1500])}",
                ),
            ),
            keys=("score",),
            fence=fence,
            schema=node_schema(),
        )
        scores[node.id] = _number(
            require(answer, "score", (int, float), f"node {node.id}"), f"node {node.id} score"
        )
    fence = Fence()
    final = ask_json(
        model,
        SYSTEM,
        FINAL.format(
            session_id=fence.inline(conversation.session_id, 120),
            expected=fence.inline(delta.expected, 300),
            got=fence.inline(delta.got, 300),
            scores=fence.block("scores", fence.as_json(scores)),
            transcript=fenced_transcript(conversation, fence),
            categories=CATEGORIES,
        ),
        keys=("root_node_id",),
        fence=fence,
        schema=final_schema(conversation),
    )
    root = _node_id(conversation, require(final, "root_node_id", str, "final pick"), "root_node_id")
    return _result(
        conversation, fp, final, "iterative", root, scores, delta, calls=len(conversation.nodes) + 2
    )


def _result(
    conversation: Conversation,
    fp: FailurePoint,
    data: dict[str, Any],
    method: Method,
    root: str,
    scores: dict[str, float],
    delta: Delta,
    *,
    calls: int,
) -> ContextDiagnosis:
    category = data.get("category")
    if category is not None:
        try:
            category = FaultCategory(str(category).upper())
        except ValueError as exc:
            raise LLMResponseError(
                f"root cause: unknown category {data.get('category')!r}; expected one of {CATEGORIES}"
            ) from exc
    path = data.get("component_path")
    if path is not None and not isinstance(path, str):
        raise LLMResponseError(f"root cause: component_path should be a string or null, got {path!r}")
    if root not in scores or scores[root] <= 0:
        scores[root] = max(scores.values(), default=0.0) or 1.0
    total = sum(scores.values())
    order = {n.id: i for i, n in enumerate(conversation.nodes)}
    attributions = sorted(
        (Attribution(node_id=k, score=round(v / total, 6)) for k, v in scores.items() if v > 0),
        key=lambda a: (a.node_id != root, -a.score, order[a.node_id]),
    )
    return ContextDiagnosis(
        session_id=conversation.session_id,
        method=method,
        mode="llm",
        delta=delta,
        root_node_id=root,
        attributions=attributions,
        category=category,
        component_type=component_type(path) if path else None,
        component_path=path,
        segment_node_ids=list(fp.segment.node_ids) if fp.segment else [],
        calls=calls,
    )


def _delta(data: dict[str, Any], fp: FailurePoint) -> Delta:
    expected = data.get("expected")
    got = data.get("got")
    for key, value in (("expected", expected), ("got", got)):
        if value is not None and not isinstance(value, str):
            raise LLMResponseError(f"root cause: {key!r} should be a string or null, got {value!r}")
    return fp.delta.model_copy(update={"expected": expected or fp.delta.expected, "got": got})


def _node_id(conversation: Conversation, value: Any, what: str) -> str:
    ids = {n.id for n in conversation.nodes}
    if not isinstance(value, str) or value not in ids:
        raise LLMResponseError(
            f"root cause: {what} names node {value!r}, which is not in session {conversation.session_id!r}"
        )
    return value


def _number(value: Any, what: str) -> float:
    if not isinstance(value, int | float) or value < 0:
        raise LLMResponseError(f"root cause: {what} should be a non-negative number, got {value!r}")
    return float(value)
