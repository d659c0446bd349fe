"""SpanRecords from decoded store rows without pydantic validation, when the row is well formed.

Validating a stored span costs more than everything else about reading it. A row the store
wrote holds exactly what a valid record held, so :func:`span_record` checks every field the
way the model would (exact types, the id patterns, the literals) and builds the record the way
``model_construct`` does; a field it cannot vouch for sends the whole row through
``SpanRecord.model_validate``, which then coerces or raises exactly as before. The record is
equal to the validated one, field by field, with the same fields-set.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, get_args

from causal_middleware.spans.builder import SpanFacts
from causal_middleware.spans.record import SpanEvent, SpanLink, SpanRecord

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_KINDS = frozenset(get_args(SpanRecord.model_fields["kind"].annotation))
_STATUSES = frozenset(get_args(SpanRecord.model_fields["status_code"].annotation))
_RECORD_FIELDS = frozenset(SpanRecord.model_fields)
_EVENT_FIELDS = frozenset(SpanEvent.model_fields)
_LINK_FIELDS = frozenset(SpanLink.model_fields)
_new = object.__new__
_set = object.__setattr__


def _built(cls: type[Any], values: dict[str, Any], fields: frozenset[str]) -> Any:
    """What ``cls.model_construct(**values)`` makes when ``values`` names every field (the
    models here have no private attributes, no extras and no post-init hook)."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(fields))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def _items(raw: Any, cls: type[Any], fields: frozenset[str], types: dict[str, type]) -> list[Any] | None:
    """``raw`` (a decoded list of events or links) as ``cls`` models, or None when an item is not
    exactly a dict of ``fields`` whose values have the exact ``types``."""
    if type(raw) is not list:
        return None
    out = []
    for item in raw:
        if type(item) is not dict or item.keys() != fields:
            return None
        if any(type(item[name]) is not kind for name, kind in types.items()):
            return None
        out.append(_built(cls, {name: item[name] for name in types}, fields))
    return out


_EVENT_TYPES: dict[str, type] = {"name": str, "time_ns": int, "attributes": dict}
_LINK_TYPES: dict[str, type] = {"trace_id": str, "span_id": str, "attributes": dict}


def span_record(
    trace_id: Any,
    span_id: Any,
    parent_span_id: Any,
    name: Any,
    kind: Any,
    start_time_ns: Any,
    end_time_ns: Any,
    status_code: Any,
    status_message: Any,
    attributes: Any,
    events: Any,
    links: Any,
    resource: Any,
    scope: Any,
) -> SpanRecord:
    """The record of one decoded row: built directly when every field is what the model
    accepts unchanged, else validated (same coercions, same errors). ``attributes``,
    ``events``, ``links`` and ``resource`` must be the caller's own objects (they are kept)."""
    event_models = _items(events, SpanEvent, _EVENT_FIELDS, _EVENT_TYPES)
    link_models = _items(links, SpanLink, _LINK_FIELDS, _LINK_TYPES)
    values = {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent_span_id,
        "name": name,
        "kind": kind,
        "start_time_ns": start_time_ns,
        "end_time_ns": end_time_ns,
        "status_code": status_code,
        "status_message": status_message,
        "attributes": attributes,
        "events": events,
        "links": links,
        "resource": resource,
        "scope": scope,
    }
    if (
        type(trace_id) is str
        and _TRACE_ID.fullmatch(trace_id)
        and type(span_id) is str
        and _SPAN_ID.fullmatch(span_id)
        and (parent_span_id is None or (type(parent_span_id) is str and _SPAN_ID.fullmatch(parent_span_id)))
        and type(name) is str
        and type(kind) is str
        and kind in _KINDS
        and type(start_time_ns) is int
        and (end_time_ns is None or type(end_time_ns) is int)
        and type(status_code) is str
        and status_code in _STATUSES
        and (status_message is None or type(status_message) is str)
        and type(attributes) is dict
        and event_models is not None
        and link_models is not None
        and type(resource) is dict
        and (scope is None or type(scope) is str)
    ):
        values["events"], values["links"] = event_models, link_models
        return _built(SpanRecord, values, _RECORD_FIELDS)  # type: ignore[no-any-return]
    return SpanRecord.model_validate(values)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_TEXT_OR_NONE = frozenset({str, type(None)})
