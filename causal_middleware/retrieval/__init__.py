"""Retrieval: corpus indexes (BM25, dense) and their LangChain retriever wrapper.

``DenseIndex`` with its default encoder needs the ``[dense]`` extra; importing it does not.
"""

from causal_middleware.retrieval.base import Hit, Index
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.retrieval.dense import DenseIndex, HashingEncoder
from causal_middleware.retrieval.langchain import IndexRetriever

__all__ = ["BM25Index", "DenseIndex", "HashingEncoder", "Hit", "Index", "IndexRetriever"]
