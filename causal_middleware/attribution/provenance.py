"""Provenance: where content entered a run, and how hops feed each other through bridge entities.

Three passive analyses over :class:`~causal_middleware.attribution.hops.HopView` s, no model and no
re-execution:

* **bridge links** (:func:`bridge_links`): hop j's sub-query terms that are not in the question
  came from an earlier hop's output (the bridge entity); the latest such hop is j's bridge source.
* **token tracing** (:func:`trace_terms`): the backward walk of delta tracing. Start at the latest
  hop whose output carries the tokens (e.g. the wrong answer's); if that hop's sub-query carries
  them too they came in through a bridge, so continue at the earlier hop that produced them;
  otherwise they entered there, with the evidence (``evidence``) or in the reading of it
  (``fact``). No hop carries them: the answer step introduced them (``answer``).
* **hop signals** (:func:`hop_signals`): per hop, empty evidence, how well the best document
  matches the sub-query, whether the bridge entity the hop searched for is found in what it
  retrieved (a corrupted bridge entity leads to evidence about something else), errors.

:func:`reach` and :func:`severity` measure how far a root cause propagated along bridge links.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.hops import HopView
from causal_middleware.attribution.text import carries, coverage, terms

Part = Literal["evidence", "fact", "sub_query", "answer"]

IRRELEVANT_BELOW = 0.5
BRIDGE_SUPPORT = 2 / 3


class BridgeLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hop: int
    source: int | None = Field(default=None, description="earlier hop whose output the sub-query carries")
    terms: list[str] = Field(
        default_factory=list, description="bridge terms (in the sub-query, not the question)"
    )
    novel: list[str] = Field(
        default_factory=list,
        description="sub-query terms found in neither the question nor any earlier output",
    )


class TokenTrace(BaseModel):
    """Result of :func:`trace_terms`."""

    model_config = ConfigDict(extra="forbid")

    tokens: list[str]
    origin_hop: int | None = None
    origin_part: Part | None = None
    path: list[int] = Field(default_factory=list, description="hops walked, from the answer side back")
    via_bridge: bool = False


class HopSignals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hop: int
    empty: bool
    relevance: float = Field(description="best document's coverage of the sub-query's non-bridge terms")
    irrelevant: bool
    bridge_source: int | None = None
    bridge_terms: list[str] = Field(default_factory=list)
    bridge_supported: bool | None = Field(
        default=None, description="some document carries the bridge entity; None when the hop has no bridge"
    )
    carries_wrong: bool = False
    extracted_nothing: bool = Field(default=False, description="a reading step ran and extracted no content")
    error: str | None = None


def bridge_links(views: Sequence[HopView], question: str) -> dict[int, BridgeLink]:
    """Each hop's bridge source and terms (see the module docstring)."""
    q_terms = terms(question)
    links: dict[int, BridgeLink] = {}
    for j, view in enumerate(views):
        own = view.query_terms - q_terms
        source: int | None = None
        bridge: set[str] = set()
        for earlier in reversed(views[:j]):
            shared = own & earlier.output_terms
            if shared:
                source, bridge = earlier.index, shared
                break
        seen: set[str] = set()
        for earlier in views[:j]:
            seen |= earlier.output_terms | earlier.evidence_terms
        novel = sorted(own - seen)
        links[view.index] = BridgeLink(hop=view.index, source=source, terms=sorted(bridge), novel=novel)
    return links


def wrong_terms(answer: str | None, question: str, expected: str | None = None) -> set[str]:
    """Content terms of the answer that the question (and the expected answer, if known) lack."""
    out = terms(answer) - terms(question)
    if expected:
        out -= terms(expected)
    return out


