"""Calling a LangChain chat model for repair roles: one call, its cost, and robust JSON parsing.

The chat model can be any LangChain one: the scripted fakes of the tests, the offline model, or
``AnthropicChatModel`` (Claude over the Messages API), whose replies carry usage and a stop reason.
Every prompt is redacted before the call (:func:`~causal_middleware.prompts.redact_prompt`);
replies are read by the one reply rule (:mod:`causal_middleware.prompts.reply`): the LAST
top-level JSON value of the expected shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from causal_middleware.prompts import Fence, last_json, outgoing_messages
from causal_middleware.repair.models import RepairCost
from causal_middleware.repair.render import shorten, to_jsonable
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory


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
    nothing to ``cost``; the exception propagates. Both messages are redacted before the call.
    """
    reply = model.invoke(outgoing_messages(system, user))
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
    """The LAST top-level JSON value in a model reply (fenced or bare) for which ``accept`` holds
    (any value when ``accept`` is None). ValueError when there is none.

    Prose around the JSON is skipped, and so is a bracketed aside (``"see [1]"``) or a quoted
    value (an injected verdict echoed from the trace) before the answer: the prompts ask for the
    JSON at the end of the reply.
    """
    try:
        return last_json(text, accept)
    except ValueError:
        pass
    wanted = "no JSON value" if accept is None else "no JSON value of the expected shape"
    raise ValueError(f"{wanted} in model reply: {shorten(text, 200)!r}")


def json_list_prefix(text: str, *, accept: Callable[[Any], bool] | None = None) -> list[Any]:
    """The complete items of the LAST top-level JSON list in ``text``, closed or left unclosed by a
    cut-off reply (``[{"a": 1}, {"b": 2}, {"c"`` gives the first two), that has an item for which
    ``accept`` holds (any item when None); ``[]`` when there is none. A closed list is read as a
    whole (lists nested in it are not candidates); an unclosed one with an accepted item runs to
    the end of the reply."""
    decoder = json.JSONDecoder()
    best: list[Any] = []
    start = text.find("[")
    while start != -1:
        items: list[Any] = []
        i = start + 1
        closed = False
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text):
                break
            if text[i] == "]":
                closed = True
                break
            try:
                item, i = decoder.raw_decode(text, i)
            except (json.JSONDecodeError, RecursionError):
                break
            items.append(item)
        accepted = any(accept is None or accept(item) for item in items)
        if accepted:
            best = items
        if closed:
            start = text.find("[", i + 1)
        elif accepted:
            break  # a cut-off list: everything after its last complete item belongs to it
        else:
            start = text.find("[", start + 1)
    return best


def input_text(value: object) -> str:
    """A run's input as text: a string as is; a dict's ``question``/``input``/``query`` string or
    its only string value; else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("question", "input", "query"):
            if isinstance(value.get(key), str):
                return str(value[key])
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def render_trace(
    trajectory: Trajectory, *, upto: str | None = None, limit: int = 400, fence: Fence | None = None
) -> str:
    """A compact text rendering of a run's node steps (one line each) for prompts.

    ``upto`` stops before that step id. LLM steps are summarised by their output. With a
    ``fence`` every recorded value (question, node and model names, outputs, answer) is one quoted
    line (:meth:`~causal_middleware.prompts.Fence.inline`) and the rendering is the fence's data
    block, so recorded content can neither forge a step line nor end the block.
    """

    def value(text: object) -> str:
        return fence.inline(text, limit) if fence is not None else shorten(str(text), limit)

    def name(text: object) -> str:
        return fence.inline(text, 80) if fence is not None else str(text)

    lines = [f"Question: {value(input_text(trajectory.input))}"]
    for step in trajectory.steps:
        if step.step_id == upto:
            break
        if isinstance(step, NodeStep):
            where = f"hop {step.hop}" if step.hop is not None else "no hop"
            if fence is not None:
                output = fence.as_json(to_jsonable(step.output), limit)
            else:
                output = shorten(json.dumps(to_jsonable(step.output), ensure_ascii=False), limit)
            lines.append(f"[{name(step.node)} | {where} | step {step.langgraph_step}] output: {output}")
        elif isinstance(step, LLMStep):
            lines.append(f"  (llm {name(step.model)}) {value(step.output)}")
    if upto is None:
        answer = fence.inline(trajectory.answer, limit) if fence is not None else repr(trajectory.answer)
        lines.append(f"Final answer: {answer}")
    text = "\n".join(lines)
    return fence.block("run", text) if fence is not None else text
