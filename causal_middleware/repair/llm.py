"""Calling a LangChain chat model for repair roles: one call, its cost, and robust JSON parsing."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from causal_middleware.repair.models import RepairCost
from causal_middleware.repair.render import shorten, to_jsonable
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def with_temperature(model: BaseChatModel, temperature: float | None) -> BaseChatModel:
    """A copy of ``model`` sampling at ``temperature`` when the model has such a field."""
    if temperature is None or "temperature" not in type(model).model_fields:
        return model
    return model.model_copy(update={"temperature": temperature})


def call_model(model: BaseChatModel, system: str, user: str, cost: RepairCost) -> str:
    """One chat call; adds one LLM call and its token usage to ``cost``; returns the reply text."""
    messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=user)]
    reply = model.invoke(messages)
    usage = getattr(reply, "usage_metadata", None) or {}
    cost.add_llm(1, int(usage.get("input_tokens", 0) or 0), int(usage.get("output_tokens", 0) or 0))
    content = reply.content
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content)


def parse_json(text: str) -> Any:
    """The first JSON value in a model reply (fenced or bare). ValueError when there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        chunk = chunk.strip()
        try:
            return json.loads(chunk)
        except json.JSONDecodeError:
            pass
        decoder = json.JSONDecoder()
        for i, ch in enumerate(chunk):
            if ch in "[{":
                try:
                    return decoder.raw_decode(chunk[i:])[0]
                except json.JSONDecodeError:
                    continue
    raise ValueError(f"no JSON value in model reply: {shorten(text, 200)!r}")


def input_text(value: object) -> str:
    """A run's input as text: a string as is; a dict's ``question``/``input``/``query`` string or
    its only string value; else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("question", "input", "query"):
            if isinstance(value.get(key), str):
                return value[key]
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def render_trace(trajectory: Trajectory, *, upto: str | None = None, limit: int = 400) -> str:
    """A compact text rendering of a run's node steps (one line each) for prompts.

    ``upto`` stops before that step id. LLM steps are summarised by their output.
    """
    lines = [f"Question: {shorten(input_text(trajectory.input), limit)}"]
    for step in trajectory.steps:
        if step.step_id == upto:
            break
        if isinstance(step, NodeStep):
            where = f"hop {step.hop}" if step.hop is not None else "no hop"
            output = json.dumps(to_jsonable(step.output), ensure_ascii=False)
            lines.append(
                f"[{step.node} | {where} | step {step.langgraph_step}] output: {shorten(output, limit)}"
            )
        elif isinstance(step, LLMStep):
            lines.append(f"  (llm {step.model}) {shorten(step.output, limit)}")
    if upto is None:
        lines.append(f"Final answer: {trajectory.answer!r}")
    return "\n".join(lines)
