"""Any :class:`~causal_middleware.retrieval.base.Index` as a LangChain retriever, and any LangChain
retriever or vector store as an ``Index``.

Going through ``BaseRetriever`` is what makes LangChain's ``on_retriever_start/end`` callbacks fire,
so instrumentation records the query and each document's id and score (:class:`IndexRetriever`).
The other way, :class:`RetrieverIndex` lets audits and re-retrieval search the user's own retriever,
with document ids by the same rule instrumentation records them by (:func:`document_id`).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import itertools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from opentelemetry import context as otel_context
from pydantic import Field

from causal_middleware.retrieval.base import Hit, Index
from causal_middleware.tasks.model import Passage

_T = TypeVar("_T")


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


# --- the other direction: a LangChain retriever or vector store as an Index ---------------------


def document_id(doc: Document) -> str:
    """A document's id: ``Document.id``, else ``metadata["id"]``, else a content hash
    (``sha1:<12 hex>`` of ``page_content``). The one rule instrumentation records ids by."""
    if doc.id:
        return str(doc.id)
    meta_id = (doc.metadata or {}).get("id")
    if meta_id is not None and meta_id != "":
        return str(meta_id)
    return "sha1:" + hashlib.sha1(doc.page_content.encode("utf-8", "replace")).hexdigest()[:12]


_SCORE_KEYS = ("score", "relevance_score", "similarity")


def metadata_score(doc: Document) -> float | None:
    """The first numeric ``score`` / ``relevance_score`` / ``similarity`` in the metadata."""
    meta = doc.metadata or {}
    for key in _SCORE_KEYS:
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _as_date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def document_to_passage(doc: Document) -> Passage:
    """A :class:`Passage` for a LangChain ``Document``: id by :func:`document_id`, ``title`` and
    ``date`` from the metadata when present, every other metadata key in ``Passage.metadata``."""
    meta = dict(doc.metadata or {})
    title = meta.pop("title", "")
    date = _as_date(meta.get("date"))
    if date is not None:
        meta.pop("date")
    return Passage(
        id=document_id(doc),
        title=title if isinstance(title, str) else str(title),
        text=doc.page_content,
        date=date,
        metadata=meta,
    )


class RetrieverSearchError(RuntimeError):
    """The wrapped retriever or vector store raised while searching."""


Searchable = BaseRetriever | VectorStore

# int fields a retriever's own result count may be read from / asked for by ``model_copy``
_K_FIELDS = ("k", "top_k")


def configured_k(source: Searchable) -> int | None:
    """How many documents ``source`` returns when the user's code calls it, when knowable."""
    if isinstance(source, VectorStore):
        return None
    kwargs = getattr(source, "search_kwargs", None)
    if isinstance(kwargs, dict) and isinstance(kwargs.get("k"), int):
        return int(kwargs["k"])
    if isinstance(source, VectorStoreRetriever):
        return 4  # VectorStore.similarity_search's default
    fields = type(source).model_fields
    for name in _K_FIELDS:
        value = getattr(source, name, None) if name in fields else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _quiet(fn: Callable[[], _T]) -> _T:
    """Run ``fn`` in a fresh context: no inherited LangChain run config (callbacks), no current
    OTel span, and OTel instrumentation suppressed, so a search opens no span in the user's run."""

    def inner() -> _T:
        otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
        return fn()

    return contextvars.Context().run(inner)


