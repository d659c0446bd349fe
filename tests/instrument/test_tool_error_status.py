"""A tool that handles its own failure (``handle_tool_error``: the agent gets an error ToolMessage,
the run goes on) is recorded as a failed tool step, as a tool that raises is: span status ERROR
with the tool's text as output. A tool that succeeds stays OK."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware import instrument
from causal_middleware.spans.model import Status, ToolStep
from causal_middleware.store.sqlite import SqliteSpanStore

REFUSAL = '{"errors": [{"message": "Unknown argument \\"ref\\"", "extensions": {"code": "BAD_USER_INPUT"}}]}'


class _Scripted(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> _Scripted:
        return self


def _refuse(ref: str) -> str:
    raise ToolException(REFUSAL)


def _lookup(ref: str) -> str:
    return f"Booking {ref} is confirmed."


def test_a_tool_error_message_is_a_failed_step(tmp_path) -> None:
    cancel = StructuredTool.from_function(
        _refuse, name="cancel_lesson", description="Cancel.", handle_tool_error=True
    )
    lookup = StructuredTool.from_function(_lookup, name="find_booking", description="Find.")
    model = _Scripted(
        responses=[
            AIMessage(content="", tool_calls=[{"name": "find_booking", "args": {"ref": "B1"}, "id": "c1"}]),
            AIMessage(content="", tool_calls=[{"name": "cancel_lesson", "args": {"ref": "B1"}, "id": "c2"}]),
            AIMessage(content="The cancellation failed."),
        ]
    )
    store = SqliteSpanStore(tmp_path / "runs.db")
    agent = instrument(create_agent(model, tools=[lookup, cancel], checkpointer=InMemorySaver()), store=store)
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "Cancel B1"}]}, {"configurable": {"thread_id": "t"}}
    )
    assert out["messages"][-1].content == "The cancellation failed."  # the run itself went on
    agent.force_flush()
    run_id = agent.last_run_id
    assert run_id is not None
    tools = [s for s in store.get_trajectory(run_id).steps if isinstance(s, ToolStep)]
    assert [(t.tool_name, t.status) for t in tools] == [
        ("find_booking", Status.OK),
        ("cancel_lesson", Status.ERROR),
    ]
    assert tools[0].output == "Booking B1 is confirmed."
    assert tools[1].output == REFUSAL
    assert tools[1].error and "BAD_USER_INPUT" in tools[1].error
    agent.shutdown()
