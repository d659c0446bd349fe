"""Import TRAIL benchmark traces (patronus-ai/trail-benchmark, ``traces/gaia/*.json``).

A TRAIL trace file is ``{trace_id, spans: [...]}`` where each span has ``span_id``,
``parent_span_id``, ``span_name``, ``span_kind``, ``timestamp`` (ISO 8601), ``duration`` (ISO 8601,
e.g. ``PT1M48.75533S``), ``status_code`` (``Ok``/``Error``/``Unset``), ``span_attributes``
(OpenInference names), ``resource_attributes``, ``scope_name``, ``events``, ``logs`` and nested
``child_spans``. Each span becomes a :class:`SpanRecord`; each log record becomes a span event
named ``log`` (its body kept as JSON text) so TRAIL's function inputs and outputs are not lost.
The builder then reads the OpenInference kinds into steps and infers hops.

The run's reference is the GAIA ``true_answer`` the trace's own logs hold (the ``example``
argument of ``answer_single_question``, or the items ``get_examples_to_answer`` returned): it is
kept on every span without a parent as ``causal.run.reference``.

The human annotation of a trace (``annotations/<subset>/<trace file name>``: ``{trace_id?,
errors[{category, location, evidence, description, impact}], scores[...]}``) is found beside the
traces (``traces/<subset>/X.json`` -> ``annotations/<subset>/X.json``) or given explicitly, and
kept as run labels on the same spans (:data:`LABEL_ERROR_LOCATIONS`, :data:`LABEL_ERRORS`, ...).
Annotation files are read with one tolerance: a comma right after a value and before a closing
``]``/``}`` (the shipped ``a96c6811...json`` has one) is dropped, and the label
``trail.annotation_notes`` says where; any other malformation is refused. TRAIL's category
strings are not normalised (``Language-only``/``Language-Only``, ``Context Handling
Failure(s)``); each error keeps its category as written and the taxonomy's spelling as
``category_normalised``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from causal_middleware.spans import attributes as A
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

__all__ = [
    "LABEL_ERRORS",
    "LABEL_ERROR_LOCATIONS",
    "TrailAnnotation",
    "annotation_path",
    "import_trail_trace",
    "loads_tolerant",
    "normalise_category",
    "read_trail_annotation",
    "read_trail_trace",
]

LABEL_ERROR_LOCATIONS = "trail.error_locations"  # annotated error span ids, in file order, once each
LABEL_ERRORS = "trail.errors"  # [{location, category, category_normalised, impact}]
LABEL_CATEGORIES = "trail.error_categories"  # the normalised categories, sorted, once each
LABEL_NOTES = "trail.annotation_notes"  # what the tolerant reader repaired

#: TRAIL's error taxonomy (Deshpande et al. 2025), the spelling categories are normalised to
TAXONOMY = (
    "Language-only",
    "Tool-related",
    "Poor Information Retrieval",
    "Tool Output Misinterpretation",
    "Incorrect Problem Identification",
    "Tool Selection Errors",
    "Formatting Errors",
    "Instruction Non-compliance",
    "Tool Definition Issues",
    "Environment Setup Errors",
    "Rate Limiting",
    "Authentication Errors",
    "Service Errors",
    "Resource Not Found",
    "Resource Exhaustion",
    "Timeout Issues",
    "Context Handling Failures",
    "Resource Abuse",
    "Goal Deviation",
    "Task Orchestration",
)
_CANONICAL = {c.casefold(): c for c in TAXONOMY}
_ALIASES = {
    "context handling failure": "Context Handling Failures",
    "tool selection": "Tool Selection Errors",
}

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


def normalise_category(category: str) -> str:
    """TRAIL's spelling of an error category (case, spacing and the known variants folded);
    an unknown category is returned with its spacing tidied."""
    tidy = " ".join(str(category).split())
    key = tidy.casefold()
    return _CANONICAL.get(key) or _ALIASES.get(key) or tidy


def loads_tolerant(text: str) -> tuple[Any, list[str]]:
    """``json.loads`` that drops a trailing comma: a ``,`` outside strings that follows a value
    and is followed (after whitespace) by ``]`` or ``}``. Only there: anything else malformed is
    the usual ``json.JSONDecodeError``. Returns the value and one note per comma dropped."""
    try:
        return json.loads(text), []
    except json.JSONDecodeError:
        pass
    out: list[str] = []
    notes: list[str] = []
    in_string = escaped = False
    last = ""  # the last significant character outside strings ('"' for a string's end)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            out.append(ch)
            i += 1
            continue
        if ch == '"':
            in_string = True
            last = '"'
        elif ch == "," and last not in ("", "[", "{", ",", ":"):
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "]}":
                line = text.count("\n", 0, i) + 1
                column = i - (text.rfind("\n", 0, i) + 1) + 1
                notes.append(f"dropped a trailing comma before '{text[j]}' at line {line} column {column}")
                i += 1
                continue
            last = ch
        elif ch not in " \t\r\n":
            last = ch
        out.append(ch)
        i += 1
    return json.loads("".join(out)), notes


@dataclass(frozen=True)
class TrailAnnotation:
    """One trace's human annotation: its errors (each a span id, a category and an impact) and
    scores, with what the tolerant reader had to repair."""

    file: str
    trace_id: str | None
    errors: tuple[dict[str, Any], ...]
    scores: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def locations(self) -> list[str]:
        """The annotated error span ids, in file order, once each."""
        return list(dict.fromkeys(e["location"] for e in self.errors))

    def labels(self) -> dict[str, Any]:
        labels: dict[str, Any] = {
            LABEL_ERROR_LOCATIONS: self.locations,
            LABEL_ERRORS: [dict(e) for e in self.errors],
            LABEL_CATEGORIES: sorted({e["category_normalised"] for e in self.errors}),
            "trail.n_errors": len(self.errors),
            "trail.annotation_file": self.file,
        }
        if self.scores:
            labels["trail.scores"] = dict(self.scores)
        if self.notes:
            labels[LABEL_NOTES] = list(self.notes)
        return labels


def read_trail_annotation(path: str | os.PathLike[str]) -> TrailAnnotation:
    """One TRAIL annotation file (a trailing comma tolerated, see :func:`loads_tolerant`);
    StoreError naming the file and problem when it is not one."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"TRAIL annotation file not found: {file}")
    bad = f"{file} is not a TRAIL annotation"
    try:
        data, notes = loads_tolerant(file.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise StoreError(f"{bad}: not UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise StoreError(f"{bad}: malformed JSON ({exc})") from None
    except RecursionError:
        raise StoreError(f"{bad}: JSON nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("errors"), list):
        raise StoreError(f"{bad}: expected an object with an 'errors' list")
    errors = []
    for n, error in enumerate(data["errors"]):
        where = f"{bad}: errors[{n}]"
        if not isinstance(error, dict):
            raise StoreError(f"{where} must be an object, got {type(error).__name__}")
        location, category = error.get("location"), error.get("category")
        if not isinstance(location, str) or not location.strip():
            raise StoreError(f"{where} has no 'location' (the span id of the error)")
        if not isinstance(category, str) or not category.strip():
            raise StoreError(f"{where} has no 'category'")
        errors.append(
            {
                "location": location.strip(),
                "category": category,
                "category_normalised": normalise_category(category),
                "impact": str(error.get("impact") or ""),
            }
        )
    scores: dict[str, Any] = {}
    raw_scores = data.get("scores")
    if isinstance(raw_scores, list) and raw_scores and isinstance(raw_scores[0], dict):
        scores = {
            k: v for k, v in raw_scores[0].items() if isinstance(v, int | float) and not isinstance(v, bool)
        }
    trace_id = data.get("trace_id")
    return TrailAnnotation(
        file=file.name,
        trace_id=str(trace_id) if trace_id else None,
        errors=tuple(errors),
        scores=scores,
        notes=tuple(notes),
    )


def annotation_path(trace: str | os.PathLike[str]) -> Path | None:
    """Where TRAIL keeps the annotation of a trace file (``traces/<subset>/X.json`` ->
    ``annotations/<subset>/X.json``), when that file exists; else None."""
    file = Path(trace)
    candidate = file.parent.parent.parent / "annotations" / file.parent.name / file.name
    return candidate if file.parent.parent.name == "traces" and candidate.is_file() else None


def _true_answer(logs: Any) -> str | None:
    """GAIA's ``true_answer`` in a span's logs: the ``example`` argument of
    ``answer_single_question`` or an item ``get_examples_to_answer`` returned."""
    for log in logs if isinstance(logs, list) else []:
        body = log.get("body") if isinstance(log, Mapping) else None
        if not isinstance(body, Mapping):
            continue
        arguments = body.get("function.arguments")
        example = arguments.get("example") if isinstance(arguments, Mapping) else None
        output = body.get("function.output")
        for item in [example, *(output if isinstance(output, list) else [output])]:
            if isinstance(item, Mapping) and item.get("true_answer") is not None:
                answer = item["true_answer"]
                return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return None


# Spans a trace may hold to be written in one store transaction; a larger file is validated whole
# (a streaming pass that keeps nothing), then read again and written in batches.
BATCH_SPANS = 20_000
BATCH_CHARS = 16 << 20
_PLACEHOLDER_TRACE = "0" * 31 + "1"  # stands in for a document trace_id written after the spans


class _TrailReader:
    """One streaming pass over a TRAIL trace file: yields ``(pre-order index, record)`` per span,
    each span once its object (children included) has been read."""

    def __init__(
        self,
        file: Path,
        trace_id: str | None = None,
        *,
        annotation: TrailAnnotation | None = None,
        reference: str | None = None,
    ) -> None:
        self.file = file
        self.name = str(file)
        self.trace_id = trace_id  # the document's; given to a second pass when it came late
        self.late_trace = False  # a span needed the document's trace_id before it was read
        self.borrowed: list[int] = []  # indexes of spans that took the document's trace_id
        self.annotation = annotation
        self.reference = reference  # the logs' true_answer; given to a second pass
        self.roots: list[int] = []  # indexes of the spans without a parent (they carry the run's facts)
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
                self._check_annotation()
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
        self._check_annotation()

    def _check_annotation(self) -> None:
        annotation = self.annotation
        if annotation is None or annotation.trace_id is None or self.trace_id is None:
            return
        if annotation.trace_id != self.trace_id:
            raise StoreError(
                f"{self.name}: its annotation {annotation.file!r} is of trace {annotation.trace_id!r}, "
                f"not {self.trace_id!r}"
            )

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
        if self.reference is None:
            self.reference = _true_answer(fields.get("logs"))
        borrowed = not fields.get("trace_id")
        trace_id = self.trace_id
        if borrowed:
            self.borrowed.append(index)
            if trace_id is None:
                trace_id = _PLACEHOLDER_TRACE  # checked once the document's trace_id is read
        try:
            record = _record(str(trace_id), fields, where)
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = ".".join(str(p) for p in error["loc"])
            raise ValueError(f"{where}: {loc}: {error['msg']}") from None
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        if record.parent_span_id is None:
            self.roots.append(index)
            self._annotate(record)
        yield index, record

    def _annotate(self, record: SpanRecord) -> None:
        """Give a span without a parent the run's reference and the annotation's labels."""
        attrs = dict(record.attributes)
        if self.reference is not None and A.CAUSAL_RUN_REFERENCE not in attrs:
            attrs[A.CAUSAL_RUN_REFERENCE] = json.dumps(self.reference, ensure_ascii=False)
        if self.annotation is not None:
            try:
                current = json.loads(str(attrs.get(A.CAUSAL_RUN_LABELS) or "{}"))
            except json.JSONDecodeError:
                current = {}
            labels = {**(current if isinstance(current, dict) else {}), **self.annotation.labels()}
            attrs[A.CAUSAL_RUN_LABELS] = json.dumps(labels, ensure_ascii=False)
        record.attributes = attrs

    def patched(self, held: list[tuple[int, SpanRecord]]) -> list[SpanRecord]:
        """``held`` in file (pre-)order, with the document's trace_id given to the spans that
        borrowed it before it was read."""
        self.check_late_trace()
        if self.late_trace and self.borrowed:
            borrowed = set(self.borrowed)
            for index, record in held:
                if index in borrowed:
                    record.trace_id = str(self.trace_id)
        roots = set(self.roots)
        for index, record in held:  # a true_answer read after a root span was yielded
            if index in roots:
                self._annotate(record)
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


Annotations = str | os.PathLike[str] | Literal[False] | None


def _annotation(file: Path, annotations: Annotations) -> TrailAnnotation | None:
    if annotations is False:
        return None
    found = annotation_path(file) if annotations is None else Path(annotations)
    return read_trail_annotation(found) if found is not None else None


def read_trail_trace(path: str | os.PathLike[str], annotations: Annotations = None) -> list[SpanRecord]:
    """Parse one TRAIL trace file into spans (parents before children, as in the file); StoreError
    naming the file and problem when invalid. (The whole list is in memory: to load a large file
    into a store, use :func:`import_trail_trace`, which streams.)

    ``annotations``: the annotation file whose errors become labels; None (the default) looks for
    it beside the traces (:func:`annotation_path`), False reads none.
    """
    file = _existing(path)
    reader = _TrailReader(file, annotation=_annotation(file, annotations))
    return reader.patched(list(reader.records()))


def import_trail_trace(
    store: SpanStore, path: str | os.PathLike[str], annotations: Annotations = None
) -> str:
    """Load one TRAIL trace file into ``store``; returns its run id (the document's trace id).

    An invalid file (or annotation) writes nothing. A trace of at most :data:`BATCH_SPANS` spans
    is written in one transaction; a larger one is validated in one streaming pass, then written
    batch by batch. ``annotations`` as for :func:`read_trail_trace`.
    """
    file = _existing(path)
    annotation = _annotation(file, annotations)
    before = stamp(file)
    first = _TrailReader(file, annotation=annotation)
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
    second = _TrailReader(file, trace_id=first.trace_id, annotation=annotation, reference=first.reference)
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
