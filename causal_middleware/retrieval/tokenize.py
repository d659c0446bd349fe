"""The tokenizer every lexical index shares: lowercase alphanumeric tokens minus a small stopword list."""

from __future__ import annotations

import re

# Function words only: content words ("first", "born", "capital") must stay searchable.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an and are as at be been but by did do does for from had has have he her his how i if in into
    is it its of on or she so that the their them then there these they this to was were what when
    where which who whom whose why will with
    """.split()
)

_TOKEN = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase alphanumeric tokens (Unicode letters and digits), dropping stopwords.

    >>> tokenize("Who directed The Matrix (1999)?")
    ['directed', 'matrix', '1999']
    """
    return [tok for tok in _TOKEN.findall(text.casefold()) if tok not in STOPWORDS]
