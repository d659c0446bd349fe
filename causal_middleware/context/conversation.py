"""Conversation trajectories: a multi-turn session as an ordered list of typed nodes.

A :class:`Conversation` is what every context-debugging stage reads. It comes either from stored
runs of an instrumented LangGraph chat agent (one run per user turn, the session being the
LangGraph ``thread_id``; see :func:`conversation_from_trajectories`) or from the simulation
generator (kept in the store as ``context.session`` records, see :mod:`.sessions`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from causal_middleware.context.workspace import (
    SYSTEM_PROMPT_PATH,
    Workspace,
    component_type,
    split_front_matter,
    tool_prompt_path,
)
from causal_middleware.spans.model import LLMStep, RetrievalStep, Status, ToolStep, Trajectory


class NodeType(StrEnum):
    SYSTEM_PROMPT = "system_prompt"
    USER = "user"
    AGENT = "agent"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"
    KB_RETRIEVAL = "kb_retrieval"
    SKILL_LOOKUP = "skill_lookup"


CONTEXT_NODE_TYPES = (
    NodeType.SYSTEM_PROMPT,
    NodeType.KB_RETRIEVAL,
    NodeType.SKILL_LOOKUP,
    NodeType.TOOL_CALL,
)


class RetrievedDoc(BaseModel):
    """A document a retrieval node brought into the context."""

    path: str | None = None
    id: str | None = None
    title: str | None = None
    score: float | None = None
    content: str = ""


class ConversationNode(BaseModel):
    """One node of a session.

    ``content`` is what went in (user or agent text, the tool call's arguments as JSON, the
    retrieval query, the skill name); ``output`` what came out (tool output, retrieved text, the
    skill file). ``source`` is the workspace path the node read or acted under.
    """

    id: str
    type: NodeType
    turn: int = Field(ge=0, description="0 for session context, then 1 per user turn")
    content: str = ""
    output: str = ""
    name: str | None = Field(default=None, description="tool or skill name")
    source: str | None = None
    documents: list[RetrievedDoc] = Field(default_factory=list)
    status: Literal["ok", "error"] = "ok"
    run_id: str | None = None
    step_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """Everything this node put into the context: content and output together."""
        return f"{self.content}\n{self.output}" if self.output else self.content

    @property
    def sources(self) -> list[str]:
        """Every workspace path this node read: its source and its documents' paths."""
        out = [self.source] if self.source else []
        out += [d.path for d in self.documents if d.path and d.path not in out]
        return out


class Feedback(BaseModel):
    """Explicit user feedback on a turn (a thumbs-down, a rating)."""

    turn: int
    rating: Literal["positive", "negative"]
    comment: str | None = None


class Conversation(BaseModel):
    session_id: str
    nodes: list[ConversationNode] = Field(default_factory=list)
    feedback: list[Feedback] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> Conversation:
        seen: set[str] = set()
        for n in self.nodes:
            if n.id in seen:
                raise ValueError(f"session {self.session_id!r}: duplicate node id {n.id!r}")
            seen.add(n.id)
        return self

    def node(self, node_id: str) -> ConversationNode:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(f"session {self.session_id!r} has no node {node_id!r}")

    def index(self, node_id: str) -> int:
        for i, n in enumerate(self.nodes):
            if n.id == node_id:
                return i
        raise KeyError(f"session {self.session_id!r} has no node {node_id!r}")

    def of_type(self, *types: NodeType) -> list[ConversationNode]:
        return [n for n in self.nodes if n.type in types]

    @property
    def user_turns(self) -> list[ConversationNode]:
        return self.of_type(NodeType.USER)

    def transcript(self, limit: int = 400) -> str:
        """A readable listing, one line per node (used in LLM prompts and by the CLI)."""
        lines = []
        for n in self.nodes:
            body = n.content if n.type in (NodeType.USER, NodeType.AGENT, NodeType.REASONING) else n.content
            out = f" -> {n.output}" if n.output and n.type not in (NodeType.USER, NodeType.AGENT) else ""
            src = f" [{n.source}]" if n.source else ""
            text = f"{body}{out}".replace("\n", " ")
            if len(text) > limit:
                text = text[: limit - 3] + "..."
            lines.append(f"{n.id} (turn {n.turn}, {n.type.value}{src}): {text}")
        return "\n".join(lines)


# --- from stored trajectories ----------------------------------------------------------------

