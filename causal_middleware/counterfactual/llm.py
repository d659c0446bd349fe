"""Calling a LangChain chat model for repair roles: one call booked in a ``RepairCost``, robust
JSON parsing, and the trace rendering the prompts carry.

Calls go through :func:`~causal_middleware.prompts.llm.invoke_chat` (redaction, text blocks,
usage); replies are read by the one reply rule (:mod:`causal_middleware.prompts.reply`): the LAST
top-level JSON value of the expected shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.counterfactual.render import shorten, to_jsonable
from causal_middleware.prompts import Fence, last_json
from causal_middleware.prompts.llm import ChatReply, invoke_chat
from causal_middleware.protocols import RepairCost
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory


def call_model(model: BaseChatModel, system: str, user: str, cost: RepairCost) -> ChatReply:
    """One chat call (:func:`~causal_middleware.prompts.llm.invoke_chat`); adds one LLM call and
    its tokens to ``cost``. A call that raises adds nothing; the exception propagates."""
    reply = invoke_chat(model, system, user)
    cost.add_llm(1, reply.input_tokens, reply.output_tokens)
    return reply


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
