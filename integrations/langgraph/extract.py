"""Turning LangChain / LangGraph callback payloads into span attribute values.

Pure functions (no OTel), so they stay cheap and testable on their own, and one per-run
encoder (:class:`NodeInputEncoder`) that records node inputs as what changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel

from causal_middleware.retrieval.langchain import document_id as _core_document_id
from causal_middleware.spans import attributes as A
from causal_middleware.spans.attributes import indexed

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseMessage):
        out: dict[str, Any] = {"type": obj.type, "content": obj.content}
        if isinstance(obj, AIMessage) and obj.tool_calls:
            out["tool_calls"] = obj.tool_calls
        for key in ("name", "tool_call_id"):
            value = getattr(obj, key, None)
            if value:
                out[key] = value
        return out
    if isinstance(obj, Document):
        return {"id": obj.id, "page_content": obj.page_content, "metadata": obj.metadata}
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    # langgraph Send / Command and anything else: keep their public fields when they have them
    for fields in (("node", "arg"), ("update", "goto", "resume", "graph")):
        if all(hasattr(obj, f) for f in fields):
            return {f: getattr(obj, f) for f in fields if getattr(obj, f) is not None}
    return repr(obj)


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stringify_keys(v) for v in value]
    return value


# json.dumps(value, default=_default, ensure_ascii=False), built once: dumps builds an encoder per
# call, and the handler encodes some 60 values per run on the agent's thread
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_default)
_KEY_JSON: dict[str, str] = {}
_STR_ONLY = frozenset({str})


def key_json(key: str) -> str:
    """``json.dumps(key, ensure_ascii=False)``, cached (state keys repeat on every node start)."""
    text = _KEY_JSON.get(key)
    if text is None:
        text = json.dumps(key, ensure_ascii=False)
        if len(_KEY_JSON) < 4096:
            _KEY_JSON[key] = text
    return text


_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode_str = json.encoder.encode_basestring  # what encode() does for a str (ensure_ascii=False)


def _encode(value: Any) -> str:
    """``_ENCODER.encode(value)``, the same C encoder made directly (no Python-level
    ``encode``/``iterencode`` frames and closure per call); fresh markers each call, as there."""
    if isinstance(value, str):
        return _encode_str(value)
    if _c_make_encoder is None:  # pragma: no cover - CPython always has the C encoder
        return _ENCODER.encode(value)
    return "".join(_c_make_encoder({}, _default, _encode_str, None, ": ", ", ", False, False, True)(value, 0))


def _encode_compact(value: Any) -> str:
    """``_COMPACT.encode(value)`` the same way (node input refs: lists of str/int)."""
    if _c_make_encoder is None:  # pragma: no cover
        return _COMPACT.encode(value)
    return "".join(
        _c_make_encoder({}, _COMPACT.default, _encode_str, None, ":", ",", False, False, True)(value, 0)
    )


def to_json(value: Any) -> str:
    """JSON text for any payload (LangChain messages, documents, pydantic models, dataclasses...).
    Never raises: what JSON cannot hold is written as its ``repr``."""
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError):
        try:
            return json.dumps(_stringify_keys(value), default=_default, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return json.dumps(repr(value), ensure_ascii=False)


def value_attributes(prefix_value: str, prefix_mime: str, value: Any) -> dict[str, Any]:
    """``input.value``/``output.value`` (+ mime type): strings as text, everything else as JSON."""
    if isinstance(value, str):
        return {prefix_value: value, prefix_mime: "text/plain"}
    return {prefix_value: to_json(value), prefix_mime: "application/json"}


def message_text(message: Any) -> str:
    """The text of a message whose content may be a list of content blocks."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def message_role(message: BaseMessage) -> str:
    return _ROLES.get(message.type, message.type)


