"""Lexical retrieval: Okapi BM25 over title + text of each passage, on bm25s, rank-bm25 or plain Python.

The backends compute the same score, ``sum over query tokens of idf * tf * (k1 + 1) /
(tf + k1 * (1 - b + b * len / avglen))`` with Lucene's idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``
(a repeated query token counts each time), so they rank identically. They differ in cost
(measured by ``benchmarks.suites.retrieval``):

- ``bm25s`` (default when installed): precomputed sparse score matrix, a query is a few numpy
  operations (0.5 ms of CPU at 100k passages). It has no in-place update, so ``upsert`` marks
  the index stale and the next search rebuilds it from the kept token-id lists (about 0.25 s of
  CPU per 10k passages); several upserts before a search cost one rebuild.
- ``rank_bm25``: rank-bm25's ``BM25Okapi``, scoring each matching passage in Python per query
  (about 40 ms of CPU at 100k). ``upsert`` is incremental (the changed document's counts and the
  idf table: 7 ms at 10k, 80 ms at 100k).
- ``python``: a dictionary per document scored in plain Python, for the small corpora of a
  context workspace (tens to a few thousand short documents): no numpy model to build, and an
  upsert recomputes the statistics of the whole corpus.

``analyzer`` replaces the default tokenizer (the context workspace indexes stemmed content
tokens); ``distinct_query_terms`` counts a query term once however often it repeats.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from rank_bm25 import BM25Okapi

from causal_middleware.retrieval.base import Hit, Index
from causal_middleware.tasks.model import Passage
from causal_middleware.text import tokenize

Backend = Literal["auto", "bm25s", "rank_bm25", "python"]
BACKENDS = ("bm25s", "rank_bm25", "python")


def passage_document(passage: Passage) -> str:
    """The text an index sees for a passage: its title (entity names live there) then its text."""
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def default_backend() -> str:
    """``"bm25s"`` when the bm25s package is importable, else ``"rank_bm25"``."""
    return "bm25s" if importlib.util.find_spec("bm25s") is not None else "rank_bm25"


class BM25Index(Index):
    """Okapi BM25 over a passage corpus (see the module docstring for the score and the backends).

    Only passages sharing at least one query token are hits, so a query with no indexed token
    returns none. Results are sorted by score, ties broken by corpus order: the same corpus and
    query always give the same list, whichever the backend.
    """

    name = "bm25"

    def __init__(
        self,
        passages: Sequence[Passage] | None = None,
        *,
        backend: Backend = "auto",
        k1: float = 1.5,
        b: float = 0.75,
        name: str | None = None,
        analyzer: Callable[[str], Sequence[str]] = tokenize,
        distinct_query_terms: bool = False,
    ) -> None:
        if backend not in ("auto", *BACKENDS):
            raise ValueError(
                f"unknown BM25 backend {backend!r}; expected 'auto', 'bm25s', 'rank_bm25' or 'python'"
            )
        self.backend: str = default_backend() if backend == "auto" else backend
        if self.backend == "bm25s" and importlib.util.find_spec("bm25s") is None:
            raise ImportError("BM25Index(backend='bm25s') needs the bm25s package: pip install bm25s")
        if name is not None:
            self.name = name
        self.k1, self.b = k1, b
        self._analyzer = analyzer
        self._distinct_query_terms = distinct_query_terms
        self._passages: list[Passage] = []
        self._positions: dict[str, int] = {}
        self._scorer: _Scorer = self._new_scorer([])
        if passages is not None:
            self.build(passages)

    def build(self, passages: Sequence[Passage]) -> None:
        """Index ``passages`` (replacing any previous corpus). Passage ids must be unique."""
        positions: dict[str, int] = {}
        for pos, passage in enumerate(passages):
            if not isinstance(passage, Passage):
                raise TypeError(
                    f"BM25Index.build expects Passage objects, got {type(passage).__name__} at {pos}"
                )
            if passage.id in positions:
                raise ValueError(
                    f"duplicate passage id {passage.id!r} (positions {positions[passage.id]} and {pos})"
                )
            positions[passage.id] = pos
        self._passages = list(passages)
        self._positions = positions
        self._scorer = self._new_scorer([self._terms(passage_document(p)) for p in self._passages])

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` best-scoring passages for ``query``; empty when the query has no indexed token."""
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        tokens = self._terms(query)
        if self._distinct_query_terms:
            tokens = list(dict.fromkeys(tokens))
        if not tokens:
            return []
        positions, scores = self._scorer.scores(tokens)
        if len(positions) > k:  # keep every passage tied with the k-th best, then order exactly
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            positions, scores = positions[keep], scores[keep]
        order = np.lexsort((positions, -scores))[:k]
        return [Hit(passage=self._passages[positions[i]], score=float(scores[i])) for i in order]

    def upsert(self, passage: Passage) -> None:
        """Replace the passage with ``passage.id`` (keeping its position, which breaks ties), or append it."""
        if not isinstance(passage, Passage):
            raise TypeError(f"BM25Index.upsert expects a Passage, got {type(passage).__name__}")
        pos = self._positions.get(passage.id)
        if pos is None:
            pos = len(self._passages)
            self._positions[passage.id] = pos
            self._passages.append(passage)
        else:
            self._passages[pos] = passage
        self._scorer.update(pos, self._terms(passage_document(passage)))

    def get(self, passage_id: str) -> Passage:
        """The indexed passage with this id (KeyError naming the id when absent)."""
        try:
            return self._passages[self._positions[passage_id]]
        except KeyError:
            raise KeyError(f"no passage with id {passage_id!r} in index {self.name!r}") from None

    @property
    def passages(self) -> list[Passage]:
        """The indexed passages in corpus order (a copy)."""
        return list(self._passages)

    def __len__(self) -> int:
        return len(self._passages)

    def _terms(self, text: str) -> list[str]:
        return list(self._analyzer(text))

    def _new_scorer(self, documents: list[list[str]]) -> _Scorer:
        if self.backend == "bm25s":
            return _BM25sScorer(documents, self.k1, self.b)
        if self.backend == "python":
            return _PythonScorer(documents, self.k1, self.b)
        return _RankBM25Scorer(documents, self.k1, self.b)