def trace_terms(views: Sequence[HopView], tokens: set[str]) -> TokenTrace:
    """Backward walk: where did ``tokens`` enter the run? (see the module docstring)."""
    trace = TokenTrace(tokens=sorted(tokens))
    if not tokens:
        return trace
    by_index = {v.index: v for v in views}
    order = [v.index for v in views]

    def latest_carrier(before: int | None) -> int | None:
        for idx in reversed(order):
            if before is not None and idx >= before:
                continue
            v = by_index[idx]
            if carries(v.fact_terms | v.evidence_terms, tokens):
                return idx
        return None

    current = latest_carrier(None)
    if current is None:
        trace.origin_part = "answer"
        return trace
    while True:
        trace.path.append(current)
        view = by_index[current]
        if carries(view.query_terms, tokens):
            earlier = latest_carrier(current)
            if earlier is None:
                trace.origin_hop, trace.origin_part = current, "sub_query"
                return trace
            trace.via_bridge = True
            current = earlier
            continue
        trace.origin_hop = current
        trace.origin_part = "evidence" if carries(view.evidence_terms, tokens) else "fact"
        return trace


def relevance(view: HopView, exclude: set[str] | None = None) -> float:
    """Best document's coverage of the hop's sub-query terms, minus ``exclude`` (0.0 with no
    evidence). Excluding the bridge terms measures whether the evidence answers the *kind* of
    question asked, whatever entity it was asked about."""
    wanted = view.query_terms - (exclude or set())
    docs = [terms(d.text) for d in view.documents] + [terms(t) for t in view.tool_outputs]
    docs = [d for d in docs if d]
    if not docs:
        return 0.0
    if not wanted:
        return 1.0
    return max(coverage(wanted, d) for d in docs)


def hop_signals(
    views: Sequence[HopView],
    question: str,
    wrong: set[str] | None = None,
    *,
    irrelevant_below: float = IRRELEVANT_BELOW,
) -> list[HopSignals]:
    """Passive per-hop signals (see the module docstring)."""
    links = bridge_links(views, question)
    by_index = {v.index: v for v in views}
    out: list[HopSignals] = []
    for view in views:
        link = links[view.index]
        rel = relevance(view, set(link.terms))
        supported: bool | None = None
        if link.terms:
            # The passage the entity was read from trivially mentions it: only other passages count.
            bridge = set(link.terms)
            seen = {d.id for d in by_index[link.source].documents} if link.source in by_index else set()
            docs = [terms(d.text) for d in view.documents if d.id not in seen]
            docs += [terms(t) for t in view.tool_outputs]
            supported = any(carries(d, bridge, threshold=BRIDGE_SUPPORT) for d in docs)
        out.append(
            HopSignals(
                hop=view.index,
                empty=view.empty,
                relevance=round(rel, 4),
                irrelevant=view.empty or rel < irrelevant_below,
                bridge_source=link.source,
                bridge_terms=link.terms,
                bridge_supported=supported,
                carries_wrong=bool(wrong) and carries(view.fact_terms | view.evidence_terms, wrong or set()),
                extracted_nothing=view.has_reader and not view.empty and not view.fact_terms,
                error=view.error,
            )
        )
    return out


def reach(views: Sequence[HopView], question: str, root: int) -> list[int]:
    """Hops that depend on hop ``root`` through bridge links (``root`` included), in order."""
    links = bridge_links(views, question)
    reached = [root]
    for view in views:
        if view.index <= root:
            continue
        source = links[view.index].source
        if source is not None and source in reached:
            reached.append(view.index)
    return reached


def severity(views: Sequence[HopView], question: str, root: int | None) -> float | None:
    """Share of the run's hops the root cause at hop ``root`` reached; None when the root is
    outside every hop (an answer-stage root taints only the answer)."""
    if root is None or not views or root not in {v.index for v in views}:
        return None
    return round(len(reach(views, question, root)) / len(views), 4)


def impact(views: Sequence[HopView], question: str, root: int | None) -> tuple[float | None, bool]:
    """``(severity, propagation)`` of a root cause at hop ``root``: propagation means some later
    hop depended on it through a bridge."""
    sev = severity(views, question, root)
    if root is None or sev is None:
        return sev, False
    return sev, len(reach(views, question, root)) > 1
