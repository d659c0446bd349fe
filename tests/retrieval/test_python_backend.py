"""The plain-Python BM25 backend (the context workspace's index) and the shared text toolkit."""

from __future__ import annotations

import math

import pytest

from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.tasks.model import Passage
from causal_middleware.text import (
    CHAT_STOPWORDS,
    FUNCTION_WORDS,
    QUESTION_STOPWORDS,
    chat_tokens,
    content_words,
    tokenize,
)

PASSAGES = [
    Passage(id="a", text="refund policy refunds within thirty days"),
    Passage(id="b", text="shipping takes five days"),
    Passage(id="c", text="refund of shipping fees"),
    Passage(id="d", text="loyalty points per dollar"),
]


def _okapi(doc: list[str], docs: list[list[str]], query: list[str], k1: float, b: float) -> float:
    avg = sum(len(d) for d in docs) / len(docs)
    score = 0.0
    for term in query:
        f = doc.count(term)
        if f:
            n = sum(term in d for d in docs)
            idf = math.log(1.0 + (len(docs) - n + 0.5) / (n + 0.5))
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avg))
    return score


@pytest.mark.parametrize("backend", ["python", "rank_bm25"])
def test_python_backend_scores_okapi_and_agrees_with_rank_bm25(backend: str) -> None:
    index = BM25Index(PASSAGES, backend=backend)  # type: ignore[arg-type]
    docs = [tokenize(p.text) for p in PASSAGES]
    hits = index.search("refund shipping", k=3)
    expected_order = sorted(
        range(len(PASSAGES)), key=lambda i: -_okapi(docs[i], docs, ["refund", "shipping"], 1.5, 0.75)
    )
    assert [h.passage.id for h in hits] == [PASSAGES[i].id for i in expected_order[:3]]
    for hit in hits:
        expected = _okapi(tokenize(hit.passage.text), docs, ["refund", "shipping"], 1.5, 0.75)
        assert hit.score == pytest.approx(expected)
    assert index.search("unrelated words", k=3) == []


def test_distinct_query_terms_counts_a_repeated_term_once() -> None:
    each = BM25Index(PASSAGES, backend="python")
    once = BM25Index(PASSAGES, backend="python", distinct_query_terms=True)
    twice, single = each.search("refund refund", k=1)[0], once.search("refund refund", k=1)[0]
    assert twice.score == pytest.approx(2 * single.score)
    assert single.score == pytest.approx(once.search("refund", k=1)[0].score)


def test_python_backend_upsert_recounts_the_corpus_and_analyzer_is_used() -> None:
    index = BM25Index(
        PASSAGES, backend="python", analyzer=lambda text: [w for w in text.split() if w != "of"]
    )
    assert index.search("of", k=5) == []  # the analyzer, not the default tokenizer, reads the query
    assert [h.passage.id for h in index.search("refunds", k=5)] == ["a"]  # and the documents: no stemming
    assert {h.passage.id for h in index.search("refund", k=5)} == {"a", "c"}
    index.upsert(Passage(id="d", text="refund points"))
    assert [h.passage.id for h in index.search("refund", k=5)][0] == "d"  # shortest document wins


def test_stopword_lists_nest_and_tokenizers_keep_their_forms() -> None:
    assert QUESTION_STOPWORDS - FUNCTION_WORDS == {"those"}
    assert FUNCTION_WORDS | QUESTION_STOPWORDS <= CHAT_STOPWORDS
    assert tokenize("Who directed The Matrix (1999)?") == ["directed", "matrix", "1999"]
    assert content_words("Those who built_it") == {"built_it"}
    assert chat_tokens("I don't know, Señor!") == ["i", "don't", "know", "se", "or"]
