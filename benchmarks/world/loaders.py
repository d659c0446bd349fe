"""Load MuSiQue and HotpotQA into the world models (:class:`Dataset`, :class:`Question`, :class:`Passage`).

Both loaders read the files under ``../shared/data`` next to the checkout (``$CAUSAL_MW_DATA``
overrides that folder; explicit paths override both). The corpus is the items' own paragraphs plus
the dataset's corpus file, deduplicated by (title, text). Passage ids are content hashes
(``musique-<12 hex>``, ``hotpotqa-<12 hex>``), so they do not change with load order or ``limit``.

Gold decompositions:

- MuSiQue: ``question_decomposition`` as is, one :class:`HopGold` per entry (``#k`` references
  kept; ``supporting_passage_ids`` from ``paragraph_support_idx``; ``relation`` = the part after
  ``>>`` for the Wikidata-style sub-questions, e.g. ``"McRae >> country"``).
- HotpotQA has none, so a 2-hop one is built from ``supporting_facts`` (titles in their order):
  *bridge*: hop 1 ``"<title 1> >> bridge entity"`` answers the second title (its parenthetical
  disambiguator dropped), hop 2 ``"#1 >> <question>"`` answers the question; *comparison*: hop k
  ``"<title k> >> <question>"`` answers ``<title k>`` (HotpotQA does not annotate the compared
  values). In 74 of the 78 shipped bridge items the first supporting paragraph mentions the
  second's title (6 of them also the reverse), and in none only the reverse: the order is the
  reasoning order.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from causal_middleware.tasks.model import Dataset, HopGold, Passage, Question

DATA_ENV = "CAUSAL_MW_DATA"


def data_dir() -> Path:
    """The public-data folder: ``$CAUSAL_MW_DATA`` when set, else ``../shared/data`` next to the checkout."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def load_musique(
    path: str | Path | None = None, corpus_path: str | Path | None = None, *, limit: int | None = None
) -> Dataset:
    """Load MuSiQue-Ans items (original schema) and their corpus.

    ``path`` defaults to ``<data>/musique/musique_train.json``; ``corpus_path`` to
    ``<stem>_corpus.json`` beside it (a list of ``{title, text}``). ``limit`` keeps the first
    ``limit`` questions (the corpus is always loaded whole).
    """
    items_file = _resolve(path, "musique/musique_train.json")
    corpus_file = _corpus_beside(items_file, corpus_path)
    items = _read_json(items_file, list)[: _check_limit(limit)]
    corpus = _read_json(corpus_file, list)

    passages = _PassageSet("musique")
    for n, entry in enumerate(corpus):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("title"), str)
            or not isinstance(entry.get("text"), str)
        ):
            raise ValueError(
                f"{corpus_file}: corpus entry {n} is not an object with string 'title' and 'text'"
            )
        passages.add(entry["title"], entry["text"])

    questions = [_musique_question(item, n, passages) for n, item in enumerate(items)]
    return Dataset(
        name="musique",
        passages=passages.ordered(),
        questions=questions,
        metadata={
            "source": "MuSiQue-Ans train (Trivedi et al. 2022), via OSU-NLP-Group/HippoRAG",
            "license": "CC BY 4.0",
            "items_path": str(items_file),
            "corpus_path": str(corpus_file),
        },
    )


def load_hotpotqa(
    path: str | Path | None = None, corpus_path: str | Path | None = None, *, limit: int | None = None
) -> Dataset:
    """Load HotpotQA distractor-setting items and their corpus.

    ``path`` defaults to ``<data>/hotpotqa/hotpotqa_train.json``; ``corpus_path`` to
    ``<stem>_corpus.json`` beside it (an object title -> list of sentences). A passage's text is its
    sentences joined as in the source (they carry their own leading spaces). HTML entities in titles
    (``&quot;``) are unescaped. ``limit`` keeps the first ``limit`` questions.
    """
    items_file = _resolve(path, "hotpotqa/hotpotqa_train.json")
    corpus_file = _corpus_beside(items_file, corpus_path)
    items = _read_json(items_file, list)[: _check_limit(limit)]
    corpus = _read_json(corpus_file, dict)

    passages = _PassageSet("hotpotqa")
    for title, sentences in corpus.items():
        if not _is_str_list(sentences):
            raise ValueError(f"{corpus_file}: corpus entry {title!r} is not a list of sentences")
        passages.add(html.unescape(title), _join_sentences(sentences))

    questions = [_hotpotqa_question(item, n, passages) for n, item in enumerate(items)]
    return Dataset(
        name="hotpotqa",
        passages=passages.ordered(),
        questions=questions,
        metadata={
            "source": "HotpotQA distractor train (Yang et al. 2018), via OSU-NLP-Group/HippoRAG",
            "license": "CC BY-SA 4.0",
            "items_path": str(items_file),
            "corpus_path": str(corpus_file),
            "decomposition": "synthesised from supporting_facts (see benchmarks.world.loaders)",
        },
    )


