"""OTLP/JSON files: the standard JSON encoding of ``ExportTraceServiceRequest``.

Export writes one file, spans grouped by resource and instrumentation scope, encoded with the
OTLP protobuf messages and ``google.protobuf.json_format`` plus the two OTLP/JSON departures from
plain proto3 JSON: trace and span ids are lowercase hex strings (not base64), and enum values are
integers. Keys are lowerCamelCase. Import accepts that form (snake_case keys too, as the
protobuf JSON parser does) and the OTel Collector file exporter's JSON-lines form (one request
per line). Import validates the whole file before writing anything, then writes all its spans in
one transaction: an invalid file leaves the store as it was.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2
from pydantic import ValidationError

from causal_middleware.spans.record import SpanEvent, SpanLink, SpanRecord
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


def _span_message(record: SpanRecord) -> trace_pb2.Span:
    span = trace_pb2.Span(
        trace_id=bytes.fromhex(record.trace_id),
        span_id=bytes.fromhex(record.span_id),
        parent_span_id=bytes.fromhex(record.parent_span_id) if record.parent_span_id else b"",
        name=record.name,
        kind=_KIND_TO_PROTO[record.kind],
        start_time_unix_nano=record.start_time_ns,
        end_time_unix_nano=record.end_time_ns or 0,
        attributes=_key_values(record.attributes),
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
    if run_ids is None:
        ids = [r.run_id for r in store.list_runs(limit=None)]
    else:
        ids = list(dict.fromkeys(store.resolve_run_id(r) for r in run_ids))
    records = [span for run_id in ids for span in store.get_spans(run_id)]
    payload = _hex_ids(json_format.MessageToDict(records_to_request(records), use_integers_for_enums=True))
    payload.setdefault("resourceSpans", [])
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return ids


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


def _b64_ids(node: Any, where: str, problems: list[str]) -> Any:
    """Check hex ids and turn them into the base64 the protobuf JSON parser expects."""
    if isinstance(node, list):
        return [_b64_ids(item, f"{where}[{i}]", problems) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        path = f"{where}.{key}" if where else key
        if key in _ID_KEYS or key in _PARENT_KEYS:
            if key in _PARENT_KEYS and value in ("", None):
                continue
            digits = 16 if key in _PARENT_KEYS or _ID_KEYS[key] == "spanId" else 32
            if not isinstance(value, str) or not re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", value):
                problems.append(f"{path} must be a hex string of {digits} digits, got {value!r}")
                continue
            if set(value) == {"0"}:
                problems.append(f"{path} is all zeros, which OTLP forbids")
                continue
            out[key] = base64.b64encode(bytes.fromhex(value)).decode()
        else:
            out[key] = _b64_ids(value, path, problems)
    return out


def _requests(text: str, name: str) -> Iterator[tuple[str, Any]]:
    """The file's export requests as (location, parsed JSON): one document, or JSON lines."""
    try:
        yield "", json.loads(text)
        return
    except json.JSONDecodeError as whole_error:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) < 2:
            raise StoreError(
                f"{name} is not valid OTLP/JSON: malformed or truncated JSON ({whole_error})"
            ) from None
        for number, line in lines:
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError as exc:
                raise StoreError(
                    f"{name} is not valid OTLP/JSON: neither one JSON document ({whole_error}) nor JSON lines "
                    f"(line {number}: {exc})"
                ) from None
            yield f"line {number}: ", parsed


def read_otlp_json(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Parse and validate an OTLP/JSON (or JSON-lines) file into spans; StoreError naming the file
    and the problem when anything in it is invalid."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"OTLP/JSON file not found: {file}")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{file} is not valid OTLP/JSON: not UTF-8 text ({exc})") from None
    if not text.strip():
        raise StoreError(f"{file} is not valid OTLP/JSON: the file is empty")
    records: list[SpanRecord] = []
    for where, document in _requests(text, str(file)):
        if not isinstance(document, dict) or not ({"resourceSpans", "resource_spans"} & document.keys()):
            raise StoreError(
                f"{file} is not valid OTLP/JSON: {where}expected an object with a 'resourceSpans' list "
                f"(an ExportTraceServiceRequest), got {type(document).__name__}"
                + (f" with keys {sorted(document)[:5]}" if isinstance(document, dict) else "")
            )
        problems: list[str] = []
        converted = _b64_ids(document, "", problems)
        if problems:
            extra = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise StoreError(f"{file} is not valid OTLP/JSON: {where}" + "; ".join(problems[:3]) + extra)
        request = ExportTraceServiceRequest()
        try:
            json_format.ParseDict(converted, request, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            raise StoreError(f"{file} is not valid OTLP/JSON: {where}{exc}") from None
        records.extend(_records(request, str(file), where))
    return records


def _records(request: ExportTraceServiceRequest, name: str, where: str) -> Iterator[SpanRecord]:
    for r, resource_spans in enumerate(request.resource_spans):
        resource = _attributes(resource_spans.resource.attributes)
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope.name or None
            for n, span in enumerate(scope_spans.spans):
                location = f"{where}resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                if not span.trace_id or not span.span_id:
                    raise StoreError(f"{name} is not valid OTLP/JSON: {location} has no traceId or spanId")
                try:
                    yield SpanRecord(
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
                            SpanEvent(
                                name=e.name, time_ns=e.time_unix_nano, attributes=_attributes(e.attributes)
                            )
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
                    raise StoreError(
                        f"{name} is not valid OTLP/JSON: {location}: {exc.errors()[0]['msg']}"
                    ) from None


def import_otlp_json(store: SpanStore, path: str | os.PathLike[str]) -> list[str]:
    """Validate the whole file, then write all its spans in one transaction.

    Returns the run ids (trace ids) the file held, in order of first appearance. An invalid file
    raises :class:`StoreError` (FileNotFoundError when missing) and writes nothing.
    """
    records = read_otlp_json(path)
    store.write_spans(records)
    return list(dict.fromkeys(r.trace_id for r in records))
