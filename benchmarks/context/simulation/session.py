"""Building simulated sessions node by node, with tool outputs copied from the workspace files."""

from __future__ import annotations

import json

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType, RetrievedDoc
from causal_middleware.context.explorer import format_hits
from causal_middleware.context.workspace import SYSTEM_PROMPT_PATH, KBHit, Workspace, tool_prompt_path

SEARCH_K = 3


class SessionBuilder:
    """Appends nodes with ids n1, n2, ... and turn numbers; reads every output from ``workspace``."""

    def __init__(self, session_id: str, workspace: Workspace) -> None:
        self.session_id = session_id
        self.ws = workspace
        self.nodes: list[ConversationNode] = []
        self.turn = 0

    def _add(self, node_type: NodeType, **kw: object) -> ConversationNode:
        node = ConversationNode(id=f"n{len(self.nodes) + 1}", type=node_type, turn=self.turn, **kw)  # type: ignore[arg-type]
        self.nodes.append(node)
        return node

    def system(self) -> ConversationNode:
        return self._add(
            NodeType.SYSTEM_PROMPT,
            output=self.ws.read(SYSTEM_PROMPT_PATH),
            source=SYSTEM_PROMPT_PATH,
            name="system_prompt",
        )

    def user(self, text: str) -> ConversationNode:
        self.turn += 1
        return self._add(NodeType.USER, content=text)

    def agent(self, text: str) -> ConversationNode:
        return self._add(NodeType.AGENT, content=text)

    def reasoning(self, text: str) -> ConversationNode:
        return self._add(NodeType.REASONING, content=text)

    def search(self, query: str, k: int = SEARCH_K) -> tuple[ConversationNode, list[KBHit]]:
        hits = self.ws.search_kb(query, k=k)
        node = self._add(
            NodeType.KB_RETRIEVAL,
            name="search_kb",
            content=json.dumps({"query": query}),
            output=format_hits(hits),
            source=hits[0].path if hits else None,
            documents=[
                RetrievedDoc(path=h.path, id=h.id, title=h.title, score=h.score, content=h.content)
                for h in hits
            ],
        )
        return node, hits

    def read_entry(self, path: str) -> ConversationNode:
        text = self.ws.read(path)
        return self._add(
            NodeType.KB_RETRIEVAL,
            name="read_kb_entry",
            content=json.dumps({"path": path}),
            output=text,
            source=path,
            documents=[RetrievedDoc(path=path, content=text)],
        )

    def read_skill(self, name: str, path: str) -> ConversationNode:
        return self._add(
            NodeType.SKILL_LOOKUP,
            name="read_skill",
            content=json.dumps({"name": name}),
            output=self.ws.read(path),
            source=path,
        )

    def call_tool(self, name: str, args: dict[str, str], output: str, *, error: bool) -> ConversationNode:
        return self._add(
            NodeType.TOOL_CALL,
            name=name,
            content=json.dumps(args, sort_keys=True),
            output=output,
            source=tool_prompt_path(name),
            status="error" if error else "ok",
        )

    def build(self) -> Conversation:
        return Conversation(session_id=self.session_id, nodes=list(self.nodes))
