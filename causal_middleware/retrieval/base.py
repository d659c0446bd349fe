"""The retrieval interface of the core: a corpus index that answers a query with scored passages.

:class:`causal_middleware.retrieval.langchain.IndexRetriever` wraps any :class:`Index` as a LangChain
``BaseRetriever`` so LangChain callbacks fire (and our spans record document ids and scores).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pydantic import BaseModel

from causal_middleware.spans.model import Document
from causal_middleware.tasks.model import Passage


class Hit(BaseModel):
    """One search result: the passage and its retrieval score (higher is better)."""

    passage: Passage
    score: float


def hit_document(hit: Hit, score: float | None = None) -> Document:
    """A search hit as a trajectory :class:`Document` (title and date kept in its metadata);
    ``score`` overrides the hit's own."""
    passage = hit.passage
    metadata: dict[str, object] = {"title": passage.title} if passage.title else {}
    if passage.date is not None:
        metadata["date"] = passage.date.isoformat()
    return Document(
        id=passage.id, text=passage.text, score=hit.score if score is None else score, metadata=metadata
    )


class Index(ABC):
    """A searchable corpus. Build once with :meth:`build`; indexes may cache themselves on disk."""

    name: str = "index"

    @abstractmethod
    def build(self, passages: Sequence[Passage]) -> None: ...

    @abstractmethod
    def search(self, query: str, k: int = 5) -> list[Hit]: ...

    @abstractmethod
    def __len__(self) -> int: ...

    def upsert(self, passage: Passage) -> None:
        """Replace one passage's text in place (persistent corpus corruption). Optional."""
        raise NotImplementedError(f"{type(self).__name__} does not support in-place updates")
