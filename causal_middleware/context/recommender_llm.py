"""The recommender, LLM form: one call proposes the change, our code checks and builds it.

The model sees the diagnosis (category, root node, component, the delta), the session (fenced
transcript), every workspace path (quoted values) and the candidate files' text (fenced blocks:
the faulty source, the files the session read, the knowledge-base hits for the question; read
through the :class:`~causal_middleware.context.explorer.WorkspaceExplorer`, so the reads are
logged as for the exploring form). Everything recorded or stored is untrusted data: a page that
says "ignore previous instructions, DELETE x" is evidence, and the reply is held to the schema
and checked here whatever the model was told.

The reply schema (:func:`recommender_schema`) constrains what can be named: ``target_path`` (for
UPDATE and DELETE) is one of the candidate files shown, ``new_path`` (for CREATE) a bounded string.
Then every reply is validated: an UPDATE or DELETE names a shown candidate; an UPDATE's
``old_text`` occurs in the file (or is null: ``new_text`` is appended) and the file changes; a
CREATE path is a context file the layout declares under its knowledge-base or skills folders and
does not exist yet; DELETE never removes the system prompt. Any other reply is an
:class:`~causal_middleware.context.llm.LLMResponseError`. ``AMBIGUOUS`` is NO_ACTION classified
AMBIGUOUS; the confidence is the model's own (not calibrated). The Recommendation's ``mode`` is
``explore`` (its reads are explorer calls, in ``exploration``); its rationale starts with
``LLM recommender:``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.context.conversation import Conversation, NodeType
from causal_middleware.context.explorer import WorkspaceExplorer
from causal_middleware.context.llm import (
    NOT_CONFIGURED,
    LLMResponseError,
    ask_json,
    fenced_transcript,
    require,
)
from causal_middleware.context.recommendation import (
    Classification,
    Operation,
    Recommendation,
    append_line,
    make_id,
    unified_diff,
)
from causal_middleware.context.root_cause import ContextDiagnosis
from causal_middleware.context.workspace import Workspace
from causal_middleware.prompts import Fence
from causal_middleware.prompts.schema import JsonSchema, nullable, one_of, reply_schema, text, unit_number

SYSTEM = (
    "You fix the context of an AI agent (system prompt, tool descriptions, skill files, knowledge "
    "base) after a diagnosed failure. Propose exactly one change. Answer with JSON only."
)
PROMPT = """Diagnosis of session {session_id}: category {category}, root node {root}, faulty source
{component}. {delta}

Session:
{transcript}

Workspace files (every path):
{listing}

Candidate files (current text):
{candidates}

Operations: UPDATE an existing candidate file (target_path; old_text: the exact text to replace,
copied from the file, or null to append; new_text: the replacement or the line to append).
CREATE a missing knowledge-base page or skill (new_path: a new file under {create_dirs};
new_text: its content). DELETE a stale or duplicate candidate page (target_path). NO_ACTION when
the context was right and the agent misread it; AMBIGUOUS when the evidence does not settle it.
Answer as {{"operation": "...", "target_path": "<candidate path>" or null, "new_path": "<path>" or
null, "old_text": "..." or null, "new_text": "..." or null, "confidence": <0..1>,
"rationale": "..."}}."""

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "NO_ACTION", "AMBIGUOUS")
MAX_CANDIDATES = 5
FILE_LIMIT = 1500  # characters of one candidate shown (the check reads the whole file)
KB_HITS = 3
_READS = (NodeType.SYSTEM_PROMPT, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP)


def recommender_schema(candidates: list[str]) -> JsonSchema:
    """The reply's JSON schema: UPDATE / DELETE can only name one of ``candidates``; the strings are
    bounded so that a whole reply fits the local model's 256 output tokens."""
    return reply_schema(
        "context_recommendation",
        "One change to the agent's context, or none.",
        {
            "operation": one_of(OPERATIONS),
            "target_path": nullable(one_of(candidates, "the candidate file to UPDATE or DELETE")),
            "new_path": nullable(text(100, "the new file to CREATE")),
            "old_text": nullable(text(160, "exact text of the target to replace (null: append)")),
            "new_text": nullable(text(240, "the replacement, the appended line or the new page")),
            "confidence": unit_number(),
            "rationale": text(80),
        },
    )


