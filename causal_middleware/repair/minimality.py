"""CausalFlow's minimality score of a repair: how little the repaired step output differs from the
original one.

Definitions (exactly what :func:`minimality` computes):

* **Text.** Each output is rendered with :func:`~causal_middleware.repair.render.render_output`:
  a string is itself; structured data is the sequence of its JSON leaves (dict values in key
  order as the step wrote them, list items in order), one per line, without keys, ``null``
  leaves or punctuation of the JSON syntax.
* **Tokens.** ``re.findall(r"\\w+|[^\\w\\s]", text)``: maximal runs of word characters, and every
  other non-space character on its own. Case-sensitive; whitespace is never a token.
  ``"Born in Paris."`` -> ``["Born", "in", "Paris", "."]``.
* **Position-wise match ratio.** With original tokens ``a`` (length ``La``) and repaired tokens
  ``b`` (length ``Lb``), ``match = #{i < min(La, Lb) : a[i] == b[i]} / max(La, Lb)``.
* **Length-difference penalty.** ``penalty = |La - Lb| / max(La, Lb)`` (in [0, 1]).
* **Minimality.** ``match * (1 - 0.5 * penalty)``, in [0, 1]; 1.0 when both outputs have no
  tokens (nothing changed), 0.0 when exactly one of them is empty.

A one-word substitution in a ten-token output scores 0.9; appending one token to ten scores
``10/11 * (1 - 0.5/11) = 0.868``; a rewrite that shifts every later token scores near 0, which is
the point: position-wise matching rewards edits that leave the rest of the step in place.
"""

from __future__ import annotations

import re
from typing import Any

from causal_middleware.repair.render import render_output

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """The minimality tokens of ``text`` (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a string, got {type(text).__name__}")
    return _TOKEN.findall(text)


def token_match_ratio(a: list[str], b: list[str]) -> float:
    """Position-wise matches over the longer length (1.0 for two empty sequences)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return sum(1 for x, y in zip(a, b, strict=False) if x == y) / longest


def length_penalty(a: list[str], b: list[str]) -> float:
    """``|len(a) - len(b)| / max(len(a), len(b))`` (0.0 for two empty sequences)."""
    longest = max(len(a), len(b))
    return abs(len(a) - len(b)) / longest if longest else 0.0


def minimality_tokens(a: list[str], b: list[str]) -> float:
    """Minimality of two token sequences: match ratio x (1 - 0.5 x length penalty)."""
    return token_match_ratio(a, b) * (1.0 - 0.5 * length_penalty(a, b))


def minimality(original: Any, repaired: Any) -> float:
    """Minimality of replacing step output ``original`` with ``repaired`` (strings or JSON data)."""
    return minimality_tokens(tokenize(render_output(original)), tokenize(render_output(repaired)))
