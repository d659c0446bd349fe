"""A bounded background writer: the one queue + daemon thread that takes span work off the agent's
thread (the span store's writes, OTLP export batches).

Guarantees, whatever the sink does:

* :meth:`BackgroundWriter.submit` never blocks (beyond a short lock) and never raises: when the
  queue is full (items or spans), or the writer is closed, the item is dropped and its spans are
  counted in :data:`~causal_middleware.spans.health.health` under ``<drop_site>.queue_full`` /
  ``<drop_site>.after_shutdown``.
* One daemon thread drains the queue in FIFO batches (up to ``max_batch_items`` items /
  ``max_batch_spans`` spans). A sink error the caller marks retryable (a locked store) is
  retried with exponential backoff until ``retry_for_s`` has passed, then the batch is dropped
  (``retries_exhausted``); another error splits the batch and retries its items one by one, so a
  bad item is dropped alone (``write_failed``).
* :meth:`flush` waits (bounded) until everything submitted before the call is done;
  :meth:`wait_for` waits for the items of one key (a run id) only - how readers see a run as soon
  as ``invoke`` returned without the agent's thread waiting for the write.
* :meth:`close` flushes within a budget, then drops and counts what is left
  (``shutdown_timeout``); the thread is a daemon, so process exit never waits for a sink stuck
  in I/O.

Writers register themselves under a key (a store's file) in a process-wide registry, so a reader
of the same store - the same object or another one opened on the same file in this process - can
wait for the runs still queued for it (:func:`await_pending`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.spans.health import health
from causal_middleware.spans.model import Lineage, Outcome


class RetryableWriteError(Exception):
    """Marker base for sink errors worth retrying (a store whose write lock another process
    holds): the writer retries these within its window instead of dropping the batch."""


@dataclass
class WriteItem:
    """One unit of work: ``payload`` (e.g. a run's spans), its ``key`` (run id) and span count."""

    payload: Any
    key: str | None = None
    n_spans: int = 1
    seq: int = 0


@dataclass(frozen=True)
class QueuedAnnotation:
    """An ``annotate`` of a run whose spans a writer still holds: written behind them, in the same
    transaction when they share a batch, instead of the caller waiting for the writer."""

    run_id: str
    outcome: Outcome | None = None
    reference: str | None = None
    labels: dict[str, Any] | None = None
    lineage: Lineage | None = None


@dataclass
class WriterStats:
    submitted: int = 0
    written: int = 0
    dropped: Counter[str] = field(default_factory=Counter)  # reason -> spans
    retries: int = 0


class BackgroundWriter:
    """Bounded queue + one daemon thread calling ``sink(payloads)`` on batches.

    Args:
        sink: writes a batch (a list of payloads) or raises.
        name: the thread's name.
        drop_site: prefix of the drop reasons counted in ``health`` (``store``, ``otlp``).
        error_site: where a sink error is counted in ``health.errors``.
        max_items / max_spans: queue bounds (items, spans); past either, ``submit`` drops.
        max_batch_items / max_batch_spans: how much one ``sink`` call gets.
        max_delay_s: how long the thread waits for a batch to fill (0: write at once).
        retry_for_s, backoff_s, max_backoff_s: the retry window for retryable errors.
        is_retryable: which sink errors are worth retrying.
        on_written: called with the payloads of each batch written (bookkeeping; must not raise).
        registry_key: where readers find this writer (:func:`await_pending`).
    """

    def __init__(
        self,
        sink: Callable[[list[Any]], None],
        *,
        name: str = "causal-mw-writer",
        drop_site: str = "store",
        error_site: str = "store.export",
        max_items: int = 1024,
        max_spans: int = 100_000,
        max_batch_items: int = 64,
        max_batch_spans: int = 5_000,
        max_delay_s: float = 0.0,
        retry_for_s: float = 30.0,
        backoff_s: float = 0.02,
        max_backoff_s: float = 1.0,
        is_retryable: Callable[[BaseException], bool] = lambda exc: False,
        on_written: Callable[[list[Any]], None] | None = None,
        registry_key: str | None = None,
        accepts_annotations: bool = False,
    ) -> None:
        if max_items < 1 or max_spans < 1 or max_batch_items < 1 or max_batch_spans < 1:
            raise ValueError("writer queue and batch bounds must be >= 1")
        self._sink = sink
        self.name = name
        self.drop_site = drop_site
        self.error_site = error_site
        self.max_items = max_items
        self.max_spans = max_spans
        self.max_batch_items = max_batch_items
        self.max_batch_spans = max_batch_spans
        self.max_delay_s = max_delay_s
        self.retry_for_s = retry_for_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._is_retryable = is_retryable
        self._on_written = on_written
        self.stats = WriterStats()
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[WriteItem] = deque()
        self._queued_spans = 0
        self._inflight: list[WriteItem] = []
        self._pending: Counter[str] = Counter()
        self._seq = 0
        self._done_seq = 0
        self._flush_wanted = False
        self._closing = False
        self._closed = False
        self._abandon = threading.Event()  # close() ran out of budget: stop retrying, stop writing
        self._registry_key = registry_key
        # whether the sink writes QueuedAnnotation payloads (see submit_if_pending)
        self.accepts_annotations = accepts_annotations
        self._pid = os.getpid()
        self._thread = self._start_thread()
        if registry_key is not None:
            _register(registry_key, self)
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork)
            os.register_at_fork(after_in_child=lambda: (m := ref()) and m())

    # --- producer side --------------------------------------------------------------------
    def submit(self, payload: Any, *, key: str | None = None, n_spans: int = 1) -> bool:
        """Queue ``payload``; False (and the spans counted as dropped) when full or closed."""
        reason = None
        with self._cond:
            if self._closing:
                reason = "after_shutdown"
            elif len(self._queue) >= self.max_items or self._queued_spans + n_spans > self.max_spans:
                reason = "queue_full"
            else:
                self._seq += 1
                self._queue.append(WriteItem(payload, key, n_spans, self._seq))
                self._queued_spans += n_spans
                self.stats.submitted += 1
                if key is not None:
                    self._pending[key] += 1
                if self.max_delay_s <= 0 or len(self._queue) >= self.max_batch_items:
                    self._cond.notify_all()
        if reason is not None:
            self._drop(reason, n_spans)
            return False
        return True

    def submit_if_pending(self, payload: Any, *, key: str) -> bool:
        """Queue ``payload`` behind what is queued for ``key``, only while something of ``key`` is
        queued or being written and the queue has room; False otherwise (nothing counted: the
        caller does the work itself)."""
        with self._cond:
            if self._closing or self._pending[key] == 0 or len(self._queue) >= self.max_items:
                return False
            self._seq += 1
            self._queue.append(WriteItem(payload, key, 0, self._seq))
            self.stats.submitted += 1
            self._pending[key] += 1
            if self.max_delay_s <= 0 or len(self._queue) >= self.max_batch_items:
                self._cond.notify_all()
        return True

    def _drop(self, reason: str, n_spans: int, exc: BaseException | None = None) -> None:
        self.stats.dropped[reason] += n_spans
        health.record_drop(f"{self.drop_site}.{reason}", n_spans, exc)

    # --- reader side ----------------------------------------------------------------------
    def is_pending(self, key: str) -> bool:
        with self._cond:
            return self._pending[key] > 0

    def held(self, key: str) -> list[Any]:
        """The payloads of ``key`` still queued or being written, oldest first (empty when none):
        what a reader may build a run from instead of waiting for its write."""
        with self._cond:
            if not self._pending.get(key):
                return []
            return [i.payload for i in (*self._inflight, *self._queue) if i.key == key]

    @property
    def backlog(self) -> int:
        """Items queued or being written."""
        with self._cond:
            return len(self._queue) + len(self._inflight)

    def wait_for(self, key: str, timeout: float | None = 5.0) -> bool:
        """Wait until nothing of ``key`` is queued or being written (written or dropped)."""
        if threading.current_thread() is self._thread:
            return self._pending[key] == 0
        with self._cond:
            if self._pending[key] == 0:
                return True
            self._flush_wanted = True
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._pending[key] == 0, timeout)

    def flush(self, timeout: float | None = 5.0) -> bool:
        """Wait until everything submitted before this call is done (written or dropped)."""
        if threading.current_thread() is self._thread:
            return False
        with self._cond:
            target = self._seq
            if self._done_seq >= target:
                return True
            self._flush_wanted = True
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._done_seq >= target or self._closed, timeout)

    def close(self, timeout: float = 2.0) -> bool:
        """Stop accepting work, write what is queued within ``timeout`` seconds, then drop and
        count what is left. True when everything queued was handled. Idempotent."""
        with self._cond:
            if self._closed:
                return not self._queue and not self._inflight
            self._closing = True
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(max(0.0, timeout))
        with self._cond:
            left = list(self._queue) + list(self._inflight)
            self._queue.clear()
            self._queued_spans = 0
            self._closed = True
            if left:
                self._abandon.set()
                self._inflight = []
                for item in left:
                    if item.key is not None:
                        self._pending[item.key] = max(0, self._pending[item.key] - 1)
                self._done_seq = self._seq
            self._cond.notify_all()
        if left:
            self._drop("shutdown_timeout", sum(i.n_spans for i in left))
        if self._registry_key is not None:
            _unregister(self._registry_key, self)
        return not left

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the thread -------------------------------------------------------------------------
    def _start_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        thread.start()
        return thread

    def _after_fork(self) -> None:
        # a forked child has the parent's queue but not its thread: start afresh, empty
        self._cond = threading.Condition(threading.Lock())
        self._queue = deque()
        self._queued_spans = 0
        self._inflight = []
        self._pending = Counter()
        self._done_seq = self._seq
        if not self._closing:
            self._pid = os.getpid()
            self._thread = self._start_thread()

    def _next_batch(self) -> list[WriteItem] | None:
        with self._cond:
            while not self._queue:
                if self._closing:
                    return None
                self._flush_wanted = False
                self._cond.wait()
            if self.max_delay_s > 0 and not self._closing:
                deadline = time.monotonic() + self.max_delay_s
                while (
                    len(self._queue) < self.max_batch_items
                    and not self._flush_wanted
                    and not self._closing
                    and (left := deadline - time.monotonic()) > 0
                ):
                    self._cond.wait(left)
            batch: list[WriteItem] = []
            spans = 0
            while self._queue and len(batch) < self.max_batch_items:
                item = self._queue[0]
                if batch and spans + item.n_spans > self.max_batch_spans:
                    break
                self._queue.popleft()
                self._queued_spans -= item.n_spans
                spans += item.n_spans
                batch.append(item)
            self._inflight = batch
            return batch

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                self._write(batch)
            except BaseException as exc:  # noqa: BLE001 - the thread must survive anything
                health.record_error(f"{self.error_site}.writer", exc)
            with self._cond:
                if self._abandon.is_set():
                    return
                for item in batch:
                    if item.key is not None:
                        self._pending[item.key] -= 1
                        if self._pending[item.key] <= 0:
                            del self._pending[item.key]
                self._done_seq = batch[-1].seq
                self._inflight = []
                self._cond.notify_all()

    def _write(self, batch: list[WriteItem]) -> None:
        error = self._attempt(batch)
        if error is None:
            return
        if len(batch) > 1 and not self._is_retryable(error):
            for item in batch:  # isolate the bad item: the others are still written
                single = self._attempt([item])
                if single is not None:
                    self._fail([item], single)
            return
        self._fail(batch, error)

    def _fail(self, items: Sequence[WriteItem], error: BaseException) -> None:
        reason = "retries_exhausted" if self._is_retryable(error) else "write_failed"
        health.record_error(self.error_site, error)
        self._drop(reason, sum(i.n_spans for i in items), error)

    def _attempt(self, items: list[WriteItem]) -> BaseException | None:
        """Write ``items``, retrying retryable errors; None when written, else the last error."""
        deadline = time.monotonic() + self.retry_for_s
        delay = self.backoff_s
        payloads = [i.payload for i in items]
        while True:
            if self._abandon.is_set():
                return None  # counted by close()
            try:
                self._sink(payloads)
            except Exception as exc:
                if not self._is_retryable(exc) or time.monotonic() + delay > deadline:
                    return exc
                self.stats.retries += 1
                if self._abandon.wait(delay):
                    return None
                delay = min(delay * 2, self.max_backoff_s)
                continue
            self.stats.written += len(items)
            if self._on_written is not None:
                try:
                    self._on_written(payloads)
                except Exception as exc:
                    health.record_error(f"{self.error_site}.bookkeeping", exc)
            return None