_KB_TOOL_HINTS = ("search", "retriev", "kb", "knowledge", "lookup_doc", "docs")
_SKILL_TOOL_HINTS = ("skill", "sop", "procedure")
_USER_ROLES = ("user", "human")
_SYSTEM_ROLES = ("system",)
_AGENT_ROLES = ("assistant", "ai")


def tool_node_type(tool_name: str) -> NodeType:
    """Classify a tool by its name: skill readers, knowledge-base readers, or other tools."""
    name = tool_name.lower()
    if any(h in name for h in _SKILL_TOOL_HINTS):
        return NodeType.SKILL_LOOKUP
    if name in ("read_system_prompt", "read_tool_prompt"):
        return NodeType.TOOL_CALL
    if any(h in name for h in _KB_TOOL_HINTS):
        return NodeType.KB_RETRIEVAL
    return NodeType.TOOL_CALL


def conversation_from_trajectory(trajectory: Trajectory, *, session_id: str | None = None) -> Conversation:
    """One run as a one-turn (or, for a run that holds the whole chat, multi-turn) conversation."""
    return conversation_from_trajectories([trajectory], session_id=session_id)


def conversation_from_trajectories(
    trajectories: Sequence[Trajectory],
    *,
    session_id: str | None = None,
    system_prompt_path: str = SYSTEM_PROMPT_PATH,
) -> Conversation:
    """The runs of one thread (oldest first) as one session: each run is one user turn.

    LLM steps give the system prompt (first system message seen), the user turn (the last user
    message of the run's first LLM call), reasoning (text of LLM calls followed by tool calls)
    and the agent's reply (the run's last LLM output, else its answer). Tool steps become
    knowledge-base retrievals, skill lookups or tool calls by tool name; retrieval steps become
    knowledge-base retrievals with their documents.
    """
    if not trajectories:
        raise ValueError("a conversation needs at least one trajectory")
    sid = session_id or trajectories[0].thread_id or trajectories[0].run_id
    nodes: list[ConversationNode] = []
    counter = 0

    def add(node_type: NodeType, turn: int, **kw: Any) -> None:
        nonlocal counter
        counter += 1
        nodes.append(ConversationNode(id=f"n{counter}", type=node_type, turn=turn, **kw))

    system_seen = False
    for turn, traj in enumerate(trajectories, start=1):
        llm_steps = [s for s in traj.steps if isinstance(s, LLMStep)]
        if llm_steps and not system_seen:
            sys_msgs = [m.content for m in llm_steps[0].messages if m.role.lower() in _SYSTEM_ROLES]
            if sys_msgs:
                add(
                    NodeType.SYSTEM_PROMPT,
                    0,
                    output=sys_msgs[0],
                    source=system_prompt_path,
                    run_id=traj.run_id,
                )
                system_seen = True
        user_text = _user_text(traj, llm_steps)
        if user_text:
            add(NodeType.USER, turn, content=user_text, run_id=traj.run_id)
        last_llm = llm_steps[-1] if llm_steps else None
        for step in traj.steps:
            if isinstance(step, LLMStep):
                if step is last_llm or not step.output.strip():
                    continue
                add(NodeType.REASONING, turn, content=step.output, run_id=traj.run_id, step_id=step.step_id)
            elif isinstance(step, ToolStep):
                tool_type, fields = _tool_node(step)
                add(tool_type, turn, run_id=traj.run_id, step_id=step.step_id, **fields)
            elif isinstance(step, RetrievalStep):
                docs = [
                    RetrievedDoc(
                        path=d.source or d.metadata.get("path") or d.metadata.get("source") or d.id,
                        id=d.id,
                        title=d.metadata.get("title"),
                        score=d.score,
                        content=d.text,
                    )
                    for d in step.documents
                ]
                add(
                    NodeType.KB_RETRIEVAL,
                    turn,
                    content=step.query,
                    output="\n\n".join(d.content for d in docs),
                    name=step.retriever or step.name,
                    source=docs[0].path if docs else None,
                    documents=docs,
                    status="error" if step.status == Status.ERROR else "ok",
                    run_id=traj.run_id,
                    step_id=step.step_id,
                )
        reply = last_llm.output if last_llm is not None and last_llm.output.strip() else (traj.answer or "")
        if reply:
            add(
                NodeType.AGENT,
                turn,
                content=reply,
                run_id=traj.run_id,
                step_id=last_llm.step_id if last_llm else None,
            )
    return Conversation(session_id=sid, nodes=nodes, metadata={"run_ids": [t.run_id for t in trajectories]})


