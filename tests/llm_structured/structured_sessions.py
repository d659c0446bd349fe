"""A small session with a stale knowledge-base answer, shared by the structured-reply tests."""

from __future__ import annotations

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType


def stale_session() -> Conversation:
    nodes = [
        ConversationNode(id="n1", type=NodeType.USER, turn=1, content="What is the overdraft fee?"),
        ConversationNode(
            id="n2",
            type=NodeType.KB_RETRIEVAL,
            turn=1,
            name="read_kb_entry",
            content='{"path": "kb/fees/overdraft-fee.md"}',
            output="The overdraft fee is $25 per item.",
            source="kb/fees/overdraft-fee.md",
        ),
        ConversationNode(id="n3", type=NodeType.AGENT, turn=1, content="The overdraft fee is $25 per item."),
        ConversationNode(id="n4", type=NodeType.USER, turn=2, content="That's outdated, it's $35 now."),
    ]
    return Conversation(session_id="s1", nodes=nodes)
