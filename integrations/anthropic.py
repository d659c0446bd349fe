"""Claude as a LangChain chat model, on the ``anthropic`` SDK (2.14, which runs on ``httpx2``).

``AnthropicChatModel`` maps LangChain messages to the Messages API (system messages -> ``system``,
tool calls <-> ``tool_use``/``tool_result`` blocks), reports token usage the LangChain way
(``AIMessage.usage_metadata`` and ``llm_output["token_usage"]``), retries rate limits and
overloads, and rejects a malformed response with an error that says what was wrong.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LangSmithParams, LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

DEFAULT_MODEL = "claude-haiku-4-5"
MODEL_ENV = "CAUSAL_MW_ANTHROPIC_MODEL"
API_KEY_ENV = "ANTHROPIC_API_KEY"

# Block types a reply may carry that hold no answer text for us; anything else unknown is an error.
_IGNORED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_RETRYABLE = (anthropic.RateLimitError, anthropic.OverloadedError)


class MalformedResponseError(ValueError):
    """The Messages API answered 200 with a body that is not a valid message."""


def _default_model() -> str:
    return os.environ.get(MODEL_ENV) or DEFAULT_MODEL


class AnthropicChatModel(BaseChatModel):
    """A Claude chat model.

    ``model`` defaults to ``$CAUSAL_MW_ANTHROPIC_MODEL`` or ``claude-haiku-4-5``. The SDK retries
    failed requests ``max_retries`` times with its own backoff; on top of that a
    ``RateLimitError`` or ``OverloadedError`` that survives them is retried ``rate_limit_retries``
    more times after ``retry_backoff_s * 2**attempt`` seconds (set it to 0 in tests), then raised.

    ``temperature`` is sent only when set: SDK 2.14 has no typed parameter for it any more, so it
    goes in the request body as is. Pass ``client`` (an ``anthropic.Anthropic``) or ``http_client``
    (an ``httpx2.Client``, e.g. with a ``MockTransport``) to control the transport.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = Field(default_factory=_default_model)
    max_tokens: int = Field(default=1024, gt=0)
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    stop_sequences: list[str] | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=2, ge=0)
    rate_limit_retries: int = Field(default=2, ge=0)
    retry_backoff_s: float = Field(default=2.0, ge=0.0)
    client: Any = Field(default=None, exclude=True, description="a prebuilt anthropic.Anthropic")
    http_client: Any = Field(default=None, exclude=True, description="an httpx2.Client for the SDK")
    sleep: Callable[[float], None] = Field(default=time.sleep, exclude=True)

    _client: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "anthropic"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="anthropic",
            ls_model_name=kwargs.get("model", self.model),
            ls_model_type="chat",
            ls_max_tokens=self.max_tokens,
        )
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if stop or self.stop_sequences:
            params["ls_stop"] = stop or self.stop_sequences
        return params

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (LangChain tools, functions, pydantic models or Anthropic tool dicts).

        ``tool_choice``: ``"auto"``, ``"any"``/``"required"``/``True`` (must call a tool), ``"none"``,
        a tool name, or an Anthropic ``tool_choice`` dict.
        """
        bound: dict[str, Any] = {"tools": [to_anthropic_tool(t) for t in tools]}
        choice = _tool_choice(tool_choice)
        if choice is not None:
            bound["tool_choice"] = choice
        kwargs.pop("strict", None)  # OpenAI-only flags create_agent may pass
        kwargs.pop("parallel_tool_calls", None)
        return super().bind(**bound, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = self._request(messages, stop, kwargs)
        body = self._call(request)
        message = parse_response(body)
        usage = message.usage_metadata or UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)
        model_name = message.response_metadata.get("model_name", request["model"])
        llm_output = {"token_usage": dict(usage), "model_name": model_name}
        return ChatResult(generations=[ChatGeneration(message=message)], llm_output=llm_output)

    def _combine_llm_outputs(self, llm_outputs: list[dict[str, Any] | None], /) -> dict[str, Any]:
        """Sum token usage over a batch (``generate`` with several prompts)."""
        totals: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        model_name = self.model
        for output in llm_outputs:
            if not output:
                continue
            model_name = output.get("model_name") or model_name
            for key in totals:
                totals[key] += int(output.get("token_usage", {}).get(key, 0))
        return {"token_usage": totals, "model_name": model_name}

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        system, turns = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": kwargs.pop("model", self.model),
            "max_tokens": kwargs.pop("max_tokens", self.max_tokens),
            "messages": turns,
        }
        if system:
            request["system"] = system
        stops = stop or kwargs.pop("stop_sequences", None) or self.stop_sequences
        if stops:
            request["stop_sequences"] = list(stops)
        for key in ("tools", "tool_choice", "metadata", "thinking", "output_config"):
            if kwargs.get(key) is not None:
                request[key] = kwargs.pop(key)
        extra_body = dict(kwargs.pop("extra_body", None) or {})
        temperature = kwargs.pop("temperature", self.temperature)
        if temperature is not None:
            extra_body["temperature"] = temperature
        if extra_body:
            request["extra_body"] = extra_body
        if kwargs:
            raise TypeError(f"AnthropicChatModel got unsupported call arguments: {sorted(kwargs)}")
        return request

    def _call(self, request: dict[str, Any]) -> Any:
        client = self._get_client()
        for attempt in range(self.rate_limit_retries + 1):
            try:
                raw = client.messages.with_raw_response.create(**request)
                break
            except _RETRYABLE:
                if attempt == self.rate_limit_retries:
                    raise
                if self.retry_backoff_s > 0:
                    self.sleep(self.retry_backoff_s * 2**attempt)
        try:
            return raw.http_response.json()
        except ValueError as exc:
            raise MalformedResponseError(
                f"Anthropic response body is not JSON: {raw.http_response.text[:200]!r}"
            ) from exc

    def _get_client(self) -> Any:
        if self.client is not None:
            return self.client
        if self._client is None:
            key = self.api_key.get_secret_value() if self.api_key is not None else os.environ.get(API_KEY_ENV)
            if not key:
                raise ValueError(f"AnthropicChatModel needs an API key: set ${API_KEY_ENV} or pass api_key=")
            options: dict[str, Any] = {"api_key": key, "max_retries": self.max_retries}
            if self.base_url is not None:
                options["base_url"] = self.base_url
            if self.timeout is not None:
                options["timeout"] = self.timeout
            if self.http_client is not None:
                options["http_client"] = self.http_client
            self._client = anthropic.Anthropic(**options)
        return self._client


def to_anthropic_tool(tool: dict[str, Any] | type | Callable[..., Any] | BaseTool) -> dict[str, Any]:
    """An Anthropic tool definition (``name``, ``description``, ``input_schema``) for any LangChain tool."""
    if isinstance(tool, dict) and "input_schema" in tool:
        return tool
    function = convert_to_openai_tool(tool)["function"]
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    out = {"name": function["name"], "input_schema": schema}
    if function.get("description"):
        out["description"] = function["description"]
    return out


def _tool_choice(choice: str | dict[str, Any] | bool | None) -> dict[str, Any] | None:
    if choice is None or choice is False:
        return None
    if isinstance(choice, dict):
        return choice
    if choice is True or choice in ("any", "required"):
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    if isinstance(choice, str):
        return {"type": "tool", "name": choice}
    raise ValueError(f"unsupported tool_choice {choice!r}")


def to_anthropic_messages(messages: Sequence[BaseMessage]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, Messages-API turns). System messages, wherever they are, join into ``system``;
    consecutive turns of the same role merge (tool results follow the assistant turn as one user turn)."""
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            system_parts.append(_text_of(message.content))
            continue
        role, blocks = _convert(message, n)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if not turns:
        raise ValueError("Anthropic needs at least one non-system message")
    return "\n\n".join(p for p in system_parts if p), turns


