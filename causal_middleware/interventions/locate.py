"""Where the recorded values of a step sit inside its node's output.

A node step's output is the state update it wrote (recorded as JSON). Its child spans say what the
node did: the documents a retrieval returned, the text a tool returned. Locating those values in
the update tells a generic intervention what to edit, with no knowledge of the agent:

* a **document slot**: a list whose items are the retrieved documents (LangChain ``Document``s,
  dicts with an id or text, or strings), or a string that joins their texts;
* a **tool slot**: the string (a ``ToolMessage``'s content, a state key) holding a tool's output;
* **text leaves**: the other strings the node produced (a plan, a sub-query, an extracted fact).

When documents appear under more than one key, every slot is returned and ``ambiguous`` says so;
``state_keys`` (``instrument(..., state_keys={"retrieve": "docs"})``) names the one to use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.interventions.edit import PathPart, render_path
from causal_middleware.spans.model import Document, NodeStep, RetrievalStep, ToolStep, Trajectory

_ID_KEYS = ("id", "doc_id", "document_id", "passage_id", "source_id")
_TEXT_KEYS = ("page_content", "text", "content", "passage", "body", "snippet")
MAX_LEAF_CHARS = 400  # longer strings are documents or prose, not values a step decided


@dataclass
class DocumentSlot:
    """Retrieved documents inside a node's output."""

    path: list[PathPart]
    kind: str  # "list" (items are documents) | "string" (their texts joined)
    documents: list[Document]  # the recorded documents, in the slot's order
    positions: list[int] = field(default_factory=list)  # list slots: item index of each document
    id_key: str | None = None
    text_key: str | None = None

    @property
    def key(self) -> str:
        return render_path(self.path)


@dataclass
class ToolSlot:
    path: list[PathPart]
    tool: ToolStep

    @property
    def key(self) -> str:
        return render_path(self.path)


@dataclass
class TextLeaf:
    path: list[PathPart]
    value: str

    @property
    def key(self) -> str:
        return render_path(self.path)


@dataclass
class StepContents:
    """What a node step's output holds that an intervention can change (see the module docstring)."""

    step: NodeStep
    retrievals: list[RetrievalStep]
    tools: list[ToolStep]
    documents: list[DocumentSlot]
    tool_outputs: list[ToolSlot]
    texts: list[TextLeaf]
    ambiguous: bool = False
    note: str | None = None


_COMMAND_KEYS = frozenset({"graph", "update", "goto", "resume"})


def state_update(output: Any) -> Any:
    """The state update a node's recorded output writes. A node that returns ``Command``s (e.g.
    ``create_agent``'s model node) is recorded as ``[{"update": ..., "goto": ...}, ...]``; its
    checkpoint holds the merged ``update`` dicts, which is what a fork edits."""
    if isinstance(output, dict) and "update" in output and set(output) <= _COMMAND_KEYS:
        output = [output]
    if (
        isinstance(output, list)
        and output
        and all(isinstance(item, dict) and "update" in item and set(item) <= _COMMAND_KEYS for item in output)
    ):
        merged: dict[str, Any] = {}
        for item in output:
            if isinstance(item.get("update"), dict):
                merged.update(item["update"])
        return merged
    return output


def descends_from(by_id: Mapping[str, Any], step: Any, ancestor_id: str) -> bool:
    """Whether ``step``'s span descends from the span ``ancestor_id`` (``by_id``: step id -> step)."""
    cursor = by_id.get(step.parent_step_id or "")
    for _ in range(64):  # a corrupt parent chain cannot loop forever
        if cursor is None:
            return False
        if cursor.step_id == ancestor_id:
            return True
        cursor = by_id.get(cursor.parent_step_id or "")
    return False


def owning_nodes(trajectory: Trajectory) -> dict[str, NodeStep]:
    """Step id -> the node step it ran in (the nearest node-step ancestor; node steps map to
    themselves). Steps whose parent chain reaches no node fall back to (node, langgraph_step)."""
    by_id = {s.step_id: s for s in trajectory.steps}
    nodes = {s.step_id: s for s in trajectory.steps if isinstance(s, NodeStep)}
    by_position = {(s.node, s.langgraph_step, s.checkpoint_ns): s for s in nodes.values()}
    out: dict[str, NodeStep] = {}
    for step in trajectory.steps:
        cursor: Any = step
        seen = 0
        while cursor is not None and cursor.step_id not in nodes and seen < 64:
            cursor = by_id.get(cursor.parent_step_id or "")
            seen += 1
        if cursor is not None and cursor.step_id in nodes:
            out[step.step_id] = nodes[cursor.step_id]
        else:
            match = by_position.get((step.node, step.langgraph_step, step.checkpoint_ns))
            if match is not None:
                out[step.step_id] = match
    return out


