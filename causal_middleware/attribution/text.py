"""Token helpers shared by the diagnosers: content terms, "carries", coverage.

Terms are the index tokens of :func:`causal_middleware.text.tokenize` (lowercase alphanumerics
minus function words) with a few words that every failed answer or agent message uses
("unknown", "answer", ...) removed, so "I don't know" or "unknown" carries no content.
"""

from __future__ import annotations

from collections.abc import Iterable

from causal_middleware.text import tokenize

NON_CONTENT: frozenset[str] = frozenset(
    """
    unknown none null n nothing answer answers not no cannot can t don know found find information
    evidence passage passages document documents fact facts question sub query subquery retrieved
    """.split()
)


def terms(text: str | None) -> set[str]:
    """Content terms of ``text`` (a set)."""
    if not text:
        return set()
    return {t for t in tokenize(text) if t not in NON_CONTENT}


def coverage(needles: Iterable[str], haystack: set[str]) -> float:
    """Share of ``needles`` found in ``haystack`` (1.0 when there are no needles)."""
    wanted = set(needles)
    if not wanted:
        return 1.0
    return len(wanted & haystack) / len(wanted)


def carries(text_terms: set[str], tokens: set[str], *, threshold: float = 0.5) -> bool:
    """Whether a text (as its term set) carries ``tokens``: at least ``threshold`` of them, and one."""
    if not tokens:
        return False
    found = len(tokens & text_terms)
    return found >= 1 and found / len(tokens) >= threshold
