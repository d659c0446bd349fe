"""Where a session failed: the anchor signal, the answer it refers to, the question, the delta."""

from __future__ import annotations

from pydantic import BaseModel

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import Delta, correction_delta
from causal_middleware.context.segmenter import Segment, segment, segment_of
from causal_middleware.context.signals import Detection, SignalType
from causal_middleware.context.text import expand_informal
from causal_middleware.context.tool_errors import tool_error_delta

_PRIMARY = (SignalType.CORRECTION, SignalType.TOOL_EXECUTION_ERROR)
_SECONDARY = (
    SignalType.CONVERSATIONAL_REPAIR,
    SignalType.REPETITION,
    SignalType.CLARIFICATION_REQUEST,
    SignalType.NEGATIVE_SENTIMENT,
    SignalType.EXPLICIT_FEEDBACK,
    SignalType.SESSION_ABANDONMENT,
)


class FailurePoint(BaseModel):
    anchor: ConversationNode
    target: ConversationNode | None
    question: ConversationNode | None
    delta: Delta
    segment: Segment | None
    segments: list[Segment]


def locate_failure(conversation: Conversation, detection: Detection) -> FailurePoint | None:
    """The earliest correction or tool error (else the earliest other signal) and its delta."""
    idx = {n.id: i for i, n in enumerate(conversation.nodes)}
    anchor: ConversationNode | None = None
    for family in (_PRIMARY, _SECONDARY):
        located = [s for s in detection.signals if s.type in family and s.node_id in idx]
        if located:
            anchor = conversation.nodes[min(idx[s.node_id] for s in located if s.node_id)]
            break
    if anchor is None:
        feedback = detection.first(SignalType.EXPLICIT_FEEDBACK)
        if feedback is None:
            return None
        agents = [n for n in conversation.nodes if n.type == NodeType.AGENT and n.turn <= feedback.turn]
        if not agents:
            return None
        anchor = agents[-1]
    a = idx[anchor.id]
    segments = segment(conversation)
    if anchor.type == NodeType.USER:
        target = next((n for n in reversed(conversation.nodes[:a]) if n.type == NodeType.AGENT), None)
    else:
        target = anchor
    seg = segment_of(segments, (target or anchor).id)
    question = conversation.node(seg.opening_node_id) if seg else None
    if anchor.type == NodeType.USER:
        kind, expected, got, instruction = correction_delta(
            expand_informal(anchor.content), target.content if target else None
        )
        delta = Delta(
            kind=kind,
            expected=expected,
            got=got,
            instruction=instruction,
            evidence=anchor.content,
            anchor_node_id=anchor.id,
            target_node_id=target.id if target else None,
            question_node_id=question.id if question else None,
        )
    elif anchor.type in (NodeType.TOOL_CALL, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
        expected, got = tool_error_delta(anchor.output, anchor.content)
        delta = Delta(
            kind="tool_error",
            expected=expected,
            got=got,
            evidence=anchor.output,
            anchor_node_id=anchor.id,
            target_node_id=anchor.id,
            question_node_id=question.id if question else None,
        )
    else:
        delta = Delta(
            kind="none",
            evidence=anchor.content or anchor.output,
            anchor_node_id=anchor.id,
            target_node_id=anchor.id,
        )
    return FailurePoint(
        anchor=anchor, target=target, question=question, delta=delta, segment=seg, segments=segments
    )
