"""Behaviour the in-memory and SQLite stores share, so both answer every question identically:
span encoding, run annotations and their overlay, list filters, derived-record payloads."""

from __future__ import annotations

import json
import pickle
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError, to_jsonable_python

from causal_middleware.spans.builder import RunFacts, datetime_from_ns
from causal_middleware.spans.model import Lineage, Outcome, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import RunSummary, StoreError
from causal_middleware.store.stitch import is_stitched, lent_parent, stitch_from_store


class StoredRecord(BaseModel):
    """A derived record (intervention, diagnosis, repair, ...) as the store keeps it."""

    id: str
    kind: str
    run_id: str
    created: datetime
    payload: dict[str, Any] = Field(default_factory=dict)


class Annotations(BaseModel):
    """Run-level facts set through ``annotate``; they override what the spans say."""

    outcome: Outcome | None = None
    reference: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)
    lineage: Lineage | None = None

    def merged(
        self,
        *,
        outcome: Outcome | None,
        reference: str | None,
        labels: Mapping[str, Any] | None,
        lineage: Lineage | None,
    ) -> Annotations:
        return Annotations(
            outcome=outcome if outcome is not None else self.outcome,
            reference=reference if reference is not None else self.reference,
            labels={**self.labels, **(labels or {})},
            lineage=lineage if lineage is not None else self.lineage,
        )


def dumps(value: Any, what: str) -> str:
    """Compact JSON, or a StoreError naming ``what`` could not be encoded."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from exc


def encode_span(record: SpanRecord) -> dict[str, Any]:
    """The JSON-encoded columns of one span (raises StoreError before anything is written)."""
    where = f"span {record.span_id} of trace {record.trace_id}"
    return {
        "attributes": dumps(record.attributes, f"attributes of {where}"),
        "events": dumps([e.model_dump() for e in record.events], f"events of {where}"),
        "links": dumps([link.model_dump() for link in record.links], f"links of {where}"),
        "resource": dumps(record.resource, f"resource of {where}"),
    }


def decode_span(row: Mapping[str, Any]) -> SpanRecord:
    """A SpanRecord from stored columns (``attributes``/``events``/``links``/``resource`` as JSON)."""
    return SpanRecord.model_validate(
        {
            "trace_id": row["trace_id"],
            "span_id": row["span_id"],
            "parent_span_id": row["parent_span_id"],
            "name": row["name"],
            "kind": row["kind"],
            "start_time_ns": row["start_time_ns"],
            "end_time_ns": row["end_time_ns"],
            "status_code": row["status_code"],
            "status_message": row["status_message"],
            "attributes": json.loads(row["attributes"]),
            "events": json.loads(row["events"]),
            "links": json.loads(row["links"]),
            "resource": json.loads(row["resource"]),
            "scope": row["scope"],
        }
    )


def encode_payload(kind: str, run_id: str, payload: Any) -> str:
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"record kind must be a non-empty string, got {kind!r}")
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"record run_id must be a non-empty string, got {run_id!r}")
    if not isinstance(payload, Mapping):
        raise ValueError(f"record payload must be a dict, got {type(payload).__name__}")
    try:
        plain = to_jsonable_python(dict(payload))
    except PydanticSerializationError as exc:
        raise StoreError(
            f"payload of the {kind!r} record for run {run_id} is not JSON-serialisable: {exc}"
        ) from exc
    return dumps(plain, f"payload of the {kind!r} record for run {run_id}")


def normalize_outcome(outcome: Outcome | str | None) -> Outcome | None:
    if outcome is None or isinstance(outcome, Outcome):
        return outcome
    try:
        return Outcome(str(outcome).strip().lower())
    except ValueError:
        raise ValueError(
            f"unknown outcome {outcome!r}; expected one of {', '.join(o.value for o in Outcome)}"
        ) from None


def check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")


def to_ns(moment: datetime | None) -> int | None:
    """Nanoseconds since the epoch; a naive datetime is taken as UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def label_matches(labels: Mapping[str, Any], label: str) -> bool:
    """``key`` matches when the key is present; ``key=value`` when the value equals ``value`` as
    plain text or as JSON text (so ``hop=2`` matches both ``{"hop": 2}`` and ``{"hop": "2"}``)."""
    key, sep, wanted = label.partition("=")
    key = key.strip()
    if key not in labels:
        return False
    if not sep:
        return True
    value = labels[key]
    if isinstance(value, str) and value == wanted:
        return True
    return json.dumps(value, ensure_ascii=False) == wanted.strip() or str(value) == wanted


def check_label(label: str | None) -> None:
    if label is not None and not label.partition("=")[0].strip():
        raise ValueError(f"label filter must be 'key' or 'key=value', got {label!r}")


