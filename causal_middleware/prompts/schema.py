"""The JSON schemas the LLM roles declare for their replies.

A role builds its reply schema per prompt (an enum of the node ids or hop numbers the prompt
shows, so a constrained model can only name one of them) and passes it to
:func:`~causal_middleware.prompts.llm.invoke_chat`, which asks the model for it the LangChain way,
``model.with_structured_output(schema, include_raw=True)``: a hosted model gets it as a forced tool
call, the local llama.cpp model as a grammar its decoding cannot leave. The reply is still read as
text by the role's tolerant parser, so a model that cannot take a schema answers as before.

Every schema is a JSON-schema object with a ``title`` (the tool name a provider sees: letters,
digits, ``_``), a ``description``, its properties in the order the prompt lists them (the order a
grammar-constrained model writes them), all of them required, and no other keys. Strings carry a
``maxLength`` so a constrained reply fits the output-token limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

JsonSchema = dict[str, object]
_TITLE = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def reply_schema(title: str, description: str, properties: Mapping[str, JsonSchema]) -> JsonSchema:
    """An object schema: exactly ``properties``, all required, in the given order."""
    if not _TITLE.match(title):
        raise ValueError(f"schema title {title!r} must be 1-64 letters, digits or underscores")
    return {
        "title": title,
        "description": description,
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def text(max_length: int, description: str | None = None) -> JsonSchema:
    """A string of at most ``max_length`` characters."""
    return _described({"type": "string", "maxLength": max_length}, description)


def nullable(schema: JsonSchema) -> JsonSchema:
    """``schema`` or null (``anyOf``, so a string's ``maxLength`` still binds)."""
    return {"anyOf": [schema, {"type": "null"}]}


def one_of(values: Iterable[str | int | None], description: str | None = None) -> JsonSchema:
    """One of ``values`` (strings, ints or null); an empty set gives a plain string."""
    choices = list(dict.fromkeys(values))
    if not choices:
        return _described({"type": "string"}, description)
    return _described({"enum": choices}, description)


def unit_number(description: str | None = None) -> JsonSchema:
    """A number in [0, 1] (the bounds are advisory for a grammar: parsers clamp)."""
    return _described({"type": "number", "minimum": 0, "maximum": 1}, description)


def array_of(item: JsonSchema, max_items: int) -> JsonSchema:
    return {"type": "array", "items": item, "maxItems": max_items}


def object_of(properties: Mapping[str, JsonSchema], required: Sequence[str] | None = None) -> JsonSchema:
    """A nested object with ``properties`` (all required unless ``required`` says otherwise)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def _described(schema: JsonSchema, description: str | None) -> JsonSchema:
    return {**schema, "description": description} if description else schema
