"""Persistent corpus corruption without touching the shared index.

A persistent fault also writes its passage into the index, so a later re-retrieval in the fork
finds the corrupted (or planted) passage again instead of healing it. Sweeps run many units at
once over one index, so the fault must not leak into other units or into the base runs: the
agent searches a :class:`ScopedIndex`, which forwards to the shared index except inside
``with scoped.override(private)``, where the searches made in that context (the fork's suffix,
whichever thread LangGraph runs it on: contexts are copied into its workers) go to ``private``, a
copy of the shared index with the fault's passages upserted (:func:`corrupted_copy`). The shared
index is never written.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
from collections.abc import Iterable, Iterator, Sequence

from causal_middleware.retrieval.base import Hit, Index
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.tasks.model import Passage


class ScopedIndex(Index):
    """An index that searches ``base``, or the override active in the current context."""

    def __init__(self, base: Index) -> None:
        if not isinstance(base, Index):
            raise TypeError(f"ScopedIndex wraps an Index, got {type(base).__name__}")
        self.base = base
        self.name = base.name
        self._override: contextvars.ContextVar[Index | None] = contextvars.ContextVar(
            f"scoped_index_{id(self)}", default=None
        )

    @property
    def active(self) -> Index:
        """The index searches use in this context."""
        return self._override.get() or self.base

    @contextlib.contextmanager
    def override(self, index: Index) -> Iterator[Index]:
        """Within the block (this context and contexts copied from it), search ``index`` instead."""
        token = self._override.set(index)
        try:
            yield index
        finally:
            self._override.reset(token)

    def build(self, passages: Sequence[Passage]) -> None:
        raise TypeError("ScopedIndex is a view: build the base index instead")

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.active.search(query, k)

    def upsert(self, passage: Passage) -> None:
        raise TypeError(
            "ScopedIndex never writes the shared index; upsert into corrupted_copy(...) and search it "
            "with ScopedIndex.override"
        )

    def __len__(self) -> int:
        return len(self.active)


def corrupted_copy(index: Index, passages: Iterable[Passage]) -> Index:
    """A copy of ``index`` with ``passages`` upserted (replacing same-id passages, appending new
    ones). A BM25 index is rebuilt from its passages (about half the cost of copying it); any other
    index is deep-copied, a dense index sharing its encoder with the original."""
    if isinstance(index, ScopedIndex):
        index = index.base
    if isinstance(index, BM25Index):
        replaced = {p.id: p for p in passages}
        corpus = [replaced.pop(p.id, p) for p in index.passages] + list(replaced.values())
        return BM25Index(corpus, backend=index.backend, k1=index.k1, b=index.b, name=index.name)  # type: ignore[arg-type]
    memo: dict[int, object] = {}
    encoder = getattr(index, "encoder", None)
    if encoder is not None:
        memo[id(encoder)] = encoder
    private = copy.deepcopy(index, memo)
    for passage in passages:
        private.upsert(passage)
    return private
