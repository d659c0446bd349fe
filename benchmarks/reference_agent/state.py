"""The reference agent's state: small channels, each written by one node, easy to replace.

==============  ==========  =====================================================================
channel         written by  value
==============  ==========  =====================================================================
``question``    input       the question text
``plan``        input       optional: an upstream planner's sub-questions (``#N``: search N's fact)
``decision``    decide      ``"search"`` or ``"answer"``
``sub_query``   decide      the search to run next (None when answering)
``queries``     decide      every sub-query issued (``operator.add``: one appended per search)
``stop_reason`` decide      ``"answered"`` (the model chose to answer) or ``"budget"``
``evidence``    retrieve    this hop's documents, ``[{"id", "title", "text", "score", "date"?}]``
``fact``        read        the fact extracted from this hop's evidence (None: not found)
``hops``        read        hop records, one appended per search (``operator.add``)
``answer``      answer      the final answer
==============  ==========  =====================================================================

A hop record (:class:`HopRecord`) is ``{"index", "sub_query", "documents", "fact", "found",
"notes", "raw"}``; the later ``decide`` prompts list the hop records, so the record, not the
``fact`` channel, is what the agent remembers. To intervene on a step, fork at the checkpoint
before the node and ``update_state(config, new_output, as_node=node)`` with an output of the
same shape; the ``*_update`` helpers below build them (and :class:`ReferenceAgentAdapter` wraps
them as ``Intervention`` records for fault injection and repair).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired, TypedDict


class EvidenceDocument(TypedDict, total=False):
    id: str
    title: str
    text: str
    score: float | None
    date: str


class HopRecord(TypedDict):
    index: int
    sub_query: str
    documents: list[EvidenceDocument]
    fact: str | None
    found: bool
    notes: list[str]
    raw: str


class AgentState(TypedDict, total=False):
    question: str
    plan: list[str]
    decision: Literal["search", "answer"]
    sub_query: str | None
    queries: Annotated[list[str], operator.add]
    stop_reason: Literal["answered", "budget"] | None
    evidence: list[EvidenceDocument]
    fact: str | None
    hops: Annotated[list[HopRecord], operator.add]
    answer: str | None


class AgentInput(TypedDict):
    question: str
    plan: NotRequired[list[str]]


def document_to_dict(document: Any) -> EvidenceDocument:
    """A LangChain ``Document`` as the plain dict kept in state (checkpoint- and JSON-friendly)."""
    metadata = dict(getattr(document, "metadata", None) or {})
    doc_id = metadata.get("id") or getattr(document, "id", None) or ""
    out: EvidenceDocument = {
        "id": str(doc_id),
        "title": str(metadata.get("title") or ""),
        "text": str(getattr(document, "page_content", "")),
        "score": float(metadata["score"]) if metadata.get("score") is not None else None,
    }
    if metadata.get("date"):
        out["date"] = str(metadata["date"])
    return out


# --- node outputs, for interventions ----------------------------------------------------------
def evidence_update(documents: list[EvidenceDocument]) -> dict[str, Any]:
    """``retrieve``'s output with these documents (``[]``: an empty retrieval)."""
    return {"evidence": list(documents)}


def subquery_update(sub_query: str) -> dict[str, Any]:
    """``decide``'s output issuing ``sub_query`` (query drift, a repaired query)."""
    if not sub_query or not sub_query.strip():
        raise ValueError("sub_query must be a non-empty string")
    return {"decision": "search", "sub_query": sub_query, "queries": [sub_query]}


def answer_now_update() -> dict[str, Any]:
    """``decide``'s output choosing to answer now (early termination)."""
    return {"decision": "answer", "sub_query": None, "stop_reason": "answered"}


def fact_update(
    index: int,
    sub_query: str,
    documents: list[EvidenceDocument],
    fact: str | None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """``read``'s output reporting ``fact`` (None: not found) for hop ``index``."""
    record: HopRecord = {
        "index": index,
        "sub_query": sub_query,
        "documents": list(documents),
        "fact": fact,
        "found": fact is not None,
        "notes": list(notes or []),
        "raw": f"FACT: {fact if fact is not None else 'NONE'}",
    }
    return {"fact": fact, "hops": [record]}
