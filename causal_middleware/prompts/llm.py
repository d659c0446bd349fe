"""The one way the diagnosers, repair roles and context stages call a LangChain chat model.

:func:`invoke_chat` sends a system and a user message (both redacted,
:func:`~causal_middleware.prompts.outgoing_messages`; the system message gets a fence's
untrusted-data rule when one is given), enforces a call budget, and returns a :class:`ChatReply`:
the reply's text blocks and its token usage. :func:`reply_usage` is the one place tokens are
counted: the provider's ``usage_metadata``, else ``response_metadata`` (``usage`` or
``token_usage``, Anthropic's or OpenAI's key names), else an estimate (whitespace words of the
prompt and the reply) flagged as such. A call that raises books nothing; the exception propagates.

With ``schema`` (a JSON schema, :mod:`~causal_middleware.prompts.schema`) the call asks for a
structured reply the standard LangChain way, ``model.with_structured_output(schema,
include_raw=True)``: a tool-calling model (Claude) gets the schema as a forced tool and answers with
its arguments; the local llama.cpp model constrains its decoding to the schema's grammar. The reply
text is the text blocks followed by the first tool call's arguments as JSON, so the role's parser
(the LAST top-level value of the expected shape) reads the schema-shaped value. A model without
structured output (``with_structured_output`` raises ``NotImplementedError``: no ``bind_tools``) is
called plainly; the prompt still describes the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from causal_middleware.prompts.fence import Fence, outgoing_messages

# Stop reasons meaning "cut off at the output limit": Anthropic's, then OpenAI-style finish reasons.
_TRUNCATED = frozenset({"max_tokens", "length"})


class BudgetExceeded(Exception):
    """The caller's LLM call budget would be exceeded."""


class ChatReply(BaseModel):
    """One chat call's reply: its text and what it cost."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    usage_estimated: bool = Field(default=False, description="the model reported no usage: words counted")
    truncated: bool = Field(default=False, description="the model stopped at its output-token limit")
    structured: bool = Field(default=False, description="the reply schema reached the model")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def invoke_chat(
    model: BaseChatModel,
    system: str,
    user: str,
    *,
    fence: Fence | None = None,
    calls_made: int = 0,
    max_calls: int | None = None,
    schema: Mapping[str, object] | None = None,
) -> ChatReply:
    """One chat call; :class:`BudgetExceeded` when ``calls_made`` already reached ``max_calls``.
    ``schema``: the JSON schema of the reply, asked for through ``with_structured_output``."""
    if max_calls is not None and calls_made >= max_calls:
        raise BudgetExceeded(f"LLM call budget {max_calls} reached")
    if fence is not None:
        system = fence.system(system)
    message, structured = _send(model, outgoing_messages(system, user), schema)
    text = reply_text(message)
    arguments = _first_tool_arguments(message) if structured else None
    if arguments is not None:
        text = f"{text}\n{arguments}".strip()
    reported = reply_usage(message)
    if reported is None:
        input_tokens, output_tokens = len(system.split()) + len(user.split()), len(text.split())
    else:
        input_tokens, output_tokens = reported
    metadata = getattr(message, "response_metadata", None) or {}
    stop = metadata.get("stop_reason") or metadata.get("finish_reason")
    return ChatReply(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        usage_estimated=reported is None,
        truncated=stop in _TRUNCATED,
        structured=structured,
    )


def _send(
    model: BaseChatModel, messages: Sequence[BaseMessage], schema: Mapping[str, object] | None
) -> tuple[BaseMessage, bool]:
    """The model's reply message, and whether it was asked for ``schema``."""
    if schema is None:
        return model.invoke(list(messages)), False
    try:
        runnable = model.with_structured_output(dict(schema), include_raw=True)
    except NotImplementedError:  # no structured output (no bind_tools): the prompt alone asks
        return model.invoke(list(messages)), False
    out = runnable.invoke(list(messages))
    raw = out.get("raw") if isinstance(out, dict) else out
    if not isinstance(raw, BaseMessage):
        raise TypeError(
            f"{type(model).__name__}.with_structured_output(include_raw=True) returned no raw message"
        )
    return raw, True


def _first_tool_arguments(message: BaseMessage) -> str | None:
    """The first tool call's arguments as JSON (a structured reply by forced tool use), else None."""
    calls = getattr(message, "tool_calls", None) or []
    if not calls or not isinstance(calls[0].get("args"), dict):
        return None
    return json.dumps(calls[0]["args"], ensure_ascii=False)


def reply_text(message: object) -> str:
    """The text blocks of a reply (thinking and tool-use blocks left out), as one string."""
    return str(message.text if isinstance(message, BaseMessage) else message)


def reply_usage(message: object) -> tuple[int, int] | None:
    """``(input, output)`` tokens the provider reported for a reply; None when it reported none."""
    usage = getattr(message, "usage_metadata", None)
    if usage:
        counted = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    else:
        metadata = getattr(message, "response_metadata", None) or {}
        raw = metadata.get("usage") or metadata.get("token_usage") or {}
        if not isinstance(raw, dict):
            return None
        prompt = raw.get("input_tokens", raw.get("prompt_tokens")) or 0
        completion = raw.get("output_tokens", raw.get("completion_tokens")) or 0
        counted = int(prompt), int(completion)
    return counted if any(counted) else None


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


def describe_error(exc: BaseException) -> str:
    """``"ErrorType: message"`` for an exception, shortened, for notes and reasons in results."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message if len(message) <= 300 else message[:299] + '…'}"
