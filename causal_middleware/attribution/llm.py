"""Calling the judge / tracer chat model and reading its JSON back, robustly.

:func:`call` makes one chat call and books it (one LLM call; tokens from the reply's
``usage_metadata``, else estimated as whitespace words of prompt and reply). :func:`parse_object`
finds a JSON object in a reply: fenced or bare, with single quotes, Python literals
(``True``/``None``) or trailing commas tolerated, and as a last resort ``key: value`` lines.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from causal_middleware.attribution.base import DiagnosisCost
from causal_middleware.faults.model import Stage

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_KEY_VALUE = re.compile(r"^\s*[\"']?([A-Za-z_][\w ]*?)[\"']?\s*[:=]\s*(.+?)\s*,?\s*$", re.MULTILINE)
_INT = re.compile(r"-?\d+")
STAGES: tuple[Stage, ...] = ("retrieval", "tool", "answer", "none")
_STAGE_WORDS: dict[str, Stage] = {
    "retrieval": "retrieval",
    "retrieve": "retrieval",
    "retriever": "retrieval",
    "search": "retrieval",
    "query": "retrieval",
    "evidence": "retrieval",
    "reading": "retrieval",
    "read": "retrieval",
    "tool": "tool",
    "tools": "tool",
    "answer": "answer",
    "generation": "answer",
    "answer generation": "answer",
    "final answer": "answer",
    "none": "none",
}


class BudgetExceeded(Exception):
    """The context's ``max_llm_calls`` would be exceeded."""


def call(
    model: BaseChatModel, system: str, user: str, cost: DiagnosisCost, *, max_calls: int | None = None
) -> str:
    """One chat call; books it in ``cost``; returns the reply text."""
    if max_calls is not None and cost.llm_calls >= max_calls:
        raise BudgetExceeded(f"LLM call budget {max_calls} reached")
    messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=user)]
    reply = model.invoke(messages)
    content: Any = reply.content
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    text = str(content)
    usage = getattr(reply, "usage_metadata", None) or {}
    tokens = int(usage.get("input_tokens", 0) or 0) + int(usage.get("output_tokens", 0) or 0)
    if tokens == 0:
        tokens = len(system.split()) + len(user.split()) + len(text.split())
    cost.llm_calls += 1
    cost.tokens += tokens
    return text


def _loads(chunk: str) -> Any:
    try:
        return json.loads(chunk)
    except json.JSONDecodeError:
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", chunk)
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _balanced_objects(text: str) -> list[str]:
    """Substrings of ``text`` that are brace-balanced ``{...}`` spans (outermost first)."""
    spans: list[str] = []
    depth = 0
    start = -1
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def parse_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model reply (see the module docstring). ValueError when none."""
    chunks = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in chunks:
        chunk = chunk.strip()
        value = _loads(chunk)
        if isinstance(value, dict):
            return value
        for candidate in _balanced_objects(chunk):
            value = _loads(candidate)
            if isinstance(value, dict):
                return value
    pairs = {
        m.group(1).strip().lower().replace(" ", "_"): m.group(2).strip().strip("\"'")
        for m in _KEY_VALUE.finditer(text)
    }
    if pairs:
        return pairs
    snippet = " ".join(text.split())[:200]
    raise ValueError(f"no JSON object in model reply: {snippet!r}")


def as_stage(value: Any) -> Stage | None:
    """A stage name from a model's free-form value (``"Retrieval"``, ``"answer generation"``)."""
    if value is None:
        return None
    word = str(value).strip().lower().strip(".")
    if word in _STAGE_WORDS:
        return _STAGE_WORDS[word]
    for key, stage in _STAGE_WORDS.items():
        if key in word:
            return stage
    return None


def as_hop(value: Any, n_hops: int) -> int | None:
    """A valid hop index (1..n_hops) from a model's value (``2``, ``"2"``, ``"hop 2"``); else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        hop = int(value)
    else:
        match = _INT.search(str(value))
        if match is None:
            return None
        hop = int(match.group(0))
    return hop if 1 <= hop <= n_hops else None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value is None:
        return None
    word = str(value).strip().lower()
    if word in ("true", "yes", "y", "1"):
        return True
    if word in ("false", "no", "n", "0"):
        return False
    return None


def as_unit(value: Any) -> float | None:
    """A number clamped to [0, 1] (``"0.7"``, ``0.7``, ``"high"`` -> 0.8); else None."""
    words = {"low": 0.2, "medium": 0.5, "moderate": 0.5, "high": 0.8, "critical": 1.0}
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return min(1.0, max(0.0, float(value)))
    text = str(value).strip().lower()
    if text in words:
        return words[text]
    try:
        return min(1.0, max(0.0, float(text)))
    except ValueError:
        return None
