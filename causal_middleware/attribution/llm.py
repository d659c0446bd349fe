"""Calling the judge / tracer chat model and reading its JSON back, robustly.

:func:`call` makes one chat call through :func:`~causal_middleware.prompts.llm.invoke_chat` and
books it in a :class:`~causal_middleware.attribution.base.DiagnosisCost` (one LLM call, its
tokens as :func:`~causal_middleware.prompts.llm.reply_usage` counts them). :func:`parse_object` reads the
verdict by the one reply rule (:mod:`causal_middleware.prompts.reply`): the LAST top-level JSON
object of the reply that has the expected shape, fenced or bare, with single quotes, Python
literals (``True``/``None``) or trailing commas tolerated; as a last resort, for a reply with no
``{`` at all, ``key: value`` lines.

Each prompt's reply schema (:func:`verdict_schema` and its siblings: hop numbers, step ids and
stages as enums, strings bounded) goes with the call (``schema=``) and reaches the model through
``with_structured_output``: a forced tool for Claude, a decoding grammar for the local model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.attribution.base import DiagnosisCost
from causal_middleware.faults.model import Stage
from causal_middleware.prompts import has_keys, last_json
from causal_middleware.prompts.llm import invoke_chat
from causal_middleware.prompts.schema import JsonSchema, one_of, reply_schema, text, unit_number

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
    model: BaseChatModel,
    system: str,
    user: str,
    cost: DiagnosisCost,
    *,
    max_calls: int | None = None,
    schema: Mapping[str, object] | None = None,
) -> str:
    """One chat call (:func:`~causal_middleware.prompts.llm.invoke_chat`, ``schema`` the reply's
    JSON schema) booked in ``cost``; returns the reply text."""
    reply = invoke_chat(model, system, user, calls_made=cost.llm_calls, max_calls=max_calls, schema=schema)
    cost.llm_calls += 1
    cost.tokens += reply.total_tokens
    return reply.text


# The verdict shapes the attribution prompts ask for (see :func:`parse_object`).
_SCALAR = (str, int, float, bool, type(None))
VERDICT = has_keys("hop", "stage", types={"hop": _SCALAR, "stage": _SCALAR})
DELTA = has_keys("delta", "wrong", "missing")
NODE_VERDICT = has_keys("output_carries", "input_carries")
FINAL_VERDICT = has_keys("step", "hop", "stage", types={"step": _SCALAR, "hop": _SCALAR, "stage": _SCALAR})


_STAGE_CHOICES = ("retrieval", "tool", "answer")


def _hops(n_hops: int) -> JsonSchema:
    return one_of([*range(1, n_hops + 1), None], "the root-cause hop number, or null")


def verdict_schema(n_hops: int, *, hop_first: bool = False) -> JsonSchema:
    """A judge's verdict on a run of ``n_hops`` hops (keys in the order its prompt lists them)."""
    stage = one_of(_STAGE_CHOICES)
    head: dict[str, JsonSchema] = (
        {"hop": _hops(n_hops), "stage": stage} if hop_first else {"stage": stage, "hop": _hops(n_hops)}
    )
    return reply_schema(
        "root_cause_verdict",
        "The stage and hop where the failed run went wrong.",
        {
            **head,
            "propagation": {"type": "boolean"},
            "severity": unit_number(),
            "root_cause": text(240, "one sentence"),
        },
    )


def delta_schema() -> JsonSchema:
    return reply_schema(
        "answer_delta",
        "How the actual answer differs from the expected one.",
        {"delta": text(240, "one sentence"), "wrong": text(160), "missing": text(160)},
    )


def node_verdict_schema() -> JsonSchema:
    return reply_schema(
        "step_carries_delta",
        "Whether one step's output and input carry the failure delta.",
        {"output_carries": {"type": "boolean"}, "input_carries": {"type": "boolean"}, "reason": text(160)},
    )


def final_verdict_schema(step_ids: Iterable[str], n_hops: int) -> JsonSchema:
    return reply_schema(
        "root_cause_step",
        "The root-cause step of the failed run.",
        {
            "step": one_of(step_ids),
            "hop": _hops(n_hops),
            "stage": one_of(_STAGE_CHOICES),
            "root_cause": text(240, "one sentence"),
        },
    )


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
