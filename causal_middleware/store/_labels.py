"""Label-filter rows shared by SQL backends: the text a ``key=value`` filter compares a label by.

A label's ``value`` row is its string as it is, an integer (64-bit) in decimal, ``true``/``false``
for booleans and ``null`` for None; None for reals, arrays, objects and wider integers, whose
matches are checked in Python (:func:`causal_middleware.store._common.label_matches`). The SQLite
store computes the same rows in SQL (``json_each``) so that code predating its label table keeps it
right; the Postgres store computes them here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_INT64 = 2**63


def label_value_text(value: Any) -> str | None:
    """The text a ``key=value`` filter matches ``value`` by exactly, or None (matched in Python)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, int) and -_INT64 < value < _INT64:
        return str(value)
    return None


def label_rows(labels: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """``(key, value text)`` for each label of a run."""
    return [(str(key), label_value_text(value)) for key, value in labels.items()]


def label_texts(wanted: str) -> list[str]:
    """The value texts a ``key=wanted`` filter may match: the text itself (a string's value or a
    value's ``str``), its stripped form (a value's JSON text), the string a JSON string literal
    stands for, and ``true``/``false``/``null`` for Python's ``True``/``False``/``None``."""
    texts = [wanted, wanted.strip()]
    stripped = wanted.strip()
    if stripped.startswith('"'):
        try:
            decoded = json.loads(stripped)
        except ValueError:
            decoded = None
        if isinstance(decoded, str) and json.dumps(decoded, ensure_ascii=False) == stripped:
            texts.append(decoded)
    python_names = {"True": "true", "False": "false", "None": "null"}
    if wanted in python_names:
        texts.append(python_names[wanted])
    return list(dict.fromkeys(texts))
