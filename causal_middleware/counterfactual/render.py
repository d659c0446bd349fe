"""Plain renderings of step outputs: JSON-safe values, a canonical key for deduplication, and the
text that minimality compares and contrastive pairs show."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None).

    Pydantic models (LangChain messages and documents included) are dumped in JSON mode; tuples and
    sets become lists; dates become ISO strings; anything else falls back to ``str``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((to_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def canonical_json(value: Any) -> str:
    """A stable text key for ``value``: equal data give equal keys whatever the key order."""
    return json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def render_output(value: Any) -> str:
    """The text of a step output, for minimality and for contrastive pairs.

    A string renders as itself. Otherwise the leaves of the JSON data are written in document
    order (dict keys in their order, list items in order), one per line; keys and JSON
    punctuation are left out so that structure never counts as matching content, and ``None``
    leaves are skipped.
    """
    if isinstance(value, str):
        return value
    lines: list[str] = []
    _leaves(to_jsonable(value), lines)
    return "\n".join(lines)


def _leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _leaves(item, out)
    elif isinstance(value, list):
        for item in value:
            _leaves(item, out)
    elif value is None:
        return
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    else:
        out.append(str(value))


def shorten(text: str | None, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    if text is None:
        return ""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
