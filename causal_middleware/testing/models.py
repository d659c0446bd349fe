"""A scripted LangChain chat model that records what it was asked (the prompt, the reply schema
bound through ``with_structured_output``), for testing code that calls a model."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

__all__ = ["RecordingChatModel"]


class RecordingChatModel(BaseChatModel):
    """Answers with the next of ``replies`` (the last one again once they run out) and records, per
    call, the messages, the tools bound and the ``tool_choice``: ``with_structured_output`` binds
    the reply schema as a forced tool. With ``as_tool_call`` a JSON-object reply to a call that has
    a tool comes back as that tool's call (the way Claude answers a forced tool); otherwise as text
    (the way a model without tool calling answers)."""

    replies: list[str]
    as_tool_call: bool = False
    asked: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

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
    def schemas(self) -> list[dict[str, Any] | None]:
        """The reply schema of each call (the bound tool's parameters), None for a call without."""
        return [a["tools"][0]["function"]["parameters"] if a["tools"] else None for a in self.asked]

    @property
    def titles(self) -> list[str | None]:
        """The bound tool's name of each call, None for a call without."""
        return [a["tools"][0]["function"]["name"] if a["tools"] else None for a in self.asked]

    @property
    def last_schema(self) -> dict[str, Any]:
        """The last call's reply schema."""
        found = self.schemas[-1] if self.asked else None
        if found is None:
            raise AssertionError("the last call bound no reply schema")
        return found

    @property
    def system(self) -> str:
        """The last call's first (system) message."""
        return str(self.asked[-1]["messages"][0].content)

    @property
    def prompt(self) -> str:
        """The last call's second (user) message."""
        return str(self.asked[-1]["messages"][1].content)
