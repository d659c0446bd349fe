"""The hosted path: a reply schema reaches Claude's Messages API as a forced tool (mocked, no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest

httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("anthropic")

from causal_middleware.integrations.anthropic import AnthropicChatModel  # noqa: E402
from structured_sessions import stale_session  # noqa: E402

from causal_middleware.context.detector import detect  # noqa: E402
from causal_middleware.context.signals import SignalType  # noqa: E402


def test_the_detector_schema_is_sent_as_a_forced_tool_and_its_input_read() -> None:
    requests: list[dict[str, Any]] = []
    signal = {"type": "CORRECTION", "turn": 2, "node_id": "n4", "evidence": "outdated", "confidence": 0.9}

    def api(request: Any) -> Any:
        body = json.loads(request.content)
        requests.append(body)
        tool = body["tools"][0]["name"]
        content = [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": {"signals": [signal]}}]
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": content,
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        )

    model = AnthropicChatModel(
        api_key="test",
        max_retries=0,
        retry_backoff_s=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(api)),
    )
    det = detect(stale_session(), mode="llm", model=model)
    sent = requests[0]
    assert sent["tool_choice"] == {"type": "any"}
    assert sent["tools"][0]["name"] == "dissatisfaction_signals"
    node_ids = sent["tools"][0]["input_schema"]["properties"]["signals"]["items"]["properties"]["node_id"]
    assert node_ids["enum"] == ["n1", "n2", "n3", "n4"]
    assert [(s.type, s.node_id) for s in det.signals] == [(SignalType.CORRECTION, "n4")] and det.escalate