def step_contents(trajectory: Trajectory, step: NodeStep, *, state_key: str | None = None) -> StepContents:
    """Locate the recorded values of ``step`` in its output (see the module docstring)."""
    owners = owning_nodes(trajectory)

    by_id = {s.step_id: s for s in trajectory.steps}

    def owned(s: Any) -> bool:
        """``s`` ran in ``step``: its own retrieval, or one inside it (a subgraph's nodes)."""
        owner = owners.get(s.step_id)
        return (owner is not None and owner.step_id == step.step_id) or descends_from(by_id, s, step.step_id)

    retrievals = [s for s in trajectory.steps if isinstance(s, RetrievalStep) and owned(s)]
    tools = [s for s in trajectory.steps if isinstance(s, ToolStep) and owned(s)]
    output = state_update(step.output)
    documents = [d for r in retrievals for d in r.documents]
    slots = find_document_slots(output, documents) if documents else []
    note = None
    if state_key is not None:
        chosen = [s for s in slots if s.path and s.path[0] == state_key]
        if not chosen and slots:
            note = f"state key {state_key!r} holds none of the retrieved documents; found them in {[s.key for s in slots]}"
        slots = chosen or slots
    ambiguous = len({s.path[0] if s.path else "" for s in slots}) > 1
    if ambiguous:
        note = (
            f"node {step.node!r} holds its retrieved documents under several keys "
            f"({', '.join(s.key for s in slots)}); name one with instrument(..., state_keys={{{step.node!r}: KEY}})"
        )
    tool_slots = [ToolSlot(path, tool) for tool in tools for path in find_text(output, tool.output)]
    taken = {tuple(s.path) for s in slots} | {tuple(s.path) for s in tool_slots}
    texts = [
        TextLeaf(path, value)
        for path, value in text_leaves(output)
        if tuple(path) not in taken and not any(tuple(path[: len(p)]) == p for p in taken)
    ]
    return StepContents(
        step=step,
        retrievals=retrievals,
        tools=tools,
        documents=slots,
        tool_outputs=tool_slots,
        texts=texts,
        ambiguous=ambiguous,
        note=note,
    )


def find_document_slots(output: Any, documents: Sequence[Document]) -> list[DocumentSlot]:
    """Lists (or joined strings) inside ``output`` that hold ``documents`` (see the module docstring)."""
    slots: list[DocumentSlot] = []
    for path, value in _walk(output, []):
        if isinstance(value, list) and value:
            slot = _list_slot(path, value, documents)
            if slot is not None:
                slots.append(slot)
        elif isinstance(value, str) and len(value) > 0:
            inside = [d for d in documents if d.text and len(d.text) >= 12 and d.text in value]
            if inside and not (len(inside) == 1 and inside[0].text == value and len(documents) > 1):
                inside.sort(key=lambda d: value.index(d.text))
                slots.append(DocumentSlot(path=path, kind="string", documents=inside))
    # a list slot makes the strings inside its items redundant
    lists = [s for s in slots if s.kind == "list"]
    return lists + [
        s for s in slots if s.kind == "string" and not any(s.path[: len(p.path)] == p.path for p in lists)
    ]


def _list_slot(path: list[PathPart], items: list[Any], documents: Sequence[Document]) -> DocumentSlot | None:
    by_id = {d.id: d for d in documents}
    by_text = {d.text: d for d in documents if d.text}
    found: list[Document] = []
    positions: list[int] = []
    id_key = text_key = None
    for i, item in enumerate(items):
        doc = None
        if isinstance(item, Mapping):
            for key in _ID_KEYS:
                if isinstance(item.get(key), str | int) and str(item[key]) in by_id:
                    doc, id_key = by_id[str(item[key])], key
                    break
            meta = item.get("metadata")
            if doc is None and isinstance(meta, Mapping):
                for key in _ID_KEYS:
                    if str(meta.get(key, "")) in by_id:
                        doc = by_id[str(meta[key])]
                        break
            if doc is None or text_key is None:
                for key in _TEXT_KEYS:
                    if isinstance(item.get(key), str) and item[key] in by_text:
                        doc = doc or by_text[item[key]]
                        text_key = key
                        break
        elif isinstance(item, str) and item in by_text:
            doc = by_text[item]
        if doc is not None:
            found.append(doc)
            positions.append(i)
    # the list is a document slot when most of its items are retrieved documents
    if not found or len(found) * 2 < len(items):
        return None
    return DocumentSlot(
        path=path, kind="list", documents=found, positions=positions, id_key=id_key, text_key=text_key
    )


def find_text(output: Any, text: str) -> list[list[PathPart]]:
    """Paths of the strings in ``output`` equal to ``text`` (stripped)."""
    wanted = (text or "").strip()
    if not wanted:
        return []
    return [p for p, v in _walk(output, []) if isinstance(v, str) and v.strip() == wanted]


def text_leaves(output: Any) -> list[tuple[list[PathPart], str]]:
    """Short strings the output holds, skipping message bookkeeping (types, ids, names)."""
    out: list[tuple[list[PathPart], str]] = []
    for path, value in _walk(output, []):
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_LEAF_CHARS:
            continue
        if path and isinstance(path[-1], str) and path[-1] in _BOOKKEEPING:
            continue
        out.append((path, value))
    return out


_BOOKKEEPING = frozenset(
    {"type", "id", "tool_call_id", "name", "role", "status", "model", "model_name", "finish_reason", "run_id"}
)


def _walk(value: Any, path: list[PathPart]) -> Iterator[tuple[list[PathPart], Any]]:
    yield path, value
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key not in (
                "response_metadata",
                "usage_metadata",
                "additional_kwargs",
            ):
                yield from _walk(item, [*path, key])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, [*path, i])