class RetrieverIndex(Index):
    """The user's own LangChain ``BaseRetriever`` or ``VectorStore`` as a core :class:`Index`.

    ``search(query, k)`` returns up to ``k`` hits, best first; each passage's id follows
    :func:`document_id` (the rule instrumentation records ids by), so hits match recorded documents.
    ``k`` may exceed the retriever's own ``k`` (re-retrieval excludes the recorded documents and still
    needs others), asked for this way, never by mutating the user's object:

    - a ``VectorStore``: ``similarity_search_with_score(query, k)``;
    - a ``VectorStoreRetriever``: its vector store with the retriever's ``search_type`` and
      ``search_kwargs`` (filters, ``score_threshold``, MMR's ``fetch_k`` raised to ``k``) and ``k``;
    - a retriever with an int ``k`` / ``top_k`` field or ``search_kwargs["k"]``: a
      ``retriever.model_copy(update=...)`` asking for ``k``;
    - any other retriever: called as is, so it returns at most its own count (a limit: such a
      retriever cannot offer candidates beyond what the user's code saw).

    Scores (higher is better): the metadata's ``score`` / ``relevance_score`` / ``similarity``; a
    vector store's scores, mapped through its own relevance function when it has one, else used as
    similarities when they come best first in decreasing order and negated when increasing
    (distances); else ``1 / (rank + 1)``. A store without ``similarity_search_with_score`` falls
    back to ``similarity_search`` and rank scores.

    The retriever runs outside the user's tracing: ``_get_relevant_documents`` with a no-op run
    manager in a fresh context, so no LangChain callback fires and no OTel span opens in their run.
    Search failures raise :class:`RetrieverSearchError`. :meth:`build` raises (the corpus is the
    user's); ``len()`` is the vector store's size when knowable (in-memory, FAISS, Chroma, a
    retriever's ``docs`` list), else 0; the index is truthy either way.
    """

    def __init__(self, source: Searchable, *, name: str | None = None) -> None:
        if not isinstance(source, BaseRetriever | VectorStore):
            raise TypeError(
                f"RetrieverIndex wraps a LangChain BaseRetriever or VectorStore, got {type(source).__name__}"
            )
        self.source = source
        self.name = name or (
            source.get_name() if isinstance(source, BaseRetriever) else type(source).__name__
        )

    def __repr__(self) -> str:
        return f"RetrieverIndex({type(self.source).__name__}, name={self.name!r})"

    def __bool__(self) -> bool:
        return True

    def build(self, passages: Sequence[Passage]) -> None:
        raise NotImplementedError(
            f"RetrieverIndex({self.name}) searches the user's own retriever; its corpus is built and "
            "owned by the user's code, not by causal_middleware"
        )

    def __len__(self) -> int:
        store = self.source.vectorstore if isinstance(self.source, VectorStoreRetriever) else self.source
        probes: tuple[Callable[[], Any], ...] = (
            lambda: len(store.store),  # type: ignore[union-attr]  # InMemoryVectorStore
            lambda: store.index.ntotal,  # type: ignore[union-attr]  # FAISS
            lambda: store._collection.count(),  # type: ignore[union-attr]  # Chroma
            lambda: len(store.docs),  # type: ignore[union-attr]  # BM25Retriever and the like
        )
        for probe in probes:
            try:
                value = probe()
            except Exception:  # noqa: BLE001 - any failure means "not knowable this way"
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return 0

    def search(self, query: str, k: int = 5) -> list[Hit]:
        if k <= 0:
            return []
        try:
            scored = _quiet(lambda: self._scored(query, k))
        except Exception as exc:
            raise RetrieverSearchError(
                f"retriever {self.name!r} failed on query {query!r}: {type(exc).__name__}: {exc}"
            ) from exc
        hits: list[Hit] = []
        seen: set[str] = set()
        for rank, (doc, score) in enumerate(scored):
            if not isinstance(doc, Document):
                doc = Document(page_content=str(doc))
            passage = document_to_passage(doc)
            if passage.id in seen:
                continue
            seen.add(passage.id)
            meta_score = metadata_score(doc)
            value = meta_score if meta_score is not None else score
            hits.append(Hit(passage=passage, score=value if value is not None else 1.0 / (rank + 1)))
            if len(hits) >= k:
                break
        return hits

    # -- asking the source for k documents ---------------------------------------------------------

    def _scored(self, query: str, k: int) -> list[tuple[Document, float | None]]:
        source = self.source
        if isinstance(source, VectorStore):
            return _store_search(source, query, k, "similarity", {})
        if isinstance(source, VectorStoreRetriever):
            kwargs = {key: v for key, v in source.search_kwargs.items() if key != "k"}
            return _store_search(source.vectorstore, query, k, source.search_type, kwargs)
        return [(doc, None) for doc in _call_retriever(_asking_for(source, k), query)]


def _asking_for(retriever: BaseRetriever, k: int) -> BaseRetriever:
    """A copy of ``retriever`` configured to return ``k`` documents, or ``retriever`` itself."""
    kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(kwargs, dict) and "k" in kwargs:
        return retriever.model_copy(update={"search_kwargs": {**kwargs, "k": k}})
    fields = type(retriever).model_fields
    for name in _K_FIELDS:
        value = getattr(retriever, name, None) if name in fields else None
        if isinstance(value, int) and not isinstance(value, bool):
            return retriever.model_copy(update={name: k})
    return retriever


def _call_retriever(retriever: BaseRetriever, query: str) -> list[Document]:
    """``retriever``'s documents for ``query`` with no callbacks (a no-op run manager)."""
    if retriever._new_arg_supported:
        run_manager = CallbackManagerForRetrieverRun.get_noop_manager()
        return list(retriever._get_relevant_documents(query, run_manager=run_manager))
    return list(retriever._get_relevant_documents(query))  # type: ignore[call-arg]


def _store_search(
    store: VectorStore, query: str, k: int, search_type: str, kwargs: dict[str, Any]
) -> list[tuple[Document, float | None]]:
    if search_type == "mmr":
        fetch_k = max(int(kwargs.pop("fetch_k", 20)), k)
        docs = store.max_marginal_relevance_search(query, k=k, fetch_k=fetch_k, **kwargs)
        return [(doc, None) for doc in docs]
    if search_type == "similarity_score_threshold":
        return [(d, float(s)) for d, s in store.similarity_search_with_relevance_scores(query, k=k, **kwargs)]
    try:
        pairs = store.similarity_search_with_score(query, k=k, **kwargs)
    except NotImplementedError:
        return [(doc, None) for doc in store.similarity_search(query, k=k, **kwargs)]
    raw = [float(s) for _, s in pairs]
    try:
        relevance = store._select_relevance_score_fn()
    except NotImplementedError:
        relevance = None
    if relevance is not None:
        scores: list[float | None] = [relevance(s) for s in raw]
    elif all(a >= b for a, b in itertools.pairwise(raw)):
        scores = list(raw)  # similarities, best first
    elif all(a <= b for a, b in itertools.pairwise(raw)):
        scores = [-s for s in raw]  # distances, nearest first
    else:
        scores = [None] * len(raw)
    return [(doc, score) for (doc, _), score in zip(pairs, scores, strict=True)]