def _user_text(traj: Trajectory, llm_steps: list[LLMStep]) -> str:
    if llm_steps:
        users = [m.content for m in llm_steps[0].messages if m.role.lower() in _USER_ROLES]
        if users:
            return users[-1]
    inp = traj.input
    if isinstance(inp, str):
        return inp
    if isinstance(inp, dict):
        for key in ("input", "question", "query", "message"):
            if isinstance(inp.get(key), str):
                return str(inp[key])
        msgs = inp.get("messages")
        if isinstance(msgs, list) and msgs:
            last = msgs[-1]
            if isinstance(last, dict):
                return str(last.get("content") or "")
            if isinstance(last, list | tuple) and len(last) == 2:
                return str(last[1])
            return str(last)
    return ""


def _tool_node(step: ToolStep) -> tuple[NodeType, dict[str, Any]]:
    node_type = tool_node_type(step.tool_name or step.name)
    args_text = json.dumps(step.args, ensure_ascii=False, sort_keys=True) if step.args else ""
    error = step.status == Status.ERROR or step.output.lstrip().lower().startswith("error")
    docs = _documents_from_output(step.output, step.args) if node_type == NodeType.KB_RETRIEVAL else []
    source: str | None = docs[0].path if docs else None
    if node_type == NodeType.TOOL_CALL:
        source = tool_prompt_path(step.tool_name or step.name)
    elif node_type == NodeType.SKILL_LOOKUP and not source:
        source = _first_str(step.args, ("path", "name", "skill"))
        if source and component_type(source) != "skill":
            source = f"skills/{source}/SKILL.md"
    return (
        node_type,
        {
            "content": args_text,
            "output": step.output if not error else (step.output or step.error or "error"),
            "name": step.tool_name or step.name,
            "source": source,
            "documents": docs,
            "status": "error" if error else "ok",
        },
    )


def _documents_from_output(output: str, args: dict[str, Any]) -> list[RetrievedDoc]:
    """Documents in a retrieval tool's output: a JSON hit list, one JSON hit, or a plain file read."""
    text = output.strip()
    if text.startswith("[") or text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        items = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        docs = [
            RetrievedDoc(
                path=item.get("path") or item.get("source"),
                id=item.get("id"),
                title=item.get("title"),
                score=item.get("score") if isinstance(item.get("score"), int | float) else None,
                content=str(item.get("content") or item.get("text") or ""),
            )
            for item in items
            if isinstance(item, dict) and ("content" in item or "text" in item)
        ]
        if docs:
            return docs
    path = _first_str(args, ("path", "id", "entry", "name"))
    if path and text and not text.lower().startswith("error"):
        return [RetrievedDoc(path=path, content=output)]
    return []


def _first_str(args: dict[str, Any], keys: Iterable[str]) -> str | None:
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return None


# --- aligning a session with its workspace ---------------------------------------------------

_MIN_SHOWN = 20  # characters of a file's body that must appear in a node's output to count as shown
_ALIGNED_TYPES = (NodeType.TOOL_CALL, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP)
_KIND_NODE = {"kb": NodeType.KB_RETRIEVAL, "skill": NodeType.SKILL_LOOKUP}


def align_to_workspace(conversation: Conversation, workspace: Workspace) -> Conversation:
    """The session with its nodes tied to the files of ``workspace``, by content and by the
    workspace's own layout rather than by naming conventions.

    Only what the recording left unknown is filled in; a node whose source the workspace has is
    kept as it is. A document path the workspace lacks is matched to the workspace file it ends
    with (a tool that reports absolute paths); a tool's output that shows files of the workspace
    (their text, front matter aside) gets those files as its documents and becomes a
    knowledge-base retrieval or a skill lookup after the kind the layout gives them (a
    ``search_help_center`` or ``open_playbook`` tool of the user's own naming); a tool call gets
    the file that describes the tool; the system prompt the layout's prompt file. A call of such a
    search tool that shows no page (nothing found) is a knowledge-base retrieval with no documents.
    """
    nodes = [_aligned(n, workspace) for n in conversation.nodes]
    # a search tool that found nothing shows no page; its calls that did show pages name it
    searches = {
        n.name
        for n, was in zip(nodes, conversation.nodes, strict=True)
        if n.type == NodeType.KB_RETRIEVAL and was.type != n.type
    }
    nodes = [
        n.model_copy(update={"type": NodeType.KB_RETRIEVAL, "source": None, "documents": []})
        if n.type == NodeType.TOOL_CALL
        and n.name in searches
        and n.status == "ok"
        and not _files_shown(n.output, workspace)
        else n
        for n in nodes
    ]
    return conversation.model_copy(update={"nodes": nodes})


