"""Context debugging on an instrumented LangGraph chat agent, offline, in a few seconds.

A support agent (``langchain.agents.create_agent`` with a scripted chat model) answers from a
knowledge base whose overdraft-fee entry is stale; the user corrects it. The session is read back
from the span store, then: detect -> diagnose -> recommend (a reviewable diff) -> apply with backup.

    python examples/context_debugging.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware import instrument
from causal_middleware.context import Workspace, apply_recommendation, debug_session, load_conversation
from causal_middleware.context.tools import workspace_tools
from causal_middleware.store.memory import InMemorySpanStore

FILES = {
    "system_prompt.md": "# System prompt\n\nYou are the assistant of Northwind Bank. Answer from the knowledge base.\n",
    "kb/fees/overdraft-fee.md": (
        "---\nid: kb-overdraft-fee\ntitle: Overdraft fee\nmodified: 2023-04-02\nstatus: official\n---\n"
        "# Overdraft fee\n\nThe overdraft fee is $25 per item. No more than three overdraft fees are charged per day.\n"
    ),
    "kb/announcements/fees-update.md": (
        "---\nid: ann-fees-2025\ntitle: Fees update, March 2025\nmodified: 2025-03-01\nstatus: official\n---\n"
        "# Fees update, March 2025\n\nEffective March 1, 2025: the overdraft fee is $35 per item.\n"
    ),
    "kb/fees/wire-fee.md": "---\nid: kb-wire-fee\ntitle: Wire fee\nstatus: official\n---\n# Wire fee\n\nThe outgoing wire fee is $30.\n",
}


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replays scripted replies; ``bind_tools`` returns itself so ``create_agent`` accepts it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="context-ws-") as tmp:
        run(Path(tmp))


def run(root: Path) -> None:
    workspace = Workspace.from_files(FILES)
    workspace.write_to(root)

    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="", tool_calls=[{"name": "search_kb", "args": {"query": "overdraft fee"}, "id": "c1"}]
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
    store = InMemorySpanStore()
    graph = instrument(agent, store=store)
    config = {"configurable": {"thread_id": "chat-42"}}
    for text in ("What is the overdraft fee?", "That's outdated, it's $35 now.", "Thanks."):
        graph.invoke({"messages": [{"role": "user", "content": text}]}, config)

    conversation = load_conversation(store, "chat-42")  # the thread's runs, one per user turn
    print(conversation.transcript(limit=90), end="\n\n")

    report = debug_session(conversation, Workspace.from_dir(root))
    det, diag, rec = report.detection, report.diagnosis, report.recommendation
    print(
        f"detect:    escalate={det.escalate} confidence={det.confidence:.2f} signals={[s.type.value for s in det.signals]}"
    )
    assert diag is not None and rec is not None
    print(
        f"diagnose:  root={diag.root_node_id} {diag.category} {diag.component_path}  ({diag.delta.describe() if diag.delta else ''})"
    )
    print(
        f"recommend: {rec.operation.value} {rec.target_path}, authority {rec.authoritative_source} ({rec.authority_rule}), {rec.calls} workspace calls"
    )
    print(rec.diff)

    dry = apply_recommendation(rec, root)  # without confirm: nothing changes
    print(dry.message)
    done = apply_recommendation(rec, root, confirm=True)
    print(done.message)
    print((root / "kb/fees/overdraft-fee.md").read_text())


if __name__ == "__main__":
    main()
