"""``instrument(..., on_failure="enqueue")``: finished runs go to the store's durable repair queue,
for repair workers (``causal-mw worker``) on any machine; the agent's process repairs nothing.

``submit`` never blocks: a daemon thread waits until the run's spans are in the store (so a worker
never claims a run it cannot read yet), then enqueues it, retrying a busy or unreachable database
for ``retry_for_s``. ``drain`` (called by the instrumented graph's ``shutdown``, so also at process
exit) waits, bounded, for what is still to be enqueued.
"""

from __future__ import annotations

import queue
import threading
import time

from pydantic import BaseModel

from causal_middleware.spans.health import health
from causal_middleware.store.base import SpanStore, StoreBusyError
from causal_middleware.store.queue import DurableRepairQueue, durable_queue_of


class EnqueueStats(BaseModel):
    submitted: int = 0
    enqueued: int = 0
    repeats: int = 0
    dropped: int = 0
    errors: int = 0


_STOP = object()


class DurableEnqueuer:
    """The ``on_failure`` target that only enqueues (see the module docstring)."""

    def __init__(self, store: SpanStore | None, *, maxsize: int = 10_000, retry_for_s: float = 30.0) -> None:
        found = durable_queue_of(store)
        if store is None or found is None:
            name = "no store" if store is None else type(store).__name__
            raise ValueError(
                f'on_failure="enqueue" needs a store with a durable repair queue (store="postgresql://..."), '
                f"got {name}; SQLite and in-memory stores repair in-process: on_failure=repair_on_failure()"
            )
        self.store: SpanStore = store
        self._queue_store: DurableRepairQueue = found
        self.retry_for_s = retry_for_s
        self.stats = EnqueueStats()
        self._lock = threading.Lock()
        self._pending: queue.Queue[object] = queue.Queue(maxsize=maxsize)
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="causal-enqueue", daemon=True)
        self._thread.start()

    def submit(self, run_id: str) -> bool:
        """Hand a finished run over; False (counted as dropped) when the buffer is full or closed."""
        with self._lock:
            self.stats.submitted += 1
            if self._closed:
                self.stats.dropped += 1
                return False
        try:
            self._pending.put_nowait(run_id)
        except queue.Full:
            with self._lock:
                self.stats.dropped += 1
            return False
        return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every submitted run is enqueued (or given up); False when ``timeout`` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._pending.all_tasks_done:
            while self._pending.unfinished_tasks:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._pending.all_tasks_done.wait(left)
        return True

    def drain(self, timeout: float) -> bool:
        """Stop accepting runs and wait (at most ``timeout`` s) for the rest to be enqueued."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        done = self.wait_idle(timeout)
        try:
            self._pending.put_nowait(_STOP)
        except queue.Full:
            pass
        return done

    def _work(self) -> None:
        while True:
            item = self._pending.get()
            try:
                if item is _STOP:
                    return
                self._enqueue(str(item))
            except Exception as exc:  # fail-open: the agent's runs go on
                with self._lock:
                    self.stats.errors += 1
                health.record_error("repair.enqueue", exc)
            finally:
                self._pending.task_done()

    def _enqueue(self, run_id: str) -> None:
        self.store._await_pending(run_id)  # the run's spans first: workers read it at once
        deadline = time.monotonic() + self.retry_for_s
        delay = 0.05
        while True:
            try:
                added = self._queue_store.enqueue(run_id)
                break
            except StoreBusyError:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        with self._lock:
            if added:
                self.stats.enqueued += 1
            else:
                self.stats.repeats += 1
