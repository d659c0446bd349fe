"""Fixtures for the structured-reply tests: a chat model that records the schema it was asked for."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "attribution"))  # attribution_sim


class SchemaRecordingModel(BaseChatModel):
    """Answers with the next scripted reply and records, per call, the tools bound and the
    ``tool_choice``: ``with_structured_output`` (the base class's way) binds the reply schema as a
    forced tool. With ``as_tool_call`` a JSON reply to a call with a tool comes back as that tool's
    call, the way Claude answers a forced tool; otherwise as text."""

    replies: list[str]
    as_tool_call: bool = True
    asked: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "schema-recording"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = kwargs.get("tools") or []
        self.asked.append({"tools": tools, "tool_choice": kwargs.get("tool_choice"), "messages": messages})
        reply = self.replies[min(len(self.asked) - 1, len(self.replies) - 1)]
        message = AIMessage(content=reply)
        if tools and self.as_tool_call:
            try:
                args = json.loads(reply)
            except json.JSONDecodeError:
                args = None
            if isinstance(args, dict):
                name = tools[0]["function"]["name"]
                message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call-1"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The reply schema of each call (the bound tool's parameters), None for a call without."""
        return [a["tools"][0]["function"]["parameters"] if a["tools"] else None for a in self.asked]

    @property
    def titles(self) -> list[str | None]:
        return [a["tools"][0]["function"]["name"] if a["tools"] else None for a in self.asked]


@pytest.fixture
def recording() -> type[SchemaRecordingModel]:
    return SchemaRecordingModel
