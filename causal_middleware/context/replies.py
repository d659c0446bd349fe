"""The user turns that answer an agent turn, the unit the reply-reading detectors walk."""

from __future__ import annotations

from collections.abc import Iterator

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.signals import Signal, SignalType


def replies(
    conversation: Conversation, found: list[Signal]
) -> Iterator[tuple[ConversationNode, ConversationNode]]:
    """(agent turn, the user turn right after it), for user turns not flagged as corrections yet."""
    flagged = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    last_agent: ConversationNode | None = None
    for n in conversation.nodes:
        if n.type == NodeType.AGENT:
            last_agent = n
        elif n.type == NodeType.USER:
            if last_agent is not None and n.id not in flagged:
                yield last_agent, n
            last_agent = None
