"""End to end on a real instrumented LangGraph chat agent: a 3-turn session where the user corrects
the agent, read back from the span store, then detect -> diagnose -> recommend -> apply."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware import instrument
from causal_middleware.cli.main import main
from causal_middleware.context import NodeType, Operation, debug_session, load_conversation
from causal_middleware.context.tools import workspace_tools
from causal_middleware.context.workspace import Workspace
from causal_middleware.store.sqlite import SqliteSpanStore


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replays scripted AI messages; ``bind_tools`` returns itself so create_agent accepts it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


@pytest.fixture
def recorded(workspace: Workspace, tmp_path):
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"name": "search_kb", "args": {"query": "overdraft fee"}, "id": "call-1"}],
            ),
            AIMessage(content="The overdraft fee is $25 per item."),
            AIMessage(content="You're right, I apologize: the overdraft fee is $35."),
            AIMessage(content="You're welcome!"),
        ]
    )
    agent = create_agent(
        model,
        tools=workspace_tools(workspace),
        system_prompt=workspace.system_prompt(),
        checkpointer=InMemorySaver(),
    )
    store = SqliteSpanStore(tmp_path / "runs.db")
    graph = instrument(agent, store=store)
    config = {"configurable": {"thread_id": "chat-1"}}
    for text in ("What is the overdraft fee?", "No, that's wrong. It's $35 now.", "Thanks."):
        graph.invoke({"messages": [{"role": "user", "content": text}]}, config)
    graph.force_flush()
    return store, tmp_path / "runs.db"


def test_pipeline_on_an_instrumented_chat_agent(recorded, workspace: Workspace) -> None:
    store, _ = recorded
    conv = load_conversation(store, "chat-1")
    assert [n.type for n in conv.nodes] == [
        NodeType.SYSTEM_PROMPT,
        NodeType.USER,
        NodeType.KB_RETRIEVAL,
        NodeType.AGENT,
        NodeType.USER,
        NodeType.AGENT,
        NodeType.USER,
        NodeType.AGENT,
    ]
    retrieval = conv.nodes[2]
    assert retrieval.documents[0].path == "kb/fees/overdraft-fee.md"
    assert retrieval.documents[0].content == workspace.read("kb/fees/overdraft-fee.md")
    report = debug_session(conv, workspace)
    assert report.detection.escalate
    assert report.diagnosis is not None and report.diagnosis.root_node_id == retrieval.id
    assert report.diagnosis.component_path == "kb/fees/overdraft-fee.md"
    rec = report.recommendation
    assert (
        rec is not None
        and rec.operation == Operation.UPDATE
        and rec.target_path == "kb/fees/overdraft-fee.md"
    )
    assert "+The overdraft fee is $35 per item." in rec.diff


def test_cli_on_the_recorded_thread(recorded, workspace: Workspace, tmp_path, capsys) -> None:
    _, path = recorded
    wsdir = workspace.write_to(tmp_path / "ws")
    assert main(["context", "diagnose", "chat-1", "--store", str(path), "--json"]) == 0
    diag = json.loads(capsys.readouterr().out)
    assert diag["category"] == "KB_CONTENT_STALE" and diag["component_path"] == "kb/fees/overdraft-fee.md"
    assert (
        main(["context", "recommend", "chat-1", "--store", str(path), "--workspace", str(wsdir), "--json"])
        == 0
    )
    rec = json.loads(capsys.readouterr().out)
    assert (
        main(["context", "apply", rec["id"], "--workspace", str(wsdir), "--store", str(path), "--confirm"])
        == 0
    )
    assert "$35 per item" in (wsdir / "kb/fees/overdraft-fee.md").read_text()
    assert any((wsdir / ".causal-backup").iterdir())


def test_the_core_package_does_not_import_langgraph() -> None:
    code = (
        "import sys, causal_middleware.context, benchmarks.context.bench; print('langgraph' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"
