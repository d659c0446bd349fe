"""Answer scoring: SQuAD-style normalisation, exact match, token F1 and the project's correctness rule.

``is_correct(prediction, question)`` is what decides a run's outcome. A prediction is correct when,
after :func:`normalize_answer`, it

1. equals the gold answer or one of its aliases (exact match), or
2. contains a gold answer/alias as a whole-token contiguous span and is *short*: at most
   ``max_extra_tokens`` (default 10) tokens longer than that gold, so "It was G. Stanley Hall."
   counts but a paragraph that happens to name the answer does not.

Yes/no golds are the exception: rule 2 becomes "the prediction's first token is the gold", so
"no, they are not" is correct for "no" and "yes and no" is wrong for "no".
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from causal_middleware.tasks.model import Question

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_YES_NO = frozenset({"yes", "no"})


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    if not isinstance(text, str):
        raise TypeError(f"answers must be strings, got {type(text).__name__}")
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """The normalised tokens of an answer, in order."""
    return normalize_answer(text).split()


def token_set(text: str) -> frozenset[str]:
    """The set of normalised tokens of a text."""
    return frozenset(answer_tokens(text))


def token_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' normalised token sets (0.0 when both are empty)."""
    sa, sb = token_set(a), token_set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def exact_match(prediction: str, gold: str, aliases: Iterable[str] = ()) -> bool:
    """True when the normalised prediction equals the normalised gold or any alias."""
    pred = normalize_answer(prediction)
    return any(pred == normalize_answer(g) for g in _golds(gold, aliases))


def f1(prediction: str, gold: str, aliases: Iterable[str] = ()) -> float:
    """Token-level F1 (SQuAD/HotpotQA), the maximum over gold and aliases.

    As in HotpotQA's evaluator, a yes/no answer scores 0 against anything but the same word.
    """
    pred = answer_tokens(prediction)
    return max(_f1_tokens(pred, answer_tokens(g)) for g in _golds(gold, aliases))


def contains_answer(text: str, gold: str, aliases: Iterable[str] = ()) -> bool:
    """True when a normalised gold or alias occurs in ``text`` as a whole-token contiguous span."""
    tokens = answer_tokens(text)
    return any(_find_span(tokens, answer_tokens(g)) for g in _golds(gold, aliases))


def is_correct(prediction: str | None, question: Question, *, max_extra_tokens: int = 10) -> bool:
    """The correctness rule of the module docstring, against ``question.answer`` and its aliases."""
    return answer_matches(prediction, question.answer, question.aliases, max_extra_tokens=max_extra_tokens)


def answer_matches(
    prediction: str | None, reference: str, aliases: Iterable[str] = (), *, max_extra_tokens: int = 10
) -> bool:
    """The correctness rule of the module docstring against a plain reference answer (and
    aliases), for callers that have no :class:`Question` (e.g. a run recorded with a reference)."""
    if prediction is None:
        return False
    pred = answer_tokens(prediction)
    if not pred:
        return False
    for gold in _golds(reference, aliases):
        gold_tokens = answer_tokens(gold)
        if not gold_tokens:
            continue
        if pred == gold_tokens:
            return True
        if " ".join(gold_tokens) in _YES_NO:
            if pred[0] == gold_tokens[0]:
                return True
            continue
        if len(pred) - len(gold_tokens) <= max_extra_tokens and _find_span(pred, gold_tokens):
            return True
    return False


def _golds(gold: str, aliases: Iterable[str]) -> list[str]:
    if isinstance(aliases, str):
        raise TypeError("aliases must be a sequence of strings, not a single string")
    return [gold, *aliases]


def _f1_tokens(pred: Sequence[str], gold: Sequence[str]) -> float:
    if not pred or not gold:
        return float(list(pred) == list(gold))
    p, g = " ".join(pred), " ".join(gold)
    if (p in _YES_NO or g in _YES_NO) and p != g:
        return 0.0
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _find_span(tokens: Sequence[str], span: Sequence[str]) -> bool:
    if not span or len(span) > len(tokens):
        return False
    width = len(span)
    first = span[0]
    return any(
        tokens[i] == first and list(tokens[i : i + width]) == list(span)
        for i in range(len(tokens) - width + 1)
    )
