"""Any :class:`~causal_middleware.retrieval.base.Index` as a LangChain retriever.

Going through ``BaseRetriever`` is what makes LangChain's ``on_retriever_start/end`` callbacks fire,
so instrumentation records the query and each document's id and score.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from causal_middleware.retrieval.base import Hit, Index


def hit_to_document(hit: Hit, source: str) -> Document:
    """A LangChain ``Document`` for one hit: ``id`` and ``metadata["id"]`` are the passage id."""
    passage = hit.passage
    metadata: dict[str, Any] = {
        "id": passage.id,
        "score": hit.score,
        "title": passage.title,
        "source": source,
    }
    if passage.date is not None:
        metadata["date"] = passage.date.isoformat()
    return Document(id=passage.id, page_content=passage.text, metadata=metadata)


class IndexRetriever(BaseRetriever):
    """Retrieve the top ``k`` passages of ``index`` for a query.

    Each ``Document`` carries ``id`` = passage id, ``page_content`` = passage text and
    ``metadata`` = ``{"id", "score", "title", "source" (the index name), "date" (ISO, when set)}``.
    """

    index: Index
    k: int = Field(default=5, gt=0)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [hit_to_document(hit, self.index.name) for hit in self.index.search(query, self.k)]
