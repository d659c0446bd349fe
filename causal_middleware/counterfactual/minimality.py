"""CausalFlow's minimality score of a repair: how little the repaired step output differs from the
original one.

Definitions (exactly what :func:`minimality` computes):

* **Leaves.** A step output is split into text leaves keyed by their JSON path
  (:func:`leaves`): a string output is one leaf at path ``""``; structured data has one leaf per
  scalar (dict values under ``.key``, list items under ``[i]``; numbers and booleans as their JSON
  text, ``null`` leaves skipped). ``{"hops": [{"fact": "Paris"}]}`` has the leaf
  ``.hops[0].fact = "Paris"``.
* **Tokens.** ``re.findall(r"\\w+|[^\\w\\s]", text)`` on each leaf: maximal runs of word
  characters, and every other non-space character on its own. Case-sensitive; whitespace is
  never a token. ``"Born in Paris."`` -> ``["Born", "in", "Paris", "."]``.
* **Position-wise matches.** Tokens are compared position by position within each leaf path:
  ``matches = sum over paths p of #{i : a_p[i] == b_p[i]}`` (``a_p``/``b_p``: the original's and
  the repair's tokens at ``p``, empty when the path is absent on that side). Aligning by path
  means a changed or added field never shifts the positions of the other fields' tokens.
* **Match ratio.** ``matches / max(La, Lb)`` with ``La``, ``Lb`` the total token counts.
* **Length-difference penalty.** ``|La - Lb| / max(La, Lb)`` (in [0, 1]).
* **Minimality.** ``match ratio * (1 - 0.5 * penalty)``, in [0, 1]; 1.0 when neither output has
  a token (nothing changed), 0.0 when exactly one of them has none.

For a string output this is the plain position-wise token match ratio. A one-word substitution in
a ten-token output scores 0.9; appending one token to ten scores ``10/11 * (1 - 0.5/11) = 0.868``;
a rewrite that shifts every later token of a field scores near 0 for that field, which is the
point: position-wise matching rewards edits that leave the rest of the step in place.
"""

from __future__ import annotations

import json
import re
from typing import Any

from causal_middleware.counterfactual.render import to_jsonable

# Deliberately not causal_middleware.text.tokenize: an edit distance must see every word,
# stopwords and punctuation included, or "is not" -> "is" would be no change at all.
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """The minimality tokens of ``text`` (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a string, got {type(text).__name__}")
    return _TOKEN.findall(text)


def leaves(value: Any) -> dict[str, str]:
    """The text leaves of a step output by JSON path (see the module docstring)."""
    out: dict[str, str] = {}

    def walk(item: Any, path: str) -> None:
        if isinstance(item, dict):
            for key, child in item.items():
                walk(child, f"{path}.{key}")
        elif isinstance(item, list):
            for i, child in enumerate(item):
                walk(child, f"{path}[{i}]")
        elif item is None:
            return
        elif isinstance(item, str):
            out[path] = item
        else:
            out[path] = json.dumps(item)

    walk(to_jsonable(value), "")
    return out


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
    a_leaves, b_leaves = leaves(original), leaves(repaired)
    total_a = total_b = matches = 0
    for path in a_leaves.keys() | b_leaves.keys():
        a = tokenize(a_leaves.get(path, ""))
        b = tokenize(b_leaves.get(path, ""))
        total_a += len(a)
        total_b += len(b)
        matches += sum(1 for x, y in zip(a, b, strict=False) if x == y)
    longest = max(total_a, total_b)
    if longest == 0:
        return 1.0
    return matches / longest * (1.0 - 0.5 * abs(total_a - total_b) / longest)


def changed_leaves(original: Any, repaired: Any) -> list[tuple[str, str | None, str | None]]:
    """``(path, before, after)`` for every leaf that differs, in the outputs' order (None: absent)."""
    a_leaves, b_leaves = leaves(original), leaves(repaired)
    paths = list(dict.fromkeys([*a_leaves, *b_leaves]))
    return [(p, a_leaves.get(p), b_leaves.get(p)) for p in paths if a_leaves.get(p) != b_leaves.get(p)]


def describe_change(original: Any, repaired: Any, *, limit: int = 3, width: int = 100) -> str:
    """The changed leaves as ``path: 'before' -> 'after'``, at most ``limit`` of them."""
    from causal_middleware.counterfactual.render import shorten

    changes = changed_leaves(original, repaired)
    if not changes:
        return "no change"
    parts = [
        f"{path.lstrip('.') or 'output'}: "
        f"{'(absent)' if before is None else repr(shorten(before, width))} -> "
        f"{'(absent)' if after is None else repr(shorten(after, width))}"
        for path, before, after in changes[:limit]
    ]
    if len(changes) > limit:
        parts.append(f"and {len(changes) - limit} more changed field(s)")
    return "; ".join(parts)
