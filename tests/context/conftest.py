"""Fixtures for the context-debugging tests: a small workspace and a session builder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType, RetrievedDoc
from causal_middleware.context.explorer import format_hits
from causal_middleware.context.workspace import Workspace

SYSTEM = (
    "# System prompt\n\nYou are the assistant of Example Bank.\n\nRules:\n- Answer from the knowledge base.\n"
)


def kb(entry_id: str, title: str, body: str, **meta: Any) -> str:
    lines = ["---", f"id: {entry_id}", f"title: {title}"]
    lines += [f"{k}: {v}" for k, v in meta.items()]
    lines += ["---", f"# {title}", "", body, ""]
    return "\n".join(lines)


FILES = {
    "system_prompt.md": SYSTEM,
    "tools/transfer_funds.md": "---\nname: transfer_funds\n---\n# transfer_funds\n\nMove money.\n\nParameters:\n- `speed`: use `instant` for a same-day transfer, or `standard`.\n",
    "skills/dispute-a-charge/SKILL.md": "---\nname: dispute-a-charge\ndescription: Open a card dispute.\nstatus: official\nlevel: team\nmodified: 2023-03-01\n---\n# Dispute a charge\n\n1. Confirm the transaction.\n2. Disputes must be filed within 60 days of the statement date.\n",
    "kb/fees/overdraft-fee.md": kb(
        "kb-overdraft-fee",
        "Overdraft fee",
        "The overdraft fee is $25 per item. No more than three overdraft fees are charged per day.",
        modified="2024-01-10",
        status="official",
        level="department",
        owner="knowledge-team",
    ),
    "kb/fees/returned-check-fee.md": kb(
        "kb-returned-check-fee",
        "Returned check fee",
        "The returned check fee is $12 when a deposited check bounces.",
        modified="2024-02-01",
        status="official",
        level="department",
        owner="knowledge-team",
    ),
    "kb/fees/wire-fee.md": kb(
        "kb-wire-fee",
        "Wire fee",
        "The outgoing wire fee is $30 for domestic wires.",
        modified="2024-03-01",
        status="official",
    ),
    "kb/cards/atm-limit.md": kb(
        "kb-atm-limit",
        "ATM withdrawal limit",
        "The daily ATM withdrawal limit is $1,000.",
        modified="2024-03-01",
        status="official",
    ),
}


@pytest.fixture
def files() -> dict[str, str]:
    return dict(FILES)


@pytest.fixture
def workspace(files: dict[str, str]) -> Workspace:
    return Workspace.from_files(files)


class SessionFactory:
    """Builds conversations node by node; outputs of reads are copied from the workspace."""

    def __init__(self, ws: Workspace, session_id: str = "s1") -> None:
        self.ws = ws
        self.session_id = session_id
        self.nodes: list[ConversationNode] = []
        self.turn = 0

    def _add(self, node_type: NodeType, **kw: Any) -> str:
        nid = f"n{len(self.nodes) + 1}"
        self.nodes.append(ConversationNode(id=nid, type=node_type, turn=self.turn, **kw))
        return nid

    def system(self) -> str:
        return self._add(
            NodeType.SYSTEM_PROMPT, output=self.ws.read("system_prompt.md"), source="system_prompt.md"
        )

    def user(self, text: str) -> str:
        self.turn += 1
        return self._add(NodeType.USER, content=text)

    def agent(self, text: str) -> str:
        return self._add(NodeType.AGENT, content=text)

    def reasoning(self, text: str) -> str:
        return self._add(NodeType.REASONING, content=text)

    def search(self, query: str, k: int = 3) -> str:
        hits = self.ws.search_kb(query, k=k)
        docs = [
            RetrievedDoc(path=h.path, id=h.id, title=h.title, score=h.score, content=h.content) for h in hits
        ]
        return self._add(
            NodeType.KB_RETRIEVAL,
            name="search_kb",
            content=json.dumps({"query": query}),
            output=format_hits(hits),
            source=hits[0].path if hits else None,
            documents=docs,
        )

    def read(self, path: str) -> str:
        text = self.ws.read(path)
        return self._add(
            NodeType.KB_RETRIEVAL,
            name="read_kb_entry",
            content=json.dumps({"path": path}),
            output=text,
            source=path,
            documents=[RetrievedDoc(path=path, content=text)],
        )

    def skill(self, path: str) -> str:
        return self._add(NodeType.SKILL_LOOKUP, name="read_skill", output=self.ws.read(path), source=path)

    def tool(self, name: str, args: dict[str, Any], output: str, *, error: bool = False) -> str:
        return self._add(
            NodeType.TOOL_CALL,
            name=name,
            content=json.dumps(args),
            output=output,
            source=f"tools/{name}.md",
            status="error" if error else "ok",
        )

    def build(self) -> Conversation:
        return Conversation(session_id=self.session_id, nodes=list(self.nodes))


@pytest.fixture
def session(workspace: Workspace) -> SessionFactory:
    return SessionFactory(workspace)


@pytest.fixture
def session_for():
    """``session_for(files)``: a session factory over a custom workspace."""
    return lambda files: SessionFactory(Workspace.from_files(files))


@pytest.fixture
def make_kb():
    """``make_kb(id, title, body, **meta)``: the text of a knowledge-base entry."""
    return kb
