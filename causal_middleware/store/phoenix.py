"""Runs that live in Arize Phoenix, read through its REST API; verdicts written back as annotations.

:class:`PhoenixSpanSource` lists a Phoenix project's traces (newest first, optionally since a
time), fetches each trace's spans and converts them into :class:`SpanRecord`s, so the same
trajectory builder reads them as it reads spans recorded locally or imported from OTLP/JSON.
:meth:`PhoenixSpanSource.pull` writes them into a span store; pulling again adds only spans the
store does not hold yet, so it never duplicates a run and never overwrites a run recorded locally
with Phoenix's copy (which has microsecond times, no resource and the exporter's redactions).

What Phoenix changes on ingest, and how :func:`record_from_phoenix` undoes it:

* ``openinference.span.kind`` moves out of the attributes into ``span_kind``: put back (unless
  ``UNKNOWN``, Phoenix's word for "absent");
* the OpenInference attributes that hold JSON text (``metadata``, ``*.document.metadata``,
  ``tool.parameters``, ``llm.prompt_template.variables``) are parsed and come back as dotted
  keys (``metadata.langgraph_node``): joined back into JSON text under their own key;
* times are ISO 8601 with microseconds (nanoseconds are lost); the OTel span kind, links,
  resource and scope are not kept: every pulled span is ``INTERNAL`` and its resource is the
  project name (``openinference.project.name``), where it came from;
* where a span has ``input.value`` and no ``input.mime_type``, Phoenix adds ``text/plain``.

Annotations a Phoenix user put on a run's root span (``correctness: incorrect`` from an eval, a
reviewer's thumbs-down) become the run's labels ``phoenix.<name>`` (the label, else the score),
so ``causal-mw runs list --label phoenix.correctness=incorrect`` finds them.

The official ``arize-phoenix-client`` (the ``[phoenix]`` extra) does the HTTP; it is imported on
first use. Every failure (package missing, Phoenix unreachable, unknown project, a span Phoenix
does not have) is a :class:`PhoenixError`: one line, a ``ValueError`` the CLI maps to exit 2.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from causal_middleware.spans import attributes as A
from causal_middleware.spans.builder import choose_root, span_facts
from causal_middleware.spans.record import SpanEvent, SpanRecord
from causal_middleware.store.base import SpanStore, StoreError

if TYPE_CHECKING:  # the client is an optional extra, imported lazily
    from phoenix.client import Client

__all__ = [
    "PROJECT_RESOURCE_ATTRIBUTE",
    "PhoenixError",
    "PhoenixSpanSource",
    "PhoenixTrace",
    "PullResult",
    "SpanAnnotation",
    "record_from_phoenix",
]

PROJECT_RESOURCE_ATTRIBUTE = "openinference.project.name"
INSTALL_HINT = "pip install 'causal-middleware[phoenix]' (or: pip install arize-phoenix-client)"
#: annotation names this library writes back; not read back as labels of the run
OWN_ANNOTATION_NAMES = frozenset({"root_cause", "repair"})
LABEL_PREFIX = "phoenix."

# Attribute keys Phoenix parses as JSON on ingest (phoenix.trace.attributes.JSON_STRING_ATTRIBUTES,
# matched like Phoenix does: by the end of the key).
_JSON_STRING_SUFFIXES = ("metadata", "llm.prompt_template.variables", "tool.parameters")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TRACE_IDS_PER_REQUEST = 50
_SPAN_IDS_PER_REQUEST = 100
_ALL = 1 << 62  # "no limit" for the client's page loops

_T = TypeVar("_T")


class PhoenixError(StoreError):
    """Talking to Phoenix failed (unreachable, unknown project, missing span, client not installed)."""


class PhoenixTrace(BaseModel):
    """One trace of a project as Phoenix lists it (a run, when our instrumentation recorded it)."""

    trace_id: str
    start_time: datetime | None = None
    end_time: datetime | None = None


class SpanAnnotation(BaseModel):
    """A Phoenix span annotation: what is written back, and what is read back (``id`` set)."""

    span_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    name: str = Field(min_length=1)
    annotator_kind: Literal["LLM", "CODE", "HUMAN"] = "CODE"
    label: str | None = None
    score: float | None = None
    explanation: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    identifier: str = ""
    id: str | None = None


@dataclass
class PullResult:
    """What :meth:`PhoenixSpanSource.pull` did (the JSON of ``causal-mw runs pull --json``)."""

    url: str
    project: str
    run_ids: list[str] = field(default_factory=list)  # traces pulled, newest first
    new_run_ids: list[str] = field(default_factory=list)  # of those, not in the store before
    spans_written: int = 0  # spans the store did not hold yet
    spans_present: int = 0  # spans already in the store, left as they were
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> phoenix.* labels set

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "project": self.project,
            "run_ids": self.run_ids,
            "new_run_ids": self.new_run_ids,
            "spans_written": self.spans_written,
            "spans_present": self.spans_present,
            "labels": self.labels,
        }


# --------------------------------------------------------------------------------------------
# Phoenix span JSON -> SpanRecord
# --------------------------------------------------------------------------------------------
def _ns(value: Any, what: str) -> int:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be an ISO 8601 time, got {value!r}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return ((moment - _EPOCH) // timedelta(microseconds=1)) * 1000


def _json_key(key: str) -> tuple[str, list[str]] | None:
    """``(json attribute, path inside it)`` for a dotted key Phoenix produced from JSON text."""
    parts = key.split(".")
    for end in range(1, len(parts)):
        head = ".".join(parts[:end])
        if head.endswith(_JSON_STRING_SUFFIXES):
            return head, parts[end:]
    return None


def _as_lists(node: Any) -> Any:
    """Dicts keyed 0..n-1 back into lists (Phoenix flattens lists of objects into indexed keys)."""
    if not isinstance(node, dict):
        return node
    out = {k: _as_lists(v) for k, v in node.items()}
    if out and all(k.isdigit() for k in out) and sorted(map(int, out)) == list(range(len(out))):
        return [out[str(i)] for i in range(len(out))]
    return out


def _attributes(flat: Mapping[str, Any], span_kind: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        if key.endswith(_JSON_STRING_SUFFIXES):
            out[key] = value if isinstance(value, str) else json.dumps(value)
            continue
        split = _json_key(key)
        if split is None:
            out[key] = value
            continue
        head, path = split
        out.setdefault(head, None)  # keep the attribute where its first key was
        node = nested.setdefault(head, {})
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[path[-1]] = value
    for head, tree in nested.items():
        out[head] = json.dumps(_as_lists(tree))
    if isinstance(span_kind, str) and span_kind and span_kind != "UNKNOWN":
        out.setdefault(A.OPENINFERENCE_SPAN_KIND, span_kind)
    return {k: v for k, v in out.items() if v is not None}


def record_from_phoenix(span: Mapping[str, Any], project: str | None = None) -> SpanRecord:
    """One span as Phoenix's REST API returns it (``GET /v1/projects/{p}/spans``), as a SpanRecord.

    ValueError (naming the span) when it lacks ids or times, or they are malformed.
    """
    context = span.get("context") or {}
    span_id = context.get("span_id") if isinstance(context, Mapping) else None
    try:
        status = span.get("status_code") or "UNSET"
        return SpanRecord.model_validate(
            {
                "trace_id": context.get("trace_id"),
                "span_id": span_id,
                "parent_span_id": span.get("parent_id") or None,
                "name": span.get("name") or "",
                "kind": "INTERNAL",
                "start_time_ns": _ns(span.get("start_time"), "start_time"),
                "end_time_ns": _ns(span["end_time"], "end_time") if span.get("end_time") else None,
                "status_code": status if status in ("OK", "ERROR") else "UNSET",
                "status_message": span.get("status_message") or None,
                "attributes": _attributes(span.get("attributes") or {}, span.get("span_kind")),
                "events": [
                    SpanEvent(
                        name=e.get("name") or "",
                        time_ns=_ns(e.get("timestamp"), "event timestamp"),
                        attributes=dict(e.get("attributes") or {}),
                    )
                    for e in span.get("events") or []
                ],
                "resource": {PROJECT_RESOURCE_ATTRIBUTE: project} if project else {},
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ValueError(f"Phoenix span {span_id!r}: {where}: {error['msg']}") from None
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"Phoenix span {span_id!r}: {exc}") from None


# --------------------------------------------------------------------------------------------
# the source
# --------------------------------------------------------------------------------------------
def _check_url(url: str) -> str:
    url = url.strip()
    if not re.match(r"^https?://[^/\s]+", url):
        raise PhoenixError(f"--phoenix must be an http(s) URL such as http://localhost:6006, got {url!r}")
    return url.rstrip("/")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class PhoenixSpanSource:
    """A Phoenix server (``http://host:6006``) as a source of runs and a sink for verdicts.

    ``PHOENIX_API_KEY`` (and ``PHOENIX_CLIENT_HEADERS``) in the environment authenticate, as for
    every Phoenix client. ``client``: an ``arize-phoenix-client`` ``Client`` to use instead.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        client: Client | None = None,
        span_wait_s: float = 10.0,
    ) -> None:
        self.url = _check_url(url)
        self.timeout_s = timeout_s
        # Phoenix ingests exported spans asynchronously: a verdict written right after the run
        # (a background repair) can reach it before the span does; annotate waits this long for it
        self.span_wait_s = span_wait_s
        self._client = client

    # --- plumbing --------------------------------------------------------------------------
    def _api(self) -> Client:
        if self._client is None:
            try:
                from phoenix.client import Client
            except ImportError:
                raise PhoenixError(
                    f"reading from Phoenix needs the arize-phoenix-client package: {INSTALL_HINT}"
                ) from None
            self._client = Client(base_url=self.url)
        return self._client

    @contextmanager
    def _calling(self, what: str, project: str | None = None) -> Iterator[None]:
        """Turn the client's exceptions into one-line PhoenixErrors naming the server and the call."""
        self._api()  # the client first: without it, a PhoenixError naming the extra (httpx comes with it)
        import httpx

        try:
            yield
        except httpx.HTTPStatusError as exc:
            code = exc.response.status_code
            detail = _response_detail(exc.response)
            if code == 404 and project is not None and "project" in detail.lower():
                raise PhoenixError(
                    f"Phoenix at {self.url} has no project {project!r}{self._known_projects()}"
                ) from None
            if code in (401, 403):
                raise PhoenixError(
                    f"Phoenix at {self.url} refused {what} (HTTP {code}): set PHOENIX_API_KEY"
                ) from None
            raise PhoenixError(f"Phoenix at {self.url}: {what} failed (HTTP {code}: {detail})") from None
        except httpx.TransportError as exc:
            reason = _one_line(str(exc)) or type(exc).__name__
            raise PhoenixError(f"cannot reach Phoenix at {self.url} ({what}): {reason}") from None
        except PhoenixError:
            raise
        except Exception as exc:  # PhoenixException (version guard), bad JSON: still one line
            name = type(exc).__name__
            if name == "PhoenixException" or isinstance(exc, ValueError | KeyError | TypeError):
                raise PhoenixError(f"Phoenix at {self.url}: {what}: {_one_line(str(exc))}") from None
            raise

    def _known_projects(self) -> str:
        try:
            names = self.projects()
        except PhoenixError:
            return ""
        return f" (it has: {', '.join(names[:10])})" if names else " (it has no projects)"

    # --- reading ---------------------------------------------------------------------------
    def projects(self) -> list[str]:
        """Names of the server's projects."""
        with self._calling("listing projects"):
            return [str(p["name"]) for p in self._api().projects.list()]

    def traces(
        self, project: str, *, since: datetime | None = None, limit: int | None = 100
    ) -> list[PhoenixTrace]:
        """The project's traces, newest first: at most ``limit`` (None: all) started at or after ``since``."""
        if limit is not None and limit < 1:
            raise PhoenixError(f"--limit must be at least 1, got {limit}")
        with self._calling(f"listing traces of project {project!r}", project):
            rows = self._api().traces.get_traces(
                project_identifier=project,
                start_time=_aware(since),
                sort="start_time",
                order="desc",
                limit=_ALL if limit is None else limit,
                timeout=int(self.timeout_s),
            )
            return [
                PhoenixTrace.model_validate(
                    {
                        "trace_id": r["trace_id"],
                        "start_time": r.get("start_time"),
                        "end_time": r.get("end_time"),
                    }
                )
                for r in rows
            ]

    def spans(self, project: str, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
        """Every span of each trace (trace id -> its spans in start order)."""
        out: dict[str, list[SpanRecord]] = {t: [] for t in trace_ids}
        for chunk in _chunks(list(trace_ids), _TRACE_IDS_PER_REQUEST):
            with self._calling(f"fetching spans of project {project!r}", project):
                raw = self._api().spans.get_spans(
                    project_identifier=project,
                    trace_ids=list(chunk),
                    limit=_ALL,
                    timeout=int(self.timeout_s),
                )
                for item in raw:
                    record = record_from_phoenix(item, project)
                    out.setdefault(record.trace_id, []).append(record)
        for records in out.values():
            records.sort(key=lambda r: (r.start_time_ns, r.span_id))
        return out

    def span_annotations(
        self, project: str, span_ids: Sequence[str], *, names: Sequence[str] | None = None
    ) -> list[SpanAnnotation]:
        """The annotations Phoenix holds on these spans (optionally only those ``names``)."""
        out: list[SpanAnnotation] = []
        for chunk in _chunks(list(dict.fromkeys(span_ids)), _SPAN_IDS_PER_REQUEST):
            with self._calling(f"reading span annotations of project {project!r}", project):
                rows = self._api().spans.get_span_annotations(
                    span_ids=list(chunk),
                    project_identifier=project,
                    include_annotation_names=list(names) if names is not None else None,
                    timeout=int(self.timeout_s),
                )
                for row in rows:
                    result = row.get("result") or {}
                    out.append(
                        SpanAnnotation(
                            span_id=row["span_id"],
                            name=row["name"],
                            annotator_kind=row.get("annotator_kind") or "CODE",
                            label=result.get("label"),
                            score=result.get("score"),
                            explanation=result.get("explanation"),
                            metadata=dict(row.get("metadata") or {}),
                            identifier=row.get("identifier") or "",
                            id=row.get("id"),
                        )
                    )
        return out

    # --- pulling into a store -----------------------------------------------------------------
    def pull(
        self,
        store: SpanStore,
        project: str,
        *,
        since: datetime | None = None,
        limit: int | None = 100,
        traces: Sequence[PhoenixTrace] | None = None,
        on_run: Callable[[str, int], None] | None = None,
    ) -> PullResult:
        """Copy the project's newest ``limit`` traces (started at or after ``since``) into ``store``;
        ``traces``: these (from :meth:`traces`) instead of listing them.

        Spans the store already holds are left as they are; each run is written in one
        transaction. ``on_run(run_id, spans_written)`` is called after each run.
        """
        result = PullResult(url=self.url, project=project)
        if traces is None:
            traces = self.traces(project, since=since, limit=limit)
        result.run_ids = [t.trace_id for t in traces]
        for chunk in _chunks(result.run_ids, _TRACE_IDS_PER_REQUEST):
            fetched = self.spans(project, chunk)
            roots: dict[str, str] = {}
            for run_id in chunk:
                records = fetched.get(run_id, [])
                try:
                    held = {s.span_id for s in store.get_spans(run_id)}
                except KeyError:
                    held = set()
                    if records:
                        result.new_run_ids.append(run_id)
                missing = [r for r in records if r.span_id not in held]
                if missing:
                    store.write_spans(missing)
                result.spans_written += len(missing)
                result.spans_present += len(records) - len(missing)
                root = choose_root(span_facts(r) for r in records)
                if root is not None:
                    roots[root.span_id] = run_id
                if on_run is not None:
                    on_run(run_id, len(missing))
            self._label_runs(store, project, roots, result)
        return result

    def _label_runs(
        self, store: SpanStore, project: str, roots: Mapping[str, str], result: PullResult
    ) -> None:
        if not roots:
            return
        labels: dict[str, dict[str, Any]] = {}
        for note in self.span_annotations(project, list(roots)):
            if note.name in OWN_ANNOTATION_NAMES:
                continue
            value: Any = note.label if note.label is not None else note.score
            if value is None:
                continue
            labels.setdefault(roots[note.span_id], {})[LABEL_PREFIX + note.name] = value
        for run_id, run_labels in labels.items():
            store.annotate(run_id, labels=run_labels)
            result.labels[run_id] = run_labels

    # --- writing verdicts back ------------------------------------------------------------------
    def annotate(self, annotations: Sequence[SpanAnnotation]) -> list[str]:
        """Write span annotations (synchronously: Phoenix checks the spans exist); returns their ids.

        An annotation with the same span, name and identifier as an existing one replaces it, so
        writing the same verdict twice leaves one annotation.
        """
        if not annotations:
            return []
        for note in annotations:
            if note.label is None and note.score is None and note.explanation is None:
                raise PhoenixError(
                    f"annotation {note.name!r} on span {note.span_id} has no label, score or explanation"
                )
        payload: list[Any] = [
            {
                "span_id": n.span_id,
                "name": n.name,
                "annotator_kind": n.annotator_kind,
                "result": {"label": n.label, "score": n.score, "explanation": n.explanation},
                "metadata": n.metadata,
                "identifier": n.identifier,
            }
            for n in annotations
        ]
        deadline = time.monotonic() + self.span_wait_s
        delay = 0.1
        while True:
            try:
                with self._calling("writing span annotations"):
                    inserted = self._api().spans.log_span_annotations(span_annotations=payload, sync=True)
                return [str(row["id"]) for row in inserted]
            except PhoenixError as exc:
                # "Spans with IDs ... do not exist": not ingested yet, or never exported
                if "do not exist" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def _response_detail(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return _one_line(response.text)[:200]
    detail = body.get("detail") if isinstance(body, dict) else body
    return _one_line(detail if isinstance(detail, str) else json.dumps(detail))[:200]
