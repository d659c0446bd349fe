"""A small generated world and its BM25 retriever, shared by the agent tests."""

from __future__ import annotations

import pytest

from benchmarks.world.generator import generate_world
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.retrieval.langchain import IndexRetriever
from causal_middleware.tasks.model import Dataset


@pytest.fixture(scope="session")
def toy_world() -> Dataset:
    return generate_world(20, seed=0)


@pytest.fixture(scope="session")
def toy_index(toy_world: Dataset) -> BM25Index:
    return BM25Index(toy_world.passages)


@pytest.fixture
def toy_retriever(toy_index: BM25Index) -> IndexRetriever:
    return IndexRetriever(index=toy_index, k=5)
