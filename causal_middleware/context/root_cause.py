"""Root cause: the node where the wrong content entered the session, its fault category and path.

Holistic (one reverse-order pass): walk back from the corrected answer; every context node
(system prompt, KB retrieval, skill lookup, tool call) whose output carries the wrong value ``got``
and is about the question joins the causal chain, and the root is the EARLIEST of them: the first
node that brought the faulty content in. With no wrong value to follow, the failing question's
retrieval (content gap), the system prompt (behavioural corrections) or the first use of the
failing tool's definition is the root. Attribution scores over the chain sum to 1.

Iterative baseline: judge each node on its own (N judgements) plus the delta and a final pick
(N+2 calls in the LLM form); it has no notion of "first in the chain", so when the faulty content
shows up in several nodes it picks the one closest to the failure.

:func:`diagnose` dispatches to the offline forms here or the LLM forms in :mod:`.root_cause_llm`.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from causal_middleware.context.conversation import (
    CONTEXT_NODE_TYPES,
    Conversation,
    ConversationNode,
    NodeType,
)
from causal_middleware.context.delta import Delta, reports_absence
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.failure import FailurePoint, locate_failure
from causal_middleware.context.signals import Detection
from causal_middleware.context.text import contains, relevance, sentences, term_seq
from causal_middleware.context.workspace import (
    SYSTEM_PROMPT_PATH,
    ComponentType,
    Workspace,
    component_type,
    tool_prompt_path,
)


class FaultCategory(StrEnum):
    SKILL_FILE_STALE = "SKILL_FILE_STALE"
    KB_CONTENT_STALE = "KB_CONTENT_STALE"
    KB_CONTENT_GAP = "KB_CONTENT_GAP"
    TOOL_PROMPT_ERROR = "TOOL_PROMPT_ERROR"
    SYSTEM_PROMPT_GAP = "SYSTEM_PROMPT_GAP"
    RETRIEVAL_FAILURE = "RETRIEVAL_FAILURE"


CATEGORY_COMPONENT: dict[FaultCategory, ComponentType] = {
    FaultCategory.SKILL_FILE_STALE: "skill",
    FaultCategory.KB_CONTENT_STALE: "kb",
    FaultCategory.KB_CONTENT_GAP: "kb",
    FaultCategory.RETRIEVAL_FAILURE: "kb",
    FaultCategory.TOOL_PROMPT_ERROR: "tool",
    FaultCategory.SYSTEM_PROMPT_GAP: "system_prompt",
}

Method = Literal["holistic", "iterative"]

# A node outside the failing question's segment joins the chain only if the sentence that carries
# the wrong value is about the question (share of the question's subject words it contains).
RELEVANCE_MIN = 0.5


class Attribution(BaseModel):
    node_id: str
    score: float
    reason: str = ""


class ContextDiagnosis(BaseModel):
    """Where the wrong content entered, with the evidence chain."""

    session_id: str
    method: Method = "holistic"
    mode: Literal["offline", "llm"] = "offline"
    status: Literal["ok", "no_failure", "not_run"] = "ok"
    reason: str | None = None
    delta: Delta | None = None
    root_node_id: str | None = None
    attributions: list[Attribution] = Field(
        default_factory=list, description="highest first; scores sum to 1"
    )
    category: FaultCategory | None = None
    component_type: ComponentType | None = None
    component_path: str | None = Field(
        default=None, description="workspace path of the faulty source, when known"
    )
    segment_node_ids: list[str] = Field(default_factory=list)
    calls: int = Field(default=0, description="reasoning calls: 1 for holistic, N+2 for iterative")

    def top(self, k: int = 3) -> list[str]:
        return [a.node_id for a in self.attributions[:k]]


def diagnose(
    conversation: Conversation,
    detection: Detection | None = None,
    *,
    method: Method = "holistic",
    mode: Literal["offline", "llm"] = "offline",
    model: BaseChatModel | None = None,
    workspace: Workspace | None = None,
) -> ContextDiagnosis:
    """Find the root node of a dissatisfied session (``detection`` is computed when not given).

    Given the ``workspace``, a component path the session did not record (or recorded under a
    name the workspace does not have) is resolved by content: see :func:`resolve_path`.
    """
    if method not in ("holistic", "iterative"):
        raise ValueError(f"unknown root-cause method {method!r}; expected 'holistic' or 'iterative'")
    detection = detection if detection is not None else detect_offline(conversation)
    if mode == "llm":
        from causal_middleware.context.root_cause_llm import diagnose_llm

        return diagnose_llm(conversation, detection, model, method=method)
    if mode != "offline":
        raise ValueError(f"unknown root-cause mode {mode!r}; expected 'offline' or 'llm'")
    fp = locate_failure(conversation, detection)
    if fp is None:
        return ContextDiagnosis(
            session_id=conversation.session_id,
            method=method,
            status="no_failure",
            reason="no dissatisfaction signal",
        )
    diag = _holistic(conversation, fp) if method == "holistic" else _iterative(conversation, fp)
    if workspace is not None and diag.root_node_id:
        root = conversation.node(diag.root_node_id)
        if diag.component_path is None or not workspace.exists(diag.component_path):
            found = resolve_path(root, workspace, value=diag.delta.got if diag.delta else None)
            if found and (diag.component_path is not None or diag.category != FaultCategory.KB_CONTENT_GAP):
                diag.component_path = found
        if diag.component_path and workspace.exists(diag.component_path):
            kind = workspace.component_type(diag.component_path)  # the workspace's own layout
            if kind != "other":
                diag.component_type = kind
    return diag


def resolve_path(node: ConversationNode, workspace: Workspace, *, value: str | None = None) -> str | None:
    """The workspace file a node's content came from, found by content, not by naming convention.

    The recorded source when the workspace has it; else the file whose text holds the node's
    output (a system prompt, a skill or an entry read verbatim; the document the node retrieved);
    else, for a tool call, the file that documents the tool: it names the tool and the most of the
    argument names the call used. None when no file stands out.
    """
    if node.source and workspace.exists(node.source):
        return node.source
    files = workspace.files
    for doc in node.documents:
        if doc.path and workspace.exists(doc.path):
            return doc.path
    body = _body(node.output or "")
    if node.type != NodeType.TOOL_CALL and len(body) >= 20:
        holders = [
            p for p, text in files.items() if body in _body(text) or _body(text) in body and _body(text)
        ]
        if len(holders) > 1 and value:
            # Several files shown at once (a search that returns a few pages): the one that
            # carries the wrong value.
            holders = [p for p in holders if contains(files[p], value)]
        if len(holders) == 1:
            return holders[0]
    if node.type == NodeType.TOOL_CALL and node.name:
        keys = _arg_names(node.content)
        scored = []
        for p, text in files.items():
            if not re.search(r"(?<![\w])" + re.escape(node.name) + r"(?![\w])", text):
                continue
            score = 1 + sum(1 for k in keys if re.search(r"(?<![\w])" + re.escape(k) + r"(?![\w])", text))
            # A file whose title or front matter is the tool's name documents it; one that only
            # mentions it (a skill, the system prompt) does not.
            if re.search(r"^(?:name:\s*|#\s*)" + re.escape(node.name) + r"\s*$", text, re.MULTILINE):
                score += 2
            scored.append((score, p))
        scored.sort(key=lambda t: (-t[0], t[1]))
        if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            return scored[0][1]
    return None


def _body(text: str) -> str:
    """Text without its front matter, whitespace collapsed: what a session shows of a file."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text or "", flags=re.DOTALL)
    return re.sub(r"\s+", " ", text).strip()