def effective_summary(facts: RunFacts, annotations: Annotations) -> RunSummary:
    """The run's summary with annotations applied over the span-derived facts."""
    lineage = annotations.lineage or facts.lineage
    return RunSummary(
        run_id=facts.run_id,
        thread_id=facts.thread_id,
        graph=facts.graph,
        started_at=datetime_from_ns(facts.started_at_ns),
        ended_at=datetime_from_ns(facts.ended_at_ns),
        status=facts.status,
        outcome=annotations.outcome or facts.outcome,
        answer=facts.answer,
        n_hops=facts.n_hops,
        n_spans=facts.n_spans,
        labels={**facts.labels, **annotations.labels},
        parent_run_id=lineage.parent_run_id if lineage is not None else None,
    )


def overlay(trajectory: Trajectory, annotations: Annotations) -> Trajectory:
    """Apply the store's annotations to a trajectory built from spans."""
    return trajectory.model_copy(
        update={
            "outcome": annotations.outcome or trajectory.outcome,
            "reference": annotations.reference if annotations.reference is not None else trajectory.reference,
            "labels": {**trajectory.labels, **annotations.labels},
            "lineage": annotations.lineage or trajectory.lineage,
        }
    )


def outcome_matches(summary_outcome: Outcome | None, wanted: Outcome) -> bool:
    """``unknown`` also matches runs whose outcome was never set."""
    if wanted is Outcome.UNKNOWN:
        return summary_outcome in (None, Outcome.UNKNOWN)
    return summary_outcome is wanted


