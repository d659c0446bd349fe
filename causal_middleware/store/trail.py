"""Import TRAIL benchmark traces (patronus-ai/trail-benchmark, ``traces/gaia/*.json``).

A TRAIL trace file is ``{trace_id, spans: [...]}`` where each span has ``span_id``,
``parent_span_id``, ``span_name``, ``span_kind``, ``timestamp`` (ISO 8601), ``duration`` (ISO 8601,
e.g. ``PT1M48.75533S``), ``status_code`` (``Ok``/``Error``/``Unset``), ``span_attributes``
(OpenInference names), ``resource_attributes``, ``scope_name``, ``events``, ``logs`` and nested
``child_spans``. Each span becomes a :class:`SpanRecord`; each log record becomes a span event
named ``log`` (its body kept as JSON text) so TRAIL's function inputs and outputs are not lost.
The builder then reads the OpenInference kinds into steps and infers hops.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from causal_middleware.spans.record import SpanEvent, SpanLink, SpanRecord
from causal_middleware.store.base import SpanStore, StoreError

__all__ = ["import_trail_trace", "read_trail_trace"]

_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(timestamp: Any, where: str) -> int:
    if not isinstance(timestamp, str):
        raise ValueError(f"{where}: timestamp must be an ISO 8601 string, got {timestamp!r}")
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        raise ValueError(f"{where}: bad ISO 8601 timestamp {timestamp!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def _duration_ns(duration: Any, where: str) -> int | None:
    if duration in (None, ""):
        return None
    match = _DURATION.match(duration) if isinstance(duration, str) else None
    if match is None:
        raise ValueError(f"{where}: bad ISO 8601 duration {duration!r}")
    days, hours, minutes, seconds = match.groups()
    try:
        total = Decimal(days or 0) * 86_400 + Decimal(hours or 0) * 3_600 + Decimal(minutes or 0) * 60
        total += Decimal(seconds or 0)
    except InvalidOperation:
        raise ValueError(f"{where}: bad ISO 8601 duration {duration!r}") from None
    return int(total * 1_000_000_000)


def _flatten(spans: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(spans, list):
        raise ValueError(f"{where} must be a list of spans, got {type(spans).__name__}")
    for i, span in enumerate(spans):
        path = f"{where}[{i}]"
        if not isinstance(span, Mapping):
            raise ValueError(f"{path} must be an object, got {type(span).__name__}")
        yield path, span
        yield from _flatten(span.get("child_spans") or [], f"{path}.child_spans")


def _record(trace_id: str, span: Mapping[str, Any], where: str) -> SpanRecord:
    start = _ns(span.get("timestamp"), where)
    duration = _duration_ns(span.get("duration"), where)
    events = [
        SpanEvent(
            name=str(e.get("Name") or e.get("name") or "event"),
            time_ns=_ns(e.get("Timestamp") or e.get("timestamp"), f"{where}.events[{n}]"),
            attributes=dict(e.get("Attributes") or e.get("attributes") or {}),
        )
        for n, e in enumerate(span.get("events") or [])
    ]
    for n, log in enumerate(span.get("logs") or []):
        events.append(
            SpanEvent(
                name="log",
                time_ns=_ns(log.get("timestamp"), f"{where}.logs[{n}]"),
                attributes={
                    "log.severity": str(log.get("severity_text") or ""),
                    "log.body": json.dumps(log.get("body"), ensure_ascii=False, default=str),
                },
            )
        )
    links = [
        SpanLink(trace_id=str(link["trace_id"]), span_id=str(link["span_id"]))
        for link in span.get("links") or []
        if isinstance(link, Mapping) and "trace_id" in link and "span_id" in link
    ]
    kinds: dict[str, Literal["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"]] = {
        "INTERNAL": "INTERNAL",
        "SERVER": "SERVER",
        "CLIENT": "CLIENT",
        "PRODUCER": "PRODUCER",
        "CONSUMER": "CONSUMER",
    }
    statuses: dict[str, Literal["UNSET", "OK", "ERROR"]] = {"UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}
    return SpanRecord(
        trace_id=str(span.get("trace_id") or trace_id),
        span_id=str(span.get("span_id")),
        parent_span_id=span.get("parent_span_id") or None,
        name=str(span.get("span_name") or ""),
        kind=kinds.get(str(span.get("span_kind") or "").upper(), "INTERNAL"),
        start_time_ns=start,
        end_time_ns=start + duration if duration is not None else None,
        status_code=statuses.get(str(span.get("status_code") or "").upper(), "UNSET"),
        status_message=span.get("status_message") or None,
        attributes=dict(span.get("span_attributes") or {}),
        events=events,
        links=links,
        resource=dict(span.get("resource_attributes") or {}),
        scope=span.get("scope_name") or None,
    )


def read_trail_trace(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Parse one TRAIL trace file into spans; StoreError naming the file and problem when invalid."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"TRAIL trace file not found: {file}")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(f"{file} is not a valid TRAIL trace: malformed JSON ({exc})") from None
    if not isinstance(document, Mapping) or "spans" not in document or "trace_id" not in document:
        raise StoreError(f"{file} is not a TRAIL trace: expected an object with 'trace_id' and 'spans'")
    trace_id = str(document["trace_id"])
    records = []
    try:
        for where, span in _flatten(document["spans"], "spans"):
            try:
                records.append(_record(trace_id, span, where))
            except ValidationError as exc:
                error = exc.errors()[0]
                field = ".".join(str(p) for p in error["loc"])
                raise ValueError(f"{where}: {field}: {error['msg']}") from None
    except ValueError as exc:
        raise StoreError(f"{file} is not a valid TRAIL trace: {exc}") from None
    if not records:
        raise StoreError(f"{file} is not a valid TRAIL trace: it holds no spans")
    return records


def import_trail_trace(store: SpanStore, path: str | os.PathLike[str]) -> str:
    """Load one TRAIL trace file into ``store`` in one transaction; returns its run id (trace id)."""
    records = read_trail_trace(path)
    store.write_spans(records)
    return records[0].trace_id
