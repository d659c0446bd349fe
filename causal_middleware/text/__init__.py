"""The text toolkit every package shares: one stopword vocabulary and the tokenizers built on it.

The stopword lists nest, smallest first: :data:`QUESTION_STOPWORDS` (articles, prepositions,
auxiliaries, question words: what a name or a sub-query is trimmed of) and
:data:`FUNCTION_WORDS` (those plus pronouns and a few conjunctions: what a lexical index drops)
share one core; :data:`CHAT_STOPWORDS` (all of them plus the chat vocabulary of a
support session: "please", "thanks", "you", contractions) is what context debugging drops.

Tokenizers, each for one job:

* :func:`tokenize` - index tokens: casefolded Unicode letter/digit runs minus
  :data:`FUNCTION_WORDS` (BM25, dense hashing, the diagnosers' content terms).
* :data:`WORD` / :func:`content_words` - ``\\w+`` words of a question or a passage, case kept
  by :data:`WORD`, lower-cased minus :data:`QUESTION_STOPWORDS` by :func:`content_words`
  (intervention values, repair proposals).
* :func:`chat_tokens` - ASCII word runs with inner apostrophes kept (``don't``), the form the
  context stages need to see contractions and negations.
"""

from __future__ import annotations

import re

_CORE_STOPWORDS = frozenset(
    """
    a an the of in on at to for from by with and or is was were are be been who what which where
    when why how whose whom did does do as it its this that these
    """.split()
)
QUESTION_STOPWORDS: frozenset[str] = _CORE_STOPWORDS | {"those"}
# Function words only: content words ("first", "born", "capital") must stay searchable.
FUNCTION_WORDS: frozenset[str] = _CORE_STOPWORDS | frozenset(
    "but had has have he her his i if into she so their them then there they will".split()
)
CHAT_STOPWORDS: frozenset[str] = (
    FUNCTION_WORDS
    | QUESTION_STOPWORDS
    | frozenset(
        """
        about again all also am another any aren being both can could couldn d didn doesn doing don
        done down each either else every further having hello here hers hi him isn just know let lets
        ll m may me might mine more most must my neither no not off ok okay once only onto other our
        ours out over own per please re s same shall should shouldn some such t tell than thank thanks
        theirs too under up us ve very via wasn we weren won would wouldn yes you your yours
        """.split()
    )
)

_INDEX_TOKEN = re.compile(r"[^\W_]+")
WORD = re.compile(r"\w+")
_CHAT_TOKEN = re.compile(r"[a-z0-9]+(?:['_][a-z0-9]+)*")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase alphanumeric tokens (Unicode letters and digits), dropping
    :data:`FUNCTION_WORDS`.

    >>> tokenize("Who directed The Matrix (1999)?")
    ['directed', 'matrix', '1999']
    """
    return [tok for tok in _INDEX_TOKEN.findall(text.casefold()) if tok not in FUNCTION_WORDS]


def content_words(text: str) -> set[str]:
    """The lower-cased :data:`WORD` words of ``text`` that are not :data:`QUESTION_STOPWORDS`."""
    return {w.lower() for w in WORD.findall(text or "")} - QUESTION_STOPWORDS


def chat_tokens(text: str | None) -> list[str]:
    """Lowercased ASCII alphanumeric tokens, apostrophes and underscores kept inside a token."""
    if not text:
        return []
    return _CHAT_TOKEN.findall(text.lower())
