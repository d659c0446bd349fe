"""A session built turn by turn over a workspace, for the context tests: every search and read
output is the workspace files' own text, as the agent would have seen it."""

from __future__ import annotations

import json

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType, RetrievedDoc
from causal_middleware.context.explorer import format_hits
from causal_middleware.context.workspace import Workspace


class Chat:
    """A session over a workspace; every read and search output is the file's own text."""

    def __init__(self, ws: Workspace, session_id: str = "chat") -> None:
        self.ws = ws
        self.session_id = session_id
        self.nodes: list[ConversationNode] = []
        self.turn = 0
        self._add(NodeType.SYSTEM_PROMPT, output=ws.read(ws.system_prompt_path), source=ws.system_prompt_path)

    def _add(self, kind: NodeType, **kw: object) -> None:
        self.nodes.append(ConversationNode(id=f"n{len(self.nodes) + 1}", type=kind, turn=self.turn, **kw))  # type: ignore[arg-type]

    def user(self, text: str) -> Chat:
        self.turn += 1
        self._add(NodeType.USER, content=text)
        return self

    def agent(self, text: str) -> Chat:
        self._add(NodeType.AGENT, content=text)
        return self

    def search(self, query: str) -> Chat:
        hits = self.ws.search_kb(query, k=3)
        docs = [
            RetrievedDoc(path=h.path, id=h.id, title=h.title, score=h.score, content=h.content) for h in hits
        ]
        self._add(
            NodeType.KB_RETRIEVAL,
            name="search_kb",
            content=json.dumps({"query": query}),
            output=format_hits(hits),
            source=hits[0].path if hits else None,
            documents=docs,
        )
        return self

    def read(self, path: str) -> Chat:
        text = self.ws.read(path)
        self._add(
            NodeType.KB_RETRIEVAL,
            name="read_kb_entry",
            content=json.dumps({"path": path}),
            output=text,
            source=path,
            documents=[RetrievedDoc(path=path, content=text)],
        )
        return self

    def build(self) -> Conversation:
        return Conversation(session_id=self.session_id, nodes=list(self.nodes))
