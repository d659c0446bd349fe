"""Reading a model's verdict back: one rule for every LLM role.

**The verdict is the LAST top-level JSON value in the reply that has the expected shape.** The
prompts ask the model to end its reply with the JSON asked for (:data:`~causal_middleware.prompts.fence.DATA_RULE`),
so prose, a reasoning preamble or a quoted passage of the (possibly injected) trace before it is
never taken for the verdict. "Top-level" means a value not nested in another one: a verdict whose
``root_cause`` quotes ``{"hop": 3}`` is one value, read as a whole. "Expected shape" is the
caller's ``accept`` predicate (:func:`has_keys` builds the usual one: required keys and types).

``lenient=True`` also reads what models write that is not JSON: single quotes, Python literals
(``True``/``None``) and trailing commas.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_DECODER = json.JSONDecoder()


def balanced_end(text: str, start: int, opening: str = "{", closing: str = "}") -> int:
    """Index after the ``closing`` that closes the ``opening`` at ``start`` (string literals
    skipped); -1 when unclosed."""
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _lenient_loads(chunk: str) -> Any:
    fixed = _TRAILING_COMMA.sub(r"\1", chunk)
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


_NOTHING = object()


def top_level_values(text: str, *, objects_only: bool = False, lenient: bool = False) -> list[Any]:
    """Every top-level JSON value (objects and lists; objects only when ``objects_only``) in
    ``text``, in order. A value nested in another is part of it, never a value of its own."""
    opens = "{" if objects_only else "{["
    values: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch not in opens:
            i += 1
            continue
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            value, end = _NOTHING, -1
        if value is _NOTHING and lenient and ch == "{":
            end = balanced_end(text, i)
            if end != -1:
                loaded = _lenient_loads(text[i:end])
                value = loaded if isinstance(loaded, dict | list) else _NOTHING
                if value is _NOTHING:
                    i = end  # a balanced but unreadable span: nothing inside it is top-level
                    continue
        if value is _NOTHING:
            i += 1
            continue
        if not objects_only or isinstance(value, dict):
            values.append(value)
        i = end
    return values


def last_json(
    text: str,
    accept: Callable[[Any], bool] | None = None,
    *,
    objects_only: bool = False,
    lenient: bool = False,
) -> Any:
    """The last top-level JSON value of ``text`` for which ``accept`` holds (any value when None).
    ValueError when there is none."""
    for value in reversed(top_level_values(text, objects_only=objects_only, lenient=lenient)):
        if accept is None or accept(value):
            return value
    raise ValueError("no JSON value of the expected shape")


def has_keys(
    *any_of: str,
    all_of: tuple[str, ...] = (),
    types: Mapping[str, type | tuple[type, ...]] | None = None,
) -> Callable[[Any], bool]:
    """A predicate: a dict holding at least one of ``any_of`` (when given), all of ``all_of``,
    and for each key of ``types`` it holds, a value of that type."""

    def accept(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        if any_of and not any(k in value for k in any_of):
            return False
        if any(k not in value for k in all_of):
            return False
        for key, kind in (types or {}).items():
            if key in value and not isinstance(value[key], kind):
                return False
        return True

    return accept
