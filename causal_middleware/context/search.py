"""A small Okapi BM25 ranker for knowledge-base search inside a context workspace.

Workspaces hold tens to a few thousand short documents, so a plain in-memory BM25 with the
non-negative (Lucene) IDF is enough and keeps scores meaningful on tiny corpora, where
rank-bm25's classic IDF goes negative for terms found in most documents.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence

from causal_middleware.context.text import content_tokens, stem


@functools.lru_cache(maxsize=8192)
def _analyze(text: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in content_tokens(text))


def analyze(text: str) -> list[str]:
    """The index terms of a text: stemmed content tokens."""
    return list(_analyze(text))


class BM25:
    """Okapi BM25 over pre-tokenised documents; ties are broken by document order."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._tf = [Counter(d) for d in docs]
        self._len = [len(d) for d in docs]
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(docs)
        self._idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        out = []
        for tf, length in zip(self._tf, self._len, strict=True):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * (length / self._avg if self._avg else 0.0))
            for term in set(query):
                f = tf.get(term)
                if f:
                    s += self._idf[term] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def top(self, query: Sequence[str], k: int) -> list[tuple[int, float]]:
        """``(doc index, score)`` of the best ``k`` documents with a positive score."""
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        ranked = sorted(enumerate(self.scores(query)), key=lambda p: (-p[1], p[0]))
        return [(i, s) for i, s in ranked[:k] if s > 0]