def _aligned(node: ConversationNode, ws: Workspace) -> ConversationNode:
    if node.type == NodeType.SYSTEM_PROMPT:
        if (not node.source or not ws.exists(node.source)) and ws.exists(ws.system_prompt_path):
            return node.model_copy(update={"source": ws.system_prompt_path})
        return node
    if node.type not in _ALIGNED_TYPES:
        return node
    if node.status == "error":  # it showed no file; a failed call of a described tool is still that tool's
        if node.type == NodeType.TOOL_CALL and node.name and node.name in ws.tool_names():
            return node.model_copy(update={"source": ws.tool_prompt_path(node.name), "documents": []})
        return node
    if (
        node.source
        and ws.exists(node.source)
        and all(not d.path or ws.exists(d.path) for d in node.documents)
    ):
        return node
    docs = [_mapped_doc(d, ws) for d in node.documents]
    known = [d for d in docs if d.path and ws.exists(d.path)]
    if not known:
        shown = _files_shown(node.output, ws)
        known = [
            RetrievedDoc(path=p, id=_meta_id(ws.read(p)), title=_meta_title(ws.read(p)), content=ws.read(p))
            for p in shown
        ]
        docs = known or docs
    kinds = {ws.component_type(d.path) for d in known if d.path}
    update: dict[str, Any] = {"documents": docs if node.type != NodeType.TOOL_CALL or known else []}
    if kinds and kinds <= {"kb", "skill"}:
        node_type = _KIND_NODE["skill" if kinds == {"skill"} else "kb"]
        update["type"] = node_type
        if node_type == NodeType.SKILL_LOOKUP:
            update["documents"] = []
        update["source"] = known[0].path
    elif node.type == NodeType.TOOL_CALL and node.name and node.name in ws.tool_names():
        update["source"] = ws.tool_prompt_path(node.name)
        update["documents"] = []
    elif known:
        update["source"] = known[0].path
    return node.model_copy(update=update)


def _mapped_doc(doc: RetrievedDoc, ws: Workspace) -> RetrievedDoc:
    """A document whose recorded path the workspace lacks, renamed to the workspace file its path
    ends with (``/srv/app/docs/faq/x.md`` -> ``docs/faq/x.md``) when exactly one does."""
    if not doc.path or ws.exists(doc.path):
        return doc
    tail = doc.path.replace("\\", "/")
    matches = [p for p in ws.files if tail == p or tail.endswith("/" + p)]
    if len(matches) == 1:
        return doc.model_copy(update={"path": matches[0]})
    return doc


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _file_body(text: str) -> str:
    try:
        _, body = split_front_matter(text)
    except ValueError:
        body = text
    return _collapse(body)


def _files_shown(output: str, ws: Workspace) -> list[str]:
    """Workspace context files (knowledge base, skills) whose body the output shows, in the order
    they appear there; a file whose body is inside another shown file's body is not counted."""
    shown = _collapse(output)
    if len(shown) < _MIN_SHOWN:
        return []
    found: list[tuple[int, str, str]] = []
    for path, text in ws.files.items():
        if ws.component_type(path) not in ("kb", "skill"):
            continue
        body = _file_body(text)
        if len(body) >= _MIN_SHOWN and body in shown:
            found.append((shown.index(body), path, body))
    out = []
    for _pos, path, body in sorted(found):
        if any(body != other and body in other for _, _, other in found):
            continue
        out.append(path)
    return out


def _meta_title(text: str) -> str | None:
    try:
        meta, body = split_front_matter(text)
    except ValueError:
        return None
    if meta.get("title"):
        return str(meta["title"])
    m = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    return m.group(1).strip() if m else None


def _meta_id(text: str) -> str | None:
    try:
        meta, _ = split_front_matter(text)
    except ValueError:
        return None
    return str(meta["id"]) if meta.get("id") else None
