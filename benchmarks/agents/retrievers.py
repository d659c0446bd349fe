"""The zoo's retrievers: a BM25 ``BaseRetriever`` (rank_bm25) and a vector store over a
deterministic bag-of-words ``Embeddings`` (hashed word counts, L2-normalised)."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ConfigDict, PrivateAttr
from rank_bm25 import BM25Okapi

from .world import Passage

# The zoo agents stand for user code, so their retriever keeps its own tokenizer, not the library's.
_WORD = re.compile(r"\w+")
_STOP = frozenset("a an the of in on at to for by was is who what where when did which and it".split())


def tokens(text: str) -> list[str]:
    return [w for w in (t.lower() for t in _WORD.findall(text or "")) if w not in _STOP]


def to_documents(passages: list[Passage]) -> list[Document]:
    return [Document(page_content=p.text, id=p.id, metadata={"id": p.id, "title": p.title}) for p in passages]


class BM25Retriever(BaseRetriever):
    """Okapi BM25 over a fixed list of documents; returns the top ``k`` with a positive score."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    documents: list[Document]
    k: int = 3
    _bm25: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        self._bm25 = BM25Okapi([tokens(d.page_content) for d in self.documents])

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        scores = self._bm25.get_scores(tokens(query))
        order = sorted(range(len(self.documents)), key=lambda i: (-scores[i], i))
        return [self.documents[i] for i in order[:k] if scores[i] > 0]


class BagOfWordsEmbeddings(Embeddings):
    """Hashed bag of words (``dim`` buckets, md5 of the lowercased word), L2-normalised."""

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in tokens(text):
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def vector_store(passages: list[Passage]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(BagOfWordsEmbeddings())
    docs = to_documents(passages)
    store.add_documents(docs, ids=[str(d.id) for d in docs])
    return store
