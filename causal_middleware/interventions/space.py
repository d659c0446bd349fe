"""The generic intervention space of a step, derived from what was recorded (no agent adapter).

For a node step, :func:`step_interventions` lists alternative outputs as :class:`StepEdit`s on
the node's own state update (located by :mod:`~causal_middleware.interventions.locate`), most
useful first:

* **retrieved documents** (a document slot): for each document, most suspicious first, replace it
  with the best document the index returns for the same query that the run did not already see,
  and leave it out; demote the top document; re-retrieve the whole list excluding the recorded
  documents; drop all. Suspicion: not returned by the index for the recorded query (planted in
  the trace) first, then keyword stuffing (a document whose words repeat the query's terms),
  then rank;
* **tool outputs**: the tool re-run live (``rerun_tool``; never for a side-effecting tool) when it
  now answers differently;
* **produced text** (a plan, a sub-query, a fact, a tool call's argument): only values the node
  *wrote* (strings copied from its input are left alone; a value written under several keys
  changes in all of them). A short value that states a name or a number is swapped for other
  values of the same kind found in the step's evidence (the documents and tool outputs the run had
  seen by then, or retrieved inside the step); a name is swapped for its alias ("X, also known as
  Y" anywhere in the run) and, unless the question names it, for a near-namesake. Control words
  (a router's ``"search"``) and questions are not swapped whole.

Every candidate names its target (``state_key``) and the evidence it removes or brings in
(``evidence``) in the user's own keys and ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.interventions.edit import StepEdit, render_path, value_at
from causal_middleware.interventions.locate import (
    DocumentSlot,
    StepContents,
    descends_from,
    step_contents,
    text_leaves,
)
from causal_middleware.interventions.values import (
    alias_map,
    entities,
    fact_candidates,
    interleave,
    similarity,
)
from causal_middleware.retrieval.base import Index, hit_document
from causal_middleware.spans.model import Document, NodeStep, RetrievalStep, ToolStep, Trajectory
from causal_middleware.text import WORD

ToolRunner = Callable[[str, dict[str, Any]], str | None]
SHORT_WORDS = 6


@dataclass
class Candidate:
    """One alternative output of a step: the edit, why, and what it touches."""

    edit: StepEdit
    kind: str  # evidence | tool | text
    description: str
    state_key: str
    evidence: list[str] = field(default_factory=list)


def step_interventions(
    trajectory: Trajectory,
    step: NodeStep,
    *,
    index: Index | None = None,
    rerun_tool: ToolRunner | None = None,
    state_key: str | None = None,
    limit: int | None = None,
) -> tuple[list[Candidate], StepContents]:
    """Candidates for ``step`` (see the module docstring) and what was located in its output."""
    contents = step_contents(trajectory, step, state_key=state_key)
    streams: list[Iterator[Candidate]] = []
    for slot in contents.documents[:1] if not contents.ambiguous or state_key else contents.documents:
        streams.append(_document_candidates(contents, slot, index))
    for tool_slot in contents.tool_outputs:
        if rerun_tool is not None and not tool_slot.tool.side_effecting:
            streams.append(_tool_candidates(tool_slot.path, tool_slot.tool, rerun_tool))
    if contents.texts:
        streams.append(_text_candidates(trajectory, contents))
    out: list[Candidate] = []
    seen: set[str] = set()
    for candidate in interleave(streams):
        key = candidate.edit.model_dump_json()
        if key in seen:
            continue
        seen.add(key)
        out.append(candidate)
        if limit is not None and len(out) >= limit:
            break
    return out, contents


# --- documents ---------------------------------------------------------------------------------


def _document_candidates(
    contents: StepContents, slot: DocumentSlot, index: Index | None
) -> Iterator[Candidate]:
    docs = slot.documents
    query = next((r.query for r in contents.retrievals if r.query), "")
    recorded_ids = {d.id for d in docs}
    hits: list[Document] = []
    if index is not None and query:
        try:
            hits = [hit_document(h) for h in index.search(query, max(2 * len(docs), len(docs) + 3))]
        except Exception:  # a user retriever that fails costs the re-retrieval candidates only
            hits = []
    fresh = [d for d in hits if d.id not in recorded_ids]
    returned = {d.id for d in hits}
    order = sorted(range(len(docs)), key=lambda i: (-_suspicion(docs[i], query, returned, bool(hits)), i))
    size = len(value_at(contents.step.output, slot.path)) if slot.kind == "list" else len(docs)
    where = slot.key
    for i in order:
        doc = docs[i]
        why = _why(doc, query, returned, bool(hits))
        if fresh:
            yield _replace(slot, i, size, fresh[0], why)
        if len(docs) > 1 or not fresh:
            yield Candidate(
                edit=_drop(slot, [i], size),
                kind="evidence",
                description=f"document {doc.id!r}{why} left out of {where}",
                state_key=where,
                evidence=[doc.id],
            )
    if len(docs) > 1 and slot.kind == "list":
        items: list[int | Document] = [p for p in range(size) if p != slot.positions[0]]
        items.append(slot.positions[0])
        yield Candidate(
            edit=StepEdit(op="select", path=slot.path, items=items),
            kind="evidence",
            description=f"top document {docs[0].id!r} demoted to the end of {where}",
            state_key=where,
            evidence=[docs[0].id],
        )
    if fresh and slot.kind == "list":
        new = fresh[: len(docs)]
        keep: list[int | Document] = [p for p in range(size) if p not in slot.positions]
        yield Candidate(
            edit=StepEdit(
                op="select", path=slot.path, items=[*new, *keep], id_key=slot.id_key, text_key=slot.text_key
            ),
            kind="evidence",
            description=f"{where} re-retrieved for {query[:80]!r} without the recorded documents "
            f"({', '.join(repr(d.id) for d in new)} instead of {', '.join(repr(d.id) for d in docs)})",
            state_key=where,
            evidence=[d.id for d in docs],
        )
    yield Candidate(
        edit=_drop(slot, list(range(len(docs))), size),
        kind="evidence",
        description=f"every retrieved document left out of {where}",
        state_key=where,
        evidence=[d.id for d in docs],
    )


def _replace(slot: DocumentSlot, i: int, size: int, new: Document, why: str) -> Candidate:
    old = slot.documents[i]
    if slot.kind == "string":
        edit = StepEdit(op="replace_text", path=slot.path, old=old.text, new=new.text)
    else:
        items: list[int | Document] = [new if p == slot.positions[i] else p for p in range(size)]
        edit = StepEdit(op="select", path=slot.path, items=items, id_key=slot.id_key, text_key=slot.text_key)
    return Candidate(
        edit=edit,
        kind="evidence",
        description=f"document {old.id!r}{why} in {slot.key} replaced by {new.id!r}, the next document "
        "the retriever returns for the same query",
        state_key=slot.key,
        evidence=[old.id, new.id],
    )


def _drop(slot: DocumentSlot, indices: list[int], size: int) -> StepEdit:
    if slot.kind == "string":
        # one edit per call: several documents out of a joined string chain replace_text edits
        doc = slot.documents[indices[0]]
        if len(indices) == 1:
            return StepEdit(op="replace_text", path=slot.path, old=doc.text, new="")
        return StepEdit(op="set", path=slot.path, value="")
    gone = {slot.positions[i] for i in indices}
    return StepEdit(op="select", path=slot.path, items=[p for p in range(size) if p not in gone])


def _suspicion(doc: Document, query: str, returned: set[str], searched: bool) -> float:
    """How likely ``doc`` misled the step: planted in the trace (the index would not return it for
    the query) > keyword-stuffed (its words are mostly repeats of the query's terms) > neither."""
    if searched and doc.id not in returned:
        return 2.0
    return _stuffing(doc.text, query)


def _stuffing(text: str, query: str) -> float:
    words = [w.lower() for w in WORD.findall(text or "")]
    wanted = {w.lower() for w in WORD.findall(query or "") if len(w) > 2}
    if len(words) < 4 or not wanted:
        return 0.0
    hits = [w for w in words if w in wanted]
    repeats = len(hits) - len(set(hits))
    return repeats / len(words)


def _why(doc: Document, query: str, returned: set[str], searched: bool) -> str:
    if searched and doc.id not in returned:
        return " (the retriever does not return it for this query)"
    stuffed = _stuffing(doc.text, query)
    if stuffed >= 0.2:
        return f" (keyword-stuffed: {stuffed:.0%} of its words repeat the query's terms)"
    return ""


# --- tools -------------------------------------------------------------------------------------


def _tool_candidates(path: list[Any], tool: ToolStep, rerun_tool: ToolRunner) -> Iterator[Candidate]:
    try:
        fresh = rerun_tool(tool.tool_name, dict(tool.args))
    except Exception:  # a tool that fails when re-run gives no candidate
        return
    if fresh is None or fresh.strip() == (tool.output or "").strip():
        return
    yield Candidate(
        edit=StepEdit(op="set", path=path, value=fresh),
        kind="tool",
        description=f"tool {tool.tool_name!r} re-run live: {fresh[:80]!r} instead of {tool.output[:80]!r}",
        state_key=render_path(path),
        evidence=[tool.tool_name],
    )


# --- produced text -----------------------------------------------------------------------------


def _text_candidates(trajectory: Trajectory, contents: StepContents) -> Iterator[Candidate]:
    """Alternatives for the values the node wrote (not those it copied from its input)."""
    step = contents.step
    question = _question(trajectory)
    evidence = _evidence_before(trajectory, step)
    query = (
        next((r.query for r in contents.retrievals if r.query), "")
        or _hop_query(trajectory, step)
        or question
    )
    question_names = {_bare(n) for n in entities(question)}
    # names and aliases may come from anywhere in the run: a later hop's evidence can say that the
    # name this step used is known to the corpus by another one
    everything = _run_documents(trajectory)
    pool = list(
        dict.fromkeys(
            _bare(n) for n in [*entities(question), *(e for d in everything for e in entities(d.text))]
        )
    )
    aliases = alias_map([question, *(d.text for d in everything)])
    echoed = {v.strip() for _, v in text_leaves(step.input)} if step.input is not None else set()
    # one group per distinct value the node wrote: a value kept under two keys changes in both
    groups: dict[str, list[list[Any]]] = {}
    for leaf in contents.texts:
        value = leaf.value.strip()
        if value == question.strip() or value in echoed:
            continue
        groups.setdefault(leaf.value, []).append(leaf.path)
    per_value: list[Iterator[Candidate]] = []
    for value, paths in groups.items():
        per_value.append(_value_candidates(paths, value, evidence, query, question_names, pool, aliases))
    yield from interleave(per_value)


def _value_candidates(
    paths: list[list[Any]],
    value: str,
    evidence: Sequence[Document],
    query: str,
    question_names: set[str],
    pool: list[str],
    aliases: dict[str, list[str]],
) -> Iterator[Candidate]:
    """Whole-value swaps (values from the evidence) interleaved with name swaps (aliases, then
    near-namesakes), so a small ``k`` tries both kinds."""
    key = render_path(paths[0]) + (f" (and {len(paths) - 1} more)" if len(paths) > 1 else "")
    names = [_bare(n) for n in entities(value)]
    yield from interleave(
        [
            _whole_values(paths, key, value, names, evidence, query),
            _name_swaps(paths, key, value, names, question_names, pool, aliases),
        ]
    )


def _whole_values(
    paths: list[list[Any]], key: str, value: str, names: list[str], evidence: Sequence[Document], query: str
) -> Iterator[Candidate]:
    if len(value.split()) > SHORT_WORDS or not _is_value(value, names):
        return
    found = fact_candidates(list(evidence), query, value)
    numeric = bool(_NUMERIC_VALUE.fullmatch(value.strip()))
    # values of the recorded value's own kind first: a year is replaced by a year
    found.sort(key=lambda c: bool(_NUMERIC_VALUE.fullmatch(c)) != numeric)
    for other in found[:4]:
        if other.strip() and other != value and other not in value and value not in other:
            source = next((d.id for d in evidence if other in d.text), None)
            yield Candidate(
                edit=StepEdit(op="set", path=paths[0], also=paths[1:], value=other),
                kind="text",
                description=f"{key} = {other!r} (found in {source!r}) instead of {value!r}",
                state_key=key,
                evidence=[source] if source else [],
            )


def _name_swaps(
    paths: list[list[Any]],
    key: str,
    value: str,
    names: list[str],
    question_names: set[str],
    pool: list[str],
    aliases: dict[str, list[str]],
) -> Iterator[Candidate]:
    for name in names:
        for alias in aliases.get(name, [])[:2]:
            if alias not in value:
                yield Candidate(
                    edit=StepEdit(op="replace_text", path=paths[0], also=paths[1:], old=name, new=alias),
                    kind="text",
                    description=f"{key} names {name!r} by its alias {alias!r} (from the evidence)",
                    state_key=key,
                )
        if name in question_names:
            continue  # the question's own names are right by definition; only their aliases apply
        ranked = sorted(
            (c for c in pool if c != name and c not in names and similarity(c, name) >= 0.5),
            key=lambda c: (-similarity(c, name), pool.index(c)),
        )
        for other in ranked[:2]:
            yield Candidate(
                edit=StepEdit(op="replace_text", path=paths[0], also=paths[1:], old=name, new=other),
                kind="text",
                description=f"{key} names {other!r} instead of {name!r}",
                state_key=key,
            )


_NUMBER = re.compile(r"\d")
_NUMERIC_VALUE = re.compile(r"[\d][\d,.]*")
_NO_VALUE = frozenset({"unknown", "none", "n/a", "null", "not found", "i don't know"})


def _is_value(value: str, names: list[str]) -> bool:
    """A short string that states a value (mostly a name or a number, or the lack of one), not a
    control word such as a router's ``"search"`` nor a question: only those are swapped whole for
    values from the evidence."""
    if value.strip().lower() in _NO_VALUE:
        return True
    words = value.split()
    if not words or value.rstrip().endswith("?"):
        return False
    covered = sum(len(n.split()) for n in names) + sum(1 for w in words if _NUMBER.search(w))
    return covered * 2 >= len(words)


def _run_documents(trajectory: Trajectory) -> list[Document]:
    docs: list[Document] = []
    for s in trajectory.steps:
        if isinstance(s, RetrievalStep):
            docs.extend(s.documents)
        elif isinstance(s, ToolStep) and s.output:
            docs.append(Document(id=f"tool:{s.tool_name}", text=s.output))
    return docs


def _bare(name: str) -> str:
    """A name without its possessive ("Marie Curie's" -> "Marie Curie")."""
    for suffix in ("'s", "’s"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _question(trajectory: Trajectory) -> str:
    value = trajectory.input
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("question", "query", "input", "messages"):
            item = value.get(key)
            if isinstance(item, str):
                return item
            if isinstance(item, list) and item:
                first = item[0]
                if isinstance(first, dict) and isinstance(first.get("content"), str):
                    return str(first["content"])
                if isinstance(first, str):
                    return first
        strings = [v for v in value.values() if isinstance(v, str)]
        return strings[0] if strings else ""
    return ""


def _hop_query(trajectory: Trajectory, step: NodeStep) -> str:
    if step.hop is None:
        return ""
    try:
        return trajectory.hop(step.hop).sub_query or ""
    except KeyError:
        return ""


def _evidence_before(trajectory: Trajectory, step: NodeStep) -> list[Document]:
    """The documents and tool outputs the run had seen when ``step`` ran: its own hop's first."""
    seen: list[Document] = []
    same_hop: list[Document] = []
    by_id = {s.step_id: s for s in trajectory.steps}
    started = False
    for s in trajectory.steps:
        if s.step_id == step.step_id:
            started = True
            continue
        if started and not descends_from(by_id, s, step.step_id):
            continue  # after the step: only what ran inside it (a subgraph's retrievals) counts
        docs: list[Document] = []
        if isinstance(s, RetrievalStep):
            docs = list(s.documents)
        elif isinstance(s, ToolStep) and s.output:
            docs = [Document(id=f"tool:{s.tool_name}", text=s.output)]
        (same_hop if step.hop is not None and s.hop == step.hop else seen).extend(docs)
    out: list[Document] = []
    ids: set[str] = set()
    for d in [*same_hop, *reversed(seen)]:
        if d.id not in ids:
            ids.add(d.id)
            out.append(d)
    return out
