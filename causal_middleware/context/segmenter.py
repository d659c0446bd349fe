"""Segmenter (optional stage): split a session into questions.

A user turn opens a new segment at an explicit marker ("another question", "one more thing") or
when it is a new question whose similarity to the open segment's question falls below a
threshold; close follow-ups (corrections, restatements, "thanks", pronoun-led turns) stay in the
open segment. Similarity is lexical (Jaccard of stemmed content words) by default, or the cosine
of embeddings from any ``embed(texts) -> vectors`` callable (e.g. a sentence-transformers model).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.signal_patterns import (
    CLARIFICATION_PATTERNS,
    CORRECTION_PATTERNS,
    REPAIR_PATTERNS,
)
from causal_middleware.context.statements import judging_text
from causal_middleware.context.text import coverage, expand_informal, jaccard, term_seq

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]

_MARKER = re.compile(
    r"\b(?:another|different|new|separate|unrelated|next|second|other) (?:question|topic|thing|issue)\b|"
    r"\bone more (?:thing|question)\b|\bchanging (?:the )?(?:subject|topic)\b|\bswitching (?:gears|topics?)\b|"
    r"^\s*(?:also|btw|by the way|oh,? and|separately)\b",
    re.IGNORECASE,
)
_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|so|then|it|that|this|they|those|what about|how about|are you sure)\b", re.IGNORECASE
)

_WH = re.compile(
    r"^\s*(?:what|when|where|which|who|whom|whose|why|how|can|could|do|does|is|are|will|would|should)\b",
    re.IGNORECASE,
)

LEXICAL_THRESHOLD = 0.2
EMBEDDING_THRESHOLD = 0.5


class Segment(BaseModel):
    index: int = Field(ge=1)
    opening_node_id: str
    question: str
    turns: list[int] = Field(default_factory=list)
    node_ids: list[str] = Field(default_factory=list)
    reason: str = Field(description="why the segment opened: first | marker | shift")


def segment(
    conversation: Conversation,
    *,
    embed: Embedder | None = None,
    threshold: float | None = None,
) -> list[Segment]:
    """Segments in order; nodes before the first user turn (session context) belong to none."""
    limit = threshold if threshold is not None else (EMBEDDING_THRESHOLD if embed else LEXICAL_THRESHOLD)
    users = conversation.user_turns
    vectors = _embed(embed, [u.content for u in users]) if embed and users else None
    segments: list[Segment] = []
    opening_vec: np.ndarray | None = None
    open_terms: set[str] = set()
    for i, u in enumerate(users):
        reason = _opens(
            u, open_terms, vectors[i] if vectors is not None else None, opening_vec, limit, first=not segments
        )
        if reason:
            segments.append(
                Segment(index=len(segments) + 1, opening_node_id=u.id, question=u.content, reason=reason)
            )
            open_terms = set(term_seq(u.content))
            opening_vec = vectors[i] if vectors is not None else None
        segments[-1].turns.append(u.turn)
    by_turn = {t: s for s in segments for t in s.turns}
    current: Segment | None = None
    for n in conversation.nodes:
        if n.type == NodeType.USER:
            current = by_turn[n.turn]
        if current is not None:
            current.node_ids.append(n.id)
    return segments


def segment_of(segments: Sequence[Segment], node_id: str) -> Segment | None:
    for s in segments:
        if node_id in s.node_ids:
            return s
    return None


def _opens(
    u: ConversationNode,
    open_terms: set[str],
    vec: np.ndarray | None,
    opening_vec: np.ndarray | None,
    limit: float,
    *,
    first: bool,
) -> str | None:
    if first:
        return "first"
    text = expand_informal(u.content)
    if _MARKER.search(text):
        return "marker"
    if (
        _FOLLOW_UP.search(text)
        or any(p.search(judging_text(text)) for p, _ in CORRECTION_PATTERNS)
        or any(p.search(text) for p, _ in REPAIR_PATTERNS + CLARIFICATION_PATTERNS)
    ):
        return None
    terms = set(term_seq(text))
    question = text.rstrip().endswith("?") or _WH.match(text) is not None
    if not terms or (len(terms) < 2 and not question):
        return None
    if vec is not None and opening_vec is not None:
        return "shift" if float(np.dot(vec, opening_vec)) < limit else None
    if jaccard(terms, open_terms) < limit:
        return "shift"
    # A complete question that shares a word with the open one but neither half of its own words
    # nor half of the open question's ("When does the gym close?" after "When does the swimming
    # pool close?") asks about something else. One that keeps the open question's subject and adds to
    # it ("Is the fee charged per item?" after "What is the fee?") is a follow-up.
    if (
        question
        and _WH.match(text)
        and len(terms) >= 2
        and max(coverage(terms, open_terms), coverage(open_terms, terms)) <= 0.5
    ):
        return "shift"
    return None


def _embed(embed: Embedder, texts: list[str]) -> np.ndarray:
    arr = np.asarray(embed(texts), dtype=float)
    if arr.ndim != 2 or arr.shape[0] != len(texts):
        raise ValueError(
            f"embed() must return one vector per text: got shape {arr.shape} for {len(texts)} texts"
        )
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)