_INT_OR_NONE = frozenset({int, type(None)})


def _plain_copy(values: Any) -> dict[str, Any] | None:
    """A copy of an attribute map whose values come back from JSON exactly as they are (scalars,
    lists of scalars, string keys); None when one might not (a tuple, a nested map, a subclass)."""
    if type(values) is not dict:
        return None
    out: dict[str, Any] = {}
    for key, value in values.items():
        kind = type(value)
        if kind is list:
            if not _SCALARS.issuperset(map(type, value)):
                return None
            value = list(value)
        elif kind not in _SCALARS:
            return None
        if type(key) is not str:
            return None
        out[key] = value
    return out


def reread(record: SpanRecord) -> SpanRecord | None:
    """The record the store reads back after writing ``record`` (its own containers, nothing
    shared with ``record``), without encoding and decoding it: the same fields through
    :func:`span_record`, as the stored row would go. None when a value might come back from
    JSON changed; the caller then reads the stored row."""
    if not (
        type(record.trace_id) is str
        and type(record.span_id) is str
        and type(record.parent_span_id) in _TEXT_OR_NONE
        and type(record.name) is str
        and type(record.kind) is str
        and type(record.start_time_ns) is int
        and type(record.end_time_ns) in _INT_OR_NONE
        and type(record.status_code) is str
        and type(record.status_message) in _TEXT_OR_NONE
        and type(record.scope) in _TEXT_OR_NONE
    ):
        return None  # a column SQLite would hand back as another type
    attributes = _plain_copy(record.attributes)
    resource = _plain_copy(record.resource)
    if attributes is None or resource is None:
        return None
    events = []
    for event in record.events:
        event_attributes = _plain_copy(event.attributes)
        if event_attributes is None or type(event.name) is not str or type(event.time_ns) is not int:
            return None
        events.append({"name": event.name, "time_ns": event.time_ns, "attributes": event_attributes})
    links = []
    for link in record.links:
        link_attributes = _plain_copy(link.attributes)
        if link_attributes is None or type(link.trace_id) is not str or type(link.span_id) is not str:
            return None
        links.append({"trace_id": link.trace_id, "span_id": link.span_id, "attributes": link_attributes})
    return span_record(
        record.trace_id,
        record.span_id,
        record.parent_span_id,
        record.name,
        record.kind,
        record.start_time_ns,
        record.end_time_ns,
        record.status_code,
        record.status_message,
        attributes,
        events,
        links,
        resource,
        record.scope,
    )


_FACT_FIELDS = (
    "span_id",
    "parent_span_id",
    "start_time_ns",
    "end_time_ns",
    "type",
    "declared_run",
    "hop_index",
    "answer_text",
)
# SpanFacts is a plain frozen dataclass of these fields: its __init__ only sets them, in order
_PLAIN_FACTS = (
    tuple(f.name for f in dataclasses.fields(SpanFacts)) == _FACT_FIELDS
    and not hasattr(SpanFacts, "__post_init__")
    and not hasattr(SpanFacts, "__slots__")
    and all(f.init for f in dataclasses.fields(SpanFacts))
)


def row_facts(row: Sequence[Any]) -> SpanFacts:
    """The facts stored beside a span row (span id, parent, start, end at 1, 2, 5, 6; type,
    declared run, hop, answer at 14-17): what ``SpanFacts(...)`` of them makes, without the
    frozen ``__init__``'s eight ``object.__setattr__`` calls."""
    if not _PLAIN_FACTS:  # pragma: no cover - only if SpanFacts grows a hook or a field
        return SpanFacts(row[1], row[2], row[5], row[6], row[14], bool(row[15]), row[16], row[17])
    facts = _new(SpanFacts)
    _set(
        facts,
        "__dict__",
        {
            "span_id": row[1],
            "parent_span_id": row[2],
            "start_time_ns": row[5],
            "end_time_ns": row[6],
            "type": row[14],
            "declared_run": bool(row[15]),
            "hop_index": row[16],
            "answer_text": row[17],
        },
    )
    return facts  # type: ignore[no-any-return]
