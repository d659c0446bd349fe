"""Calling a LangChain chat model for repair roles: one call, its cost, and robust JSON parsing.

The chat model can be any LangChain one: the scripted fakes of the tests, the offline model, or
``AnthropicChatModel`` (Claude over the Messages API), whose replies carry usage and a stop reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from causal_middleware.repair.models import RepairCost
from causal_middleware.repair.render import shorten, to_jsonable
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def with_temperature(model: BaseChatModel, temperature: float | None) -> BaseChatModel:
    """A copy of ``model`` sampling at ``temperature`` when the model has such a field.

    The value is checked against the field's own constraints (``AnthropicChatModel`` takes 0 to 1),
    so an out-of-range temperature fails here, naming the model, not later as an API error.
    """
    field = type(model).model_fields.get("temperature")
    if temperature is None or field is None:
        return model
    annotation: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    try:
        value = TypeAdapter(annotation).validate_python(temperature)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise ValueError(
            f"temperature {temperature!r} is not valid for {type(model).__name__}: {problem}"
        ) from exc
    return model.model_copy(update={"temperature": value})


class ModelReply(BaseModel):
    """A chat model's reply as the repair roles need it."""

    text: str
    truncated: bool = Field(default=False, description="the model stopped at its output-token limit")


# Stop reasons meaning "cut off at the output limit": Anthropic's, then OpenAI-style finish reasons.
_TRUNCATED = frozenset({"max_tokens", "length"})


def invoke_model(model: BaseChatModel, system: str, user: str, cost: RepairCost) -> ModelReply:
    """One chat call; adds one LLM call and its token usage to ``cost``.

    The text is the reply's text blocks only (a provider that returns content blocks, thinking or
    tool-use blocks among them, gives the same text as one that returns a string). Token usage is
    read from ``usage_metadata`` and, for models that report it only there, ``response_metadata``
    (``usage`` or ``token_usage``, Anthropic's or OpenAI's key names). A call that raises adds
    nothing to ``cost``; the exception propagates.
    """
    messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=user)]
    reply = model.invoke(messages)
    input_tokens, output_tokens = _usage(reply)
    cost.add_llm(1, input_tokens, output_tokens)
    metadata = getattr(reply, "response_metadata", None) or {}
    stop = metadata.get("stop_reason") or metadata.get("finish_reason")
    text = reply.text if isinstance(reply, BaseMessage) else str(reply)
    return ModelReply(text=str(text), truncated=stop in _TRUNCATED)


def call_model(model: BaseChatModel, system: str, user: str, cost: RepairCost) -> str:
    """One chat call (see :func:`invoke_model`); returns the reply text."""
    return invoke_model(model, system, user, cost).text


def _usage(reply: Any) -> tuple[int, int]:
    usage = getattr(reply, "usage_metadata", None)
    if usage:
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    metadata = getattr(reply, "response_metadata", None) or {}
    raw = metadata.get("usage") or metadata.get("token_usage") or {}
    if not isinstance(raw, dict):
        return 0, 0
    prompt = raw.get("input_tokens", raw.get("prompt_tokens")) or 0
    completion = raw.get("output_tokens", raw.get("completion_tokens")) or 0
    return int(prompt), int(completion)


def describe_error(exc: BaseException) -> str:
    """``"ErrorType: message"`` for an exception, shortened, for notes and reasons in results."""
    return f"{type(exc).__name__}: {shorten(str(exc), 300)}"


def parse_json(text: str, *, accept: Callable[[Any], bool] | None = None) -> Any:
    """The first JSON value in a model reply (fenced or bare) for which ``accept`` holds (any value
    when ``accept`` is None). ValueError when there is none.

    Prose around the JSON is skipped, and so is a bracketed aside in it (``"see [1]"``) that
    ``accept`` rejects.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        chunk = chunk.strip()
        try:
            value = json.loads(chunk)
        except json.JSONDecodeError:
            pass
        else:
            if accept is None or accept(value):
                return value
        for i, ch in enumerate(chunk):
            if ch not in "[{":
                continue
            try:
                value = decoder.raw_decode(chunk, i)[0]
            except json.JSONDecodeError:
                continue
            if accept is None or accept(value):
                return value
    wanted = "no JSON value" if accept is None else "no JSON value of the expected shape"
    raise ValueError(f"{wanted} in model reply: {shorten(text, 200)!r}")


def json_list_prefix(text: str, *, accept: Callable[[Any], bool] | None = None) -> list[Any]:
    """The complete items of the first JSON list in ``text``, closed or left unclosed by a cut-off
    reply (``[{"a": 1}, {"b": 2}, {"c"`` gives the first two), that has an item for which
    ``accept`` holds (any item when None); ``[]`` when there is none."""
    decoder = json.JSONDecoder()
    start = text.find("[")
    while start != -1:
        items: list[Any] = []
        i = start + 1
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text) or text[i] == "]":
                break
            try:
                item, i = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                break
            items.append(item)
        if any(accept is None or accept(item) for item in items):
            return items
        start = text.find("[", start + 1)
    return []


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