# --- the process-wide registry: readers wait for runs still queued for their store -------------
_registry_lock = threading.Lock()
_registry: dict[str, weakref.WeakSet[BackgroundWriter]] = {}


def _reset_registry_lock() -> None:  # a fork may have copied the lock held
    global _registry_lock
    _registry_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_registry_lock)


def _register(key: str, writer: BackgroundWriter) -> None:
    with _registry_lock:
        _registry.setdefault(key, weakref.WeakSet()).add(writer)


def _unregister(key: str, writer: BackgroundWriter) -> None:
    with _registry_lock:
        writers = _registry.get(key)
        if writers is not None:
            writers.discard(writer)
            if not writers:
                del _registry[key]


def writers_for(key: str) -> list[BackgroundWriter]:
    with _registry_lock:
        return list(_registry.get(key, ()))


def await_pending(key: str, run_id: str | None = None, timeout: float = 5.0) -> bool:
    """Wait (bounded) for what writers of ``key`` still hold: the items of ``run_id``, or all
    submitted so far when ``run_id`` is None. Cheap when nothing is pending. True when done."""
    writers = writers_for(key)
    if not writers:
        return True
    deadline = time.monotonic() + timeout
    ok = True
    for writer in writers:
        left = max(0.0, deadline - time.monotonic())
        if run_id is None:
            ok = writer.flush(left) and ok
        elif writer.is_pending(run_id):
            ok = writer.wait_for(run_id, left) and ok
    return ok
