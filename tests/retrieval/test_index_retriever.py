"""IndexRetriever: LangChain documents carry passage ids and scores, and retriever callbacks fire."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from pydantic import ValidationError

from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.retrieval.langchain import IndexRetriever
from causal_middleware.tasks.model import Passage


@pytest.fixture
def index() -> BM25Index:
    return BM25Index(
        [
            Passage(
                id="p1", title="Ada", text="Ada Lovelace wrote the first program.", date=dt.date(1843, 7, 1)
            ),
            Passage(id="p2", title="Babbage", text="Charles Babbage designed the Analytical Engine."),
            Passage(id="p3", title="Turing", text="Alan Turing wrote about computable numbers."),
        ],
        name="toy-bm25",
    )


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_retriever_start(self, serialized, query, **kwargs):
        self.events.append(("start", query))

    def on_retriever_end(self, documents, **kwargs):
        self.events.append(("end", [d.id for d in documents]))


def test_documents_carry_id_text_and_metadata(index):
    docs = IndexRetriever(index=index, k=2).invoke("who wrote the first program")
    assert [d.id for d in docs] == ["p1", "p3"]
    first = docs[0]
    assert first.page_content == "Ada Lovelace wrote the first program."
    assert first.metadata["id"] == "p1"
    assert first.metadata["title"] == "Ada"
    assert first.metadata["source"] == "toy-bm25"
    assert first.metadata["date"] == "1843-07-01"
    assert first.metadata["score"] > docs[1].metadata["score"] > 0
    assert "date" not in docs[1].metadata


def test_retriever_callbacks_fire(index):
    recorder = Recorder()
    IndexRetriever(index=index, k=1).invoke("Analytical Engine", config={"callbacks": [recorder]})
    assert recorder.events == [("start", "Analytical Engine"), ("end", ["p2"])]


def test_no_match_gives_empty_list(index):
    assert IndexRetriever(index=index).invoke("zebra") == []


def test_k_must_be_positive(index):
    with pytest.raises(ValidationError):
        IndexRetriever(index=index, k=0)
