"""Spans -> :class:`~causal_middleware.spans.model.Trajectory`: the one reader of span attributes.

It follows the builder rules of ``docs/span-contract.md`` and is tolerant in two directions:

* spans of our own instrumentation with optional attributes missing, or with attribute values
  of the wrong type (a bad value is treated as absent, never raised);
* foreign traces with no ``causal.*`` attributes at all (OpenInference instrumentors, TRAIL
  traces): the span type comes from ``openinference.span.kind`` (or ``gen_ai.operation.name``),
  and when no hop spans or hop indices exist, hops are inferred (:mod:`~causal_middleware.spans.rounds`):
  each round starts a hop, with the node span that encloses its starter and the planner just
  before it. A round is a retriever span (retrievers inside the same node span are one round);
  without retrievers, an agent step (smolagents' ``Step N``) or a tool call (agents that search
  through tools, chat logs), so a tool called while reading stays in its round.

The helpers :func:`span_facts`, :func:`choose_root` and :func:`summarize_run` compute the run-level
facts a store lists (``RunSummary``) from a few per-span facts, with exactly the rules the builder
uses, so a store's listing never disagrees with the trajectory it builds.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from causal_middleware.spans import _json
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import (
    AnswerStep,
    Cost,
    DecisionStep,
    Document,
    Hop,
    Intervention,
    Lineage,
    LLMStep,
    Message,
    NodeStep,
    Outcome,
    RetrievalStep,
    Status,
    ToolStep,
    Trajectory,
    Usage,
)
from causal_middleware.spans.record import SpanRecord
from causal_middleware.spans.rounds import infer_hops, round_starters

__all__ = [
    "JSON_LIST_ATTRIBUTES",
    "RunFacts",
    "SpanFacts",
    "build_trajectory",
    "choose_root",
    "datetime_from_ns",
    "decode_json",
    "span_facts",
    "span_type",
    "summarize_run",
]

STEP_TYPES = ("node", "llm", "retrieval", "tool", "decision", "answer")
SPAN_TYPES = ("run", "hop", *STEP_TYPES)

# OpenInference span kinds -> contract span types (kinds not listed make no step).
_OPENINFERENCE_TYPES = {
    "LLM": "llm",
    "RETRIEVER": "retrieval",
    "TOOL": "tool",
    "CHAIN": "node",
    "AGENT": "node",
    "DECISION": "decision",
}
# OTel GenAI operation names -> contract span types.
_GEN_AI_TYPES = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "retrieval": "retrieval",
    "execute_tool": "tool",
    "invoke_agent": "node",
}

_DOC_KEY = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|score|metadata)$")
_MESSAGE_KEY = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(role|content)$")
_MESSAGE_PART_KEY = re.compile(
    r"^llm\.(input|output)_messages\.(\d+)\.message\.contents\.(\d+)\.message_content\.text$"
)

# Attributes our instrumentation writes as JSON-list text (OTel attributes hold no nested values);
# OTLP/JSON export writes them as arrays. A step keeps them as lists whichever form it was read in.
JSON_LIST_ATTRIBUTES = frozenset(
    {A.CAUSAL_LANGGRAPH_PATH, A.CAUSAL_LANGGRAPH_TRIGGERS, A.CAUSAL_DECISION_OPTIONS}
)

# Attributes a step's typed fields already hold; everything else is kept in ``step.attributes``.
_COMMON_CONSUMED = {
    A.CAUSAL_SPAN_TYPE,
    A.OPENINFERENCE_SPAN_KIND,
    A.CAUSAL_NODE,
    A.CAUSAL_HOP_INDEX,
    A.CAUSAL_LANGGRAPH_STEP,
    A.CAUSAL_CHECKPOINT_ID,
    A.CAUSAL_CHECKPOINT_NS,
}
_CONSUMED: dict[str, set[str]] = {
    "node": {
        A.INPUT_VALUE,
        A.CAUSAL_NODE_INPUT_REFS,
        A.OUTPUT_VALUE,
        A.INPUT_MIME_TYPE,
        A.OUTPUT_MIME_TYPE,
        A.CAUSAL_NODE_SIDE_EFFECTING,
    },
    "retrieval": {A.INPUT_VALUE, A.INPUT_MIME_TYPE, A.GEN_AI_RETRIEVAL_QUERY_TEXT, A.CAUSAL_RETRIEVER_NAME},
    "llm": {
        A.LLM_MODEL_NAME,
        A.GEN_AI_REQUEST_MODEL,
        A.LLM_PROVIDER,
        A.GEN_AI_PROVIDER_NAME,
        A.LLM_TOKEN_COUNT_PROMPT,
        A.LLM_TOKEN_COUNT_COMPLETION,
        A.LLM_TOKEN_COUNT_TOTAL,
        A.GEN_AI_USAGE_INPUT_TOKENS,
        A.GEN_AI_USAGE_OUTPUT_TOKENS,
        A.LLM_INVOCATION_PARAMETERS,
    },
    "tool": {
        A.TOOL_NAME,
        A.GEN_AI_TOOL_NAME,
        A.TOOL_ID,
        A.GEN_AI_TOOL_CALL_ID,
        A.TOOL_PARAMETERS,
        A.OUTPUT_VALUE,
        A.OUTPUT_MIME_TYPE,
        A.CAUSAL_TOOL_SIDE_EFFECTING,
    },
    "decision": {A.CAUSAL_DECISION_CHOICE, A.CAUSAL_DECISION_OPTIONS},
    "answer": {A.CAUSAL_ANSWER_TEXT},
}


_loads = _json.loads  # json.loads, through orjson where that gives the same

# The models' own validators, called with the fields as one dict: what ``Model(**fields)`` does,
# without its Python-level ``__init__`` frame (the builder makes some 100 models per run).
_new_NodeStep = NodeStep.__pydantic_validator__.validate_python
_new_RetrievalStep = RetrievalStep.__pydantic_validator__.validate_python
_new_LLMStep = LLMStep.__pydantic_validator__.validate_python
_new_ToolStep = ToolStep.__pydantic_validator__.validate_python
_new_DecisionStep = DecisionStep.__pydantic_validator__.validate_python
_new_AnswerStep = AnswerStep.__pydantic_validator__.validate_python
_new_Document = Document.__pydantic_validator__.validate_python
_new_Message = Message.__pydantic_validator__.validate_python
_new_Usage = Usage.__pydantic_validator__.validate_python
_new_Hop = Hop.__pydantic_validator__.validate_python
_new_Cost = Cost.__pydantic_validator__.validate_python
_new_Trajectory = Trajectory.__pydantic_validator__.validate_python


# --------------------------------------------------------------------------------------------
# value coercion (tolerant: a value of the wrong type counts as absent)
# --------------------------------------------------------------------------------------------
def decode_json(value: Any, mime_type: Any = None) -> Any:
    """Decode a JSON attribute value; return it unchanged when it is not JSON.

    With ``mime_type="text/plain"`` the value is kept as text; without a mime type only strings
    that look like a JSON object, array or string literal are decoded (so a plain query such as
    ``"1984"`` stays a string).
    """
    if not isinstance(value, str):
        return value
    if mime_type == "text/plain":
        return value
    stripped = value.strip()
    if mime_type != "application/json" and not stripped.startswith(("{", "[", '"')):
        return value
    try:
        return _loads(stripped)
    except ValueError:
        return value


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if isinstance(value, bool | int) else False


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _text(value: Any, mime_type: Any = None) -> str | None:
    """A text value: JSON strings unquoted, other JSON kept as compact JSON text."""
    decoded = decode_json(value, mime_type)
    if decoded is None:
        return None
    return decoded if isinstance(decoded, str) else _str(decoded)


def _json_dict(value: Any) -> dict[str, Any]:
    decoded = decode_json(value, "application/json")
    return decoded if isinstance(decoded, dict) else {}


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    decoded = decode_json(value, "application/json")
    return decoded if isinstance(decoded, list) else []


def datetime_from_ns(ns: int | None) -> datetime | None:
    """A UTC datetime (microsecond precision) from epoch nanoseconds; None for 0 or None."""
    if not ns:
        return None
    if type(ns) is int:  # the same instant as fromtimestamp(seconds) + the microseconds, faster
        try:
            return _EPOCH + timedelta(microseconds=ns // 1000)
        except OverflowError:
            pass  # out of range: the error of the general form below
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=rest // 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_STATUSES = {"OK": Status.OK, "ERROR": Status.ERROR}


def _status(code: str) -> Status:
    return _STATUSES.get(code, Status.UNSET)


def _error(span: SpanRecord) -> str | None:
    if span.status_code != "ERROR":
        return None
    if span.status_message:
        return span.status_message
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message") or event.attributes.get("exception.type")
            if message:
                return str(message)
    return "error"


def _oi_metadata(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """OpenInference's ``metadata`` attribute: a JSON object holding the ``langgraph_*`` keys."""
    raw = attrs.get(A.METADATA)
    return {} if raw is None else _json_dict(raw)


