"""Where spans go: OTLP exporter construction, fail-open wrappers and the run-batching store processor.

Core module: it needs only the OpenTelemetry SDK (the OTLP exporters are imported lazily, the gRPC
one only when asked for).

* :func:`resolve_otlp_settings` / :func:`build_otlp_exporter` pick the OTLP exporter from explicit
  arguments or the standard ``OTEL_EXPORTER_OTLP_*`` environment variables (none when neither names
  an endpoint).
* :func:`build_otlp_processor` puts it behind the content policy (:mod:`causal_middleware.spans.content`),
  a fail-open wrapper and a :class:`BoundedBatchSpanProcessor` (a ``BatchSpanProcessor`` whose
  queue drops are counted and whose shutdown is bounded).
* :class:`RunSpanProcessor` hands each run's spans, in one batch, when the run's root span ends,
  to the span store's background writer (:mod:`causal_middleware.spans.writer`; the store's
  reads wait for runs still queued, so a run is readable as soon as ``invoke`` returns), or to
  any other exporter synchronously.
* :class:`ShutdownBudget`: one clock shared by the processors of an instrumented graph, so
  process exit (or ``shutdown()``) takes at most ``shutdown_timeout`` seconds whatever the
  collector or the store do; what is still pending then is dropped and counted in ``health``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlparse

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pydantic import BaseModel

from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import CaptureContent, ContentFilterExporter, Redactor, default_redactor
from causal_middleware.spans.health import health
from causal_middleware.spans.writer import BackgroundWriter, QueuedAnnotation, RetryableWriteError

OtlpProtocol = Literal["http/protobuf", "grpc"]
OTLP_PROTOCOLS: tuple[str, ...] = ("http/protobuf", "grpc")
HTTP_TRACES_PATH = "/v1/traces"


class OtlpSettings(BaseModel):
    """The resolved OTLP destination."""

    endpoint: str
    protocol: OtlpProtocol
    headers: dict[str, str] | None = None
    source: Literal["argument", "environment"]


def resolve_otlp_timeout(environ: Mapping[str, str] | None = None) -> float | None:
    """``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` or ``OTEL_EXPORTER_OTLP_TIMEOUT``, in seconds.

    The OTel specification gives milliseconds, the Python SDK reads seconds: a value of 1000 or
    more is read as milliseconds (``10000`` = 10 s), a smaller one as seconds (``10``, ``0.5``).
    A value that is not a positive number is a ``ValueError`` naming the variable.
    """
    env = os.environ if environ is None else environ
    for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        raw = (env.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not value > 0 or value != value or value == float("inf"):
            raise ValueError(
                f"{name} must be a positive number (seconds, or milliseconds when >= 1000), got {raw!r}"
            )
        return value / 1000 if value >= 1000 else value
    return None


def _check_protocol(protocol: str, where: str) -> OtlpProtocol:
    value = protocol.strip().lower()
    if value not in OTLP_PROTOCOLS:
        raise ValueError(f"{where} must be one of {OTLP_PROTOCOLS}, got {protocol!r}")
    return value  # type: ignore[return-value]


def _http_traces_url(endpoint: str) -> str:
    """A base URL (no path) gets the standard ``/v1/traces`` path; a URL with a path is kept."""
    parsed = urlparse(endpoint)
    if not parsed.scheme or not parsed.netloc:
        raise ValueError(f"OTLP endpoint must be a URL like http://host:4318, got {endpoint!r}")
    if parsed.path in ("", "/"):
        return endpoint.rstrip("/") + HTTP_TRACES_PATH
    return endpoint


def resolve_otlp_settings(
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> OtlpSettings | None:
    """Decide whether and where to export over OTLP.

    Explicit ``endpoint`` wins; otherwise ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is) or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` appended for HTTP). The protocol is ``protocol``,
    else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else
    ``http/protobuf``. Returns None when no endpoint is named anywhere. Headers not given here are
    read by the exporter itself from ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``.
    """
    env = os.environ if environ is None else environ
    if protocol is not None:
        proto = _check_protocol(protocol, "otlp_protocol")
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        proto = _check_protocol(
            env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"], "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
        )
    elif env.get("OTEL_EXPORTER_OTLP_PROTOCOL"):
        proto = _check_protocol(env["OTEL_EXPORTER_OTLP_PROTOCOL"], "OTEL_EXPORTER_OTLP_PROTOCOL")
    else:
        proto = "http/protobuf"
    hdrs = dict(headers) if headers is not None else None
    resolve_otlp_timeout(env)  # a bad timeout variable is named here, before any export

    if endpoint is not None:
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise ValueError(f"otlp_endpoint must be a non-empty URL string, got {endpoint!r}")
        url = _http_traces_url(endpoint.strip()) if proto == "http/protobuf" else endpoint.strip()
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="argument")
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="environment")
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        base = env["OTEL_EXPORTER_OTLP_ENDPOINT"].strip()
        url = base.rstrip("/") + HTTP_TRACES_PATH if proto == "http/protobuf" else base
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="environment")
    return None


def build_otlp_exporter(settings: OtlpSettings, *, timeout_s: float | None = None) -> SpanExporter:
    """The OTel SDK's OTLP span exporter for ``settings`` (HTTP/protobuf or gRPC); each export
    waits at most ``timeout_s`` (default: :func:`resolve_otlp_timeout`, else the SDK's 10 s)."""
    if timeout_s is None:
        timeout_s = resolve_otlp_timeout()
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=settings.endpoint, headers=settings.headers, timeout=timeout_s)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=settings.endpoint, headers=settings.headers, timeout=timeout_s)


