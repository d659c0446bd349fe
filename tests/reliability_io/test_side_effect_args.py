"""Item 10 of issue 13: a fork whose intervention changes a side-effecting tool's arguments was
served the recorded output of a different call (``matched_by: order``): the page to "bob" got the
result of the page to "alice". Now such a call is refused (``SideEffectBlockedError``, recorded on
the fork run) or, with ``allow_side_effects``, really executed; never served another call's output."""

from __future__ import annotations

from typing import Any

import pytest
from causal_middleware.integrations.langgraph import instrument, side_effecting
from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.replayer.branch import RecordedTask
from causal_middleware.integrations.langgraph.replayer.frozen import SuffixOverride
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware.replay.errors import SideEffectBlockedError
from causal_middleware.replay.policy import ForkPolicy, RecordedCall
from causal_middleware.store.memory import InMemorySpanStore


class OnCallModel(BaseChatModel):
    """Looks up who is on call, pages that person, answers with the page's result."""

    @property
    def _llm_type(self) -> str:
        return "scripted-oncall"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OnCallModel:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        if not results:
            message = AIMessage(
                content="", tool_calls=[{"name": "lookup", "args": {"team": "billing"}, "id": "c1"}]
            )
        elif len(results) == 1:
            message = AIMessage(
                content="", tool_calls=[{"name": "page", "args": {"person": results[0]}, "id": "c2"}]
            )
        else:
            message = AIMessage(content=f"done: {results[1]}")
        return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.fixture
def oncall() -> dict[str, Any]:
    paged: list[str] = []

    @tool
    def lookup(team: str) -> str:
        """Who is on call for a team."""
        return "alice"

    @side_effecting
    @tool
    def page(person: str) -> str:
        """Page a person (a real side effect)."""
        paged.append(person)
        return f"paged {person}"

    agent = create_agent(OnCallModel(), [lookup, page], checkpointer=InMemorySaver())
    graph = instrument(agent, store=InMemorySpanStore())
    graph.invoke(
        {"messages": [{"role": "user", "content": "page billing"}]}, {"configurable": {"thread_id": "p"}}
    )
    assert paged == ["alice"]
    paged.clear()
    return {"graph": graph, "run_id": graph.last_run_id, "paged": paged}


def _to_bob(recorded: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [m.model_copy(update={"content": "bob"}) for m in recorded["messages"]]}


def test_a_changed_page_is_refused_not_served_alices_result(oncall: dict[str, Any]) -> None:
    graph, run_id = oncall["graph"], oncall["run_id"]
    replayer = Replayer(graph)
    with pytest.raises(SideEffectBlockedError, match="'page'") as info:
        replayer.fork(run_id, hop=1, update=_to_bob)
    message = str(info.value)
    assert "'person': 'bob'" in message and "'person': 'alice'" in message and "allow_side_effects" in message
    assert oncall["paged"] == []  # nothing really paged
    store = graph.store
    (fork,) = [r for r in store.list_runs(limit=None) if r.run_id != run_id]
    labels = store.get_trajectory(fork.run_id).labels
    effects = labels["replay.side_effects"]
    assert effects["served"] == []  # bob never got alice's "paged alice"
    assert [(r["name"], r["args"], r["reason"]) for r in effects["refused"]] == [
        ("page", {"person": "bob"}, "changed_args")
    ]
    assert "SideEffectBlockedError" in labels["replay.error"]


def test_with_allow_side_effects_the_changed_page_really_runs(oncall: dict[str, Any]) -> None:
    fork = Replayer(oncall["graph"]).fork(oncall["run_id"], hop=1, update=_to_bob, allow_side_effects=True)
    assert oncall["paged"] == ["bob"]
    assert fork.answer == "done: paged bob"


def test_the_same_page_is_still_served_from_the_record(oncall: dict[str, Any]) -> None:
    fork = Replayer(oncall["graph"]).fork(oncall["run_id"], hop=1)  # re-run unchanged
    assert oncall["paged"] == []
    assert fork.answer == "done: paged alice"
    served = fork.labels["replay.side_effects"]["served"]
    assert [(s["args"], s["matched_by"]) for s in served] == [({"person": "alice"}, "args")]


def test_scalar_spelling_and_string_input_tools_still_match() -> None:
    policy = ForkPolicy(
        recorded=[
            RecordedCall(name="charge", args={"amount": "3"}, output="ok-3"),
            RecordedCall(name="shout", args={"input": "hi"}, output="HI"),
        ]
    )
    assert policy.recorded_output("charge", {"amount": 3}) == "ok-3"  # the schema coerced "3" -> 3
    assert policy.recorded_output("shout", {"text": "hi"}) == "HI"  # recorded as {"input": ...}


def test_a_side_effecting_node_is_not_served_another_steps_output() -> None:
    recorded = [RecordedTask(node="notify", langgraph_step=5, output={"sent": "alice"}, checkpoint_id="c5")]
    hook = SuffixOverride(mode="regenerate", recorded=recorded, first_step=3, side_effecting=["notify"])
    config = {"metadata": {"langgraph_step": 3, "langgraph_checkpoint_ns": "notify:x"}}
    with pytest.raises(SideEffectBlockedError, match=r"step\(s\) \[5\]"):
        hook("notify", {}, config)  # the fork's path reached notify earlier than the parent's
    assert hook.summary()["side_effecting_refused"] == [["notify", 3]]
    handled, output = hook(
        "notify", {}, {"metadata": {"langgraph_step": 5, "langgraph_checkpoint_ns": "n:y"}}
    )
    assert handled and output == {"sent": "alice"}