# --------------------------------------------------------------------------------------------
# per-span facts shared with the stores
# --------------------------------------------------------------------------------------------
def span_type(span: SpanRecord) -> str | None:
    """The contract type of a span (run, hop, node, llm, retrieval, tool, decision, answer).

    ``causal.span.type`` when present; else inferred from ``openinference.span.kind`` or
    ``gen_ai.operation.name``; None for spans that are neither (other libraries' spans).
    """
    attrs = span.attributes
    declared = attrs.get(A.CAUSAL_SPAN_TYPE)
    if isinstance(declared, str) and declared:
        # our own span of a type the trajectory has no place for (repair, diagnosis, ...)
        return declared if declared in SPAN_TYPES else None
    kind = attrs.get(A.OPENINFERENCE_SPAN_KIND)
    if isinstance(kind, str) and kind.upper() in _OPENINFERENCE_TYPES:
        return _OPENINFERENCE_TYPES[kind.upper()]
    operation = attrs.get(A.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _GEN_AI_TYPES:
        return _GEN_AI_TYPES[operation]
    return None


@dataclass(frozen=True)
class SpanFacts:
    """The few facts of one span that run-level summaries need (cheap to keep per span)."""

    span_id: str
    parent_span_id: str | None
    start_time_ns: int
    end_time_ns: int | None
    type: str | None
    declared_run: bool
    hop_index: int | None
    answer_text: str | None  # answer spans: the answer; node spans: an answer their output states


def span_facts(span: SpanRecord) -> SpanFacts:
    """Extract the per-span facts of ``span`` (see :class:`SpanFacts`)."""
    kind = span_type(span)
    attrs = span.attributes
    answer = None
    if kind == "answer":
        answer = _text(attrs.get(A.CAUSAL_ANSWER_TEXT))
        if answer is None:
            answer = _text(attrs.get(A.OUTPUT_VALUE), attrs.get(A.OUTPUT_MIME_TYPE))
    elif kind == "node":
        answer = _output_answer(attrs)
    hop_index = _int(attrs.get(A.CAUSAL_HOP_INDEX))
    return SpanFacts(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        start_time_ns=span.start_time_ns,
        end_time_ns=span.end_time_ns,
        type=kind,
        declared_run=attrs.get(A.CAUSAL_SPAN_TYPE) == "run",
        hop_index=hop_index if hop_index is not None and hop_index >= 1 else None,
        answer_text=answer,
    )


def choose_root(facts: Iterable[SpanFacts]) -> SpanFacts | None:
    """The run's root: the earliest span marked ``causal.span.type=run``, else the earliest span
    without a parent; None when there is neither (e.g. only children of a run have arrived)."""
    items = list(facts)
    marked = [f for f in items if f.declared_run]
    candidates = marked or [f for f in items if f.parent_span_id is None]
    if not candidates:
        return None
    return min(candidates, key=lambda f: (f.start_time_ns, f.span_id))


def _depths(facts: Sequence[SpanFacts]) -> dict[str, int]:
    """Depth of each span below its top-most known ancestor (0 for roots and orphans)."""
    by_id = {f.span_id: f for f in facts}
    depth: dict[str, int] = {}
    for f in facts:
        chain: list[str] = []
        current: str | None = f.span_id
        while current is not None and current in by_id and current not in depth and current not in chain:
            chain.append(current)
            current = by_id[current].parent_span_id
        base = depth[current] + 1 if current is not None and current in depth else 0
        for offset, span_id in enumerate(reversed(chain)):
            depth[span_id] = base + offset
    return depth


def _ordered(facts: Sequence[SpanFacts], depth: Mapping[str, int] | None = None) -> list[SpanFacts]:
    """Start order; on equal start times parents come before children, then by span id.
    ``depth``: :func:`_depths` of ``facts``, where the caller has it."""
    depth = _depths(facts) if depth is None else depth
    return sorted(facts, key=lambda f: (f.start_time_ns, depth[f.span_id], f.span_id))


def _outermost(
    facts: Sequence[SpanFacts],
    root_id: str | None,
    keep: Callable[[SpanFacts], bool],
    depth: Mapping[str, int] | None = None,
) -> SpanFacts | None:
    """The shallowest, then earliest, node span (other than the root) that ``keep`` accepts."""
    depth = _depths(facts) if depth is None else depth
    nodes = [f for f in facts if f.type == "node" and f.span_id != root_id and keep(f)]
    return min(nodes, key=lambda f: (depth[f.span_id], f.start_time_ns, f.span_id), default=None)


def _hop_span_indices(hop_facts: Sequence[SpanFacts]) -> dict[str, int]:
    """Hop index of each hop span: ``causal.hop.index``, else its 1-based position among hops."""
    return {f.span_id: (f.hop_index or position) for position, f in enumerate(hop_facts, start=1)}


def _output_answer(attrs: Mapping[str, Any]) -> str | None:
    """The answer an ``output.value`` states: the text itself, or an ``answer``/``final_answer`` key."""
    output = decode_json(attrs.get(A.OUTPUT_VALUE), attrs.get(A.OUTPUT_MIME_TYPE))
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in ("answer", "final_answer"):
            if isinstance(output.get(key), str):
                return str(output[key])
    return None


@dataclass(frozen=True)
class RunFacts:
    """Run-level facts derived from a run's spans, before the store's annotations are applied."""

    run_id: str
    has_root: bool
    is_run: bool  # False for traces whose root declares another causal.span.type (repair, ...)
    thread_id: str | None
    graph: str | None
    started_at_ns: int | None
    ended_at_ns: int | None
    status: Status
    answer: str | None
    n_hops: int
    n_spans: int
    outcome: Outcome | None
    reference: str | None
    labels: dict[str, Any]
    lineage: Lineage | None


def summarize_run(run_id: str, facts: Sequence[SpanFacts], root: SpanRecord | None) -> RunFacts:
    """Run-level facts from per-span facts plus the root span (``choose_root(facts)``'s record).

    Gives the same ``answer``, ``n_hops``, ``status`` and times as :func:`build_trajectory`.
    """
    depth = _depths(facts)
    return _summarize(run_id, facts, root, _ordered(facts, depth), depth)


def _summarize(
    run_id: str,
    facts: Sequence[SpanFacts],
    root: SpanRecord | None,
    ordered: Sequence[SpanFacts],
    depth: Mapping[str, int],
) -> RunFacts:
    """:func:`summarize_run` with ``facts``' start order and depths already worked out."""
    root_id = root.span_id if root is not None else None
    steps = [f for f in ordered if f.type in STEP_TYPES and f.span_id != root_id]
    hop_spans = [f for f in ordered if f.type == "hop" and f.span_id != root_id]
    indices = set(_hop_span_indices(hop_spans).values()) | {f.hop_index for f in steps if f.hop_index}
    if indices:
        n_hops = len(indices)
    else:
        step_ids = {f.span_id for f in steps}
        types = {f.span_id: f.type for f in steps if f.type is not None}
        n_hops = len(round_starters([f.span_id for f in steps], _nearest_steps(ordered, step_ids), types))
    answers = [f.answer_text for f in steps if f.type == "answer" and f.answer_text is not None]
    answer = answers[-1] if answers else (_output_answer(root.attributes) if root is not None else None)
    if answer is None:  # foreign traces: the outermost agent/chain span's output
        outermost = _outermost(facts, root_id, lambda f: f.answer_text is not None, depth)
        answer = outermost.answer_text if outermost is not None else None
    if root is not None:
        started, ended = root.start_time_ns or None, root.end_time_ns
    else:
        started = min((f.start_time_ns for f in facts), default=None) or None
        ends = [f.end_time_ns for f in facts if f.end_time_ns]
        ended = max(ends) if ends else None
    attrs = root.attributes if root is not None else {}
    thread = attrs.get(A.SESSION_ID) or attrs.get(A.GEN_AI_CONVERSATION_ID)
    return RunFacts(
        run_id=run_id,
        has_root=root is not None,
        is_run=not isinstance(attrs.get(A.CAUSAL_SPAN_TYPE), str)
        or attrs.get(A.CAUSAL_SPAN_TYPE) in ("", "run"),
        thread_id=_str(thread) if thread is not None else None,
        graph=_str(attrs.get(A.CAUSAL_RUN_GRAPH)) or (root.name if root is not None else None),
        started_at_ns=started,
        ended_at_ns=ended,
        status=_status(root.status_code) if root is not None else Status.UNSET,
        answer=answer,
        n_hops=n_hops,
        n_spans=len(facts),
        outcome=_outcome(attrs.get(A.CAUSAL_RUN_OUTCOME)),
        reference=_text(attrs.get(A.CAUSAL_RUN_REFERENCE)),
        labels=_json_dict(attrs.get(A.CAUSAL_RUN_LABELS)),
        lineage=_lineage(attrs),
    )


def _outcome(value: Any) -> Outcome | None:
    try:
        return Outcome(value) if value is not None else None
    except ValueError:
        return None


def _lineage(attrs: Mapping[str, Any]) -> Lineage | None:
    parent = attrs.get(A.CAUSAL_LINEAGE_PARENT_RUN_ID)
    if not isinstance(parent, str) or not parent:
        return None
    intervention = None
    raw = _json_dict(attrs.get(A.CAUSAL_LINEAGE_INTERVENTION))
    if raw:
        try:
            intervention = Intervention.model_validate(raw)
        except ValidationError:
            intervention = None
    mode = attrs.get(A.CAUSAL_LINEAGE_MODE)
    counterfactual = attrs.get(A.CAUSAL_RUN_COUNTERFACTUAL)
    return Lineage(
        parent_run_id=parent,
        fork_checkpoint_id=_str(attrs.get(A.CAUSAL_LINEAGE_FORK_CHECKPOINT_ID)),
        fork_hop=_int(attrs.get(A.CAUSAL_LINEAGE_FORK_HOP)),
        fork_node=_str(attrs.get(A.CAUSAL_LINEAGE_FORK_NODE)),
        fork_step=_int(attrs.get(A.CAUSAL_LINEAGE_FORK_STEP)),
        mode=mode if mode in ("regenerate", "frozen", "replay") else "regenerate",
        intervention=intervention,
        counterfactual=True if counterfactual is None else _bool(counterfactual),
    )


# --------------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------------
_UNRESOLVED = object()


@dataclass(frozen=True)
class _KeyPlan:
    """What the step builder reads from one attribute key set of one span type, worked out once
    per distinct key set (spans of one kind share their keys): the keys kept in
    ``step.attributes``, the document fields (key, index, field) and the message fields (key,
    direction, index, part: None for ``content``, -1 for ``role``, else the content part's index)."""

    extra: tuple[str, ...]
    documents: tuple[tuple[str, int, str], ...]
    messages: tuple[tuple[str, str, int, int | None], ...]
    json_lists: bool = False  # whether ``extra`` holds a key of JSON_LIST_ATTRIBUTES


_PLANS: dict[tuple[str, tuple[str, ...]], _KeyPlan] = {}
_MAX_PLANS = 4096


def _key_plan(attrs: Mapping[str, Any], kind: str) -> _KeyPlan:
    keys = tuple(attrs)
    plan = _PLANS.get((kind, keys))
    if plan is not None:
        return plan
    consumed = _COMMON_CONSUMED | _CONSUMED.get(kind, set())
    extra: list[str] = []
    documents: list[tuple[str, int, str]] = []
    messages: list[tuple[str, str, int, int | None]] = []
    for key in keys:
        doc = _DOC_KEY.match(key)
        if doc:
            documents.append((key, int(doc.group(1)), doc.group(2)))
        message = _MESSAGE_KEY.match(key)
        if message:
            part = -1 if message.group(3) == "role" else None
            messages.append((key, message.group(1), int(message.group(2)), part))
        message_part = None if message else _MESSAGE_PART_KEY.match(key)
        if message_part:
            messages.append(
                (key, message_part.group(1), int(message_part.group(2)), int(message_part.group(3)))
            )
        if key in consumed or (kind == "retrieval" and doc) or (kind == "llm" and (message or message_part)):
            continue
        extra.append(key)
    plan = _KeyPlan(
        tuple(extra), tuple(documents), tuple(messages), not JSON_LIST_ATTRIBUTES.isdisjoint(extra)
    )
    if len(_PLANS) < _MAX_PLANS:
        _PLANS[(kind, keys)] = plan
    return plan


def _extra_attributes(attrs: Mapping[str, Any], kind: str, plan: _KeyPlan | None = None) -> dict[str, Any]:
    plan = plan or _key_plan(attrs, kind)
    if not plan.json_lists:
        return {key: attrs[key] for key in plan.extra}
    out = {}
    for key in plan.extra:
        value = attrs[key]
        if key in JSON_LIST_ATTRIBUTES and isinstance(value, str):
            decoded = decode_json(value, "application/json")
            value = decoded if isinstance(decoded, list) else value
        out[key] = value
    return out


_META_ID_KEYS = ("id", "doc_id", "document_id")


def _output_documents(attrs: Mapping[str, Any]) -> list[Any]:
    """The documents a retriever's ``output.value`` lists (OpenInference writes the LangChain
    ``{"documents": [{"id", "metadata", "page_content"}, ...]}`` there); [] when it lists none."""
    output = decode_json(attrs.get(A.OUTPUT_VALUE), attrs.get(A.OUTPUT_MIME_TYPE))
    if isinstance(output, dict):
        output = output.get("documents")
    return output if isinstance(output, list) else []


def _own_id(raw: Any, text: str) -> Any:
    """A document's own id in one ``output.value`` entry (or its metadata), when the entry's text
    (if it states one) is the document's."""
    if not isinstance(raw, dict):
        return None
    content = raw.get("page_content", raw.get("content"))
    if isinstance(content, str) and text and content != text:
        return None
    meta = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
    for candidate in (raw.get("id"), *(meta.get(key) for key in _META_ID_KEYS)):
        if isinstance(candidate, str | int) and not isinstance(candidate, bool) and str(candidate):
            return candidate
    return None


def _documents(span: SpanRecord, plan: _KeyPlan | None = None) -> list[Document]:
    fields: dict[int, dict[str, Any]] = {}
    attrs = span.attributes
    for key, index, field in (plan or _key_plan(attrs, "retrieval")).documents:
        fields.setdefault(index, {})[field] = attrs[key]
    listed: list[Any] | None = None
    docs = []
    for index in sorted(fields):
        raw = fields[index]
        metadata = raw.get("metadata")
        meta = metadata if isinstance(metadata, dict) else _json_dict(metadata)
        text = _str(raw.get("content")) or ""
        doc_id = raw.get("id")
        for key in _META_ID_KEYS:
            if doc_id is None:
                doc_id = meta.get(key)
        if doc_id is None:  # the retriever's own ids, as its output lists them
            listed = _output_documents(span.attributes) if listed is None else listed
            doc_id = _own_id(listed[index], text) if index < len(listed) else None
        if doc_id is None:
            # No id anywhere: a content hash keeps the id stable across runs (original vs fork).
            doc_id = hashlib.sha1(text.encode()).hexdigest()[:12] if text else f"{span.span_id}:{index}"
        score = _float(raw.get("score"))
        if score is None:
            score = _float(meta.get("score"))
        source = meta.get("source")
        docs.append(
            _new_Document(
                dict(
                    id=str(doc_id),
                    text=text,
                    score=score,
                    source=source if isinstance(source, str) else None,
                    metadata=meta,
                )
            )
        )
    return docs


def _messages(attrs: Mapping[str, Any], direction: str, plan: _KeyPlan | None = None) -> list[Message]:
    return [
        _new_Message({"role": role, "content": content})
        for role, content in _message_texts(attrs, direction, plan)
    ]


def _message_texts(
    attrs: Mapping[str, Any], direction: str, plan: _KeyPlan | None = None
) -> list[tuple[str, str]]:
    """The (role, content) of each message of ``direction`` (input / output), in index order."""
    roles: dict[int, str] = {}
    contents: dict[int, str] = {}
    parts: dict[int, dict[int, str]] = {}
    for key, which, index, part in (plan or _key_plan(attrs, "llm")).messages:
        if which != direction:
            continue
        value = _str(attrs[key]) or ""
        if part is None:
            contents[index] = value
        elif part == -1:
            roles[index] = value
        else:
            parts.setdefault(index, {})[part] = value
    out = []
    for index in sorted(set(roles) | set(contents) | set(parts)):
        content = contents.get(index)
        if content is None:
            content = "\n".join(text for _, text in sorted(parts.get(index, {}).items()))
        out.append((roles.get(index, "unknown"), content))
    return out


def _tool_args(span: SpanRecord, declared: bool) -> dict[str, Any]:
    attrs = span.attributes
    params = _json_dict(attrs.get(A.TOOL_PARAMETERS))
    if declared:
        return params
    # Foreign tool spans (OpenInference) carry the call's input in input.value; their
    # tool.parameters is often the tool's parameter schema, not the arguments.
    raw = attrs.get(A.INPUT_VALUE)
    if raw is None:
        return params
    decoded = decode_json(raw, attrs.get(A.INPUT_MIME_TYPE))
    return decoded if isinstance(decoded, dict) else {"input": decoded}


def _common(
    span: SpanRecord, kind: str, meta: Mapping[str, Any] | None = None, plan: _KeyPlan | None = None
) -> dict[str, Any]:
    attrs = span.attributes
    meta = _oi_metadata(attrs) if meta is None else meta
    if meta:
        checkpoint_ns = (
            attrs.get(A.CAUSAL_CHECKPOINT_NS)
            or meta.get("langgraph_checkpoint_ns")
            or meta.get("checkpoint_ns")
        )
        langgraph_step = attrs.get(A.CAUSAL_LANGGRAPH_STEP, meta.get("langgraph_step"))
    else:  # the same, with no metadata to fall back on
        checkpoint_ns = attrs.get(A.CAUSAL_CHECKPOINT_NS) or None
        langgraph_step = attrs.get(A.CAUSAL_LANGGRAPH_STEP)
    return {
        "step_id": span.span_id,
        "name": span.name,
        "langgraph_step": _int(langgraph_step),
        "checkpoint_id": _str(attrs.get(A.CAUSAL_CHECKPOINT_ID)),
        "checkpoint_ns": _str(checkpoint_ns),
        "start_time": datetime_from_ns(span.start_time_ns),
        "end_time": datetime_from_ns(span.end_time_ns),
        "status": _STATUSES.get(span.status_code, Status.UNSET),
        "error": _error(span) if span.status_code == "ERROR" else None,
        "attributes": _extra_attributes(attrs, kind, plan),
    }


def _declared_node(span: SpanRecord, kind: str, meta: Mapping[str, Any] | None = None) -> str | None:
    attrs = span.attributes
    node = attrs.get(A.CAUSAL_NODE)
    if isinstance(node, str) and node:
        return node
    meta_node = (_oi_metadata(attrs) if meta is None else meta).get("langgraph_node")
    if isinstance(meta_node, str) and meta_node:
        return meta_node
    return span.name if kind == "node" else None


def _build_step(
    span: SpanRecord,
    kind: str,
    declared: bool,
    node_input: Any = _UNRESOLVED,
    placement: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Any:
    """``node_input``: a node's input already resolved from its references (not decoded again);
    ``placement``: the step's ``parent_step_id``, ``node`` and ``hop``, known to the builder;
    ``meta``: the span's :func:`_oi_metadata`, where the builder has it."""
    attrs = span.attributes
    plan = _key_plan(attrs, kind)
    common = _common(span, kind, meta, plan)
    if placement:
        common.update(placement)
    if kind == "node":  # the step's fields filled into ``common`` itself (validation copies nothing back)
        common["input"] = (
            decode_json(attrs.get(A.INPUT_VALUE), attrs.get(A.INPUT_MIME_TYPE))
            if node_input is _UNRESOLVED
            else node_input
        )
        common["output"] = decode_json(attrs.get(A.OUTPUT_VALUE), attrs.get(A.OUTPUT_MIME_TYPE))
        common["side_effecting"] = _bool(attrs.get(A.CAUSAL_NODE_SIDE_EFFECTING))
        return _new_NodeStep(common)
    if kind == "retrieval":
        raw_query = decode_json(attrs.get(A.INPUT_VALUE), attrs.get(A.INPUT_MIME_TYPE))
        if isinstance(raw_query, dict) and raw_query.get("query") is not None:
            raw_query = raw_query["query"]
        query = _text(raw_query)
        if query is None:
            query = _text(attrs.get(A.GEN_AI_RETRIEVAL_QUERY_TEXT)) or _text(
                attrs.get(A.CAUSAL_HOP_SUB_QUERY)
            )
        return _new_RetrievalStep(
            _with(
                common,
                query=query or "",
                retriever=_str(attrs.get(A.CAUSAL_RETRIEVER_NAME)) or span.name,
                documents=_documents(span, plan),
            )
        )
    if kind == "llm":
        outputs = [content for _, content in _message_texts(attrs, "output", plan) if content]
        output = "\n".join(outputs) if outputs else (_text(attrs.get(A.OUTPUT_VALUE)) or "")
        params = _json_dict(attrs.get(A.LLM_INVOCATION_PARAMETERS))
        for key, attr in (("temperature", A.GEN_AI_REQUEST_TEMPERATURE), ("seed", A.GEN_AI_REQUEST_SEED)):
            if key not in params and attrs.get(attr) is not None:
                params[key] = attrs[attr]
        input_tokens = _int(attrs.get(A.GEN_AI_USAGE_INPUT_TOKENS))
        output_tokens = _int(attrs.get(A.GEN_AI_USAGE_OUTPUT_TOKENS))
        return _new_LLMStep(
            _with(
                common,
                model=_str(attrs.get(A.LLM_MODEL_NAME) or attrs.get(A.GEN_AI_REQUEST_MODEL)),
                provider=_str(attrs.get(A.LLM_PROVIDER) or attrs.get(A.GEN_AI_PROVIDER_NAME)),
                messages=_messages(attrs, "input", plan),
                output=output,
                usage=Usage(
                    input_tokens=max(
                        0,
                        input_tokens
                        if input_tokens is not None
                        else _int(attrs.get(A.LLM_TOKEN_COUNT_PROMPT)) or 0,
                    ),
                    output_tokens=max(
                        0,
                        output_tokens
                        if output_tokens is not None
                        else _int(attrs.get(A.LLM_TOKEN_COUNT_COMPLETION)) or 0,
                    ),
                ),
                invocation_parameters=params,
            )
        )
    if kind == "tool":
        return _new_ToolStep(
            _with(
                common,
                tool_name=_str(attrs.get(A.TOOL_NAME) or attrs.get(A.GEN_AI_TOOL_NAME)) or span.name,
                call_id=_str(attrs.get(A.TOOL_ID) or attrs.get(A.GEN_AI_TOOL_CALL_ID)),
                args=_tool_args(span, declared),
                output=_text(attrs.get(A.OUTPUT_VALUE), attrs.get(A.OUTPUT_MIME_TYPE)) or "",
                side_effecting=_bool(attrs.get(A.CAUSAL_TOOL_SIDE_EFFECTING)),
            )
        )
    if kind == "decision":
        return _new_DecisionStep(
            _with(
                common,
                choice=_str(attrs.get(A.CAUSAL_DECISION_CHOICE)),
                options=[_str(o) or "" for o in _json_list(attrs.get(A.CAUSAL_DECISION_OPTIONS))],
            )
        )
    facts = span_facts(span)
    return _new_AnswerStep(_with(common, answer=facts.answer_text or ""))


def _with(fields: dict[str, Any], **more: Any) -> dict[str, Any]:
    """``fields`` with ``more`` added (in place: the dict is the step's own)."""
    fields.update(more)
    return fields


# --------------------------------------------------------------------------------------------
# the builder
# --------------------------------------------------------------------------------------------
def _select_run(spans: Sequence[SpanRecord], run_id: str | None) -> tuple[str, list[SpanRecord]]:
    if run_id is not None:
        selected = [s for s in spans if s.trace_id == run_id]
        if not selected:
            raise ValueError(f"no spans of run {run_id!r} among the {len(spans)} spans given")
        return run_id, selected
    traces = list(dict.fromkeys(s.trace_id for s in spans))
    if not traces:
        raise ValueError("cannot build a trajectory from no spans")
    if len(traces) > 1:
        shown = ", ".join(traces[:5]) + (", ..." if len(traces) > 5 else "")
        raise ValueError(
            f"spans of {len(traces)} traces are mixed ({shown}); pass run_id= to choose the run to build"
        )
    return traces[0], list(spans)


def hop_sub_query(steps: Sequence[Any]) -> str | None:
    """A hop's sub-query: its first retrieval's query, else its first tool call's arguments."""
    for step in steps:
        if step.kind == "retrieval" and step.query:
            return str(step.query)
    for step in steps:
        if step.kind == "tool" and step.args:
            values = list(step.args.values())
            if len(values) == 1 and isinstance(values[0], str):
                return values[0]
            return json.dumps(step.args, default=str, ensure_ascii=False, separators=(",", ":"))
    return None


def _nearest_steps(facts: Sequence[SpanFacts], step_ids: set[str]) -> dict[str, str | None]:
    """Each step's nearest ancestor that is a step (None when it has none)."""
    by_id = {f.span_id: f for f in facts}
    out: dict[str, str | None] = {}
    for span_id in step_ids:
        seen = {span_id}
        parent = by_id[span_id].parent_span_id
        while parent is not None and parent in by_id and parent not in seen and parent not in step_ids:
            seen.add(parent)
            parent = by_id[parent].parent_span_id
        out[span_id] = parent if parent is not None and parent in step_ids else None
    return out


def _run_input(
    root: SpanRecord, by_id: Mapping[str, SpanRecord], facts: Sequence[SpanFacts], depth: Mapping[str, int]
) -> Any:
    """The root's ``input.value``; for foreign traces whose root has none, the outermost node's."""
    source = root
    if A.INPUT_VALUE not in root.attributes:
        outermost = _outermost(
            facts, root.span_id, lambda f: A.INPUT_VALUE in by_id[f.span_id].attributes, depth
        )
        source = by_id[outermost.span_id] if outermost is not None else root
    return decode_json(source.attributes.get(A.INPUT_VALUE), source.attributes.get(A.INPUT_MIME_TYPE))


def _input_refs(span: SpanRecord) -> list[list[Any]] | None:
    refs = _json_list(span.attributes.get(A.CAUSAL_NODE_INPUT_REFS))
    if not refs:
        return None
    for r in refs:
        if not (isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str)):
            return None
    return refs


def resolve_node_inputs(node_spans: Sequence[SpanRecord]) -> dict[str, dict[str, Any]]:
    """The whole input of each node span that records its input as references
    (``causal.node.input.refs``): every value written once in the run, named by digest by later
    spans, lists grown from an earlier list plus a tail. Span id -> input; a value whose span is
    missing (a partial trace) leaves its key out."""
    values: dict[str, Any] = {}
    extensions: dict[str, tuple[str, int, list[Any]]] = {}
    parsed: list[tuple[str, list[list[Any]], dict[str, Any]]] = []
    for span in node_spans:
        refs = _input_refs(span)
        if refs is None:
            continue
        explicit = decode_json(span.attributes.get(A.INPUT_VALUE), "application/json")
        given = explicit if isinstance(explicit, dict) else {}
        parsed.append((span.span_id, refs, given))
        for key, digest, how in refs:
            if how == 0 and key in given:
                values.setdefault(digest, given[key])
            elif isinstance(how, list) and len(how) == 2 and isinstance(given.get(key), list):
                extensions.setdefault(digest, (str(how[0]), _int(how[1]) or 0, given[key]))

    def value_of(digest: str) -> Any:
        chain: list[str] = []  # extensions to apply, newest first, down to a value written whole
        cursor = digest
        while cursor not in values:
            if cursor not in extensions or cursor in chain:
                return _UNRESOLVED
            chain.append(cursor)
            cursor = extensions[cursor][0]
        value = values[cursor]
        for link in reversed(chain):
            _, n, tail = extensions[link]
            if not isinstance(value, list) or len(value) != n:
                return _UNRESOLVED
            value = values[link] = [*value, *tail]
        return value

    out: dict[str, dict[str, Any]] = {}
    for span_id, refs, _ in parsed:
        resolved = {}
        for key, digest, _how in refs:
            value = value_of(digest)
            if value is not _UNRESOLVED:
                resolved[key] = value
        out[span_id] = resolved
    return out


def build_trajectory(
    spans: Sequence[SpanRecord],
    *,
    run_id: str | None = None,
    facts: Mapping[str, SpanFacts] | None = None,
) -> Trajectory:
    """Build the typed :class:`Trajectory` of one run from its spans (see the module docstring).

    ``spans`` may hold spans of several runs when ``run_id`` names the one to build. ``facts``:
    :func:`span_facts` of spans by span id, where the caller already holds them (a store keeps
    them beside each span); the others are computed. Raises ``ValueError`` when spans of several
    traces are mixed without ``run_id``, when there are no spans of the run, or when the run has
    no root span.
    """
    run_id, selected = _select_run(spans, run_id)
    by_id: dict[str, SpanRecord] = {}
    for span in selected:  # a re-exported span id replaces the earlier copy
        by_id[span.span_id] = span
    known = facts or {}
    facts = {span_id: known.get(span_id) or span_facts(span) for span_id, span in by_id.items()}
    root_facts = choose_root(facts.values())
    if root_facts is None:
        raise ValueError(
            f"run {run_id} has no root span among its {len(by_id)} spans "
            "(no span of causal.span.type=run and none without a parent; the run may still be in progress)"
        )
    root = by_id[root_facts.span_id]
    fact_list = list(facts.values())
    depth = _depths(fact_list)
    ordered = _ordered(fact_list, depth)

    types = {f.span_id: f.type for f in ordered if f.type is not None and f.span_id != root.span_id}
    step_ids = {span_id for span_id, kind in types.items() if kind in STEP_TYPES}
    hop_spans = [f for f in ordered if types.get(f.span_id) == "hop"]
    hop_span_index = _hop_span_indices(hop_spans)

    # nearest step and hop ancestors, one walk up the parent chain within the run
    parent_step: dict[str, str | None] = {}
    enclosing_hop: dict[str, int | None] = {}
    for span_id in step_ids:
        step_parent: str | None = None
        hop: int | None = None
        seen = {span_id}
        parent = by_id[span_id].parent_span_id
        while parent is not None and parent in by_id and parent not in seen:
            seen.add(parent)
            if step_parent is None and parent in step_ids:
                step_parent = parent
            if hop is None and parent in hop_span_index:
                hop = hop_span_index[parent]
            if step_parent is not None and hop is not None:
                break
            parent = by_id[parent].parent_span_id
        parent_step[span_id] = step_parent
        enclosing_hop[span_id] = hop

    if hop_spans or any(facts[s].hop_index is not None for s in step_ids):
        hop_of = {
            s: index
            for s in step_ids
            if (index := facts[s].hop_index if facts[s].hop_index is not None else enclosing_hop[s])
            is not None
        }
    else:
        hop_of = infer_hops(
            [f.span_id for f in ordered if f.span_id in step_ids],
            parent_step,
            {k: v for k, v in types.items() if v is not None},
            {s: by_id[s].name for s in step_ids},
        )

    node_inputs = resolve_node_inputs(
        [by_id[f.span_id] for f in ordered if types.get(f.span_id) == "node" and f.span_id in step_ids]
    )
    steps: list[Any] = []
    node_of: dict[str, str | None] = {}
    by_hop: dict[int, list[Any]] = {}
    for f in ordered:
        span_id = f.span_id
        if span_id not in step_ids:
            continue
        span = by_id[span_id]
        kind = types[span_id]
        declared = span.attributes.get(A.CAUSAL_SPAN_TYPE) == kind
        meta = _oi_metadata(span.attributes)
        node = _declared_node(span, kind, meta)
        step_parent = parent_step[span_id]
        if node is None and step_parent is not None:
            node = node_of.get(step_parent)
        node_of[span_id] = node
        placement = {"parent_step_id": step_parent, "node": node, "hop": hop_of.get(span_id)}
        step = _build_step(span, kind, declared, node_inputs.get(span_id, _UNRESOLVED), placement, meta)
        steps.append(step)
        if step.hop is not None:
            by_hop.setdefault(step.hop, []).append(step)

    hops: list[Hop] = []
    indices = sorted(set(hop_span_index.values()) | set(by_hop))
    hop_span_by_index: dict[int, SpanRecord] = {}
    for span_id, index in hop_span_index.items():
        hop_span_by_index.setdefault(index, by_id[span_id])
    for index in indices:
        hop_steps = by_hop.get(index, [])
        hop_span = hop_span_by_index.get(index)
        sub_query = _text(hop_span.attributes.get(A.CAUSAL_HOP_SUB_QUERY)) if hop_span is not None else None
        hops.append(
            _new_Hop(
                dict(
                    index=index,
                    sub_query=sub_query or hop_sub_query(hop_steps),
                    documents=[d for s in hop_steps if s.kind == "retrieval" for d in s.documents],
                    steps=hop_steps,
                    span_id=hop_span.span_id if hop_span is not None else None,
                )
            )
        )

    summary = _summarize(run_id, fact_list, root, ordered, depth)
    llm_steps = [s for s in steps if s.kind == "llm"]
    attrs = root.attributes
    trajectory: Trajectory = _new_Trajectory(
        dict(
            run_id=run_id,
            thread_id=summary.thread_id,
            graph=summary.graph,
            input=_run_input(root, by_id, fact_list, depth),
            answer=summary.answer,
            reference=summary.reference,
            outcome=summary.outcome,
            status=summary.status,
            error=_error(root),
            started_at=datetime_from_ns(summary.started_at_ns),
            ended_at=datetime_from_ns(summary.ended_at_ns),
            cost=Cost(
                input_tokens=sum(s.usage.input_tokens for s in llm_steps),
                output_tokens=sum(s.usage.output_tokens for s in llm_steps),
                llm_calls=len(llm_steps),
                tool_calls=sum(1 for s in steps if s.kind == "tool"),
                retrievals=sum(1 for s in steps if s.kind == "retrieval"),
            ),
            labels=summary.labels,
            lineage=summary.lineage,
            hops=hops,
            steps=steps,
            metadata=_json_dict(attrs.get(A.METADATA)),
        )
    )
    return trajectory
