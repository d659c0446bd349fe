"""A search tool of the user's own naming that finds nothing shows no page, so its output alone
cannot say it is a search; a call of the same tool that did show pages says so, and the empty call
becomes a knowledge-base retrieval with no documents (a knowledge-base gap has a node to blame)."""

from __future__ import annotations

import json

from causal_middleware.context.conversation import (
    Conversation,
    ConversationNode,
    NodeType,
    align_to_workspace,
)
from causal_middleware.context.workspace import Workspace

PAGE = "---\nid: late-arrival\ntitle: Late arrival\n---\nLatecomers are seated at the first interval, about 40 minutes in.\n"
WS = Workspace.from_files(
    {"system_prompt.md": "You help theatre-goers.\n", "kb/visiting/late-arrival.md": PAGE}
)


def _tool(nid: str, turn: int, query: str, output: str, name: str = "find_articles") -> ConversationNode:
    return ConversationNode(
        id=nid,
        type=NodeType.TOOL_CALL,
        turn=turn,
        name=name,
        content=json.dumps({"query": query}),
        output=output,
    )


def _session(*nodes: ConversationNode) -> Conversation:
    return Conversation(session_id="s", nodes=list(nodes))


def test_an_empty_call_of_a_tool_that_showed_pages_is_a_retrieval() -> None:
    conv = _session(
        ConversationNode(id="n1", type=NodeType.USER, turn=1, content="What if I'm late?"),
        _tool("n2", 1, "late", "Articles found:\n\n" + PAGE),
        ConversationNode(id="n3", type=NodeType.USER, turn=2, content="Can I bring a pushchair?"),
        _tool("n4", 2, "pushchair", "No articles found."),
    )
    found, empty = align_to_workspace(conv, WS).nodes[1], align_to_workspace(conv, WS).nodes[3]
    assert found.type == NodeType.KB_RETRIEVAL and found.source == "kb/visiting/late-arrival.md"
    assert empty.type == NodeType.KB_RETRIEVAL and empty.documents == [] and empty.source is None


def test_other_tools_and_failed_calls_stay_tool_calls() -> None:
    conv = _session(
        _tool("n1", 1, "late", "Articles found:\n\n" + PAGE),
        _tool("n2", 1, "B1", '{"ok": true}', name="hold_seats"),  # another tool: no page ever
        _tool("n3", 2, "pushchair", "upstream timeout").model_copy(update={"status": "error"}),
    )
    nodes = align_to_workspace(conv, WS).nodes
    assert nodes[1].type == NodeType.TOOL_CALL
    assert nodes[2].type == NodeType.TOOL_CALL  # a failed call is the tool's failure, not an empty search
