"""Evidence audit: is the evidence a hop recorded what the retriever returns for the hop's own query?

For each retrieval hop the recorded sub-query is searched again in the context's index (top k,
k = the number of documents the hop recorded, else the repair k). A hop is **inconsistent** when a
recorded document is no longer returned (``missing``), a recorded document's text differs from
the index's text for the same id (``changed``; a recorded text that is a prefix of the index's
text counts as the same, since span content may be truncated), or the hop recorded nothing while
the index returns passages. Inconsistent evidence entered the run from outside the retriever's
own behaviour: a stale cache, a corpus update, a poisoned tool response, or an injected fault.

The audit costs one index search per hop and no re-execution. It is only meaningful when the
index is the one the agent retrieved from; when *every* hop of a multi-hop run is inconsistent
the index is taken not to match the agent's retriever and the audit is reported inconclusive.
Persistent corpus corruption (the index itself changed) is, by construction, invisible to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.hops import HopView
from causal_middleware.retrieval.base import Index


class HopAudit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hop: int
    checked: bool = True
    consistent: bool = True
    missing: list[str] = Field(default_factory=list, description="recorded ids the index no longer returns")
    changed: list[str] = Field(default_factory=list, description="recorded ids whose text differs")
    unrecorded: list[str] = Field(
        default_factory=list, description="ids the index returns that were not recorded"
    )
    note: str = ""


class EvidenceAudit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hops: dict[int, HopAudit] = Field(default_factory=dict)
    conclusive: bool = True
    searches: int = 0

    @property
    def inconsistent(self) -> list[int]:
        if not self.conclusive:
            return []
        return sorted(h for h, a in self.hops.items() if a.checked and not a.consistent)


def _same_text(recorded: str, current: str) -> bool:
    r, c = " ".join(recorded.split()), " ".join(current.split())
    if not r:
        return True
    if r.endswith("…") or r.endswith("..."):
        r = r.rstrip(".…").rstrip()
    return c == r or c.startswith(r)


def audit_evidence(views: Sequence[HopView], index: Index, *, default_k: int = 5) -> EvidenceAudit:
    """Audit every retrieval hop of ``views`` against ``index`` (see the module docstring)."""
    audit = EvidenceAudit()
    for view in views:
        if view.kind != "retrieval" or not view.sub_query.strip():
            audit.hops[view.index] = HopAudit(
                hop=view.index, checked=False, note="no retrieval query to re-run"
            )
            continue
        k = len(view.documents) or default_k
        hits = index.search(view.sub_query, k)
        audit.searches += 1
        current = {h.passage.id: h.passage.text for h in hits}
        recorded = {d.id: d.text for d in view.documents}
        missing = [i for i in recorded if i not in current]
        changed = [i for i in recorded if i in current and not _same_text(recorded[i], current[i])]
        unrecorded = [i for i in current if i not in recorded]
        consistent = not missing and not changed and not (not recorded and current)
        note = ""
        if not recorded and current:
            note = f"the hop recorded no evidence but the index returns {len(current)} passages"
        elif missing or changed:
            note = f"{len(missing)} recorded passages not returned, {len(changed)} with different text"
        audit.hops[view.index] = HopAudit(
            hop=view.index,
            consistent=consistent,
            missing=missing,
            changed=changed,
            unrecorded=unrecorded,
            note=note,
        )
    checked = [a for a in audit.hops.values() if a.checked]
    if len(checked) >= 2 and all(not a.consistent for a in checked):
        audit.conclusive = False
    return audit
