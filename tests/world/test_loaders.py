"""MuSiQue / HotpotQA loaders: the shipped files, path resolution, dedup and clear errors."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from benchmarks.world.loaders import DATA_ENV, data_dir, load_hotpotqa, load_musique

SHARED = data_dir()
needs_data = pytest.mark.skipif(
    not (SHARED / "musique").is_dir() or not (SHARED / "hotpotqa").is_dir(),
    reason=f"public data folder {SHARED} not present (set ${DATA_ENV})",
)


@pytest.fixture(scope="module")
def musique():
    return load_musique()


@pytest.fixture(scope="module")
def hotpotqa():
    return load_hotpotqa()


@needs_data
def test_musique_shipped_file(musique):
    assert musique.name == "musique"
    assert len(musique.questions) == 100
    assert len(musique.passages) == 1890  # every item paragraph is also in the corpus file
    passages = musique.passage_map()
    assert len(passages) == len(musique.passages)
    for question in musique.questions:
        assert question.n_hops == int(question.id[0])  # "2hop__...", "3hop1__...", "4hop3__..."
        assert question.hops[-1].answer == question.answer
        for hop in question.hops:
            assert [p in passages for p in hop.supporting_passage_ids] == [True]
    first = musique.questions[0]
    assert first.id == "2hop__150763_14904"
    assert first.aliases == ["Stanley Hall"]
    assert first.hops[1].question == "Who was the first president of #1 ?"
    assert first.hops[0].bridge_entity == "American Psychological Association"
    support = passages[first.hops[0].supporting_passage_ids[0]]
    assert support.title == "Journal of Psychotherapy Integration"
    assert "American Psychological Association" in support.text


@needs_data
def test_musique_relation_and_stable_ids(musique):
    by_id = {q.id: q for q in musique.questions}
    hop = by_id["3hop2__130734_798404_834843"].hops[2]
    assert hop.relation == "country"
    assert hop.question.endswith("#2 , #1 >> country")
    few = load_musique(limit=3)
    assert [q.supporting_passage_ids for q in few.questions] == [
        q.supporting_passage_ids for q in musique.questions[:3]
    ]


@needs_data
def test_hotpotqa_shipped_file(hotpotqa):
    assert len(hotpotqa.questions) == 100
    assert len(hotpotqa.passages) == 994
    passages = hotpotqa.passage_map()
    types = {q.metadata["type"] for q in hotpotqa.questions}
    assert types == {"bridge", "comparison"}
    for question in hotpotqa.questions:
        assert question.n_hops == 2
        titles = []
        for fact_title, _ in question.metadata["supporting_facts"]:
            if fact_title not in titles:
                titles.append(fact_title)
        got = [passages[h.supporting_passage_ids[0]].title for h in question.hops]
        assert got == [html.unescape(t) for t in titles]
    gallu = next(q for q in hotpotqa.questions if q.text.startswith("If Gallu is a demon"))
    assert [h.answer for h in gallu.hops] == ["Lilu", "a spirit"]
    assert gallu.hops[1].question.startswith("#1 >> ")
    nolan = next(q for q in hotpotqa.questions if q.text.startswith("Are Christopher Nolan"))
    assert [h.relation for h in nolan.hops] == ["comparison", "comparison"]
    assert [h.answer for h in nolan.hops] == ["Christopher Nolan", "Sathish Kalathil"]
    assert not any("&quot;" in p.title or "&amp;" in p.title for p in hotpotqa.passages)


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def musique_item(**overrides):
    item = {
        "id": "2hop__1_2",
        "question": "Where was the author of Book born?",
        "answer": "Lyon",
        "answer_aliases": [],
        "answerable": True,
        "paragraphs": [
            {"idx": 0, "title": "Book", "paragraph_text": "Book was written by Ann.", "is_supporting": True},
            {"idx": 1, "title": "Ann", "paragraph_text": "Ann was born in Lyon.", "is_supporting": True},
        ],
        "question_decomposition": [
            {"id": 1, "question": "Who wrote Book?", "answer": "Ann", "paragraph_support_idx": 0},
            {"id": 2, "question": "Where was #1 born?", "answer": "Lyon", "paragraph_support_idx": 1},
        ],
    }
    item.update(overrides)
    return item


def test_data_env_overrides_default_folder_and_dedups(tmp_path, monkeypatch):
    write(tmp_path / "musique" / "musique_train.json", [musique_item()])
    write(
        tmp_path / "musique" / "musique_train_corpus.json",
        [{"title": "Ann", "text": "Ann was born in Lyon."}, {"title": "Other", "text": "Unrelated."}],
    )
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    ds = load_musique()
    assert [p.title for p in ds.passages] == ["Ann", "Other", "Book"]  # corpus first, duplicate merged
    question = ds.questions[0]
    assert [ds.passage_map()[pid].title for pid in question.supporting_passage_ids] == ["Book", "Ann"]
    assert question.hops[0].bridge_entity == "Ann" and question.hops[1].bridge_entity is None


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_musique(missing)
    write(tmp_path / "items.json", [musique_item()])
    with pytest.raises(FileNotFoundError, match="items_corpus.json"):
        load_musique(tmp_path / "items.json")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {
                "question_decomposition": [
                    {"id": 1, "question": "Who wrote Book?", "answer": "Ann", "paragraph_support_idx": 7}
                ]
            },
            r"'2hop__1_2'.*paragraph_support_idx=7",
        ),
        ({"question": None}, r"'2hop__1_2'.*'question'"),
        ({"question_decomposition": []}, r"'2hop__1_2'.*empty"),
        ({"answer_aliases": "Lyon"}, r"'2hop__1_2'.*answer_aliases"),
    ],
)
def test_malformed_musique_item_names_the_item(tmp_path, overrides, message):
    items = write(tmp_path / "m.json", [musique_item(**overrides)])
    write(tmp_path / "m_corpus.json", [])
    with pytest.raises(ValueError, match=message):
        load_musique(items)


def test_invalid_json_names_the_file(tmp_path):
    items = write(tmp_path / "m.json", "[{,]")
    write(tmp_path / "m_corpus.json", [])
    with pytest.raises(ValueError, match=r"m\.json: not valid JSON"):
        load_musique(items)


def hotpot_item(**overrides):
    item = {
        "_id": "h1",
        "question": "Which city was Ann born in?",
        "answer": "Lyon",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Book", 0], ["Ann (writer)", 0]],
        "context": [["Book", ["Book was written by Ann."]], ["Ann (writer)", ["Ann was born", " in Lyon."]]],
    }
    item.update(overrides)
    return item


def test_hotpotqa_small_file_bridge_decomposition(tmp_path):
    items = write(tmp_path / "h.json", [hotpot_item()])
    corpus = write(tmp_path / "corpus.json", {"Ann (writer)": ["Ann was born", " in Lyon."]})
    ds = load_hotpotqa(items, corpus_path=corpus)
    assert [p.text for p in ds.passages] == ["Ann was born in Lyon.", "Book was written by Ann."]
    hops = ds.questions[0].hops
    assert [(h.question, h.answer) for h in hops] == [
        ("Book >> bridge entity", "Ann"),
        ("#1 >> Which city was Ann born in?", "Lyon"),
    ]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"supporting_facts": [["Missing", 0], ["Book", 0]]}, r"'h1'.*'Missing' is not in its context"),
        ({"supporting_facts": [["Book", 5], ["Ann (writer)", 0]]}, r"'h1'.*sentence 5 is out of range"),
        ({"supporting_facts": [["Book", 0]]}, r"'h1'.*2 titles, got 1"),
        ({"type": "intersection"}, r"'h1'.*unknown type 'intersection'"),
    ],
)
def test_malformed_hotpotqa_item_names_the_item(tmp_path, overrides, message):
    items = write(tmp_path / "h.json", [hotpot_item(**overrides)])
    write(tmp_path / "h_corpus.json", {})
    with pytest.raises(ValueError, match=message):
        load_hotpotqa(items)
