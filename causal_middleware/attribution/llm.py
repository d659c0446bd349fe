"""Calling the judge / tracer chat model and reading its JSON back, robustly.

:func:`call` makes one chat call through :func:`~causal_middleware.prompts.llm.invoke_chat` and
books it in a :class:`~causal_middleware.attribution.base.DiagnosisCost` (one LLM call, its
tokens as :func:`~causal_middleware.prompts.llm.reply_usage` counts them). :func:`parse_object` reads the
verdict by the one reply rule (:mod:`causal_middleware.prompts.reply`): the LAST top-level JSON
object of the reply that has the expected shape, fenced or bare, with single quotes, Python
literals (``True``/``None``) or trailing commas tolerated; as a last resort, for a reply with no
``{`` at all, ``key: value`` lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.attribution.base import DiagnosisCost
from causal_middleware.faults.model import Stage
from causal_middleware.prompts import has_keys, last_json
from causal_middleware.prompts.llm import invoke_chat

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


def call(
    model: BaseChatModel, system: str, user: str, cost: DiagnosisCost, *, max_calls: int | None = None
) -> str:
    """One chat call (:func:`~causal_middleware.prompts.llm.invoke_chat`) booked in ``cost``;
    returns the reply text."""
    reply = invoke_chat(model, system, user, calls_made=cost.llm_calls, max_calls=max_calls)
    cost.llm_calls += 1
    cost.tokens += reply.total_tokens
    return reply.text


# The verdict shapes the attribution prompts ask for (see :func:`parse_object`).
_SCALAR = (str, int, float, bool, type(None))
VERDICT = has_keys("hop", "stage", types={"hop": _SCALAR, "stage": _SCALAR})
DELTA = has_keys("delta", "wrong", "missing")
NODE_VERDICT = has_keys("output_carries", "input_carries")
FINAL_VERDICT = has_keys("step", "hop", "stage", types={"step": _SCALAR, "hop": _SCALAR, "stage": _SCALAR})


def parse_object(text: str, accept: Callable[[Any], bool] | None = None) -> dict[str, Any]:
    """The verdict of a model reply: its LAST top-level JSON object for which ``accept`` holds
    (any object when None); see the module docstring. ValueError when none."""
    predicate = accept or (lambda value: isinstance(value, dict))
    try:
        value = last_json(text, predicate, objects_only=True, lenient=True)
    except ValueError:
        pass
    else:
        return dict(value)
    if "{" not in text:
        pairs = {
            m.group(1).strip().lower().replace(" ", "_"): m.group(2).strip().strip("\"'")
            for m in _KEY_VALUE.finditer(text)
        }
        if pairs and predicate(pairs):
            return pairs
    snippet = " ".join(text.split())[:200]
    wanted = "no JSON object" if accept is None else "no JSON object of the expected shape"
    raise ValueError(f"{wanted} in model reply: {snippet!r}")


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
