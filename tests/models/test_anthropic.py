"""AnthropicChatModel against a mocked Messages API (httpx2.MockTransport): no network."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest
from causal_middleware.integrations.anthropic import (
    DEFAULT_MODEL,
    MODEL_ENV,
    AnthropicChatModel,
    MalformedResponseError,
)
from causal_middleware.integrations.models import select_chat_model
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

_ids = itertools.count(1)


def message_body(content: list[dict[str, Any]], *, usage=None, stop_reason="end_turn", model=DEFAULT_MODEL):
    return {
        "id": f"msg_{next(_ids)}",  # unique, as the API's are (LangGraph's add_messages merges equal ids)
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 3},
    }


def text_body(text: str, **kw) -> dict[str, Any]:
    return message_body([{"type": "text", "text": text}], **kw)


class FakeAPI:
    """A scripted Messages endpoint: each request pops the next (status, body); requests are kept."""

    def __init__(self, *responses: tuple[int, Any] | Callable[[dict[str, Any]], tuple[int, Any]]) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        nxt = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        status, payload = nxt(body) if callable(nxt) else nxt
        if isinstance(payload, str):
            return httpx2.Response(status, text=payload)
        return httpx2.Response(status, json=payload)

    def model(self, **kw) -> AnthropicChatModel:
        kw.setdefault("retry_backoff_s", 0)
        return AnthropicChatModel(
            api_key="test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
            **kw,
        )


RATE_LIMITED = (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
OVERLOADED = (529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})


def test_text_reply_with_usage_and_request_mapping():
    api = FakeAPI((200, text_body("Paris", usage={"input_tokens": 12, "output_tokens": 3})))
    model = api.model(max_tokens=50)
    result = model.generate([[SystemMessage("Be brief."), HumanMessage("Capital of France?")]])
    message = result.generations[0][0].message
    assert message.content == "Paris"
    assert message.usage_metadata == {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}
    assert result.llm_output == {
        "token_usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
        "model_name": DEFAULT_MODEL,
    }
    sent = api.requests[0]
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]}]
    assert sent["model"] == DEFAULT_MODEL and sent["max_tokens"] == 50
    assert "temperature" not in sent


def test_callbacks_see_token_usage():
    class Recorder(BaseCallbackHandler):
        outputs: list = []

        def on_llm_end(self, response, **kwargs):
            self.outputs.append(response.llm_output)

    recorder = Recorder()
    FakeAPI((200, text_body("ok", usage={"input_tokens": 7, "output_tokens": 1}))).model().invoke(
        "hi", config={"callbacks": [recorder]}
    )
    assert recorder.outputs == [
        {
            "token_usage": {"input_tokens": 7, "output_tokens": 1, "total_tokens": 8},
            "model_name": DEFAULT_MODEL,
        }
    ]


def test_model_env_temperature_and_stop(monkeypatch):
    monkeypatch.setenv(MODEL_ENV, "claude-test-model")
    api = FakeAPI((200, text_body("ok")))
    api.model(temperature=0.0).invoke("hi", stop=["\n\n"])
    assert api.requests[0]["model"] == "claude-test-model"
    assert api.requests[0]["temperature"] == 0.0
    assert api.requests[0]["stop_sequences"] == ["\n\n"]


def test_cached_prompt_tokens_are_counted():
    usage = {
        "input_tokens": 4,
        "output_tokens": 2,
        "cache_read_input_tokens": 10,
        "cache_creation_input_tokens": 1,
    }
    message = FakeAPI((200, text_body("x", usage=usage))).model().invoke("hi")
    assert message.usage_metadata["input_tokens"] == 15
    assert message.usage_metadata["total_tokens"] == 17
    assert message.usage_metadata["input_token_details"] == {"cache_read": 10, "cache_creation": 1}


@tool
def lookup(entity: str) -> str:
    """Look up a fact about an entity."""
    return f"{entity} was founded in 1901."


def test_bind_tools_and_tool_use_reply():
    reply = message_body(
        [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"entity": "Acme"}},
        ],
        stop_reason="tool_use",
    )
    api = FakeAPI((200, reply))
    message = api.model().bind_tools([lookup], tool_choice="lookup").invoke("When was Acme founded?")
    assert message.content == "Let me look."
    assert message.tool_calls == [
        {"name": "lookup", "args": {"entity": "Acme"}, "id": "toolu_1", "type": "tool_call"}
    ]
    sent = api.requests[0]
    assert sent["tools"] == [
        {
            "name": "lookup",
            "description": "Look up a fact about an entity.",
            "input_schema": {
                "type": "object",
                "properties": {"entity": {"type": "string"}},
                "required": ["entity"],
            },
        }
    ]
    assert sent["tool_choice"] == {"type": "tool", "name": "lookup"}


def test_tool_history_becomes_tool_use_and_tool_result_blocks():
    api = FakeAPI((200, text_body("1901")))
    history = [
        HumanMessage("When was Acme founded?"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"entity": "Acme"}, "id": "toolu_1"}]),
        ToolMessage("Acme was founded in 1901.", tool_call_id="toolu_1"),
        ToolMessage("no such page", tool_call_id="toolu_2", status="error"),
    ]
    api.model().invoke(history)
    assert api.requests[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "When was Acme founded?"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"entity": "Acme"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Acme was founded in 1901."},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "no such page",
                    "is_error": True,
                },
            ],
        },
    ]


def test_create_agent_runs_a_tool_loop():
    def scripted(body):
        if body["messages"][-1]["content"][0]["type"] == "tool_result":
            return 200, text_body("Acme was founded in 1901.")
        return 200, message_body(
            [{"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"entity": "Acme"}}],
            stop_reason="tool_use",
        )

    api = FakeAPI(scripted)
    agent = create_agent(api.model(), tools=[lookup])
    out = agent.invoke({"messages": [HumanMessage("When was Acme founded?")]})
    assert out["messages"][-1].content == "Acme was founded in 1901."
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][2].content == "Acme was founded in 1901."
    assert len(api.requests) == 2 and api.requests[0]["tools"][0]["name"] == "lookup"


def test_rate_limit_is_raised_after_bounded_retries():
    api = FakeAPI(RATE_LIMITED)
    slept: list[float] = []
    model = api.model(rate_limit_retries=2, retry_backoff_s=0.5, sleep=slept.append)
    with pytest.raises(anthropic.RateLimitError):
        model.invoke("hi")
    assert len(api.requests) == 3
    assert slept == [0.5, 1.0]


def test_rate_limit_then_overload_then_success():
    api = FakeAPI(RATE_LIMITED, OVERLOADED, (200, text_body("done")))
    model = api.model(rate_limit_retries=2)
    assert model.invoke("hi").content == "done"
    assert len(api.requests) == 3


def test_other_errors_are_not_retried():
    api = FakeAPI((400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}))
    with pytest.raises(anthropic.BadRequestError):
        api.model(rate_limit_retries=3).invoke("hi")
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({k: v for k, v in text_body("x").items() if k != "content"}, "missing 'content'"),
        (message_body([{"type": "hologram", "data": 1}]), "unknown block type 'hologram'"),
        (message_body([{"type": "text"}]), r"content\[0\] is a text block without a string 'text'"),
        (message_body([{"type": "tool_use", "name": "lookup", "input": {}}]), r"content\[0\].*without 'id'"),
        ({**text_body("x"), "usage": None}, "missing 'usage'"),
        ("<html>gateway</html>", "not JSON"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_malformed_response_names_the_problem(body, message):
    with pytest.raises(MalformedResponseError, match=message):
        FakeAPI((200, body)).model().invoke("hi")


def test_thinking_blocks_are_skipped():
    body = message_body(
        [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "42"}]
    )
    assert FakeAPI((200, body)).model().invoke("hi").content == "42"


def test_missing_api_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicChatModel().invoke("hi")


def test_select_chat_model(monkeypatch):
    from benchmarks.models.offline import OfflineChatModel

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(select_chat_model(), OfflineChatModel)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        select_chat_model("anthropic")
    with pytest.raises(ValueError, match="prefer must be"):
        select_chat_model("openai")  # type: ignore[arg-type]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert isinstance(select_chat_model(), AnthropicChatModel)
    assert isinstance(select_chat_model("offline"), OfflineChatModel)
