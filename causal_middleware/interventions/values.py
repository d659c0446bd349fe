"""Candidate values inside text: names, numbers and the facts a passage could answer with.

Shared by the generic intervention space and the offline proposer: deterministic, no model.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from typing import Any

from causal_middleware.spans.model import Document
from causal_middleware.text import CHAT_STOPWORDS, QUESTION_STOPWORDS, content_words

_ENTITY = re.compile(r"\b[A-Z][\w'’-]*(?:[ ]+(?:(?:of|the|de|von|van|da|del|la|le)[ ]+)?[A-Z][\w'’-]*)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def entities(text: str) -> list[str]:
    """Capitalised name spans of ``text`` (multi-word names kept together), in order, unique.

    A span at the start of a sentence whose first word is a stop word is trimmed (``"The Acme"``
    stays, ``"Where"`` alone does not count).
    """
    found: list[str] = []
    for match in _ENTITY.finditer(text or ""):
        span = match.group(0).strip()
        words = span.split()
        while words and words[0].lower() in QUESTION_STOPWORDS:
            words = words[1:]
        span = " ".join(words)
        if span and span not in found:
            found.append(span)
    return found


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


_NUMERIC_QUESTION = re.compile(
    r"\b(how many|how much|when|what year|which year|population|number of)\b", re.IGNORECASE
)
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")


def fact_candidates(documents: list[Document], sub_query: str, current: str = "") -> list[str]:
    """Values the evidence could answer ``sub_query`` with, most plausible first.

    Candidates are the names and numbers of every sentence: multi-word capitalised spans,
    single capitalised words not opening a sentence (or that are a passage title), and numbers.
    A single word opening a sentence ("Rilekok is the birthplace of ...") is a candidate too, but
    after every other name whose sentence shares as many of the sub-query's words (an opening word
    is as often a common word as a name), and never a function word ("She", "Every"); a name
    followed by a colon ("Fact:", "Final Answer:") is a label, never a candidate. A name met more
    than once keeps its best place.
    Names in the sub-query (its subject) and the recorded fact are left out. Order: a value the
    recorded fact itself states amid other words first, the last one first (a reader that copied
    the whole answering sentence, "X was born in Y.", where one value was asked for: the value
    alone is its own reading, which a later hop's search can use, and a sentence names its
    subject before its value; :func:`stated_values`), then a near-namesake of the recorded fact (a
    one-letter slip is the likeliest misreading), then values of the kind the sub-query asks for
    (numbers for "how many", "when", "what year", ..., names otherwise), then by how many words of
    the sub-query the sentence shares, then names before opening words, then evidence order.
    """
    query_words = content_words(sub_query)
    query_names = {n.lower() for n in entities(sub_query)}
    titles = {str(d.metadata.get("title", "")).strip() for d in documents} - {""}
    wants_number = bool(_NUMERIC_QUESTION.search(sub_query))
    stated = stated_values(current, titles)
    ranked: dict[str, tuple[int, int, int, int, int, int]] = {}
    order = 0
    for doc in documents:
        for sentence in _SENTENCE.split(doc.text):
            if not sentence.strip():
                continue
            overlap = len(content_words(sentence) & query_words)
            for span, opening in _sentence_spans(sentence, titles, openings=True):
                if span.lower() in query_names or span == current:
                    continue
                near = int(bool(current) and similarity(span, current) >= 0.75)
                fits = int(bool(_NUMBER.fullmatch(span)) == wants_number)
                own = stated.get(span, len(stated))
                rank = (own, -near, -fits, -overlap, int(opening), order)
                if span not in ranked or rank < ranked[span]:
                    ranked[span] = rank
                order += 1
    return sorted(ranked, key=lambda span: ranked[span])


def stated_values(fact: str, titles: Iterable[str] = ()) -> dict[str, int]:
    """The names and numbers a recorded fact states amid other words, each with its rank (0: the
    last one stated, then backwards); empty when the fact is a single value. A sentence names its
    subject before the value it gives ("Thaisra Nofi was born in Vaigres.")."""
    spans = [span for sentence in _SENTENCE.split(fact) for span, _ in _sentence_spans(sentence, set(titles))]
    spans = [span for span in dict.fromkeys(spans) if span != fact.strip()]
    return {span: rank for rank, span in enumerate(reversed(spans))}


def _sentence_spans(sentence: str, titles: set[str], *, openings: bool = False) -> list[tuple[str, bool]]:
    """The sentence's names and numbers, each with whether it is a single word opening the
    sentence (kept only with ``openings``, and never a function word; a passage title always
    counts as a name). A name followed by a colon is a label, left out."""
    spans: list[tuple[str, bool]] = []
    for match in _ENTITY.finditer(sentence):
        words = match.group(0).split()
        while words and words[0].lower() in QUESTION_STOPWORDS:
            words = words[1:]
        span = " ".join(words)
        opening = len(words) == 1 and not sentence[: match.start()].strip() and span not in titles
        if not span or sentence[match.end() : match.end() + 1] == ":":
            continue
        if opening and (not openings or span.lower() in CHAT_STOPWORDS):
            continue
        spans.append((span, opening))
    spans.extend((m.group(0).rstrip(","), False) for m in _NUMBER.finditer(sentence))
    return spans


_NAME = r"[A-Z][\w'’-]*(?:[ ]+[A-Z][\w'’-]*)*"
_ALIAS_PATTERNS = (
    re.compile(rf"({_NAME}),? (?:is |was )?(?:also )?known as ({_NAME})"),
    re.compile(rf"({_NAME}) \((?:also known as|aka|a\.k\.a\.) ({_NAME})\)"),
)


def alias_map(texts: list[str]) -> dict[str, list[str]]:
    """Name -> its aliases, both directions, from phrases like "X, also known as Y" and
    "X is also known as Y" anywhere in ``texts``; aliases in first-seen order."""
    aliases: dict[str, list[str]] = {}
    for text in texts:
        for pattern in _ALIAS_PATTERNS:
            for match in pattern.finditer(text):
                a, b = (
                    " ".join(w for w in g.split() if w.lower() not in QUESTION_STOPWORDS)
                    for g in match.groups()
                )
                if not a or not b or a == b:
                    continue
                for x, y in ((a, b), (b, a)):
                    if y not in aliases.setdefault(x, []):
                        aliases[x].append(y)
    return aliases


def interleave(streams: list[Iterator[Any]]) -> Iterator[Any]:
    """Round-robin over candidate streams until all are exhausted (each kind gets a turn early)."""
    active = list(streams)
    while active:
        for stream in list(active):
            try:
                yield next(stream)
            except StopIteration:
                active.remove(stream)