def _arg_names(args_text: str) -> list[str]:
    try:
        data = json.loads(args_text or "")
    except ValueError:
        return re.findall(r"['\"]?([A-Za-z_][\w]*)['\"]?\s*[:=]", args_text or "")
    return [str(k) for k in data] if isinstance(data, dict) else []


# --- shared evidence --------------------------------------------------------------------------


def subject_text(conversation: Conversation, fp: FailurePoint) -> str:
    """What the failing question is about: the question (else the complaint) as text."""
    if fp.question is not None and term_seq(fp.question.content):
        return fp.question.content
    return fp.anchor.content if fp.anchor.type == NodeType.USER else ""


def candidates(conversation: Conversation, fp: FailurePoint) -> list[ConversationNode]:
    """Nodes up to the corrected answer (or the failing tool call), in session order."""
    end = conversation.index((fp.target or fp.anchor).id)
    return [n for n in conversation.nodes[: end + 1] if n.type != NodeType.USER]


def carries(node: ConversationNode, value: str | None) -> bool:
    """Whether the node put ``value`` into the context (output for sources, text otherwise)."""
    if not value:
        return False
    if node.type in (NodeType.SYSTEM_PROMPT, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
        return contains(node.output, value) or any(contains(d.content, value) for d in node.documents)
    return contains(node.text, value)


def claim_relevance(node: ConversationNode, value: str, subject: str) -> tuple[float, str | None]:
    """How much the sentence carrying ``value`` is about ``subject``; and the document path it is in."""
    pieces: list[tuple[str, str | None, str]] = [
        (d.content, d.path, d.title or "") for d in node.documents if d.content
    ]
    if not pieces:
        pieces = [(node.output or node.content, node.source, "")]
    best, best_path = 0.0, None
    for text, path, title in pieces:
        title = title or _front_title(text)
        for sent in sentences(text):
            if contains(sent, value):
                score = relevance(subject, sent, title) if subject else 0.0
                if score > best or best_path is None:
                    best, best_path = max(best, score), path
    return best, best_path


def _front_title(text: str) -> str:
    m = re.search(r"^(?:title:\s*(.+)|#\s+(.+))$", text, re.MULTILINE)
    return (m.group(1) or m.group(2) or "") if m else ""


def category_for(node: ConversationNode, relevance: float | None) -> tuple[FaultCategory | None, str | None]:
    """Fault category and component path implied by a root node that carried the wrong value."""
    if node.type == NodeType.SYSTEM_PROMPT:
        return FaultCategory.SYSTEM_PROMPT_GAP, node.source or SYSTEM_PROMPT_PATH
    if node.type == NodeType.SKILL_LOOKUP:
        return FaultCategory.SKILL_FILE_STALE, node.source
    if node.type == NodeType.TOOL_CALL:
        return FaultCategory.TOOL_PROMPT_ERROR, node.source or tool_prompt_path(node.name or "tool")
    if node.type == NodeType.KB_RETRIEVAL:
        stale = relevance is None or relevance >= RELEVANCE_MIN
        return (FaultCategory.KB_CONTENT_STALE if stale else FaultCategory.RETRIEVAL_FAILURE), node.source
    return None, None


def _finish(
    conversation: Conversation,
    fp: FailurePoint,
    *,
    method: Method,
    root: ConversationNode | None,
    weights: dict[str, tuple[float, str]],
    category: FaultCategory | None,
    path: str | None,
    calls: int,
) -> ContextDiagnosis:
    total = sum(w for w, _ in weights.values())
    order = {n.id: i for i, n in enumerate(conversation.nodes)}
    attributions = [
        Attribution(node_id=nid, score=round(w / total, 6), reason=why)
        for nid, (w, why) in weights.items()
        if total > 0
    ]
    attributions.sort(key=lambda a: (-a.score, order.get(a.node_id, 0)))
    ctype: ComponentType | None = (
        component_type(path) if path else (CATEGORY_COMPONENT[category] if category else None)
    )
    if ctype == "other" and category:
        ctype = CATEGORY_COMPONENT[category]
    return ContextDiagnosis(
        session_id=conversation.session_id,
        method=method,
        delta=fp.delta,
        root_node_id=root.id if root else None,
        attributions=attributions,
        category=category,
        component_type=ctype,
        component_path=path,
        segment_node_ids=list(fp.segment.node_ids) if fp.segment else [],
        calls=calls,
    )


# --- holistic ---------------------------------------------------------------------------------


def _holistic(conversation: Conversation, fp: FailurePoint) -> ContextDiagnosis:
    delta = fp.delta
    subject = subject_text(conversation, fp)
    nodes = candidates(conversation, fp)
    in_seg = set(fp.segment.node_ids) if fp.segment else set()
    weights: dict[str, tuple[float, str]] = {}
    root: ConversationNode | None = None
    root_rel: float | None = None
    root_path: str | None = None
    got = delta.got

    if got and delta.kind in ("value", "tool_error"):
        for node in reversed(nodes):
            if not carries(node, got):
                continue
            if (
                delta.kind == "tool_error"
                and node.type in CONTEXT_NODE_TYPES
                and not _names_argument(node, fp.anchor, got)
            ):
                continue  # the rejected literal as a plain word ("new members are welcome ..."), not as the argument
            rel, path = (
                claim_relevance(node, got, subject) if node.type != NodeType.TOOL_CALL else (1.0, node.source)
            )
            if node.type in CONTEXT_NODE_TYPES:
                if node.id not in in_seg and rel < RELEVANCE_MIN and _recalled(node, nodes, in_seg):
                    rel = RELEVANCE_MIN  # the agent named the page it answered from: it is about this
                if node.id in in_seg or rel >= RELEVANCE_MIN:
                    weights[node.id] = (0.3, "carries the wrong value")
                    root, root_rel, root_path = node, rel, path or node.source
            elif node.id in in_seg:
                weights[node.id] = (0.15, "repeats the wrong value")
        if root is not None:
            weights[root.id] = (1.0, f"first node that brought in {got!r}")
            category, cpath = category_for(root, root_rel)
            if root.type == NodeType.KB_RETRIEVAL:
                cpath = root_path or cpath
            _add_context(weights, nodes, in_seg, root)
            return _finish(
                conversation,
                fp,
                method="holistic",
                root=root,
                weights=weights,
                category=category,
                path=cpath,
                calls=1,
            )
        weights.clear()

    root, category, cpath, why = _root_without_value(conversation, fp, nodes, in_seg, subject)
    if root is not None:
        weights[root.id] = (1.0, why)
    _add_context(weights, nodes, in_seg, root)
    return _finish(
        conversation,
        fp,
        method="holistic",
        root=root,
        weights=weights,
        category=category,
        path=cpath,
        calls=1,
    )


def _add_context(
    weights: dict[str, tuple[float, str]],
    nodes: list[ConversationNode],
    in_seg: set[str],
    root: ConversationNode | None,
) -> None:
    """Small shares for the rest of the failing question's context, so runners-up are ranked."""
    for n in nodes:
        if n.id in weights:
            continue
        if n.id in in_seg and n.type in CONTEXT_NODE_TYPES:
            weights[n.id] = (0.08, "context of the failing question")
        elif n.type == NodeType.SYSTEM_PROMPT and (root is None or root.id != n.id):
            weights[n.id] = (0.04, "session instructions")
        elif n.id in in_seg and n.type in (NodeType.AGENT, NodeType.REASONING):
            weights[n.id] = (0.03, "agent output in the failing question")


def _root_without_value(
    conversation: Conversation,
    fp: FailurePoint,
    nodes: list[ConversationNode],
    in_seg: set[str],
    subject: str,
) -> tuple[ConversationNode | None, FaultCategory | None, str | None, str]:
    """No wrong value to follow: behaviour -> system prompt; tool error -> the tool's first use;
    right content retrieved -> that node (no category: the context was right); else the failing
    question's retrieval (gap), or the agent's first output there when it never retrieved."""
    delta = fp.delta
    system = next((n for n in nodes if n.type == NodeType.SYSTEM_PROMPT), None)
    if delta.kind == "behaviour":
        return (
            system,
            FaultCategory.SYSTEM_PROMPT_GAP,
            (system.source if system else None) or SYSTEM_PROMPT_PATH,
            "behaviour the instructions do not cover",
        )
    if delta.kind == "tool_error":
        tool = fp.anchor
        first = next((n for n in nodes if n.type == NodeType.TOOL_CALL and n.name == tool.name), tool)
        return (
            first,
            FaultCategory.TOOL_PROMPT_ERROR,
            first.source or tool_prompt_path(first.name or "tool"),
            "first call under the failing tool's definition",
        )
    seg_nodes = [n for n in nodes if n.id in in_seg]
    if delta.expected:
        for n in seg_nodes:
            if (
                n.type in CONTEXT_NODE_TYPES
                and n.type != NodeType.SYSTEM_PROMPT
                and carries(n, delta.expected)
            ):
                rel, path = claim_relevance(n, delta.expected, subject)
                if rel >= RELEVANCE_MIN:
                    return n, None, path or n.source, "the right content was in the context"
    retrievals = [n for n in seg_nodes if n.type == NodeType.KB_RETRIEVAL]
    if fp.target is not None and fp.target.type == NodeType.AGENT:
        # a segment may hold several questions: the search made in the turn of the answer that
        # came up empty is the one that found nothing
        own_turn = [n for n in retrievals if n.turn == fp.target.turn]
        retrievals = own_turn or retrievals
    relevant = [n for n in retrievals if not subject or relevance(subject, n.content) > 0] or retrievals
    named = _searched_for_absence(retrievals, fp.target)
    if named is not None:
        relevant = [named]
    if relevant:
        return (
            relevant[0],
            FaultCategory.KB_CONTENT_GAP,
            None,
            "retrieval for the question found no such content",
        )
    skills = [n for n in seg_nodes if n.type == NodeType.SKILL_LOOKUP]
    if skills:
        return (
            skills[0],
            FaultCategory.SKILL_FILE_STALE,
            skills[0].source,
            "skill used for the question lacks the content",
        )
    outputs = [n for n in seg_nodes if n.type in (NodeType.REASONING, NodeType.AGENT)]
    if outputs:
        return outputs[0], FaultCategory.RETRIEVAL_FAILURE, None, "the agent answered without retrieving"
    return (
        system,
        FaultCategory.SYSTEM_PROMPT_GAP if system else None,
        system.source if system else None,
        "fallback",
    )


def _searched_for_absence(
    retrievals: list[ConversationNode], target: ConversationNode | None
) -> ConversationNode | None:
    """The search an answer that reports finding nothing was about: its absence report names what
    was looked for ("I don't have information on X"), so the search whose query is most about that
    answer, when one is clearly more so than the others (a segment can hold several questions'
    searches)."""
    if target is None or len(retrievals) < 2 or not reports_absence(target.content):
        return None
    scored = sorted(
        ((relevance(_query_text(n.content), target.content), i) for i, n in enumerate(retrievals)),
        reverse=True,
    )
    (best, i), (second, _) = scored[0], scored[1]
    return retrievals[i] if best >= RELEVANCE_MIN and best > second else None


def _recalled(node: ConversationNode, nodes: list[ConversationNode], in_seg: set[str]) -> bool:
    """Whether the agent, in the failing question, names a document this earlier retrieval brought
    in ("The Opening hours page I retrieved earlier covers this."): it answered from it."""
    titles = [d.title for d in node.documents if d.title and len(d.title.split()) >= 2]
    said = [n.content for n in nodes if n.id in in_seg and n.type in (NodeType.REASONING, NodeType.AGENT)]
    return any(
        re.search(r"(?<![\w])" + re.escape(t) + r"(?![\w])", x, re.IGNORECASE) for t in titles for x in said
    )


def _names_argument(node: ConversationNode, call: ConversationNode, value: str) -> bool:
    """Whether a context node that carries a rejected argument value gives it as that argument: it
    names the argument the call sent it in ("member_type", "member type") or the tool. A call whose
    arguments do not hold the value names nothing to check, and any carrier counts."""
    try:
        args = json.loads(call.content or "")
    except ValueError:
        return True
    if not isinstance(args, dict):
        return True
    if any(str(k).lower() == value.lower() for k in args):
        # a rejected argument name: given as a name (quoted, "name:", "name=") or beside the tool
        named = r"[`'\"]" + re.escape(value) + r"[`'\"]|(?<![\w])" + re.escape(value) + r"\s*[:=]"
        return bool(re.search(named, node.text, re.IGNORECASE)) or bool(
            call.name and re.search(r"(?<![\w])" + re.escape(call.name) + r"(?![\w])", node.text)
        )
    keys = [
        str(k)
        for k, v in args.items()
        if isinstance(v, str | int | float) and str(v).lower() == value.lower()
    ]
    if not keys:
        return True
    names = [*keys, *(k.replace("_", " ").replace("-", " ") for k in keys), call.name or ""]
    text = node.text
    return any(n and re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", text, re.IGNORECASE) for n in names)


def _query_text(content: str) -> str:
    """A retrieval's query words: the string values of its JSON arguments, else its content."""
    try:
        data = json.loads(content or "")
    except ValueError:
        return content or ""
    if isinstance(data, dict):
        return " ".join(str(v) for v in data.values() if isinstance(v, str))
    return data if isinstance(data, str) else content


# --- iterative baseline -----------------------------------------------------------------------

_PRIOR = {
    NodeType.KB_RETRIEVAL: 0.5,
    NodeType.SKILL_LOOKUP: 0.5,
    NodeType.TOOL_CALL: 0.5,
    NodeType.SYSTEM_PROMPT: 0.3,
    NodeType.REASONING: 0.2,
    NodeType.AGENT: 0.2,
}


def node_score(node: ConversationNode, fp: FailurePoint, subject: str, in_seg: set[str]) -> tuple[float, str]:
    """One node judged on its own: how likely it is where the wrong content came from."""
    delta = fp.delta
    s = _PRIOR.get(node.type, 0.0)
    why = [node.type.value]
    if delta.got and carries(node, delta.got):
        s += 0.4
        why.append("carries the wrong value")
    if delta.expected and node.type in CONTEXT_NODE_TYPES and carries(node, delta.expected):
        s -= 0.2
        why.append("carries the right value")
    if node.id in in_seg:
        s += 0.1
        why.append("in the failing question")
    if subject:
        s += 0.1 * relevance(subject, node.text)
    if delta.kind == "behaviour" and node.type == NodeType.SYSTEM_PROMPT:
        s += 0.4
        why.append("instructions")
    if delta.kind == "tool_error" and node.type == NodeType.TOOL_CALL and node.name == fp.anchor.name:
        s += 0.3
        why.append("the failing tool")
    return max(s, 0.0), ", ".join(why)


def _iterative(conversation: Conversation, fp: FailurePoint) -> ContextDiagnosis:
    subject = subject_text(conversation, fp)
    nodes = candidates(conversation, fp)
    in_seg = set(fp.segment.node_ids) if fp.segment else set()
    scored = [(node_score(n, fp, subject, in_seg), i, n) for i, n in enumerate(nodes)]
    weights = {n.id: (sc, why) for (sc, why), _, n in scored if sc > 0}
    if not scored:
        return _finish(
            conversation, fp, method="iterative", root=None, weights={}, category=None, path=None, calls=2
        )
    # Ties go to the node closest to the failure: a per-node judge has no chain to prefer the first.
    (_, _), _, root = max(scored, key=lambda t: (round(t[0][0], 6), t[1]))
    category, cpath = _category_of_node(root, fp, subject)
    return _finish(
        conversation,
        fp,
        method="iterative",
        root=root,
        weights=weights,
        category=category,
        path=cpath,
        calls=len(conversation.nodes) + 2,
    )


def _category_of_node(
    root: ConversationNode, fp: FailurePoint, subject: str
) -> tuple[FaultCategory | None, str | None]:
    delta = fp.delta
    if root.type == NodeType.SYSTEM_PROMPT:
        return FaultCategory.SYSTEM_PROMPT_GAP, root.source or SYSTEM_PROMPT_PATH
    if root.type == NodeType.KB_RETRIEVAL:
        if delta.got and carries(root, delta.got):
            rel, path = claim_relevance(root, delta.got, subject)
            return (
                FaultCategory.KB_CONTENT_STALE if rel >= RELEVANCE_MIN else FaultCategory.RETRIEVAL_FAILURE
            ), path or root.source
        return FaultCategory.KB_CONTENT_GAP, None
    if root.type in (NodeType.SKILL_LOOKUP, NodeType.TOOL_CALL):
        return category_for(root, None)
    return FaultCategory.RETRIEVAL_FAILURE, None
