"""The dissatisfaction detector, LLM form: one call, the model lists the signals as JSON.

The weighting and the escalation rule are applied by us, exactly as for the offline form. The
reply schema (:func:`detector_schema`) names the session's node ids and the signal types, so a
schema-constrained model can only list signals of a known type on a node of this session; a bare
list (``[]``) is read as the list of signals.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.llm import (
    NOT_CONFIGURED,
    LLMResponseError,
    ask_json,
    fenced_transcript,
    require,
)
from causal_middleware.context.signals import Detection, Signal, SignalType
from causal_middleware.prompts import Fence
from causal_middleware.prompts.schema import (
    JsonSchema,
    array_of,
    object_of,
    one_of,
    reply_schema,
    text,
    unit_number,
)

SYSTEM = (
    "You review customer-support sessions of an AI agent and find evidence that the user was not "
    "served well. Answer with JSON only."
)
PROMPT = """Signal types: {types}.
CORRECTION: the user says the agent's information is wrong or outdated. CONVERSATIONAL_REPAIR: the
user restates what they asked. TOOL_EXECUTION_ERROR: a tool call failed. CLARIFICATION_REQUEST: the
user cannot follow the answer. NEGATIVE_SENTIMENT: frustration. REPETITION: the user asks the same
thing again. SEMANTIC_DRIFT: the reply is off-topic. SESSION_ABANDONMENT: the user leaves unresolved.
EXPLICIT_FEEDBACK: a rating or thumbs-down.

Session {session_id}:
{transcript}

Answer as {{"signals": [{{"type": "<type>", "turn": <int>, "node_id": "<node id>",
"evidence": "<exact quote>", "confidence": <0..1>}}]}}; an empty list when the user was satisfied."""
MAX_SIGNALS = 8


def detector_schema(conversation: Conversation) -> JsonSchema:
    """The detector reply's JSON schema for ``conversation``: its node ids, the signal types."""
    signal = object_of(
        {
            "type": one_of([t.value for t in SignalType]),
            "turn": {"type": "integer"},
            "node_id": one_of([n.id for n in conversation.nodes]),
            "evidence": text(200, "an exact quote from the session"),
            "confidence": unit_number(),
        }
    )
    return reply_schema(
        "dissatisfaction_signals",
        "The dissatisfaction signals found in the session (empty when the user was satisfied).",
        {"signals": array_of(signal, MAX_SIGNALS)},
    )


def detect_llm(conversation: Conversation, model: BaseChatModel | None) -> Detection:
    """One model call; ``status="not_run"`` when no model is given."""
    if model is None:
        return Detection(
            session_id=conversation.session_id, mode="llm", status="not_run", reason=NOT_CONFIGURED
        )
    fence = Fence()
    data = ask_json(
        model,
        SYSTEM,
        PROMPT.format(
            types=", ".join(t.value for t in SignalType),
            session_id=fence.inline(conversation.session_id, 120),
            transcript=fenced_transcript(conversation, fence),
        ),
        keys=("signals",),
        fence=fence,
        schema=detector_schema(conversation),
        list_key="signals",
    )
    raw = require(data, "signals", list, "detector")
    node_turns = {n.id: n.turn for n in conversation.nodes}
    signals = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise LLMResponseError(f"detector: signals[{i}] should be an object, got {item!r}")
        try:
            sig_type = SignalType(str(item.get("type", "")).upper())
        except ValueError as exc:
            raise LLMResponseError(f"detector: signals[{i}] has unknown type {item.get('type')!r}") from exc
        node_id = item.get("node_id") if item.get("node_id") in node_turns else None
        turn = item.get("turn")
        if not isinstance(turn, int):
            turn = node_turns.get(node_id, 0) if node_id else 0
        conf = item.get("confidence", 0.0)
        if not isinstance(conf, int | float) or not 0.0 <= conf <= 1.0:
            raise LLMResponseError(
                f"detector: signals[{i}] confidence must be a number in [0, 1], got {conf!r}"
            )
        signals.append(
            Signal(
                type=sig_type,
                turn=turn,
                node_id=node_id,
                evidence=str(item.get("evidence", "")),
                confidence=float(conf),
            )
        )
    return Detection.from_signals(conversation.session_id, signals, mode="llm", calls=1)
