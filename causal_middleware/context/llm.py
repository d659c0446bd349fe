"""Asking any LangChain chat model for a JSON answer, and reading it back strictly."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

NOT_CONFIGURED = "no chat model configured: pass a LangChain chat model to use the LLM form"


class LLMResponseError(ValueError):
    """The model's answer was not the JSON the prompt asked for."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model answer (bare, fenced, or surrounded by prose)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        start, end = cand.find("{"), cand.rfind("}")
        if start == -1 or end <= start:
            continue
        try:
            data = json.loads(cand[start : end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    excerpt = text.strip().replace("\n", " ")[:200]
    raise LLMResponseError(f"expected a JSON object in the model's answer, got: {excerpt!r}")


def ask_json(model: BaseChatModel, system: str, prompt: str) -> dict[str, Any]:
    """One model call; the answer must contain a JSON object."""
    reply = model.invoke([SystemMessage(content=system), HumanMessage(content=prompt)])
    content = reply.content
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return parse_json_object(str(content))


def require(data: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``data[key]`` checked for type, or LLMResponseError naming the key and the answer's role."""
    if key not in data:
        raise LLMResponseError(f"{what}: the model's JSON has no {key!r} key (keys: {sorted(data)})")
    value = data[key]
    if not isinstance(value, kind):
        raise LLMResponseError(f"{what}: {key!r} should be {kind}, got {type(value).__name__} {value!r}")
    return value
