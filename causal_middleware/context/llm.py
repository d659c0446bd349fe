"""Asking any LangChain chat model for a JSON answer, and reading it back strictly.

Prompts carry the session as fenced data (:func:`fenced_transcript`, a
:class:`~causal_middleware.prompts.Fence` per prompt) and go out through
:func:`~causal_middleware.prompts.llm.invoke_chat` (redacted, reply text blocks only);
the answer is read by the one reply rule (:mod:`causal_middleware.prompts.reply`): the LAST
top-level JSON object of the reply, preferring the last one that holds an expected key. Each
stage declares its reply's JSON schema (``schema=``), which reaches the model through
``with_structured_output`` (a forced tool for Claude, a decoding grammar for the local model);
the reply is read by the same rule either way, so a model that cannot take a schema still works.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.prompts import Fence, has_keys, last_json, top_level_values
from causal_middleware.prompts.llm import invoke_chat

if TYPE_CHECKING:
    from causal_middleware.context.conversation import Conversation

NOT_CONFIGURED = "no chat model configured: pass a LangChain chat model to use the LLM form"


class LLMResponseError(ValueError):
    """The model's answer was not the JSON the prompt asked for."""


def parse_json_object(
    text: str, keys: tuple[str, ...] = (), *, list_key: str | None = None
) -> dict[str, Any]:
    """The answer's JSON object (bare, fenced, or surrounded by prose): the LAST top-level object
    holding one of ``keys``; else, with ``list_key``, the last top-level list of objects (or the
    empty list) as ``{list_key: list}`` (small models answer ``[]`` for ``{"signals": []}``); else
    the last top-level object (so :func:`require` can name the missing key). LLMResponseError
    when there is none."""
    if keys:
        try:
            return dict(last_json(text, has_keys(*keys), objects_only=True))
        except ValueError:
            pass
    if list_key is not None:
        for value in reversed(top_level_values(text)):
            if isinstance(value, list) and all(isinstance(item, dict) for item in value):
                return {list_key: value}
    try:
        return dict(last_json(text, lambda value: isinstance(value, dict), objects_only=True))
    except ValueError:
        pass
    excerpt = text.strip().replace("\n", " ")[:200]
    raise LLMResponseError(f"expected a JSON object in the model's answer, got: {excerpt!r}")


def ask_json(
    model: BaseChatModel,
    system: str,
    prompt: str,
    *,
    keys: tuple[str, ...] = (),
    fence: Fence | None = None,
    schema: Mapping[str, object] | None = None,
    list_key: str | None = None,
) -> dict[str, Any]:
    """One model call (``system`` gets the untrusted-data rule of ``fence``; both messages are
    redacted; ``schema`` is the reply's JSON schema, asked for through ``with_structured_output``);
    the answer must contain a JSON object, preferably one with one of ``keys``
    (:func:`parse_json_object`, ``list_key`` as there)."""
    reply = invoke_chat(model, system, prompt, fence=fence, schema=schema)
    return parse_json_object(reply.text, keys, list_key=list_key)


def fenced_transcript(conversation: Conversation, fence: Fence, limit: int = 400) -> str:
    """The session, one line per node, as the fence's data block: node ids, sources and texts are
    quoted one-line values, so no recorded text can forge a node line or an instruction."""
    from causal_middleware.context.conversation import NodeType

    lines = []
    for n in conversation.nodes:
        text = n.content
        if n.output and n.type not in (NodeType.USER, NodeType.AGENT):
            text = f"{text} -> {n.output}"
        src = f" source {fence.inline(n.source, 200)}" if n.source else ""
        lines.append(
            f"{fence.inline(n.id, 80)} (turn {n.turn}, {n.type.value}{src}): {fence.inline(text, limit)}"
        )
    return fence.block("session", "\n".join(lines))


def require(data: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``data[key]`` checked for type, or LLMResponseError naming the key and the answer's role."""
    if key not in data:
        raise LLMResponseError(f"{what}: the model's JSON has no {key!r} key (keys: {sorted(data)})")
    value = data[key]
    if not isinstance(value, kind):
        raise LLMResponseError(f"{what}: {key!r} should be {kind}, got {type(value).__name__} {value!r}")
    return value
