"""Conversations from stored trajectories and from session records."""

from __future__ import annotations

import pytest

from causal_middleware.context.conversation import NodeType, conversation_from_trajectories, tool_node_type
from causal_middleware.context.recommendation import Classification, Operation, Recommendation
from causal_middleware.context.sessions import (
    find_recommendation,
    list_sessions,
    load_conversation,
    save_recommendation,
    save_session,
)
from causal_middleware.spans.model import (
    Document,
    LLMStep,
    Message,
    RetrievalStep,
    Status,
    ToolStep,
    Trajectory,
)
from causal_middleware.store.memory import InMemorySpanStore


def turn(run_id: str, history: list[Message], steps: list) -> Trajectory:
    return Trajectory(run_id=run_id, thread_id="t1", steps=steps)


def test_runs_of_a_thread_become_one_session() -> None:
    sys_msg = Message(role="system", content="You are the bank's assistant.")
    t1 = turn(
        "r1",
        [],
        [
            LLMStep(
                step_id="a1",
                messages=[sys_msg, Message(role="user", content="What is the overdraft fee?")],
                output="Let me search.",
            ),
            ToolStep(
                step_id="a2",
                tool_name="search_kb",
                args={"query": "overdraft fee"},
                output='[{"path": "kb/fees/overdraft-fee.md", "title": "Overdraft fee", "score": 2.5, "content": "The overdraft fee is $25."}]',
            ),
            ToolStep(
                step_id="a3",
                tool_name="read_skill",
                args={"name": "disputes"},
                output="1. File within 60 days.",
            ),
            ToolStep(
                step_id="a4",
                tool_name="transfer_funds",
                args={"speed": "instant"},
                output="Error 422: invalid value",
                status=Status.ERROR,
            ),
            RetrievalStep(
                step_id="a5",
                query="fees",
                documents=[Document(id="d1", text="Fees text", score=0.4, source="kb/fees/all.md")],
            ),
            LLMStep(step_id="a6", messages=[sys_msg], output="The overdraft fee is $25."),
        ],
    )
    t2 = turn(
        "r2",
        [],
        [
            LLMStep(
                step_id="b1",
                messages=[sys_msg, Message(role="human", content="No, it's $35 now.")],
                output="Sorry!",
            )
        ],
    )
    conv = conversation_from_trajectories([t1, t2])
    assert conv.session_id == "t1" and conv.metadata["run_ids"] == ["r1", "r2"]
    types = [n.type for n in conv.nodes]
    assert types == [
        NodeType.SYSTEM_PROMPT,
        NodeType.USER,
        NodeType.REASONING,
        NodeType.KB_RETRIEVAL,
        NodeType.SKILL_LOOKUP,
        NodeType.TOOL_CALL,
        NodeType.KB_RETRIEVAL,
        NodeType.AGENT,
        NodeType.USER,
        NodeType.AGENT,
    ]
    search = conv.nodes[3]
    assert search.documents[0].path == "kb/fees/overdraft-fee.md" and search.documents[0].score == 2.5
    assert search.source == "kb/fees/overdraft-fee.md" and search.step_id == "a2"
    assert conv.nodes[4].source == "skills/disputes/SKILL.md"
    assert conv.nodes[5].status == "error" and conv.nodes[5].source == "tools/transfer_funds.md"
    assert conv.nodes[6].documents[0].path == "kb/fees/all.md"
    assert [n.turn for n in conv.nodes if n.type == NodeType.USER] == [1, 2]
    assert conv.nodes[8].content == "No, it's $35 now."


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("search_kb", NodeType.KB_RETRIEVAL),
        ("read_skill", NodeType.SKILL_LOOKUP),
        ("lookup_transactions", NodeType.TOOL_CALL),
    ],
)
def test_tool_node_type(name, kind) -> None:
    assert tool_node_type(name) == kind


def test_session_records_and_recommendations_in_the_store(session) -> None:
    session.system()
    session.user("What is the overdraft fee?")
    conv = session.build()
    store = InMemorySpanStore()
    save_session(store, conv, note="hand-made")
    assert list_sessions(store) == ["s1"]
    assert load_conversation(store, "s1") == conv
    with pytest.raises(KeyError, match="unknown session 'zzz'"):
        load_conversation(store, "zzz")

    def rec(rid: str) -> Recommendation:
        return Recommendation(
            id=rid,
            session_id="s1",
            operation=Operation.NO_ACTION,
            classification=Classification.INCIDENTAL,
            confidence=0.5,
        )

    save_recommendation(store, rec("rec-abc111"))
    save_recommendation(store, rec("rec-abc222"))
    assert find_recommendation(store, "rec-abc111").id == "rec-abc111"
    assert find_recommendation(store, "rec-abc2").id == "rec-abc222"
    with pytest.raises(ValueError, match="ambiguous"):
        find_recommendation(store, "rec-abc")
    with pytest.raises(KeyError, match="unknown recommendation"):
        find_recommendation(store, "rec-zzz")