def input_message_attributes(messages: Sequence[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, BaseMessage):
            role, text = message_role(msg), message_text(msg)
        else:  # plain prompt strings from on_llm_start
            role, text = "user", str(msg)
        out[indexed(A.LLM_INPUT_MESSAGES_MESSAGE_ROLE, i)] = role
        out[indexed(A.LLM_INPUT_MESSAGES_MESSAGE_CONTENT, i)] = text
    return out


def _first_generation(response: LLMResult) -> Any:
    for gens in response.generations or []:
        for gen in gens:
            return gen
    return None


def llm_result_attributes(response: LLMResult) -> dict[str, Any]:
    """Output message, tool calls and token usage of one LLM call."""
    out: dict[str, Any] = {}
    gen = _first_generation(response)
    message = gen.message if isinstance(gen, ChatGeneration) else None
    if gen is not None:
        out[indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_ROLE, 0)] = "assistant"
        out[indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_CONTENT, 0)] = (
            message_text(message) if message else (gen.text or "")
        )
    if isinstance(message, AIMessage):
        for j, call in enumerate(message.tool_calls or []):
            out[indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_FUNCTION_NAME, 0, j)] = (
                call.get("name") or ""
            )
            out[indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_FUNCTION_ARGUMENTS, 0, j)] = (
                to_json(call.get("args") or {})
            )
            if call.get("id"):
                out[indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_ID, 0, j)] = call["id"]
        model = (message.response_metadata or {}).get("model_name") or (message.response_metadata or {}).get(
            "model"
        )
        if isinstance(model, str) and model:
            out[A.LLM_MODEL_NAME] = model
    usage = token_usage(response, message)
    if usage is not None:
        prompt, completion = usage
        out[A.LLM_TOKEN_COUNT_PROMPT] = prompt
        out[A.LLM_TOKEN_COUNT_COMPLETION] = completion
        out[A.LLM_TOKEN_COUNT_TOTAL] = prompt + completion
        out[A.GEN_AI_USAGE_INPUT_TOKENS] = prompt
        out[A.GEN_AI_USAGE_OUTPUT_TOKENS] = completion
    return out


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    return None


def token_usage(response: LLMResult, message: Any = None) -> tuple[int, int] | None:
    """(input, output) tokens from ``llm_output`` (OpenAI/Anthropic style) or ``usage_metadata``."""
    llm_output = response.llm_output or {}
    for key in ("token_usage", "usage"):
        usage = llm_output.get(key)
        if isinstance(usage, Mapping):
            prompt = _as_int(usage.get("prompt_tokens", usage.get("input_tokens")))
            completion = _as_int(usage.get("completion_tokens", usage.get("output_tokens")))
            if prompt is not None or completion is not None:
                return prompt or 0, completion or 0
        elif usage is not None and hasattr(usage, "input_tokens"):
            return _as_int(usage.input_tokens) or 0, _as_int(getattr(usage, "output_tokens", 0)) or 0
    meta = getattr(message, "usage_metadata", None)
    if meta:
        return _as_int(meta.get("input_tokens")) or 0, _as_int(meta.get("output_tokens")) or 0
    return None


def document_id(doc: Document) -> str:
    """``Document.id``, else ``metadata["id"]``, else a content hash (``sha1:<12 hex>``); the rule
    lives in :func:`causal_middleware.retrieval.langchain.document_id` (``RetrieverIndex`` uses it)."""
    return _core_document_id(doc)


def document_score(doc: Document) -> float | None:
    meta = doc.metadata or {}
    for key in ("score", "relevance_score", "similarity"):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


_DOC_KEYS: dict[int, tuple[str, str, str, str]] = {}


def _doc_keys(i: int) -> tuple[str, str, str, str]:
    """The id / content / score / metadata attribute names of document ``i``, cached."""
    keys = _DOC_KEYS.get(i)
    if keys is None:
        keys = (
            indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_ID, i),
            indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, i),
            indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE, i),
            indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA, i),
        )
        if len(_DOC_KEYS) < 4096:
            _DOC_KEYS[i] = keys
    return keys