class _PassageSet:
    """Passages deduplicated by (title, text), in first-seen order, with content-hash ids."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._by_key: dict[tuple[str, str], Passage] = {}
        self._ids: set[str] = set()

    def add(self, title: str, text: str) -> str:
        key = (title.strip(), text.strip())
        found = self._by_key.get(key)
        if found is not None:
            return found.id
        digest = hashlib.sha1(f"{key[0]}\n{key[1]}".encode()).hexdigest()[:12]
        pid = f"{self.prefix}-{digest}"
        if pid in self._ids:  # 48-bit prefix: practically impossible, but never silently merge passages
            raise ValueError(f"passage id collision for {pid!r} (title {key[0]!r})")
        self._ids.add(pid)
        self._by_key[key] = Passage(id=pid, title=key[0], text=key[1])
        return pid

    def ordered(self) -> list[Passage]:
        return list(self._by_key.values())


def _musique_question(item: Any, n: int, passages: _PassageSet) -> Question:
    qid = _item_id(item, "id", n)
    _require(item, qid, {"paragraphs": list, "question": str, "question_decomposition": list, "answer": str})
    aliases = item.get("answer_aliases", [])
    if not _is_str_list(aliases):
        raise ValueError(f"MuSiQue item {qid!r}: 'answer_aliases' must be a list of strings")

    paragraph_ids: dict[int, str] = {}
    for p in item["paragraphs"]:
        if not (
            isinstance(p, dict)
            and isinstance(p.get("idx"), int)
            and isinstance(p.get("title"), str)
            and isinstance(p.get("paragraph_text"), str)
        ):
            raise ValueError(
                f"MuSiQue item {qid!r}: a paragraph lacks an int 'idx' or string 'title'/'paragraph_text'"
            )
        paragraph_ids[p["idx"]] = passages.add(p["title"], p["paragraph_text"])

    steps = item["question_decomposition"]
    if not steps:
        raise ValueError(f"MuSiQue item {qid!r}: empty 'question_decomposition'")
    hops: list[HopGold] = []
    for k, step in enumerate(steps, start=1):
        if (
            not isinstance(step, dict)
            or not isinstance(step.get("question"), str)
            or not isinstance(step.get("answer"), str)
        ):
            raise ValueError(
                f"MuSiQue item {qid!r}: decomposition step {k} lacks a string 'question' or 'answer'"
            )
        support = step.get("paragraph_support_idx")
        if support is not None and support not in paragraph_ids:
            raise ValueError(
                f"MuSiQue item {qid!r}: decomposition step {k} paragraph_support_idx={support!r} "
                f"names no paragraph (have idx {sorted(paragraph_ids)})"
            )
        last = k == len(steps)
        hops.append(
            HopGold(
                index=k,
                question=step["question"],
                answer=step["answer"],
                aliases=list(aliases) if last and step["answer"] == item["answer"] else [],
                bridge_entity=None if last else step["answer"],
                supporting_passage_ids=[] if support is None else [paragraph_ids[support]],
                relation=step["question"].split(">>", 1)[1].strip() if ">>" in step["question"] else None,
            )
        )
    return Question(
        id=qid,
        text=item["question"],
        answer=item["answer"],
        aliases=list(aliases),
        hops=hops,
        dataset="musique",
        metadata={
            "type": qid.split("__", 1)[0],
            "answerable": item.get("answerable", True),
            "decomposition_ids": [step.get("id") for step in steps],
            "paragraph_ids": [paragraph_ids[i] for i in sorted(paragraph_ids)],
        },
    )


def _hotpotqa_question(item: Any, n: int, passages: _PassageSet) -> Question:
    qid = _item_id(item, "_id", n)
    _require(
        item, qid, {"question": str, "answer": str, "type": str, "supporting_facts": list, "context": list}
    )
    qtype = item["type"]
    if qtype not in ("bridge", "comparison"):
        raise ValueError(f"HotpotQA item {qid!r}: unknown type {qtype!r} (expected 'bridge' or 'comparison')")

    context_ids: dict[str, str] = {}
    sentence_counts: dict[str, int] = {}
    for entry in item["context"]:
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and _is_str_list(entry[1])
        ):
            raise ValueError(f"HotpotQA item {qid!r}: a context entry is not [title, [sentences]]")
        context_ids[entry[0]] = passages.add(html.unescape(entry[0]), _join_sentences(entry[1]))
        sentence_counts[entry[0]] = len(entry[1])

    titles: list[str] = []
    for fact in item["supporting_facts"]:
        if not (
            isinstance(fact, list)
            and len(fact) == 2
            and isinstance(fact[0], str)
            and isinstance(fact[1], int)
        ):
            raise ValueError(f"HotpotQA item {qid!r}: a supporting fact is not [title, sentence_index]")
        title, sent = fact
        if title not in context_ids:
            raise ValueError(f"HotpotQA item {qid!r}: supporting fact title {title!r} is not in its context")
        if not 0 <= sent < sentence_counts[title]:
            raise ValueError(
                f"HotpotQA item {qid!r}: supporting fact {title!r} sentence {sent} is out of range"
            )
        if title not in titles:
            titles.append(title)
    if len(titles) != 2:
        raise ValueError(f"HotpotQA item {qid!r}: expected supporting facts from 2 titles, got {len(titles)}")

    first, second = (html.unescape(t) for t in titles)
    question = item["question"]
    if qtype == "bridge":
        bridge = _strip_disambiguator(second)
        hops = [
            HopGold(
                index=1,
                question=f"{first} >> bridge entity",
                answer=bridge,
                bridge_entity=bridge,
                supporting_passage_ids=[context_ids[titles[0]]],
                relation="bridge",
            ),
            HopGold(
                index=2,
                question=f"#1 >> {question}",
                answer=item["answer"],
                supporting_passage_ids=[context_ids[titles[1]]],
            ),
        ]
    else:
        hops = [
            HopGold(
                index=k,
                question=f"{title} >> {question}",
                answer=_strip_disambiguator(title),
                supporting_passage_ids=[context_ids[raw]],
                relation="comparison",
            )
            for k, (title, raw) in enumerate(zip((first, second), titles, strict=True), start=1)
        ]
    return Question(
        id=qid,
        text=question,
        answer=item["answer"],
        hops=hops,
        dataset="hotpotqa",
        metadata={
            "type": qtype,
            "level": item.get("level"),
            "supporting_facts": [list(f) for f in item["supporting_facts"]],
            "paragraph_ids": list(context_ids.values()),
        },
    )


def _resolve(path: str | Path | None, default: str) -> Path:
    resolved = data_dir() / default if path is None else Path(path).expanduser()
    if not resolved.is_file():
        hint = f" (set ${DATA_ENV} or pass a path)" if path is None else ""
        raise FileNotFoundError(f"dataset file not found: {resolved}{hint}")
    return resolved


def _corpus_beside(items_file: Path, corpus_path: str | Path | None) -> Path:
    if corpus_path is not None:
        return _resolve(corpus_path, "")
    candidate = items_file.with_name(f"{items_file.stem}_corpus.json")
    if not candidate.is_file():
        raise FileNotFoundError(f"corpus file not found: {candidate} (pass corpus_path)")
    return candidate


def _read_json(path: Path, kind: type) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, kind):
        raise ValueError(
            f"{path}: expected a JSON {'array' if kind is list else 'object'}, got {type(data).__name__}"
        )
    return data


def _check_limit(limit: int | None) -> int | None:
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
    return limit


def _item_id(item: Any, key: str, n: int) -> str:
    if not isinstance(item, dict):
        raise ValueError(f"item {n} is not a JSON object")
    qid = item.get(key)
    if not isinstance(qid, str) or not qid:
        raise ValueError(f"item {n} has no string {key!r}")
    return qid


def _require(item: dict[str, Any], qid: str, fields: dict[str, type]) -> None:
    for name, kind in fields.items():
        if not isinstance(item.get(name), kind):
            raise ValueError(f"item {qid!r}: field {name!r} is missing or not a {kind.__name__}")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _join_sentences(sentences: Iterable[str]) -> str:
    return "".join(sentences).strip()


def _strip_disambiguator(title: str) -> str:
    """``"Lilu (mythology)"`` -> ``"Lilu"``: the entity a sentence would name."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip() or title