class _Scorer:
    """A backend: scores of the passages matching a query; updates one document in place."""

    def scores(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ascending positions of matching passages, their float64 scores)."""
        raise NotImplementedError

    def update(self, pos: int, tokens: list[str]) -> None:
        """Replace document ``pos`` (``pos == len`` appends)."""
        raise NotImplementedError


class _OkapiLuceneIdf(BM25Okapi):  # type: ignore[misc]  # rank-bm25 ships no types
    """``BM25Okapi`` with Lucene's idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``.

    rank-bm25's own (ATIRE) idf is exactly zero for a term in half the documents and floored to a
    small constant above that, so on small corpora common query words score nothing or rank oddly.
    Lucene's idf is positive and decreasing in document frequency, and is the one bm25s uses.
    """

    def _calc_idf(self, nd: dict[str, int]) -> None:
        n_docs = self.corpus_size
        self.idf = {word: math.log(1.0 + (n_docs - freq + 0.5) / (freq + 0.5)) for word, freq in nd.items()}


class _RankBM25Scorer(_Scorer):
    """rank-bm25, with an inverted index to pick candidates and incremental updates of its tables."""

    def __init__(self, documents: list[list[str]], k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self._bm25: _OkapiLuceneIdf | None = None
        if any(documents):
            self._bm25 = _OkapiLuceneIdf(documents, k1=k1, b=b)
            self._doc_freqs: list[dict[str, int]] = self._bm25.doc_freqs
            self._doc_len: list[int] = self._bm25.doc_len
        else:  # rank-bm25 divides by the vocabulary size and the mean length: no model until a token exists
            self._doc_freqs, self._doc_len = [{} for _ in documents], [0 for _ in documents]
        self._df: Counter[str] = Counter()
        self._postings: dict[str, set[int]] = {}
        for pos, freqs in enumerate(self._doc_freqs):
            self._df.update(freqs.keys())
            for word in freqs:
                self._postings.setdefault(word, set()).add(pos)

    def scores(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        candidates: set[int] = set()
        for token in set(tokens):
            candidates.update(self._postings.get(token, ()))
        if self._bm25 is None or not candidates:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        positions = np.fromiter(sorted(candidates), dtype=np.int64, count=len(candidates))
        scores = np.asarray(self._bm25.get_batch_scores(tokens, positions.tolist()), dtype=np.float64)
        return positions, scores

    def update(self, pos: int, tokens: list[str]) -> None:
        new_freqs = dict(Counter(tokens))
        if pos == len(self._doc_freqs):
            self._doc_freqs.append(new_freqs)
            self._doc_len.append(len(tokens))
        else:
            for word in self._doc_freqs[pos]:
                self._df[word] -= 1
                if self._df[word] == 0:
                    del self._df[word]
                postings = self._postings[word]
                postings.discard(pos)
                if not postings:
                    del self._postings[word]
            self._doc_freqs[pos] = new_freqs
            self._doc_len[pos] = len(tokens)
        self._df.update(new_freqs.keys())
        for word in new_freqs:
            self._postings.setdefault(word, set()).add(pos)
        if not self._df:
            self._bm25 = None
        elif self._bm25 is None:
            self._bm25 = _OkapiLuceneIdf(
                [[w for w, n in freqs.items() for _ in range(n)] for freqs in self._doc_freqs],
                k1=self.k1,
                b=self.b,
            )
            self._bm25.doc_freqs, self._bm25.doc_len = self._doc_freqs, self._doc_len
        else:  # the same corpus statistics BM25Okapi.__init__ computes
            self._bm25.corpus_size = len(self._doc_len)
            self._bm25.avgdl = sum(self._doc_len) / self._bm25.corpus_size
            self._bm25._calc_idf(self._df)


class _PythonScorer(_Scorer):
    """Term-frequency dictionaries scored in plain Python, Lucene idf; updates recount the corpus."""

    def __init__(self, documents: list[list[str]], k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self._tf = [Counter(d) for d in documents]
        self._len = [len(d) for d in documents]
        self._count()

    def _count(self) -> None:
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self._tf)
        self._idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        positions: list[int] = []
        scores: list[float] = []
        for pos, (tf, length) in enumerate(zip(self._tf, self._len, strict=True)):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * (length / self._avg if self._avg else 0.0))
            for term in tokens:
                f = tf.get(term)
                if f:
                    s += self._idf[term] * f * (self.k1 + 1) / (f + norm)
            if s > 0:
                positions.append(pos)
                scores.append(s)
        return np.asarray(positions, dtype=np.int64), np.asarray(scores, dtype=np.float64)

    def update(self, pos: int, tokens: list[str]) -> None:
        if pos == len(self._tf):
            self._tf.append(Counter(tokens))
            self._len.append(len(tokens))
        else:
            self._tf[pos], self._len[pos] = Counter(tokens), len(tokens)
        self._count()


class _BM25sScorer(_Scorer):
    """bm25s (method ``lucene``, float64) over token-id lists; rebuilt lazily after updates."""

    def __init__(self, documents: list[list[str]], k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self._vocab: dict[str, int] = {}
        self._documents = [self._ids(tokens) for tokens in documents]
        self._model: Any = None
        self._stale = True
        # Searches run concurrently (parallel forks share one index): build under a lock and only
        # then publish the model, so no search ever sees a half-built or empty model.
        self._lock = threading.Lock()

    def scores(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        if self._stale:
            with self._lock:
                if self._stale:
                    self._rebuild()
        model = self._model
        known = [self._vocab[t] for t in tokens if t in self._vocab]
        if model is None or not known:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        # bm25s drops the constant (k1 + 1) factor from the Okapi weight; restore it so both backends agree
        all_scores = np.asarray(model.get_scores(known), dtype=np.float64) * (self.k1 + 1.0)
        positions = np.flatnonzero(all_scores > 0)  # Lucene idf > 0: every matching passage scores > 0
        return positions.astype(np.int64), all_scores[positions]

    def update(self, pos: int, tokens: list[str]) -> None:
        with self._lock:
            ids = self._ids(tokens)
            if pos == len(self._documents):
                self._documents.append(ids)
            else:
                self._documents[pos] = ids
            self._stale = True

    def _ids(self, tokens: list[str]) -> list[int]:
        vocab = self._vocab
        return [vocab.setdefault(t, len(vocab)) for t in tokens]

    def _rebuild(self) -> None:
        import bm25s
        from bm25s.tokenization import Tokenized

        model = None
        if any(self._documents):
            model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene", dtype="float64")
            # A copy: bm25s keeps the vocabulary it is given, and ours grows with later updates.
            corpus = Tokenized(ids=self._documents, vocab=dict(self._vocab))
            model.index(corpus, create_empty_token=False, show_progress=False)
        self._model = model
        self._stale = False