class TrajectoryCache:
    """Built (and stitched) trajectories kept as pickles, newest used last, at most ``size``.

    A read unpickles a fresh, fully independent trajectory (about 3x cheaper than a deep copy of
    a live one, and a caller mutating it never reaches the cache). A run's entry holds its own
    trajectory under the run's version and, for a fork, the stitched one under the versions of
    the fork's ancestors, so a fork read again costs one unpickle instead of a rebuild, a parent
    read and a stitch. A fork's own (unstitched) trajectory is never handed out, so its entry
    keeps only the parent it is stitched onto, not a pickle of it: reading the fork again needs
    the stitched pickle alone, and only a change to an ancestor rebuilds the fork's own. Thread-safe.

    It also remembers (weakly, the last ``size``) which trajectory objects it handed out, for which
    run and versions: a parent lent back through ``stitch.lend_parent`` is stitched onto only when
    it is one of them, still current.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        # run id -> (version, own pickle or None for a fork, the fork's parent or None,
        #            (ancestors' versions, stitched pickle) or None)
        self._entries: OrderedDict[
            str, tuple[int, bytes | None, str | None, tuple[tuple[int | None, ...], bytes] | None]
        ] = OrderedDict()
        self._lock = threading.Lock()
        # id of a handed-out trajectory -> (a weak reference to it, run id, versions it was read at)
        self._issued: OrderedDict[int, tuple[weakref.ref[Trajectory], str, tuple[int | None, ...]]] = (
            OrderedDict()
        )

    def issue(self, trajectory: Trajectory, run_id: str, versions: tuple[int | None, ...]) -> Trajectory:
        """Note that ``trajectory`` goes out as ``run_id`` read at ``versions`` (its own version,
        then its ancestors'); returns it."""
        with self._lock:
            self._issued[id(trajectory)] = (weakref.ref(trajectory), run_id, versions)
            self._issued.move_to_end(id(trajectory))
            while len(self._issued) > self._size:
                self._issued.popitem(last=False)
        return trajectory

    def was_issued(self, trajectory: Trajectory, run_id: str, versions: tuple[int | None, ...]) -> bool:
        """Whether this cache handed out ``trajectory`` itself as ``run_id`` read at ``versions``."""
        with self._lock:
            entry = self._issued.get(id(trajectory))
        return entry is not None and entry[0]() is trajectory and entry[1:] == (run_id, versions)

    def fork_parent(self, run_id: str, version: int) -> str | None:
        """The parent a cached fork at ``version`` is stitched onto (None: not cached, or not a fork)."""
        with self._lock:
            entry = self._entries.get(run_id)
        return entry[2] if entry is not None and entry[0] == version else None

    def own(self, run_id: str, version: int) -> Trajectory | None:
        with self._lock:
            entry = self._entries.get(run_id)
            if entry is None or entry[0] != version or entry[1] is None:
                return None
            self._entries.move_to_end(run_id)
            data = entry[1]
        return cast(Trajectory, pickle.loads(data))

    def stitched(self, run_id: str, version: int, ancestors: tuple[int | None, ...]) -> Trajectory | None:
        with self._lock:
            entry = self._entries.get(run_id)
            if entry is None or entry[0] != version or entry[3] is None or entry[3][0] != ancestors:
                return None
            self._entries.move_to_end(run_id)
            data = entry[3][1]
        return cast(Trajectory, pickle.loads(data))

    def put_own(self, run_id: str, version: int, trajectory: Trajectory) -> None:
        """Cache a run's own trajectory; for a fork (see :func:`needs_stitching`) only which parent
        it is stitched onto, keeping a stitched trajectory already cached for this version."""
        lineage = trajectory.lineage
        parent = lineage.parent_run_id if lineage is not None and needs_stitching(trajectory) else None
        data = None
        if parent is None:
            data = _pickled(trajectory)
            if data is None:
                return
        with self._lock:
            entry = self._entries.get(run_id)
            kept = entry[3] if entry is not None and entry[0] == version and parent is not None else None
            self._entries[run_id] = (version, data, parent, kept)
            self._entries.move_to_end(run_id)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def put_stitched(
        self, run_id: str, version: int, ancestors: tuple[int | None, ...], trajectory: Trajectory
    ) -> None:
        data = _pickled(trajectory)
        with self._lock:
            entry = self._entries.get(run_id)
            if data is None or entry is None or entry[0] != version:
                return
            self._entries[run_id] = (version, entry[1], entry[2], (ancestors, data))


def _pickled(trajectory: Trajectory) -> bytes | None:
    try:
        return pickle.dumps(trajectory, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a value that cannot be pickled (imported traces hold JSON only): no cache
        return None


def needs_stitching(own: Trajectory) -> bool:
    """Whether a run's own trajectory is a fork that is read stitched onto its parent."""
    return own.lineage is not None and own.lineage.fork_step is not None and not is_stitched(own)


def parent_reader(
    cache: TrajectoryCache,
    parent_id: str,
    ancestors: tuple[int | None, ...],
    get_trajectory: Callable[[str], Trajectory],
) -> Callable[[str], Trajectory]:
    """What stitching a fork onto ``parent_id`` reads runs with: the parent the forker already
    holds, when it is what ``cache`` handed out at the versions ``ancestors`` (no second read of
    the parent); otherwise ``get_trajectory``."""
    lent = lent_parent(parent_id)
    if lent is None or not cache.was_issued(lent, parent_id, ancestors):
        return get_trajectory

    def reader(wanted: str) -> Trajectory:
        return lent if wanted == parent_id else get_trajectory(wanted)

    return reader


def read_trajectory(
    cache: TrajectoryCache,
    run_id: str,
    version: int,
    build: Callable[[], Trajectory],
    ancestor_versions: Callable[[str, str], tuple[int | None, ...]],
    get_trajectory: Callable[[str], Trajectory],
) -> Trajectory:
    """A store's ``get_trajectory`` over ``cache``: the run's own trajectory (built once per
    version), stitched onto its parent when it is a fork (stitched once per ancestors' versions).
    ``ancestor_versions(run_id, parent_run_id)``: the versions of the fork's parent, its
    parent's parent..."""
    parent_id = cache.fork_parent(run_id, version)
    if parent_id is not None:  # a fork read again: its stitched form, when the ancestors are unchanged
        ancestors = ancestor_versions(run_id, parent_id)
        hit = cache.stitched(run_id, version, ancestors)
        if hit is not None:
            return cache.issue(hit, run_id, (version, *ancestors))
    own = cache.own(run_id, version)
    if own is None:
        own = build()
        cache.put_own(run_id, version, own)
    if not needs_stitching(own):
        return cache.issue(own, run_id, (version,))
    assert own.lineage is not None
    parent_id = own.lineage.parent_run_id
    ancestors = ancestor_versions(run_id, parent_id)
    hit = cache.stitched(run_id, version, ancestors)
    if hit is not None:
        return cache.issue(hit, run_id, (version, *ancestors))
    stitched = stitch_from_store(parent_reader(cache, parent_id, ancestors, get_trajectory), own)
    if stitched is not own:
        cache.put_stitched(run_id, version, ancestors, stitched)
    return cache.issue(stitched, run_id, (version, *ancestors))


# The listing's summary columns of the ``runs`` table, in the order :func:`summary_from_row` reads
# them (both SQL stores keep the same columns).
SUMMARY_COLUMNS = (
    "r.run_id, r.thread_id, r.graph, r.started_at_ns, r.ended_at_ns, r.status, r.outcome, r.answer, "
    "r.n_hops, r.n_spans, r.labels, r.parent_run_id"
)


def summary_from_row(row: Sequence[Any]) -> RunSummary:
    """The listing's row from its :data:`SUMMARY_COLUMNS` (pydantic-core validates a flat dict in a
    few microseconds; ``model_construct`` is slower)."""
    return RunSummary.model_validate(
        {
            "run_id": row[0],
            "thread_id": row[1],
            "graph": row[2],
            "started_at": datetime_from_ns(row[3]),
            "ended_at": datetime_from_ns(row[4]),
            "status": row[5],
            "outcome": row[6],
            "answer": row[7],
            "n_hops": row[8],
            "n_spans": row[9],
            "labels": json.loads(row[10]),
            "parent_run_id": row[11],
        }
    )


def summary_label_check(label: str) -> Callable[[Sequence[Any]], bool]:
    """Whether a :data:`SUMMARY_COLUMNS` row's labels match ``label`` (see :func:`label_matches`)."""

    def check(row: Sequence[Any]) -> bool:
        return label_matches(json.loads(row[10]), label)

    return check
