"""Tools and messages for a chat template: rendering a LangChain conversation as the template's
message dicts, and reading tool calls back from a local model's reply (see :mod:`.llamacpp`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from causal_middleware.prompts.reply import top_level_values

# --- messages --------------------------------------------------------------------------
TOOL_INSTRUCTIONS = """You can call these tools:
{tools}

To call a tool, reply with only this, one per call:
<tool_call>
{{"name": "<tool name>", "arguments": {{<its arguments as JSON>}}}}
</tool_call>
Otherwise reply normally."""
_MUST_CALL = "You must call a tool now."
ANSWER_FROM_RESULTS = (
    "Answer the user's question in plain text from the tool results above. Do not call tools."
)


def to_chat_messages(
    messages: Sequence[BaseMessage],
    tools: Sequence[Mapping[str, Any]] = (),
    tool_choice: str | dict[str, Any] | bool | None = None,
    *,
    native_tools: bool,
) -> list[dict[str, Any]]:
    """OpenAI-style message dicts for a chat template.

    ``native_tools``: the template renders tools, tool calls and ``tool`` messages itself;
    otherwise tools become system-prompt instructions, calls become ``<tool_call>`` text and tool
    results become user turns.
    """
    out: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        out.append(_to_chat_message(message, n, native_tools))
    extra = []
    if tools and not native_tools:
        extra.append(TOOL_INSTRUCTIONS.format(tools="\n".join(json.dumps(t["function"]) for t in tools)))
    if tools and tool_choice not in (None, False, "auto"):
        extra.append(
            _MUST_CALL
            if not isinstance(tool_choice, str) or tool_choice in ("any", "required")
            else f"You must call the tool {tool_choice} now."
        )
    if extra:
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": "\n\n".join([out[0]["content"], *extra])}
        else:
            out.insert(0, {"role": "system", "content": "\n\n".join(extra)})
    return out


def _to_chat_message(message: BaseMessage, n: int, native_tools: bool) -> dict[str, Any]:
    text = _text_of(message.content)
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": text}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": text}
    if isinstance(message, AIMessage):
        calls = [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
        if not calls:
            return {"role": "assistant", "content": text}
        if native_tools:
            return {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in message.tool_calls
                ],
            }
        rendered = "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in calls)
        return {"role": "assistant", "content": f"{text}\n{rendered}".strip()}
    if isinstance(message, ToolMessage):
        if native_tools:
            return {"role": "tool", "content": text, "tool_call_id": message.tool_call_id}
        return {"role": "user", "content": f"Tool result ({message.name or message.tool_call_id}):\n{text}"}
    if isinstance(message, ChatMessage) and message.role in ("system", "user", "assistant"):
        return {"role": message.role, "content": text}
    raise ValueError(f"message {n} has a type the local model cannot take: {type(message).__name__}")


def _text_of(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_tool_calls(
    text: str, tool_names: set[str] | frozenset[str], *, call_key: str = ""
) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """(the reply's remaining text, tool calls naming a bound tool, invalid calls) from a reply.

    Calls are read from ``<tool_call>`` blocks; a reply without any is searched for fenced or bare
    JSON objects ``{"name": <a bound tool>, "arguments": {...}}`` (``parameters`` accepted too), so
    a model that forgets the tags still calls the tool, while JSON that names no bound tool stays
    text. Ids are derived from ``call_key`` (the prompt and reply), so a re-run reproduces them.
    """
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    tagged = _TAGGED.findall(text)
    if tagged:
        remaining = _TAGGED.sub("", text)
        for chunk in tagged:
            objects = top_level_values(chunk, objects_only=True, lenient=True)
            if not objects:
                invalid.append(
                    _invalid(chunk.strip(), "no JSON object in <tool_call>", call_key, len(invalid))
                )
            for obj in objects:
                _classify(obj, tool_names, call_key, calls, invalid, json.dumps(obj), strict=True)
        return remaining.strip(), calls, invalid
    remaining = text
    for source in [*_FENCED.findall(text), text] if "```" in text else [text]:
        for obj in top_level_values(source, objects_only=True, lenient=True):
            if isinstance(obj.get("name"), str) and obj["name"] in tool_names:
                _classify(obj, tool_names, call_key, calls, invalid, json.dumps(obj), strict=False)
        if calls:
            break
    if calls:
        remaining = _FENCED.sub("", text) if "```" in text else ""
        remaining = "" if not remaining.strip() or _only_json(remaining) else remaining
    return remaining.strip(), calls, invalid


def _only_json(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("{") and stripped.endswith("}")


def _classify(
    obj: dict[str, Any],
    tool_names: set[str] | frozenset[str],
    call_key: str,
    calls: list[ToolCall],
    invalid: list[InvalidToolCall],
    raw: str,
    *,
    strict: bool,
) -> None:
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some models JSON-encode the arguments a second time
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass
    index = len(calls) + len(invalid)
    if not isinstance(name, str) or name not in tool_names:
        if strict:
            invalid.append(_invalid(raw, f"no bound tool named {name!r}", call_key, index, name))
        return
    if not isinstance(args, dict):
        invalid.append(_invalid(raw, "arguments are not a JSON object", call_key, index, name))
        return
    calls.append(ToolCall(name=name, args=args, id=_call_id(call_key, index), type="tool_call"))


def _invalid(raw: str, error: str, call_key: str, index: int, name: Any = None) -> InvalidToolCall:
    return InvalidToolCall(
        name=name if isinstance(name, str) else None,
        args=raw,
        id=_call_id(call_key, index),
        error=error,
        type="invalid_tool_call",
    )


def _call_id(call_key: str, index: int) -> str:
    return "call_" + hashlib.sha256(f"{call_key}\x00{index}".encode()).hexdigest()[:16]


def tool_call_key(call: ToolCall) -> str:
    return json.dumps([call["name"], call["args"]], sort_keys=True, default=str)


def answered_calls(messages: Sequence[BaseMessage]) -> set[str]:
    """The (name, arguments) keys of the tool calls in ``messages`` that a ToolMessage answered."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return {
        tool_call_key(call)
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call.get("id") in answered
    }
