"""BM25Index: ranking, deterministic ties, edge cases and in-place upserts."""

from __future__ import annotations

import functools
import random

import pytest

from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.tasks.model import Passage
from causal_middleware.text import tokenize

CITIES = [
    ("Paris", "Paris is the capital of France and sits on the Seine."),
    ("Berlin", "Berlin is the capital of Germany."),
    ("Lyon", "Lyon is a large city in France."),
    ("Rome", "Rome was founded long ago on seven hills."),
    ("Madrid", "Madrid is the capital of Spain."),
]


def corpus() -> list[Passage]:
    return [Passage(id=f"c{i}", title=t, text=x) for i, (t, x) in enumerate(CITIES)]


def random_corpus(n: int, seed: int) -> list[Passage]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)]
    return [Passage(id=f"r{i}", text=" ".join(rng.choices(vocab, k=rng.randint(3, 15)))) for i in range(n)]


@pytest.fixture(params=["bm25s", "rank_bm25"])
def make(request):
    """BM25Index on each backend: every behaviour below must hold for both."""
    return functools.partial(BM25Index, backend=request.param)


def test_tokenize_lowercases_splits_on_non_alnum_and_drops_stopwords():
    assert tokenize("Who directed The_Matrix (1999) in Zürich?") == ["directed", "matrix", "1999", "zürich"]
    assert tokenize("the of and") == []


def test_best_match_first_and_scores_descending(make):
    hits = make(corpus()).search("capital of France", k=5)
    assert [h.passage.id for h in hits][0] == "c0"  # matches both content words
    assert {h.passage.id for h in hits} == {"c0", "c1", "c2", "c4"}  # Rome shares no token
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(s > 0 for s in scores)


def test_title_is_searchable(make):
    hits = make(corpus()).search("Madrid", k=1)
    assert [h.passage.id for h in hits] == ["c4"]


def test_ties_are_broken_by_corpus_order(make):
    same = [Passage(id=f"t{i}", text="identical words here") for i in range(4)]
    assert [h.passage.id for h in make(same).search("identical", k=4)] == ["t0", "t1", "t2", "t3"]
    reordered = list(reversed(same))
    assert [h.passage.id for h in make(reordered).search("identical", k=4)] == ["t3", "t2", "t1", "t0"]


def test_k_limits_results_and_same_input_gives_same_output(make):
    passages = random_corpus(200, seed=1)
    first = make(passages).search("w1 w2 w3", k=7)
    second = make(passages).search("w1 w2 w3", k=7)
    assert len(first) == 7
    assert [(h.passage.id, h.score) for h in first] == [(h.passage.id, h.score) for h in second]


def test_empty_or_unknown_query_returns_no_hits(make):
    index = make(corpus())
    assert index.search("", k=3) == []
    assert index.search("the of and", k=3) == []
    assert index.search("zanzibar", k=3) == []


@pytest.mark.parametrize("k", [0, -1])
def test_non_positive_k_is_rejected(make, k):
    with pytest.raises(ValueError, match="k must be a positive integer"):
        make(corpus()).search("capital", k=k)


def test_duplicate_ids_are_rejected_by_name(make):
    passages = corpus() + [Passage(id="c1", text="again")]
    with pytest.raises(ValueError, match="duplicate passage id 'c1'"):
        make(passages)


def test_upsert_replaces_a_passage_text(make):
    index = make(corpus())
    index.upsert(Passage(id="c2", title="Lyon", text="Lyon is the capital of Atlantis."))
    assert len(index) == 5
    assert "c2" not in {h.passage.id for h in index.search("France", k=5)}
    assert [h.passage.id for h in index.search("Atlantis", k=5)] == ["c2"]
    assert index.get("c2").text == "Lyon is the capital of Atlantis."


def test_upsert_scores_equal_a_fresh_build_of_the_changed_corpus(make):
    passages = random_corpus(120, seed=7)
    index = make(passages)
    changed = list(passages)
    rng = random.Random(3)
    for pos in rng.sample(range(len(passages)), 10):
        new = Passage(id=passages[pos].id, text="w5 w5 novel " + passages[pos].text[:10])
        changed[pos] = new
        index.upsert(new)
    extra = Passage(id="new", text="novel w9")
    index.upsert(extra)
    changed.append(extra)
    fresh = make(changed)
    for query in ["w5 novel", "w9", "w1 w2 w30", "novel"]:
        got = [(h.passage.id, round(h.score, 9)) for h in index.search(query, k=20)]
        want = [(h.passage.id, round(h.score, 9)) for h in fresh.search(query, k=20)]
        assert got == want, query
    assert len(index) == 121


def test_empty_corpus_and_token_free_corpus_then_upsert(make):
    empty = make([])
    assert len(empty) == 0 and empty.search("anything", k=3) == []
    empty.upsert(Passage(id="a", text="first real words"))
    assert [h.passage.id for h in empty.search("words", k=3)] == ["a"]

    stopwords_only = make([Passage(id="s", text="the of and")])
    assert stopwords_only.search("the", k=3) == []
    stopwords_only.upsert(Passage(id="s", text="now searchable"))
    assert [h.passage.id for h in stopwords_only.search("searchable", k=3)] == ["s"]


def test_get_unknown_id_names_it(make):
    with pytest.raises(KeyError, match="nope"):
        make(corpus()).get("nope")


def test_backends_rank_identically_and_agree_on_scores():
    passages = random_corpus(300, seed=11)
    fast, slow = BM25Index(passages, backend="bm25s"), BM25Index(passages, backend="rank_bm25")
    rng = random.Random(5)
    for _ in range(25):
        query = " ".join(f"w{rng.randrange(45)}" for _ in range(rng.randint(1, 4)))
        a, b = fast.search(query, k=10), slow.search(query, k=10)
        assert [h.passage.id for h in a] == [h.passage.id for h in b], query
        assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-9)


def test_repeated_query_tokens_count_each_time(make):
    index = make(corpus())
    once, twice = index.search("capital", k=1)[0].score, index.search("capital capital", k=1)[0].score
    assert twice == pytest.approx(2 * once)


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="unknown BM25 backend 'lucene'"):
        BM25Index(corpus(), backend="lucene")  # type: ignore[arg-type]