def document_attributes(documents: Sequence[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            doc = Document(page_content=str(doc))
        id_key, content_key, score_key, metadata_key = _doc_keys(i)
        out[id_key] = document_id(doc)
        out[content_key] = doc.page_content
        score = document_score(doc)
        if score is not None:
            out[score_key] = score
        if doc.metadata:
            out[metadata_key] = to_json(doc.metadata)
    return out


_QUERY_KEYS = ("query", "q", "question", "search_query", "sub_query", "input", "text")


def tool_sub_query(args: Any) -> str | None:
    """A hop's sub-query from a tool call: a query-like string argument, else the only string
    argument, else the arguments as JSON."""
    if isinstance(args, str):
        return args or None
    if isinstance(args, Mapping):
        for key in _QUERY_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
        strings = [v for v in args.values() if isinstance(v, str)]
        if len(strings) == 1 and len(args) == 1:
            return strings[0]
        return to_json(args) if args else None
    return None


def tool_output_text(output: Any) -> str:
    """A tool's output as text (a ``ToolMessage``'s content, a string, or JSON)."""
    if isinstance(output, BaseMessage):
        return message_text(output)
    if isinstance(output, str):
        return output
    return to_json(output)


def _updates(output: Any) -> list[Any]:
    """The state updates in a node's return value (dicts, or ``Command.update`` of Commands)."""
    if type(output) is dict:  # the usual return: itself (what the loop below gives it)
        return [output]
    items = output if isinstance(output, list | tuple) else [output]
    out = []
    for item in items:
        update = getattr(item, "update", None) if not isinstance(item, Mapping) else item
        if isinstance(update, Mapping):
            out.append(update)
        elif isinstance(update, list | tuple):  # Command(update=[(key, value), ...])
            try:
                out.append(dict(update))
            except (TypeError, ValueError):
                continue
    return out


ANSWER_KEYS = ("answer", "final_answer")
EXTRA_ANSWER_KEYS = ("output", "response", "result")


def answer_text(output: Any, *, explicit: bool = False) -> str | None:
    """The answer a node's update carries: an ``answer``/``final_answer`` string, or the last
    ``AIMessage`` without tool calls in ``messages``. For nodes named in ``answer_nodes``
    (``explicit``) also ``output``/``response``/``result`` strings or a plain string return."""
    if explicit and isinstance(output, str):
        return output or None
    keys = ANSWER_KEYS + EXTRA_ANSWER_KEYS if explicit else ANSWER_KEYS
    for update in _updates(output):
        for key in keys:
            value = update.get(key)
            if isinstance(value, str) and value.strip():
                return value
        messages = update.get("messages")
        if isinstance(messages, list | tuple) and messages:
            last = messages[-1]
            if isinstance(last, AIMessage) and not last.tool_calls:
                text = message_text(last)
                if text.strip():
                    return text
    return None


def goto_targets(output: Any) -> list[str]:
    """Where a node's returned ``Command``(s) send the graph next (node names, Send targets)."""
    if type(output) is dict:  # a plain update names no target (the loop below skips mappings)
        return []
    items = output if isinstance(output, list | tuple) else [output]
    targets: list[str] = []
    for item in items:
        if isinstance(item, Mapping) or not hasattr(item, "goto") or not hasattr(item, "update"):
            continue
        goto = item.goto
        for g in goto if isinstance(goto, list | tuple) else [goto]:
            if isinstance(g, str) and g:
                targets.append(g)
            elif hasattr(g, "node") and hasattr(g, "arg"):
                targets.append(str(g.node))
    return targets


def route_choice(output: Any, options: Mapping[str, str] | None = None) -> list[str]:
    """The branch(es) a router chose: strings, ``Send`` targets, lists of either."""
    if type(output) is str:  # one branch by name (a str has no node/arg: the loop's else)
        return [options.get(output, output) if options else output]
    items = output if isinstance(output, list | tuple) else [output]
    out: list[str] = []
    for item in items:
        if hasattr(item, "node") and hasattr(item, "arg"):
            out.append(str(item.node))
        elif item is not None:
            key = str(item)
            out.append(options.get(key, key) if options else key)
    return out


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


class NodeInputEncoder:
    """A run's node inputs recorded as what changed: each distinct value of a state key is written
    once per run (in the ``input.value`` of the first node span that saw it); later node spans
    name it by digest, and a list that grew (``operator.add`` channels: messages, evidence) is
    written as the earlier list's digest plus its new tail. ``causal.node.input.refs`` lists one
    ``[key, digest, how]`` per input key in order (see ``otel/attributes.yaml``); the trajectory
    builder resolves them, so a node step's ``input`` is the whole state as before.

    Strings are immutable, so their JSON (and, as whole values, their digest) is cached by
    identity (the same question, query and passage objects travel from node to node); other
    values are serialised on every node start.
    """

    def __init__(self) -> None:
        self._known: set[str] = set()
        self._lists: dict[str, tuple[str, list[str]]] = {}  # key -> (digest, element JSON) last seen
        self._strings: dict[int, tuple[str, str]] = {}  # id -> (the string, its JSON)
        self._string_digests: dict[int, tuple[str, str, str]] = {}  # id -> (string, JSON, digest)
        self._lock = threading.Lock()  # a run's parallel branches start nodes on several threads

    def _json(self, value: Any) -> str:
        if type(value) is str:
            hit = self._strings.get(id(value))
            if hit is not None and hit[0] is value:
                return hit[1]
            text = _encode_str(value)  # to_json(value) of a str
            self._strings[id(value)] = (value, text)
            return text
        return to_json(value)

    def attributes(self, inputs: Any) -> dict[str, Any]:
        """``input.value`` / ``input.mime_type`` / ``causal.node.input.refs`` for one node start;
        a non-mapping input (or one with non-string keys) is written whole, as before."""
        if not isinstance(inputs, Mapping) or not _STR_ONLY.issuperset(map(type, inputs)):
            return value_attributes(A.INPUT_VALUE, A.INPUT_MIME_TYPE, inputs)
        with self._lock:
            return self._encode(inputs)

    def _encode(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        explicit: list[str] = []
        refs: list[list[Any]] = []
        for key, value in inputs.items():
            if isinstance(value, list):
                elements = [self._json(v) for v in value]
                text = "[" + ", ".join(elements) + "]"
                digest = _digest(text)
                previous = self._lists.get(key)
                self._lists[key] = (digest, elements)
                if digest in self._known:
                    refs.append([key, digest, 1])
                    continue
                self._known.add(digest)
                if previous is not None and 0 < len(previous[1]) <= len(elements):
                    n = len(previous[1])
                    if previous[0] in self._known and elements[:n] == previous[1]:
                        explicit.append(f"{key_json(key)}: [{', '.join(elements[n:])}]")
                        refs.append([key, digest, [previous[0], n]])
                        continue
                explicit.append(f"{key_json(key)}: {text}")
                refs.append([key, digest, 0])
                continue
            if type(value) is str:
                hit = self._string_digests.get(id(value))
                if hit is not None and hit[0] is value:
                    text, digest = hit[1], hit[2]
                else:
                    text = self._json(value)
                    digest = _digest(text)
                    self._string_digests[id(value)] = (value, text, digest)
            else:
                text = self._json(value)
                digest = _digest(text)
            if digest in self._known:
                refs.append([key, digest, 1])
                continue
            self._known.add(digest)
            explicit.append(f"{key_json(key)}: {text}")
            refs.append([key, digest, 0])
        return {
            A.INPUT_VALUE: "{" + ", ".join(explicit) + "}",
            A.INPUT_MIME_TYPE: "application/json",
            A.CAUSAL_NODE_INPUT_REFS: _encode_compact(refs),
        }
