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
from causal_middleware.store._jsonstream import (
    MAX_DEPTH,
    JsonStream,
    JsonStreamError,
    check_depth,
    stamp,
    write_batches,
)
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


# Spans a trace may hold to be written in one store transaction; a larger file is validated whole
# (a streaming pass that keeps nothing), then read again and written in batches.
BATCH_SPANS = 20_000
BATCH_CHARS = 16 << 20
_PLACEHOLDER_TRACE = "0" * 31 + "1"  # stands in for a document trace_id written after the spans


class _TrailReader:
    """One streaming pass over a TRAIL trace file: yields ``(pre-order index, record)`` per span,
    each span once its object (children included) has been read."""

    def __init__(self, file: Path, trace_id: str | None = None) -> None:
        self.file = file
        self.name = str(file)
        self.trace_id = trace_id  # the document's; given to a second pass when it came late
        self.late_trace = False  # a span needed the document's trace_id before it was read
        self.borrowed: list[int] = []  # indexes of spans that took the document's trace_id
        self._count = 0
        self._stream: JsonStream | None = None

    @property
    def offset(self) -> int:
        return self._stream.offset if self._stream is not None else 0

    def _invalid(self, detail: str) -> StoreError:
        return StoreError(f"{self.name} is not a valid TRAIL trace: {detail}")

    def records(self) -> Iterator[tuple[int, SpanRecord]]:
        try:
            with self.file.open(encoding="utf-8-sig", newline="") as handle:
                src = self._stream = JsonStream(handle)
                yield from self._document(src)
                if src.peek() != "":
                    raise src.error("Extra data")
        except UnicodeDecodeError as exc:
            raise self._invalid(f"malformed JSON (not UTF-8 text: {exc})") from None
        except JsonStreamError as exc:
            if exc.too_deep:
                raise self._invalid(f"JSON {exc.msg} at line {exc.line} column {exc.column}") from None
            raise self._invalid(f"malformed JSON ({exc})") from None
        except ValueError as exc:
            if isinstance(exc, StoreError):
                raise
            raise self._invalid(str(exc)) from None

    def _document(self, src: JsonStream) -> Iterator[tuple[int, SpanRecord]]:
        shape = f"{self.name} is not a TRAIL trace: expected an object with 'trace_id' and 'spans'"
        if src.peek() != "{":
            src.skip()
            raise StoreError(shape)
        seen: set[str] = set()
        for key in src.members():
            seen.add(key)
            if key == "trace_id":
                value = src.value()
                self.trace_id = str(value)
            elif key == "spans" and "trace_id" not in seen and self.trace_id is None:
                self.late_trace = True
                yield from self._spans(src, "spans", 2)
            elif key == "spans":
                yield from self._spans(src, "spans", 2)
            else:
                src.skip()
        if not {"trace_id", "spans"} <= seen:
            raise StoreError(shape)
        if self._count == 0:
            raise self._invalid("it holds no spans")

    def _spans(self, src: JsonStream, where: str, depth: int) -> Iterator[tuple[int, SpanRecord]]:
        if depth > MAX_DEPTH:
            raise ValueError(f"{where} is nested deeper than {MAX_DEPTH} levels (the import limit)")
        if src.peek() != "[":
            value = src.value()
            if where != "spans" and not value:  # `child_spans: null` (or absent) means none
                return
            raise ValueError(f"{where} must be a list of spans, got {type(value).__name__}")
        for i in src.elements():
            yield from self._span(src, f"{where}[{i}]", depth + 1)

    def _span(self, src: JsonStream, where: str, depth: int) -> Iterator[tuple[int, SpanRecord]]:
        if src.peek() != "{":
            raise ValueError(f"{where} must be an object, got {type(src.value()).__name__}")
        index = self._count
        self._count += 1
        fields: dict[str, Any] = {}
        for key in src.members():
            if key == "child_spans":
                yield from self._spans(src, f"{where}.child_spans", depth + 1)
            else:
                value = src.value()
                try:
                    check_depth(value, depth + 1)
                except ValueError as exc:
                    raise ValueError(f"{where}.{key} is {exc}") from None
                fields[key] = value
        borrowed = not fields.get("trace_id")
        trace_id = self.trace_id
        if borrowed:
            self.borrowed.append(index)
            if trace_id is None:
                trace_id = _PLACEHOLDER_TRACE  # checked once the document's trace_id is read
        try:
            yield index, _record(str(trace_id), fields, where)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"])
            raise ValueError(f"{where}: {field}: {error['msg']}") from None
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    def patched(self, held: list[tuple[int, SpanRecord]]) -> list[SpanRecord]:
        """``held`` in file (pre-)order, with the document's trace_id given to the spans that
        borrowed it before it was read."""
        self.check_late_trace()
        if self.late_trace and self.borrowed:
            borrowed = set(self.borrowed)
            for index, record in held:
                if index in borrowed:
                    record.trace_id = str(self.trace_id)
        return [record for _index, record in sorted(held, key=lambda item: item[0])]

    def check_late_trace(self) -> None:
        """A document trace_id read after the spans that use it must still be a valid span trace id."""
        if self.late_trace and self.borrowed and not re.fullmatch(r"[0-9a-f]{32}", str(self.trace_id)):
            raise self._invalid(
                f"trace_id {self.trace_id!r} (used by spans without their own) must be 32 lowercase hex digits"
            )


def _existing(path: str | os.PathLike[str]) -> Path:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"TRAIL trace file not found: {file}")
    return file


def read_trail_trace(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Parse one TRAIL trace file into spans (parents before children, as in the file); StoreError
    naming the file and problem when invalid. (The whole list is in memory: to load a large file
    into a store, use :func:`import_trail_trace`, which streams.)"""
    reader = _TrailReader(_existing(path))
    return reader.patched(list(reader.records()))


def import_trail_trace(store: SpanStore, path: str | os.PathLike[str]) -> str:
    """Load one TRAIL trace file into ``store``; returns its run id (the document's trace id).

    An invalid file writes nothing. A trace of at most :data:`BATCH_SPANS` spans is written in one
    transaction; a larger one is validated in one streaming pass, then written batch by batch.
    """
    file = _existing(path)
    before = stamp(file)
    first = _TrailReader(file)
    held: list[tuple[int, SpanRecord]] | None = []
    for item in first.records():
        if held is not None:
            held.append(item)
            if len(held) > BATCH_SPANS or first.offset > BATCH_CHARS:
                held = None
    first.check_late_trace()
    if held is not None:
        records = first.patched(held)
        store.write_spans(records)
        return records[0].trace_id
    second = _TrailReader(file, trace_id=first.trace_id)
    write_batches(
        store,
        str(file),
        (record for _index, record in second.records()),
        lambda: second.offset,
        before=before,
        batch_spans=BATCH_SPANS,
        batch_chars=BATCH_CHARS,
    )
    return str(first.trace_id)
