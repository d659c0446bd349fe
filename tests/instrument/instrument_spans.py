"""Reading finished OTel spans back as a tree, for assertions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from causal_middleware.spans import attributes as A


class SpanTree:
    """The spans of one or more traces, indexed by id, with parent/child helpers."""

    def __init__(self, spans: Iterable[ReadableSpan]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start_time or 0, s.context.span_id))
        self.by_id = {s.context.span_id: s for s in self.spans}

    def of_trace(self, trace_id: str | int) -> SpanTree:
        tid = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        return SpanTree(s for s in self.spans if s.context.trace_id == tid)

    @property
    def trace_ids(self) -> set[int]:
        return {s.context.trace_id for s in self.spans}

    def typed(self, span_type: str) -> list[ReadableSpan]:
        return [s for s in self.spans if (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == span_type]

    def one(self, span_type: str) -> ReadableSpan:
        found = self.typed(span_type)
        assert len(found) == 1, f"expected one {span_type} span, got {[s.name for s in found]}"
        return found[0]

    def named(self, name: str, span_type: str | None = None) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans
            if s.name == name
            and (span_type is None or (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == span_type)
        ]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def children(self, span: ReadableSpan, span_type: str | None = None) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans
            if s.parent is not None
            and s.parent.span_id == span.context.span_id
            and (span_type is None or (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == span_type)
        ]

    def hops(self) -> dict[int, ReadableSpan]:
        return {int(s.attributes[A.CAUSAL_HOP_INDEX]): s for s in self.typed("hop")}

    def node_sequence(self) -> list[tuple[str, int | None]]:
        """(node name, hop index) of every node span, in start order."""
        return [(s.name, (s.attributes or {}).get(A.CAUSAL_HOP_INDEX)) for s in self.typed("node")]

    def render(self) -> str:
        """An indented outline (for failure messages)."""
        lines = []

        def depth(s: ReadableSpan) -> int:
            d, cur = 0, s
            while (p := self.parent(cur)) is not None:
                d, cur = d + 1, p
            return d

        for s in self.spans:
            attrs = s.attributes or {}
            lines.append(
                f"{'  ' * depth(s)}{s.name} [{attrs.get(A.CAUSAL_SPAN_TYPE)}] hop={attrs.get(A.CAUSAL_HOP_INDEX)}"
            )
        return "\n".join(lines)


def attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(key)


def doc_ids(span: ReadableSpan) -> list[str]:
    attrs = span.attributes or {}
    out, i = [], 0
    while f"retrieval.documents.{i}.document.id" in attrs:
        out.append(attrs[f"retrieval.documents.{i}.document.id"])
        i += 1
    return out


def doc_scores(span: ReadableSpan) -> list[float | None]:
    attrs = span.attributes or {}
    return [attrs.get(f"retrieval.documents.{i}.document.score") for i in range(len(doc_ids(span)))]


def names(spans: Sequence[ReadableSpan]) -> list[str]:
    return [s.name for s in spans]
