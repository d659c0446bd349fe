"""A plain, serialisable span: what the store keeps and what the trajectory builder reads.

It is independent of the OTel SDK's ``ReadableSpan`` so that spans imported from OTLP/JSON files
or other tools' traces flow through the same code as spans our instrumentation just produced.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class SpanEvent(BaseModel):
    name: str
    time_ns: int
    attributes: dict[str, Any] = Field(default_factory=dict)


class SpanLink(BaseModel):
    trace_id: str
    span_id: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class SpanRecord(BaseModel):
    trace_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    span_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    parent_span_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    name: str
    kind: Literal["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"] = "INTERNAL"
    start_time_ns: int
    end_time_ns: int | None = None
    status_code: Literal["UNSET", "OK", "ERROR"] = "UNSET"
    status_message: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[SpanEvent] = Field(default_factory=list)
    links: list[SpanLink] = Field(default_factory=list)
    resource: dict[str, Any] = Field(default_factory=dict)
    scope: str | None = None

    @classmethod
    def from_readable(cls, span: Any) -> SpanRecord:
        """Convert an OTel SDK ``ReadableSpan``. Built without validation: every field comes from
        the SDK's own typed values (integer ids formatted to hex, enum names), which always fit
        the model, and this runs for every span the store writes."""
        ctx = span.context
        parent = span.parent
        return cls.model_construct(
            trace_id=format(ctx.trace_id, "032x"),
            span_id=format(ctx.span_id, "016x"),
            parent_span_id=format(parent.span_id, "016x") if parent is not None else None,
            name=str(span.name),
            kind=span.kind.name,
            start_time_ns=span.start_time or 0,
            end_time_ns=span.end_time,
            status_code=span.status.status_code.name,
            status_message=span.status.description,
            attributes={k: _plain(v) for k, v in (span.attributes or {}).items()},
            events=[
                SpanEvent.model_construct(
                    name=str(e.name),
                    time_ns=e.timestamp,
                    attributes={k: _plain(v) for k, v in (e.attributes or {}).items()},
                )
                for e in span.events
            ],
            links=[
                SpanLink.model_construct(
                    trace_id=format(link.context.trace_id, "032x"),
                    span_id=format(link.context.span_id, "016x"),
                    attributes={k: _plain(v) for k, v in (link.attributes or {}).items()},
                )
                for link in span.links
            ],
            resource={k: _plain(v) for k, v in (span.resource.attributes if span.resource else {}).items()},
            scope=span.instrumentation_scope.name if span.instrumentation_scope else None,
        )


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