def _convert(message: BaseMessage, n: int) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, HumanMessage):
        return "user", _blocks(message.content)
    if isinstance(message, AIMessage):
        blocks = [b for b in _blocks(message.content) if b.get("type") != "tool_use"]
        blocks += [
            {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}
            for call in message.tool_calls
        ]
        return "assistant", blocks
    if isinstance(message, ToolMessage):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": _text_of(message.content),
        }
        if message.status == "error":
            result["is_error"] = True
        return "user", [result]
    if isinstance(message, ChatMessage) and message.role in ("user", "assistant"):
        return message.role, _blocks(message.content)
    raise ValueError(f"message {n} has a type Anthropic cannot take: {type(message).__name__}")


def _blocks(content: str | list[Any]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif isinstance(part, dict):
            blocks.append(part)
    return blocks


def _text_of(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in _blocks(content) if b.get("type") == "text")


def parse_response(body: Any) -> AIMessage:
    """An ``AIMessage`` from a Messages API response body; ``MalformedResponseError`` naming what is wrong."""
    if not isinstance(body, dict):
        raise MalformedResponseError(f"Anthropic response is not a JSON object: {type(body).__name__}")
    where = f"Anthropic response {body.get('id', '<no id>')!r}"
    content = body.get("content")
    if not isinstance(content, list):
        raise MalformedResponseError(f"{where}: missing 'content' (expected a list of content blocks)")
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise MalformedResponseError(f"{where}: content[{i}] is a text block without a string 'text'")
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise MalformedResponseError(f"{where}: content[{i}] is a tool_use block without 'id'/'name'")
            args = block.get("input", {})
            if not isinstance(args, dict):
                raise MalformedResponseError(f"{where}: content[{i}] tool_use 'input' is not an object")
            tool_calls.append({"id": block["id"], "name": block["name"], "args": args, "type": "tool_call"})
        elif kind not in _IGNORED_BLOCKS:
            raise MalformedResponseError(f"{where}: content[{i}] has unknown block type {kind!r}")
    return AIMessage(
        content="".join(texts),
        tool_calls=tool_calls,
        id=body.get("id"),
        usage_metadata=_usage(body.get("usage"), where),
        response_metadata={
            "model_name": body.get("model"),
            "stop_reason": body.get("stop_reason"),
            "stop_sequence": body.get("stop_sequence"),
            "model_provider": "anthropic",
        },
    )


def _usage(usage: Any, where: str) -> UsageMetadata:
    if not isinstance(usage, dict):
        raise MalformedResponseError(f"{where}: missing 'usage'")
    try:
        prompt = int(usage["input_tokens"])
        completion = int(usage["output_tokens"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedResponseError(f"{where}: 'usage' lacks integer input_tokens/output_tokens") from exc
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_creation = int(usage.get("cache_creation_input_tokens") or 0)
    # The API's input_tokens excludes cached tokens; LangChain's input_tokens counts the whole prompt.
    total_in = prompt + cache_read + cache_creation
    result = UsageMetadata(
        input_tokens=total_in, output_tokens=completion, total_tokens=total_in + completion
    )
    if cache_read or cache_creation:
        result["input_token_details"] = {"cache_read": cache_read, "cache_creation": cache_creation}
    return result
