"""OTLP/JSON files: the standard JSON encoding of ``ExportTraceServiceRequest``.

Export writes one file, spans grouped by resource and instrumentation scope, encoded with the
OTLP protobuf messages and ``google.protobuf.json_format`` plus the two OTLP/JSON departures from
plain proto3 JSON: trace and span ids are lowercase hex strings (not base64), and enum values are
integers. Keys are lowerCamelCase. Attributes the instrumentation keeps as JSON-list text
(``causal.langgraph.path``, ``causal.langgraph.triggers``, ``causal.decision.options``) are written
as ``arrayValue``; what ``annotate`` set after the run (outcome, reference, labels, lineage) is
written onto the run's root span as the ``causal.run.*`` / ``causal.lineage.*`` attributes the
builder reads, so an import gives back the same trajectories and listings.

Import accepts that form (snake_case keys too, as the protobuf JSON parser does; ids in base64,
as protobuf's ``MessageToJson`` writes them, are decoded) and the OTel Collector file exporter's
JSON-lines form (one request per line). Import validates the whole file before writing anything, then writes all its spans in
one transaction: an invalid file leaves the store as it was.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from pydantic import ValidationError

from causal_middleware.output_paths import check_output_file
from causal_middleware.spans import attributes as A
from causal_middleware.spans.builder import JSON_LIST_ATTRIBUTES, choose_root, decode_json, span_facts
from causal_middleware.spans.model import Lineage
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

__all__ = ["export_otlp_json", "import_otlp_json", "read_otlp_json", "records_to_request"]

SpanKindName = Literal["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"]
StatusName = Literal["UNSET", "OK", "ERROR"]
_KINDS: tuple[SpanKindName, ...] = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_KIND_TO_PROTO: dict[SpanKindName, Any] = {
    name: getattr(trace_pb2.Span, f"SPAN_KIND_{name}") for name in _KINDS
}
_PROTO_TO_KIND: dict[int, SpanKindName] = {value: name for name, value in _KIND_TO_PROTO.items()}
_STATUS_TO_PROTO: dict[StatusName, Any] = {
    "UNSET": trace_pb2.Status.STATUS_CODE_UNSET,
    "OK": trace_pb2.Status.STATUS_CODE_OK,
    "ERROR": trace_pb2.Status.STATUS_CODE_ERROR,
}
_PROTO_TO_STATUS: dict[int, StatusName] = {value: name for name, value in _STATUS_TO_PROTO.items()}
_ID_KEYS = {"traceId": "traceId", "trace_id": "traceId", "spanId": "spanId", "span_id": "spanId"}
_PARENT_KEYS = ("parentSpanId", "parent_span_id")


# --------------------------------------------------------------------------------------------
# SpanRecord -> OTLP
# --------------------------------------------------------------------------------------------
def _any_value(value: Any) -> AnyValue:
    out = AnyValue()
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, list | tuple):
        out.array_value.values.extend(_any_value(v) for v in value)
    elif isinstance(value, dict):
        out.kvlist_value.values.extend(_key_values(value))
    elif value is not None:
        out.string_value = str(value)
    return out


def _key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=_any_value(value)) for key, value in attributes.items()]


def _wire_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """JSON-list text of :data:`JSON_LIST_ATTRIBUTES` as lists (OTLP ``arrayValue`` on the wire)."""
    out = dict(attributes)
    for key in JSON_LIST_ATTRIBUTES & out.keys():
        value = out[key]
        if isinstance(value, str):
            decoded = decode_json(value, "application/json")
            if isinstance(decoded, list):
                out[key] = decoded
    return out


def _span_message(record: SpanRecord) -> trace_pb2.Span:
    span = trace_pb2.Span(
        trace_id=bytes.fromhex(record.trace_id),
        span_id=bytes.fromhex(record.span_id),
        parent_span_id=bytes.fromhex(record.parent_span_id) if record.parent_span_id else b"",
        name=record.name,
        kind=_KIND_TO_PROTO[record.kind],
        start_time_unix_nano=record.start_time_ns,
        end_time_unix_nano=record.end_time_ns or 0,
        attributes=_key_values(_wire_attributes(record.attributes)),
        status=trace_pb2.Status(
            code=_STATUS_TO_PROTO[record.status_code], message=record.status_message or ""
        ),
    )
    for event in record.events:
        span.events.add(
            time_unix_nano=event.time_ns, name=event.name, attributes=_key_values(event.attributes)
        )
    for link in record.links:
        span.links.add(
            trace_id=bytes.fromhex(link.trace_id),
            span_id=bytes.fromhex(link.span_id),
            attributes=_key_values(link.attributes),
        )
    return span


def records_to_request(records: Sequence[SpanRecord]) -> ExportTraceServiceRequest:
    """Group spans by resource, then by instrumentation scope, into one export request."""
    request = ExportTraceServiceRequest()
    by_resource: dict[str, Any] = {}
    by_scope: dict[tuple[str, str], Any] = {}
    for record in records:
        resource_key = json.dumps(record.resource, sort_keys=True, default=str)
        resource_spans = by_resource.get(resource_key)
        if resource_spans is None:
            resource_spans = request.resource_spans.add()
            resource_spans.resource.attributes.extend(_key_values(record.resource))
            by_resource[resource_key] = resource_spans
        scope_key = (resource_key, record.scope or "")
        scope_spans = by_scope.get(scope_key)
        if scope_spans is None:
            scope_spans = resource_spans.scope_spans.add()
            if record.scope:
                scope_spans.scope.name = record.scope
            by_scope[scope_key] = scope_spans
        scope_spans.spans.append(_span_message(record))
    return request


def _hex_ids(node: Any) -> Any:
    """proto3 JSON writes bytes as base64; OTLP/JSON wants trace and span ids as hex."""
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                out[key] = base64.b64decode(value).hex()
            else:
                out[key] = _hex_ids(value)
        return out
    return node


def export_otlp_json(
    store: SpanStore, path: str | os.PathLike[str], run_ids: Sequence[str] | None = None
) -> list[str]:
    """Write the spans of ``run_ids`` (default: every run in the store) to one OTLP/JSON file.

    Each id may be an unambiguous prefix. The file is replaced atomically. Returns the run ids
    written, in the order given (or newest first when all runs are exported).
    """
    target = _output_file(path)  # before any work: a bad path must not cost a store load
    if run_ids is None:
        ids = [r.run_id for r in store.list_runs(limit=None)]
    else:
        ids = list(dict.fromkeys(store.resolve_run_id(r) for r in run_ids))
    records = [span for run_id in ids for span in _annotated_spans(store, run_id)]
    payload = _hex_ids(json_format.MessageToDict(records_to_request(records), use_integers_for_enums=True))
    payload.setdefault("resourceSpans", [])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise StoreError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # disk full, quota, media gone: one line naming the file
            raise StoreError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise
    return ids


_LINEAGE_ATTRIBUTES = (
    A.CAUSAL_LINEAGE_PARENT_RUN_ID,
    A.CAUSAL_LINEAGE_FORK_CHECKPOINT_ID,
    A.CAUSAL_LINEAGE_FORK_HOP,
    A.CAUSAL_LINEAGE_FORK_NODE,
    A.CAUSAL_LINEAGE_FORK_STEP,
    A.CAUSAL_LINEAGE_MODE,
    A.CAUSAL_LINEAGE_INTERVENTION,
    A.CAUSAL_RUN_COUNTERFACTUAL,
)


def _annotated_spans(store: SpanStore, run_id: str) -> list[SpanRecord]:
    """The run's spans, its root carrying what ``annotate`` set after the run (store state that is
    no span) as the root attributes the builder reads: outcome, reference, labels, lineage."""
    spans = store.get_spans(run_id)
    get_annotations = getattr(store, "get_annotations", None)
    if not callable(get_annotations):
        return spans
    annotations = get_annotations(run_id)
    root_facts = choose_root(span_facts(s) for s in spans)
    if root_facts is None:
        return spans
    attrs: dict[str, Any] = {}
    if annotations.outcome is not None:
        attrs[A.CAUSAL_RUN_OUTCOME] = annotations.outcome.value
    if annotations.reference is not None:
        reference = annotations.reference
        # the builder decodes JSON-looking text; quote such a reference so it reads back unchanged
        plain = not isinstance(decode_json(reference), str) or decode_json(reference) != reference
        attrs[A.CAUSAL_RUN_REFERENCE] = json.dumps(reference, ensure_ascii=False) if plain else reference
    out = []
    for span in spans:
        if span.span_id == root_facts.span_id and (attrs or annotations.labels or annotations.lineage):
            merged = {**span.attributes, **attrs}
            if annotations.labels:
                current = decode_json(span.attributes.get(A.CAUSAL_RUN_LABELS), "application/json")
                labels = {**(current if isinstance(current, dict) else {}), **annotations.labels}
                merged[A.CAUSAL_RUN_LABELS] = json.dumps(labels, ensure_ascii=False, default=str)
            if annotations.lineage is not None:
                for key in _LINEAGE_ATTRIBUTES:
                    merged.pop(key, None)
                merged.update(_lineage_attributes(annotations.lineage))
            span = span.model_copy(update={"attributes": merged})
        out.append(span)
    return out


def _lineage_attributes(lineage: Lineage) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        A.CAUSAL_LINEAGE_PARENT_RUN_ID: lineage.parent_run_id,
        A.CAUSAL_LINEAGE_MODE: lineage.mode,
        A.CAUSAL_RUN_COUNTERFACTUAL: lineage.counterfactual,
    }
    for key, value in (
        (A.CAUSAL_LINEAGE_FORK_CHECKPOINT_ID, lineage.fork_checkpoint_id),
        (A.CAUSAL_LINEAGE_FORK_HOP, lineage.fork_hop),
        (A.CAUSAL_LINEAGE_FORK_NODE, lineage.fork_node),
        (A.CAUSAL_LINEAGE_FORK_STEP, lineage.fork_step),
    ):
        if value is not None:
            attrs[key] = value
    if lineage.intervention is not None:
        attrs[A.CAUSAL_LINEAGE_INTERVENTION] = lineage.intervention.model_dump_json()
    return attrs


def _output_file(path: str | os.PathLike[str]) -> Path:
    try:
        return check_output_file(path, "the OTLP/JSON file")
    except ValueError as exc:
        raise StoreError(str(exc)) from None


# --------------------------------------------------------------------------------------------
# OTLP -> SpanRecord
# --------------------------------------------------------------------------------------------
def _plain(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_plain(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _plain(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, which)


def _attributes(values: Any) -> dict[str, Any]:
    return {kv.key: _plain(kv.value) for kv in values}


class _TooDeep(Exception):
    pass


def _b64_ids(node: Any, where: str, problems: list[str], depth: int = 1) -> Any:
    """Check hex ids and turn them into the base64 the protobuf JSON parser expects; ``depth`` is
    ``node``'s nesting level in the file (past :data:`MAX_DEPTH`: ``_TooDeep``)."""
    if isinstance(node, list):
        if depth > MAX_DEPTH:
            raise _TooDeep
        return [_b64_ids(item, f"{where}[{i}]", problems, depth + 1) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    if depth > MAX_DEPTH:
        raise _TooDeep
    out = {}
    for key, value in node.items():
        path = f"{where}.{key}" if where else key
        if key in _ID_KEYS or key in _PARENT_KEYS:
            if key in _PARENT_KEYS and value in ("", None):
                continue
            digits = 16 if key in _PARENT_KEYS or _ID_KEYS[key] == "spanId" else 32
            raw, problem = _id_bytes(value, digits)
            if raw is None:
                problems.append(f"{path} {problem}")
                continue
            if not any(raw):
                problems.append(f"{path} is all zeros, which OTLP forbids")
                continue
            out[key] = base64.b64encode(raw).decode()
        else:
            out[key] = _b64_ids(value, path, problems, depth + 1)
    return out


_B64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def _id_bytes(value: Any, digits: int) -> tuple[bytes | None, str]:
    """An id's bytes from OTLP/JSON hex, or from the base64 that plain proto3 JSON (protobuf's
    ``MessageToJson``) writes; else None and the problem, with the conversion hint."""
    size = digits // 2
    if isinstance(value, str) and re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", value):
        return bytes.fromhex(value), ""
    hint = f"must be a hex string of {digits} digits, got {value!r}"
    # (a hex string of the wrong length is never read as base64: protobuf pads, hex has no '=')
    if isinstance(value, str) and _B64.fullmatch(value) and not re.fullmatch("[0-9a-fA-F]*", value):
        padded = value.translate(str.maketrans("-_", "+/")) + "=" * (-len(value) % 4)
        try:
            raw = base64.b64decode(padded, validate=True)
        except ValueError:
            raw = b""
        if len(raw) == size:
            return raw, ""
        if raw:
            return None, f"{hint} (read as base64 it is {len(raw)} bytes, not {size})"
    return None, hint


# Spans a file may hold to be written in one store transaction (all or nothing). A larger file is
# validated whole first (a streaming pass that keeps nothing), then read again and written in
# batches of this size: memory stays bounded whatever the file's size.
BATCH_SPANS = 20_000
BATCH_CHARS = 16 << 20  # characters of span JSON per batch

# Nesting levels above a span: request, resourceSpans, ResourceSpans, scopeSpans, ScopeSpans, spans.
_SPAN_DEPTH = 7
_RESOURCE_DEPTH = 4


@dataclass
class _Late:
    """Resources and scopes written after their spans (JSON keys are unordered): found by the
    first pass, applied by the second, so spans can stream whatever the key order."""

    resources: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    scopes: dict[tuple[int, int, int], str | None] = field(default_factory=dict)


_Key = tuple[int, int, int]  # (document, resourceSpans index, scopeSpans index)


class _OtlpReader:
    """One streaming pass over an OTLP/JSON (or JSON-lines) file, yielding validated spans."""

    def __init__(self, file: Path, late: _Late | None = None) -> None:
        self.file = file
        self.name = str(file)
        self.given = late or _Late()
        self.found = _Late()
        self._stream: JsonStream | None = None
        self._doc = 0

    @property
    def offset(self) -> int:
        return self._stream.offset if self._stream is not None else 0

    def _invalid(self, where: str, detail: str) -> StoreError:
        return StoreError(f"{self.name} is not valid OTLP/JSON: {where}{detail}")

    def records(self) -> Iterator[tuple[_Key, SpanRecord]]:
        try:
            with self.file.open(encoding="utf-8-sig", newline="") as handle:
                src = self._stream = JsonStream(handle)
                if src.peek() == "":
                    raise self._invalid("", "the file is empty")
                while src.peek() != "":
                    where = "" if self._doc == 0 else f"line {src.location()[0]}: "
                    yield from self._document(src, where)
                    self._doc += 1
        except UnicodeDecodeError as exc:
            raise self._invalid("", f"not UTF-8 text ({exc})") from None
        except JsonStreamError as exc:
            if exc.too_deep:
                raise self._invalid("", f"JSON {exc.msg} at line {exc.line} column {exc.column}") from None
            if self._doc == 0:
                raise self._invalid("", f"malformed or truncated JSON ({exc})") from None
            raise self._invalid(
                "",
                f"neither one JSON document nor JSON lines (line {exc.line}: {exc.msg}, column {exc.column})",
            ) from None

    def _document(self, src: JsonStream, where: str) -> Iterator[tuple[_Key, SpanRecord]]:
        expected = "expected an object with a 'resourceSpans' list (an ExportTraceServiceRequest)"
        if src.peek() != "{":
            raise self._invalid(where, f"{expected}, got {type(src.value()).__name__}")
        others: list[str] = []
        found = False
        for key in src.members():
            if key in ("resourceSpans", "resource_spans"):
                found = True
                yield from self._list(src, where, key, self._resource_spans)
            else:
                others.append(key)
                src.skip()
        if not found:
            raise self._invalid(where, f"{expected}, got dict with keys {sorted(others)[:5]}")

    def _list(
        self,
        src: JsonStream,
        where: str,
        path: str,
        each: Callable[[JsonStream, str, int, str], Iterator[Any]],
    ) -> Iterator[Any]:
        if src.peek() != "[":
            value = src.value()
            if value is None:
                return
            raise self._invalid(where, f"{path} must be a list, got {type(value).__name__}")
        for index in src.elements():
            yield from each(src, where, index, f"{path}[{index}]")

    def _resource_spans(
        self, src: JsonStream, where: str, r: int, path: str
    ) -> Iterator[tuple[_Key, SpanRecord]]:
        if src.peek() != "{":
            raise self._invalid(where, f"{path} must be an object, got {type(src.value()).__name__}")
        key = (self._doc, r)
        resource = self.given.resources.get(key, {})
        streamed = False
        for name in src.members():
            if name == "resource":
                resource = self._resource(src.value(), where, f"{path}.resource")
                if streamed:
                    self.found.resources[key] = resource
            elif name in ("scopeSpans", "scope_spans"):
                streamed = True
                current = resource

                def scope_spans(
                    src: JsonStream, where: str, s: int, spath: str, current: dict[str, Any] = current
                ) -> Iterator[tuple[_Key, SpanRecord]]:
                    return self._scope_spans(src, where, (self._doc, r, s), spath, current)

                yield from self._list(src, where, f"{path}.{name}", scope_spans)
            else:
                src.skip()

    def _resource(self, value: Any, where: str, path: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._invalid(where, f"{path} must be an object, got {type(value).__name__}")
        try:
            check_depth(value, _RESOURCE_DEPTH)
        except ValueError as exc:
            raise self._invalid(where, f"{path} is {exc}") from None
        message = resource_pb2.Resource()
        try:
            json_format.ParseDict(value, message, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            raise self._invalid(where, f"{path}: {exc}") from None
        return _attributes(message.attributes)

    def _scope_spans(
        self, src: JsonStream, where: str, key: _Key, path: str, resource: dict[str, Any]
    ) -> Iterator[tuple[_Key, SpanRecord]]:
        if src.peek() != "{":
            raise self._invalid(where, f"{path} must be an object, got {type(src.value()).__name__}")
        scope = self.given.scopes.get(key)
        streamed = False
        for name in src.members():
            if name == "scope":
                value = src.value()
                scope = (value.get("name") or None) if isinstance(value, dict) else None
                if scope is not None and not isinstance(scope, str):
                    raise self._invalid(where, f"{path}.scope.name must be a string, got {scope!r}")
                if streamed:
                    self.found.scopes[key] = scope
            elif name == "spans":
                streamed = True
                current = scope

                def span(
                    src: JsonStream, where: str, n: int, spath: str, current: str | None = current
                ) -> Iterator[tuple[_Key, SpanRecord]]:
                    yield key, self._span(src.value(), where, spath, resource, current)

                yield from self._list(src, where, f"{path}.spans", span)
            else:
                src.skip()

    def _span(
        self, value: Any, where: str, path: str, resource: dict[str, Any], scope: str | None
    ) -> SpanRecord:
        if not isinstance(value, dict):
            raise self._invalid(where, f"{path} must be an object, got {type(value).__name__}")
        problems: list[str] = []
        try:
            converted = _b64_ids(value, path, problems, _SPAN_DEPTH)
        except _TooDeep:
            raise self._invalid(
                where, f"{path} is nested deeper than {MAX_DEPTH} levels (the import limit)"
            ) from None
        if problems:
            extra = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise self._invalid(where, "; ".join(problems[:3]) + extra)
        span = trace_pb2.Span()
        try:
            json_format.ParseDict(converted, span, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            raise self._invalid(where, f"{path}: {exc}") from None
        if not span.trace_id or not span.span_id:
            raise self._invalid(where, f"{path} has no traceId or spanId")
        try:
            return SpanRecord(
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex() or None,
                name=span.name,
                kind=_PROTO_TO_KIND.get(span.kind, "INTERNAL"),
                start_time_ns=span.start_time_unix_nano,
                end_time_ns=span.end_time_unix_nano or None,
                status_code=_PROTO_TO_STATUS.get(span.status.code, "UNSET"),
                status_message=span.status.message or None,
                attributes=_attributes(span.attributes),
                events=[
                    SpanEvent(name=e.name, time_ns=e.time_unix_nano, attributes=_attributes(e.attributes))
                    for e in span.events
                ],
                links=[
                    SpanLink(
                        trace_id=link.trace_id.hex(),
                        span_id=link.span_id.hex(),
                        attributes=_attributes(link.attributes),
                    )
                    for link in span.links
                ],
                resource=resource,
                scope=scope,
            )
        except ValidationError as exc:
            raise self._invalid(where, f"{path}: {exc.errors()[0]['msg']}") from None

    def patched(self, held: list[tuple[_Key, SpanRecord]]) -> list[SpanRecord]:
        """``held`` with the resources and scopes the pass found after their spans applied."""
        out = []
        for (doc, r, s), record in held:
            if (doc, r) in self.found.resources:
                record.resource = self.found.resources[(doc, r)]
            if (doc, r, s) in self.found.scopes:
                record.scope = self.found.scopes[(doc, r, s)]
            out.append(record)
        return out


def _existing(path: str | os.PathLike[str]) -> Path:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"OTLP/JSON file not found: {file}")
    return file


def read_otlp_json(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Parse and validate an OTLP/JSON (or JSON-lines) file into spans; StoreError naming the file
    and the problem when anything in it is invalid. (The whole list is in memory: to load a large
    file into a store, use :func:`import_otlp_json`, which streams.)"""
    reader = _OtlpReader(_existing(path))
    return reader.patched(list(reader.records()))


def import_otlp_json(store: SpanStore, path: str | os.PathLike[str]) -> list[str]:
    """Validate the whole file, then write its spans.

    Returns the run ids (trace ids) the file held, in order of first appearance. An invalid file
    raises :class:`StoreError` (FileNotFoundError when missing) and writes nothing. A file of at
    most :data:`BATCH_SPANS` spans (and :data:`BATCH_CHARS` characters of them) is written in one
    transaction; a larger one is streamed: validated in one pass, then written batch by batch in
    a second, so memory does not grow with the file.
    """
    file = _existing(path)
    before = stamp(file)
    first = _OtlpReader(file)
    held: list[tuple[_Key, SpanRecord]] | None = []
    run_ids: dict[str, None] = {}
    for key, record in first.records():
        run_ids.setdefault(record.trace_id)
        if held is not None:
            held.append((key, record))
            if len(held) > BATCH_SPANS or first.offset > BATCH_CHARS:
                held = None  # too large to hold: keep validating, write in a second pass
    if held is not None:
        store.write_spans(first.patched(held))
        return list(run_ids)
    second = _OtlpReader(file, first.found)
    write_batches(
        store,
        str(file),
        (record for _key, record in second.records()),
        lambda: second.offset,
        before=before,
        batch_spans=BATCH_SPANS,
        batch_chars=BATCH_CHARS,
    )
    return list(run_ids)
