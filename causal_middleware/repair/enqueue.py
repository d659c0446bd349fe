"""``instrument(..., on_failure="enqueue")``: finished runs go to the store's durable repair queue,
for repair workers (``causal-mw worker``) on any machine; the agent's process repairs nothing.

``submit`` never blocks: a daemon thread waits until the run's spans are in the store (so a worker
never claims a run it cannot read yet), then enqueues it, retrying a busy or unreachable database
for ``retry_for_s``. ``drain`` (called by the instrumented graph's ``shutdown``, so also at process
exit) waits, bounded, for what is still to be enqueued.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from causal_middleware.repair.handoff import RunHandoff
from causal_middleware.store.base import SpanStore, StoreBusyError
from causal_middleware.store.queue import DurableRepairQueue, durable_queue_of


class EnqueueStats(BaseModel):
    submitted: int = 0
    enqueued: int = 0
    repeats: int = 0
    dropped: int = 0
    errors: int = 0


class DurableEnqueuer(RunHandoff):
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
        self.stats: EnqueueStats
        super().__init__(
            maxsize=maxsize, stats=EnqueueStats(), thread_name="causal-enqueue", health_key="repair.enqueue"
        )

    def drain(self, timeout: float) -> bool:
        """Stop accepting runs and wait (at most ``timeout`` s) for the rest to be enqueued."""
        if not self._close():
            return True
        done = self.wait_idle(timeout)
        self._stop_thread(timeout=0)
        return done

    def _handle(self, run_id: str) -> None:
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
