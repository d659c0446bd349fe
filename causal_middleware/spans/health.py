"""Fail-open bookkeeping: errors swallowed inside instrumentation, export or the store, and every
span that did not reach its destination.

The middleware never raises into the user's agent run; instead every swallowed error is logged
once per site and counted here, and every span that was dropped (a full queue, a failed export,
a store that stayed locked, a shutdown budget that ran out) is counted under the reason, so users
(and tests, and ``causal-mw health``) can see that something went wrong and how much was lost.

Drop reasons (keys of :attr:`Health.dropped`, values are spans):

* ``store.queue_full`` - the background store writer's queue was full
* ``store.retries_exhausted`` - the store stayed locked (another writer) past the retry window
* ``store.write_failed`` - the store refused the run (bad span, disk full, read-only, ...)
* ``store.shutdown_timeout`` - still queued for the store when the shutdown budget ran out
* ``store.after_shutdown`` - a run ended after the store writer was closed
* ``store.open_traces_cap`` - an open run evicted (too many runs open at once, or a run that
  never ended) from the run buffer
* ``otlp.queue_full``, ``otlp.export_failed``, ``otlp.shutdown_timeout``, ``otlp.after_shutdown``
  - the same for OTLP export

Counters (:attr:`Health.counts`): ``store.spans_queued``, ``store.spans_written``,
``store.runs_written``, ``otlp.spans_queued``, ``otlp.spans_exported``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from typing import Any

logger = logging.getLogger("causal_middleware")


class Health:
    """Thread-safe counters of swallowed errors (by site) and dropped spans (by reason)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._errors: Counter[str] = Counter()
        self._last: dict[str, str] = {}
        self._dropped: Counter[str] = Counter()
        self._counts: Counter[str] = Counter()
        self._persisted: Counter[str] = Counter()  # drops already written to a store's meta table

    def record_error(self, site: str, exc: BaseException | None = None) -> None:
        with self._lock:
            first = self._errors[site] == 0
            self._errors[site] += 1
            if exc is not None:
                self._last[site] = f"{type(exc).__name__}: {exc}"
        if first:
            logger.warning("causal-middleware swallowed an error at %s (fail-open)", site, exc_info=exc)
        else:
            logger.debug("causal-middleware swallowed an error at %s", site, exc_info=exc)

    def record_drop(self, reason: str, n_spans: int, exc: BaseException | None = None) -> None:
        """Count ``n_spans`` spans lost for ``reason`` (``store.queue_full``, ``otlp.export_failed``, ...)."""
        if n_spans <= 0:
            return
        with self._lock:
            first = self._dropped[reason] == 0
            self._dropped[reason] += n_spans
            if exc is not None:
                self._last[reason] = f"{type(exc).__name__}: {exc}"
        if first:
            logger.warning(
                "causal-middleware dropped %d span(s): %s%s", n_spans, reason, f" ({exc})" if exc else ""
            )

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    @property
    def errors(self) -> dict[str, int]:
        with self._lock:
            return dict(self._errors)

    @property
    def dropped(self) -> dict[str, int]:
        """Spans lost, by reason (see the module docstring)."""
        with self._lock:
            return dict(self._dropped)

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def total_errors(self) -> int:
        with self._lock:
            return sum(self._errors.values())

    @property
    def total_dropped(self) -> int:
        with self._lock:
            return sum(self._dropped.values())

    def last_error(self, site: str) -> str | None:
        with self._lock:
            return self._last.get(site)

    def snapshot(self) -> dict[str, Any]:
        """Everything, JSON-ready: ``pid``, ``errors``, ``dropped``, ``counts``, ``total_errors``,
        ``total_dropped``, ``last_errors``."""
        with self._lock:
            return {
                "pid": os.getpid(),
                "errors": dict(self._errors),
                "dropped": dict(self._dropped),
                "counts": dict(self._counts),
                "total_errors": sum(self._errors.values()),
                "total_dropped": sum(self._dropped.values()),
                "last_errors": dict(self._last),
            }

    # --- persistence of drop counts into a store (the background writer) -----------------
    def take_unpersisted(self) -> dict[str, int]:
        """Drop counts not yet written to a store; marked written (``give_back`` if that fails)."""
        with self._lock:
            delta = {k: v - self._persisted[k] for k, v in self._dropped.items() if v > self._persisted[k]}
            self._persisted.update(delta)
            return delta

    def give_back(self, delta: dict[str, int]) -> None:
        with self._lock:
            self._persisted.subtract(delta)

    def reset(self) -> None:
        with self._lock:
            self._errors.clear()
            self._last.clear()
            self._dropped.clear()
            self._counts.clear()
            self._persisted.clear()


health = Health()