class FailOpenExporter(SpanExporter):
    """Never lets an exporter's exception out: it is logged and counted in ``health`` under ``site``.
    A ``FAILURE`` result is counted too (the OTLP exporters report unreachable endpoints that way)."""

    def __init__(self, inner: SpanExporter, site: str) -> None:
        self.inner = inner
        self.site = site

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:
            health.record_error(self.site, exc)
            return SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            health.record_error(f"{self.site}.failure")
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:
            health.record_error(f"{self.site}.shutdown", exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception as exc:
            health.record_error(f"{self.site}.force_flush", exc)
            return False


DEFAULT_SHUTDOWN_TIMEOUT_S = 1.5  # + interpreter teardown: exit stays under 2.5 s


class ShutdownBudget:
    """One shutdown clock shared by several processors: it starts at the first :meth:`remaining`
    call (the first processor's shutdown) and every later processor gets what is left."""

    def __init__(self, seconds: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> None:
        self.seconds = check_shutdown_timeout(seconds)
        self._deadline: float | None = None
        self._lock = threading.Lock()

    def remaining(self) -> float:
        with self._lock:
            if self._deadline is None:
                self._deadline = time.monotonic() + self.seconds
            return max(0.0, self._deadline - time.monotonic())


def check_shutdown_timeout(seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < float("inf"):
        raise ValueError(f"shutdown_timeout must be a number of seconds >= 0, got {seconds!r}")
    return float(seconds)


def _bsp_default(name: str, fallback: int) -> int:
    getter = getattr(BatchSpanProcessor, name, None)
    try:
        return int(getter()) if getter is not None else fallback
    except Exception:  # an unparsable OTEL_BSP_* variable: the SDK's default
        return fallback


class BoundedBatchSpanProcessor(BatchSpanProcessor):
    """A ``BatchSpanProcessor`` (same role, same ``OTEL_BSP_*`` settings) built on the bounded
    :class:`~causal_middleware.spans.writer.BackgroundWriter`: every span it cannot deliver is
    counted in ``health.dropped`` (``otlp.queue_full`` when its queue is full - the SDK's drops
    silently -, ``otlp.export_failed`` when the exporter reports a failure, ``otlp.shutdown_timeout``
    for what is still queued or in flight when the shutdown budget runs out), and ``shutdown()``
    returns within the budget even when the collector is down or never answers.
    """

    def __init__(  # noqa: PLR0913 - the SDK's knobs plus the budget
        self,
        span_exporter: SpanExporter,
        max_queue_size: int | None = None,
        schedule_delay_millis: float | None = None,
        max_export_batch_size: int | None = None,
        *,
        shutdown_timeout: float | ShutdownBudget = DEFAULT_SHUTDOWN_TIMEOUT_S,
        drop_site: str = "otlp",
    ) -> None:
        # Deliberately not BatchSpanProcessor.__init__: our own queue and thread replace the SDK's.
        queue = max_queue_size or _bsp_default("_default_max_queue_size", 2048)
        delay = (
            _bsp_default("_default_schedule_delay_millis", 5000)
            if schedule_delay_millis is None
            else schedule_delay_millis
        )
        batch = min(max_export_batch_size or _bsp_default("_default_max_export_batch_size", 512), queue)
        self._exporter = span_exporter
        self._budget = (
            shutdown_timeout
            if isinstance(shutdown_timeout, ShutdownBudget)
            else ShutdownBudget(shutdown_timeout)
        )
        self._drop_site = drop_site
        self._shutdown = False
        self._writer = BackgroundWriter(
            self._export_batch,
            name="causal-mw-otlp-export",
            drop_site=drop_site,
            error_site=f"{drop_site}.export",
            max_items=queue,
            max_spans=queue,
            max_batch_items=batch,
            max_batch_spans=batch,
            max_delay_s=delay / 1000,
            retry_for_s=0.0,
        )

    @property
    def span_exporter(self) -> SpanExporter:
        return self._exporter

    @property
    def writer(self) -> BackgroundWriter:
        return self._writer

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        try:
            if not (span.context and span.context.trace_flags.sampled):
                return
            if self._writer.submit(span):
                health.count(f"{self._drop_site}.spans_queued")
        except Exception as exc:  # fail-open
            health.record_error(f"{self._drop_site}.on_end", exc)

    def _export_batch(self, spans: list[Any]) -> None:
        try:
            result = self._exporter.export(spans)
        except Exception as exc:
            health.record_error(f"{self._drop_site}.export", exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            health.record_drop(f"{self._drop_site}.export_failed", len(spans))
        else:
            health.count(f"{self._drop_site}.spans_exported", len(spans))

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        if self._shutdown:
            return False
        return self._writer.flush((30_000 if timeout_millis is None else timeout_millis) / 1000)

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._writer.close(self._budget.remaining())
        try:  # quick for the OTLP exporters: it interrupts their retry waits and closes the channel
            self._exporter.shutdown()
        except Exception as exc:
            health.record_error(f"{self._drop_site}.shutdown", exc)


def build_otlp_processor(
    exporter: SpanExporter,
    *,
    capture_content: CaptureContent = "full",
    max_attribute_length: int = 4096,
    redact: Redactor | None = default_redactor,
    shutdown_timeout: float | ShutdownBudget = DEFAULT_SHUTDOWN_TIMEOUT_S,
) -> BoundedBatchSpanProcessor:
    """:class:`BoundedBatchSpanProcessor` > fail-open > content policy + redaction > ``exporter``."""
    filtered = ContentFilterExporter(
        exporter, capture_content=capture_content, max_attribute_length=max_attribute_length, redact=redact
    )
    return BoundedBatchSpanProcessor(
        FailOpenExporter(filtered, "export.otlp"), shutdown_timeout=shutdown_timeout
    )


def is_run_root(span: ReadableSpan) -> bool:
    """A run span as the instrumentation emits it: a root span with ``causal.span.type=run``."""
    return span.parent is None and (span.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == "run"


class RunSpanProcessor(SpanProcessor):
    """Buffers the spans of each run (trace whose root is a run span) and hands them over in one
    batch when the run span ends. Spans of traces that are not runs are ignored; spans of a run
    that end after it (rare: background work) are handed over on their own.

    With a span store that allows it (``store.background_writes``, the SQLite store), the batch
    goes to a bounded background writer (one daemon thread, short lock waits, retries with
    backoff while another process holds the store's write lock, counted drops): the agent's thread
    never waits for the store, and the store's reads wait for the runs still queued, so
    ``store.get_trajectory(run_id)`` works right after the run returns. Other exporters are
    called synchronously on the thread that ends the run span.

    The open-run buffer is capped (``max_open_traces`` runs, ``max_open_spans`` spans in all):
    past either, the oldest open run is evicted and its spans counted as dropped
    (``store.open_traces_cap``), so runs that never end (a persistent fault) cannot grow memory.
    Failures and drops are counted in ``health``.
    """

    def __init__(  # noqa: PLR0913
        self,
        exporter: SpanExporter,
        *,
        is_root: Callable[[ReadableSpan], bool] = is_run_root,
        max_buffered_spans: int = 10_000,
        max_open_traces: int = 1_000,
        max_open_spans: int = 100_000,
        shutdown_exporter: bool = True,
        site: str = "store.write",
        background: bool | None = None,
        shutdown_timeout: float | ShutdownBudget = DEFAULT_SHUTDOWN_TIMEOUT_S,
        busy_timeout_s: float = 0.05,
        retry_for_s: float = 30.0,
        max_queued_runs: int = 1_000,
        max_queued_spans: int = 200_000,
    ) -> None:
        self.exporter = exporter
        self._is_root = is_root
        self._max = max_buffered_spans
        self._max_open_traces = max_open_traces
        self._max_open_spans = max_open_spans
        self._open_spans = 0
        self._shutdown_exporter = shutdown_exporter
        self._site = site
        self._lock = threading.Lock()
        self._open: dict[int, list[ReadableSpan]] = {}
        self._recent: OrderedDict[int, None] = OrderedDict()
        self._evicted: OrderedDict[int, None] = OrderedDict()
        self._closed = False
        self._budget = (
            shutdown_timeout
            if isinstance(shutdown_timeout, ShutdownBudget)
            else ShutdownBudget(shutdown_timeout)
        )
        self._busy_timeout_s = busy_timeout_s
        if background is None:
            background = bool(getattr(exporter, "background_writes", False))
        self.writer: BackgroundWriter | None = None
        if background:
            pending_key = getattr(exporter, "pending_key", None)
            key = str(pending_key()) if callable(pending_key) else None
            self.writer = BackgroundWriter(
                self._write_runs,
                name="causal-mw-store-writer",
                drop_site="store",
                error_site="store.export",
                max_items=max_queued_runs,
                max_spans=max_queued_spans,
                retry_for_s=retry_for_s,
                is_retryable=lambda exc: isinstance(exc, RetryableWriteError),
                registry_key=key,
                accepts_annotations=bool(getattr(exporter, "queued_annotations", False)),
            )

    # --- the buffer -----------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            # (the default is_run_root is False for every span with a parent: no call for those)
            if (
                not self._closed
                and (span.parent is None or self._is_root is not is_run_root)
                and self._is_root(span)
            ):
                evicted: list[list[ReadableSpan]] = []
                with self._lock:
                    while len(self._open) >= self._max_open_traces:
                        evicted.append(self._evict_oldest())
                    self._open[span.context.trace_id] = []
                self._count_evicted(evicted)
        except Exception as exc:
            health.record_error(f"{self._site}.on_start", exc)

    def _evict_oldest(self) -> list[ReadableSpan]:
        trace_id = next(iter(self._open))
        spans = self._open.pop(trace_id)
        self._open_spans -= len(spans)
        self._evicted[trace_id] = None
        if len(self._evicted) > 4096:
            self._evicted.popitem(last=False)
        return spans

    def _count_evicted(self, evicted: list[list[ReadableSpan]]) -> None:
        if evicted:
            health.record_drop("store.open_traces_cap", sum(len(s) for s in evicted))

    @property
    def open_traces(self) -> int:
        with self._lock:
            return len(self._open)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            trace_id = span.context.trace_id
            batch: list[ReadableSpan] | None = None
            evicted: list[list[ReadableSpan]] = []
            late_evicted = 0
            with self._lock:
                buf = self._open.get(trace_id)
                if buf is None:
                    if trace_id in self._recent:
                        batch = [span]
                    elif trace_id in self._evicted:
                        late_evicted = 1
                else:
                    buf.append(span)
                    self._open_spans += 1
                    if span.parent is None and self._is_root(span):
                        batch = self._open.pop(trace_id)
                        self._open_spans -= len(batch)
                        self._recent[trace_id] = None
                        if len(self._recent) > 1024:
                            self._recent.popitem(last=False)
                    elif len(buf) >= self._max:
                        batch = buf[:]
                        buf.clear()
                        self._open_spans -= len(batch)
                    while self._open_spans > self._max_open_spans and self._open:
                        evicted.append(self._evict_oldest())
            if evicted:
                self._count_evicted(evicted)
            if late_evicted:
                health.record_drop("store.open_traces_cap", late_evicted)
            if batch:
                self._hand_over(batch)
        except Exception as exc:
            health.record_error(f"{self._site}.on_end", exc)

    # --- handing runs over ------------------------------------------------------------------
    def _hand_over(self, batch: list[ReadableSpan]) -> None:
        if self.writer is None:
            self._export(batch)
            return
        key = format(batch[0].context.trace_id, "032x")
        if self.writer.submit(batch, key=key, n_spans=len(batch)):
            health.count("store.spans_queued", len(batch))

    def _export(self, batch: list[ReadableSpan]) -> None:
        try:
            result = self.exporter.export(batch)
        except Exception as exc:
            health.record_error(self._site, exc)
            return
        if result is SpanExportResult.FAILURE:
            health.record_error(f"{self._site}.failure")

    def _write_runs(self, payloads: list[list[ReadableSpan] | QueuedAnnotation]) -> None:
        """The background writer's sink: one transaction for a batch of runs (and the annotations
        queued behind them, see ``SqliteSpanStore.annotate``), with this process's drop counts not
        yet persisted added to the store's own health record."""
        from causal_middleware.spans.record import SpanRecord

        runs = [p for p in payloads if not isinstance(p, QueuedAnnotation)]
        annotations = [p for p in payloads if isinstance(p, QueuedAnnotation)]
        records = [SpanRecord.from_readable(s) for run in runs for s in run]
        counters = health.take_unpersisted()
        counters["store.spans_written"] = len(records)
        counters["store.runs_written"] = len(runs)
        write_batch = getattr(self.exporter, "write_batch", None)
        try:
            if write_batch is not None and annotations:
                write_batch(
                    records, busy_timeout_s=self._busy_timeout_s, counters=counters, annotations=annotations
                )
            elif write_batch is not None:
                write_batch(records, busy_timeout_s=self._busy_timeout_s, counters=counters)
            else:  # pragma: no cover - background writes are only chosen for span stores
                self.exporter.export([s for run in runs for s in run])
        except BaseException:
            counters.pop("store.spans_written")
            counters.pop("store.runs_written")
            health.give_back(counters)
            raise
        health.count("store.spans_written", len(records))
        health.count("store.runs_written", len(runs))

    def _persist_counters(self) -> None:
        """Best effort at shutdown: drop counts nobody wrote yet go to the store's health record."""
        write_batch = getattr(self.exporter, "write_batch", None)
        if write_batch is None or self.writer is None:
            return
        counters = health.take_unpersisted()
        if not counters:
            return
        try:
            write_batch(
                [], busy_timeout_s=min(self._busy_timeout_s, self._budget.remaining()), counters=counters
            )
        except Exception:
            health.give_back(counters)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until the runs handed over so far are written (or dropped and counted)."""
        return True if self.writer is None else self.writer.flush(timeout)

    def wait_for(self, run_id: str, timeout: float | None = 5.0) -> bool:
        """Wait until run ``run_id`` (32 hex digits) is no longer queued for the store."""
        return True if self.writer is None else self.writer.wait_for(run_id, timeout)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Hands over what is buffered for runs still open (partial runs), waits for the writer
        and flushes the exporter."""
        with self._lock:
            pending = [spans for spans in self._open.values() if spans]
            for spans in self._open.values():
                spans.clear()
            self._open_spans = 0
        for spans in pending:
            self._hand_over(spans)
        ok = self.flush(timeout_millis / 1000)
        try:
            return bool(self.exporter.force_flush(timeout_millis)) and ok
        except Exception as exc:
            health.record_error(f"{self._site}.force_flush", exc)
            return False

    def shutdown(self) -> None:
        """Hands over partial runs, writes what is queued within the shutdown budget (then drops
        and counts the rest), and shuts the exporter down when this processor owns it."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            pending = [spans for spans in self._open.values() if spans]
            self._open.clear()
            self._open_spans = 0
        for spans in pending:
            self._hand_over(spans)
        if self.writer is not None:
            self.writer.close(self._budget.remaining())
            self._persist_counters()
        else:
            try:
                self.exporter.force_flush(int(self._budget.remaining() * 1000))
            except Exception as exc:
                health.record_error(f"{self._site}.force_flush", exc)
        if self._shutdown_exporter:
            try:
                self.exporter.shutdown()
            except Exception as exc:
                health.record_error(f"{self._site}.shutdown", exc)
