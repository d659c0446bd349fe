"""Question segmentation: markers, close follow-ups, topic shifts (lexical or embedding)."""

from __future__ import annotations

import numpy as np
import pytest

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.segmenter import segment, segment_of


def conv(*texts: str) -> Conversation:
    nodes = [ConversationNode(id="n0", type=NodeType.SYSTEM_PROMPT, turn=0, output="rules")]
    for i, t in enumerate(texts, start=1):
        nodes.append(ConversationNode(id=f"u{i}", type=NodeType.USER, turn=i, content=t))
        nodes.append(ConversationNode(id=f"a{i}", type=NodeType.AGENT, turn=i, content="reply"))
    return Conversation(session_id="s", nodes=nodes)


def test_boundaries_follow_ups_and_markers() -> None:
    c = conv(
        "What is the overdraft fee?",
        "No, that's wrong. It's $35 now.",
        "Is the overdraft fee charged per item?",
        "How long does a new card take to arrive?",
        "One more thing: when do branches open?",
        "thanks",
    )
    segs = segment(c)
    assert [s.turns for s in segs] == [[1, 2, 3], [4], [5, 6]]
    assert [s.reason for s in segs] == ["first", "shift", "marker"]
    assert "n0" not in {nid for s in segs for nid in s.node_ids}  # session context belongs to none
    assert segment_of(segs, "a4").index == 2  # type: ignore[union-attr]


def test_single_word_questions_still_open_a_segment() -> None:
    segs = segment(conv("What is the email attachment limit?", "how often do we get new laptops?"))
    assert len(segs) == 2


def test_embedding_similarity_shift() -> None:
    # A toy embedder: turns about fees point one way, turns about cards another.
    def embed(texts):
        return np.array([[1.0, 0.0] if "fee" in t else [0.0, 1.0] for t in texts])

    segs = segment(conv("What is the overdraft fee?", "And the wire fee?", "Where is my card?"), embed=embed)
    assert [s.turns for s in segs] == [[1, 2], [3]]
    with pytest.raises(ValueError, match="one vector per text"):
        segment(conv("a question?", "another?"), embed=lambda texts: np.zeros((1, 2)))