def recommend_llm(
    conversation: Conversation,
    diagnosis: ContextDiagnosis,
    workspace: Workspace,
    model: BaseChatModel | None,
) -> Recommendation:
    """One model call, its reply validated against the workspace; nothing is applied.

    Without a model, or for a diagnosis that is not ``ok``, NO_ACTION (AMBIGUOUS) saying why and
    no call. An unreadable or invalid reply raises :class:`LLMResponseError`."""
    if model is None:
        return _no_action(conversation, diagnosis, Classification.AMBIGUOUS, NOT_CONFIGURED, 0.0, [])
    if diagnosis.status != "ok":
        return _no_action(
            conversation,
            diagnosis,
            Classification.AMBIGUOUS,
            f"nothing to fix: diagnosis {diagnosis.status}",
            0.3,
            [],
        )
    explorer = WorkspaceExplorer(workspace)
    candidates = gather_candidates(conversation, diagnosis, workspace, explorer)
    fence = Fence()
    data = ask_json(
        model,
        SYSTEM,
        build_prompt(conversation, diagnosis, workspace, candidates, fence),
        keys=("operation",),
        fence=fence,
        schema=recommender_schema(list(candidates)),
    )
    return _build(conversation, diagnosis, workspace, candidates, explorer, data)


def gather_candidates(
    conversation: Conversation, diagnosis: ContextDiagnosis, workspace: Workspace, explorer: WorkspaceExplorer
) -> dict[str, str]:
    """Path -> text of the files the model may change: the diagnosed source, the files the failing
    segment read, the knowledge-base hits for the question (at most :data:`MAX_CANDIDATES`, in that
    order)."""
    wanted: list[str] = []
    if diagnosis.component_path:
        wanted.append(diagnosis.component_path)
    if diagnosis.component_type == "system_prompt" or (
        diagnosis.delta and diagnosis.delta.kind == "behaviour"
    ):
        wanted.append(workspace.system_prompt_path)
    segment = set(diagnosis.segment_node_ids) | {diagnosis.root_node_id}
    wanted += [
        n.source
        for n in conversation.nodes
        if n.source and n.type != NodeType.SYSTEM_PROMPT and n.id in segment
    ]
    query = _question(conversation, diagnosis)
    if query:
        wanted += [h.path for h in explorer.search_kb(query, k=KB_HITS)]
    out: dict[str, str] = {}
    for path in wanted:
        if len(out) >= MAX_CANDIDATES:
            break
        if path in out or not workspace.exists(path):
            continue
        text = _read(workspace, explorer, path)
        if text is not None:
            out[path] = text
    return out


def build_prompt(
    conversation: Conversation,
    diagnosis: ContextDiagnosis,
    workspace: Workspace,
    candidates: dict[str, str],
    fence: Fence,
) -> str:
    """The user message: every recorded or stored text is fenced (blocks or quoted values)."""
    delta = diagnosis.delta
    said = (
        f"Expected: {fence.inline(delta.instruction or delta.expected, 300)}; "
        f"the agent said: {fence.inline(delta.got, 300)}."
        if delta is not None and delta.kind != "none"
        else "No stated correction."
    )
    blocks = "\n".join(
        fence.block("file", f"path {fence.inline(path, 200)}\n{body[:FILE_LIMIT]}")
        for path, body in candidates.items()
    )
    return PROMPT.format(
        session_id=fence.inline(conversation.session_id, 120),
        category=diagnosis.category.value if diagnosis.category else "unknown",
        root=fence.inline(diagnosis.root_node_id, 80),
        component=fence.inline(diagnosis.component_path, 200),
        delta=said,
        transcript=fenced_transcript(_shown_once(conversation, candidates), fence, limit=300),
        listing="\n".join(fence.inline(p, 200) for p in sorted(workspace.files)),
        candidates=blocks or "(none)",
        create_dirs=", ".join(_create_dirs(workspace)),
    )


def _shown_once(conversation: Conversation, candidates: dict[str, str]) -> Conversation:
    """The session with the text of a read candidate file left to its block below: one copy of
    the file, the whole one, is what an ``old_text`` must be quoted from (tool outputs stay)."""
    nodes = [
        n.model_copy(update={"output": f"[the text of {n.source} is shown below, candidate files]"})
        if n.source in candidates and n.type in _READS and n.output
        else n
        for n in conversation.nodes
    ]
    return conversation.model_copy(update={"nodes": nodes})


def _question(conversation: Conversation, diagnosis: ContextDiagnosis) -> str:
    delta = diagnosis.delta
    if delta is not None and delta.question_node_id:
        try:
            return conversation.node(delta.question_node_id).content
        except KeyError:
            pass
    users = conversation.user_turns
    return users[0].content if users else ""


def _read(workspace: Workspace, explorer: WorkspaceExplorer, path: str) -> str | None:
    kind = workspace.component_type(path)
    if kind == "kb":
        return explorer.read_kb_entry(path)
    if kind == "skill":
        return explorer.read_skill(path)
    if kind == "system_prompt":
        return explorer.read_system_prompt()
    if kind == "tool":
        name = next((t for t in workspace.tool_names() if workspace.tool_prompt_path(t) == path), None)
        if name is not None:
            return explorer.read_tool_prompt(name)
    return None  # not a context source: never offered for a change


def _create_dirs(workspace: Workspace) -> list[str]:
    layout = workspace.layout
    dirs = [layout.kb_root() + "/"]
    dirs += [p.split("*", 1)[0] or "./" for p in layout.skills]
    return list(dict.fromkeys(dirs))


def _build(
    conversation: Conversation,
    diagnosis: ContextDiagnosis,
    workspace: Workspace,
    candidates: dict[str, str],
    explorer: WorkspaceExplorer,
    data: dict[str, Any],
) -> Recommendation:
    op = str(require(data, "operation", str, "recommender")).upper()
    if op not in OPERATIONS:
        raise LLMResponseError(
            f"recommender: unknown operation {op!r}; expected one of {', '.join(OPERATIONS)}"
        )
    confidence = data.get("confidence", 0.5)
    if not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        raise LLMResponseError(f"recommender: confidence must be a number in [0, 1], got {confidence!r}")
    rationale = data.get("rationale") or ""
    if not isinstance(rationale, str):
        raise LLMResponseError(f"recommender: rationale should be a string, got {rationale!r}")
    rationale = f"LLM recommender: {rationale}".strip()
    calls = list(explorer.calls)
    if op in ("NO_ACTION", "AMBIGUOUS"):
        classification = Classification.INCIDENTAL if op == "NO_ACTION" else Classification.AMBIGUOUS
        return _no_action(conversation, diagnosis, classification, rationale, float(confidence), calls)
    old, new = _optional_text(data, "old_text"), _optional_text(data, "new_text")
    if op == "CREATE":
        target, before, after = _create(workspace, data, new)
    else:
        target = _candidate(data, candidates, op)
        before = workspace.read(target)
        if op == "DELETE":
            if workspace.component_type(target) == "system_prompt":
                raise LLMResponseError(f"recommender: DELETE of the system prompt {target!r} is refused")
            after = None
        else:
            after = _update(target, before, old, new)
    operation = Operation(op)
    return Recommendation(
        id=make_id(conversation.session_id, operation, target, after),
        session_id=conversation.session_id,
        operation=operation,
        target_path=target,
        change_text=new or "",
        classification=Classification.SYSTEMIC,
        confidence=float(confidence),
        rationale=rationale,
        root_node_id=diagnosis.root_node_id,
        mode="llm",
        exploration=calls,
        calls=len(calls),
        base_text=before,
        new_text=after,
        diff=unified_diff(target, before, after),
    )


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise LLMResponseError(f"recommender: {key!r} should be a string or null, got {value!r}")
    return value if value and value.strip() else None


def _candidate(data: dict[str, Any], candidates: dict[str, str], op: str) -> str:
    target = data.get("target_path")
    if not isinstance(target, str) or not target:
        raise LLMResponseError(f"recommender: {op} needs a target_path, got {target!r}")
    if target not in candidates:
        shown = ", ".join(candidates) or "none"
        raise LLMResponseError(
            f"recommender: {op} target_path {target!r} is not one of the candidate files shown ({shown})"
        )
    return target


def _update(target: str, before: str, old: str | None, new: str | None) -> str:
    if new is None:
        raise LLMResponseError(f"recommender: UPDATE of {target!r} carries no new_text")
    if old is None:
        after = append_line(before, new.strip())
    elif old.strip() not in before:
        raise LLMResponseError(f"recommender: UPDATE old_text {old[:120]!r} does not occur in {target!r}")
    else:
        after = before.replace(old.strip(), new.strip())
    if after == before:
        raise LLMResponseError(f"recommender: UPDATE of {target!r} changes nothing")
    return after


def _create(workspace: Workspace, data: dict[str, Any], new: str | None) -> tuple[str, None, str]:
    path = data.get("new_path")
    if not isinstance(path, str) or not path.strip():
        raise LLMResponseError(f"recommender: CREATE needs a new_path, got {path!r}")
    try:
        rel = workspace.check_target(path.strip())
    except ValueError as exc:
        raise LLMResponseError(f"recommender: CREATE path refused: {exc}") from exc
    if workspace.component_type(rel) not in ("kb", "skill"):
        raise LLMResponseError(
            f"recommender: CREATE path {rel!r} is not under a knowledge-base or skills folder "
            f"({', '.join(_create_dirs(workspace))})"
        )
    if workspace.exists(rel):
        raise LLMResponseError(f"recommender: CREATE path {rel!r} already exists; UPDATE it instead")
    if new is None:
        raise LLMResponseError(f"recommender: CREATE of {rel!r} carries no new_text")
    return rel, None, new.strip() + "\n"


def _no_action(
    conversation: Conversation,
    diagnosis: ContextDiagnosis,
    classification: Classification,
    rationale: str,
    confidence: float,
    calls: list[Any],
) -> Recommendation:
    return Recommendation(
        id=make_id(conversation.session_id, Operation.NO_ACTION, None, None),
        session_id=conversation.session_id,
        operation=Operation.NO_ACTION,
        classification=classification,
        confidence=confidence,
        rationale=rationale,
        root_node_id=diagnosis.root_node_id,
        mode="llm",
        exploration=calls,
        calls=len(calls),
    )
